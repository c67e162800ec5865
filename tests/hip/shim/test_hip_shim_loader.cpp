// A real gfx942 package library (rms-norm, from the rocm-gfx942 build) loaded through kh on a
// machine described as an MI300X with HIP 6.2 (KH_TEST_HOST_FACTS), and one rms_norm call, in
// the runtime setting $KH_SHIM_EXPECT names (shim_loader_test.sh runs each in its own process):
//   standin6 / standin5  the stand-in runtime (hip_runtime_standin.cpp) as libamdhip64.so.6, or
//                        only as .so.5: the call succeeds, and the stand-in's log shows the shim
//                        opened it, loaded a gfx942 code object, looked the kernel up by name and
//                        launched it with the call's stream and tensors
//   no-device            Debian's real HIP 5.2 runtime on a machine without an AMD GPU: the
//                        library loads, the call fails with KH_ERROR_DEVICE and the runtime's word
//   no-runtime           no HIP runtime at all: the library loads, the call fails with
//                        KH_ERROR_DEVICE saying what the shim tried
#include <doctest/doctest.h>
#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kh/kh.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  REQUIRE_MESSAGE(v != nullptr, name << " is not set (run this through tests/hip/shim/shim_loader_test.sh)");
  return v;
}

std::vector<std::string> log_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

const std::string* first_with(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const auto& l : lines)
    if (l.rfind(prefix, 0) == 0) return &l;
  return nullptr;
}

std::string hex(const void* p) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

// A float32 tensor on ROCm device 0 over host memory: the stand-in never touches the data.
DLTensor rocm_tensor(std::vector<float>& storage, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = storage.data();
  t.device = {kDLROCM, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

}  // namespace

TEST_CASE("a gfx942 library loads under any HIP runtime, or none, and calls through the one it finds") {
  const std::string mode = env("KH_SHIM_EXPECT");
  const std::string hub = env("KH_HUB"), cache = env("KH_CACHE");
  kh_load_options options{};
  options.struct_size = sizeof options;
  options.hub = hub.c_str();
  options.cache_dir = cache.c_str();
  options.device_type = kDLROCM;
  kh_kernel* kernel = nullptr;
  // Loading never needs the runtime: this passes in every mode.
  REQUIRE_MESSAGE(kh_load_kernel("kernels-community/rms-norm@1", &options, &kernel) == KH_OK, kh_last_error());
  const std::string variant = kh_kernel_variant(kernel);
  CAPTURE(variant);
  CHECK(variant.find("-gfx942-") != std::string::npos);
  CHECK(kh_kernel_device_type(kernel) == kDLROCM);
  const kh_op* op = nullptr;
  REQUIRE(kh_kernel_find_op(kernel, "rms_norm", &op) == KH_OK);

  std::vector<float> out(4 * 256), x(4 * 256), weight(256);
  std::vector<int64_t> rows_shape = {4, 256}, weight_shape = {256};
  DLTensor t_out = rocm_tensor(out, rows_shape), t_x = rocm_tensor(x, rows_shape),
           t_weight = rocm_tensor(weight, weight_shape);
  kh_value args[4] = {};
  args[0].kind = KH_VALUE_TENSOR, args[0].u.tensor = &t_out;
  args[1].kind = KH_VALUE_TENSOR, args[1].u.tensor = &t_x;
  args[2].kind = KH_VALUE_TENSOR, args[2].u.tensor = &t_weight;
  args[3].kind = KH_VALUE_DOUBLE, args[3].u.d = 1e-6;
  void* const stream = reinterpret_cast<void*>(uintptr_t{0x5eed});
  const kh_status status = kh_op_call(op, args, 4, stream);
  const std::string error = kh_last_error();
  CAPTURE(error);

  if (mode == "standin6" || mode == "standin5") {
    REQUIRE(status == KH_OK);
    const std::vector<std::string> lines = log_lines(env("KH_HIP_STANDIN_LOG"));
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    CAPTURE(all);
    const std::string* loaded = first_with(lines, "loaded ");
    REQUIRE(loaded != nullptr);
    // .so.7 is tried first and is absent; then the stand-in's soname.
    CHECK(loaded->find(mode == "standin6" ? "libamdhip64.so.6" : "libamdhip64.so.5") != std::string::npos);
    // The gfx942 code object, code-object v4 (ELF ABI version 2).
    const std::string* load = first_with(lines, "hipModuleLoadData ");
    REQUIRE(load != nullptr);
    CHECK(*load == "hipModuleLoadData elf=1 machine=224 mach=0x4c abi_version=2");
    // The kernel, by its device name; launched with the stream and the tensors of the call:
    // the argument struct starts with out, residual_out, x, residual, weight, bias.
    const std::string* lookup = first_with(lines, "hipModuleGetFunction ");
    REQUIRE(lookup != nullptr);
    CHECK(lookup->find("row_norm") != std::string::npos);
    const std::string name = lookup->substr(lookup->find("name=") + 5);
    const std::string* launch = first_with(lines, "hipModuleLaunchKernel ");
    REQUIRE(launch != nullptr);
    CHECK(launch->find("name=" + name + " ") != std::string::npos);
    CHECK(launch->find("stream=0x5eed ") != std::string::npos);
    CHECK(launch->find("extra=(nil) ") != std::string::npos);
    CHECK(launch->find(",1,1 block=") != std::string::npos);  // grid (n, 1, 1)
    const std::string block = launch->substr(launch->find("block=") + 6);
    CHECK(std::stoi(block) % 64 == 0);  // whole wavefronts
    CHECK(launch->find("arg0=" + hex(out.data()) + ",0x0," + hex(x.data()) + ",0x0," + hex(weight.data()) + ",0x0") !=
          std::string::npos);
    // The occupancy query went to the same function (the grid is sized by it).
    CHECK(all.find("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor name=" + name + " ") != std::string::npos);
  } else if (mode == "no-device") {
    CHECK(status == KH_ERROR_DEVICE);
    CHECK(error.find("ROCm device 0") != std::string::npos);
    CHECK(error.find("no HIP runtime") == std::string::npos);  // it found Debian's
  } else if (mode == "no-runtime") {
    CHECK(status == KH_ERROR_DEVICE);
    CHECK(error.find("no HIP runtime") != std::string::npos);
    CHECK(error.find("libamdhip64.so.7, libamdhip64.so.6, libamdhip64.so.5, libamdhip64.so") != std::string::npos);
  } else {
    FAIL("KH_SHIM_EXPECT='" << mode << "' is not standin6, standin5, no-device or no-runtime");
  }
  kh_kernel_release(kernel);
}
