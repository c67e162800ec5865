// Benchmark (not a test): the CPU-side cost of calling an op through libkh (kh_op_call: the
// schema and tensor checks, the call context, the error mapping) against calling the op's
// own `invoke` from the library's module descriptor with the identical kh_value array and
// stream. Both enqueue the same asynchronous GPU launch; the host clock is read around each
// call, in batches that stay below the launch queue's depth, with a stream synchronize
// (untimed) between batches, the two paths interleaved batch by batch so that drift hits
// both alike. Prints medians per op, the difference (kh's overhead) and the ratio.
//
// Usage: bench_call_overhead <hub-url> <cache-dir> [batches]
// Exit 0 with SKIP where no CUDA driver or device is present. Target (issue 6): overhead
// < 2 us per call. The GPU is reached through the CUDA driver API loaded with dlopen, as
// libkh does, so this builds without a CUDA toolkit.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "kh/kh.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 200;  // launches per batch: the CUDA launch queue holds ~1000

// --- the few driver API entry points needed (cuda.h is not required to build) -----------
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUstream = void*;
using CUdeviceptr = unsigned long long;

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemsetD16)(CUdeviceptr, unsigned short, size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);

  // Empty string on success, else why the GPU is unusable here.
  std::string open() {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return "no CUDA driver (libcuda.so.1)";
    bool ok = bind(h, cuInit, "cuInit") && bind(h, cuDeviceGet, "cuDeviceGet") &&
              bind(h, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              bind(h, cuCtxSetCurrent, "cuCtxSetCurrent") && bind(h, cuMemAlloc, "cuMemAlloc_v2") &&
              bind(h, cuMemsetD16, "cuMemsetD16_v2") && bind(h, cuStreamCreate, "cuStreamCreate") &&
              bind(h, cuStreamSynchronize, "cuStreamSynchronize");
    if (!ok) return "the CUDA driver lacks an entry point this bench uses";
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (cuInit(0) != 0 || cuDeviceGet(&dev, 0) != 0) return "no CUDA device";
    // The primary context: the one the kernel libraries' CUDA runtime uses too.
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != 0 || cuCtxSetCurrent(ctx) != 0) return "no CUDA context";
    return "";
  }

  template <class F>
  static bool bind(void* h, F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(h, name));
    return f != nullptr;
  }

  CUdeviceptr alloc_bf16(size_t n) {  // filled with bf16 1.0 (0x3f80): finite, non-zero
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, n * 2) != 0 || cuMemsetD16(p, 0x3f80, n) != 0) return 0;
    return p;
  }
};

// --- tensors and calls --------------------------------------------------------------------

struct Tensor {  // a contiguous bf16 DLTensor on device 0 and the arrays it points at
  std::vector<int64_t> shape, strides;
  DLTensor dl{};
  Tensor(Driver& d, std::vector<int64_t> dims) : shape(std::move(dims)), strides(shape.size()) {
    int64_t n = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      strides[i] = n;
      n *= shape[i];
    }
    dl.data = reinterpret_cast<void*>(d.alloc_bf16(static_cast<size_t>(n)));
    dl.device = {kDLCUDA, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {kDLBfloat, 16, 1};
    dl.shape = shape.data();
    dl.strides = strides.data();
  }
  kh_value value() { kh_value v{}; v.kind = KH_VALUE_TENSOR; v.u.tensor = &dl; return v; }
};

kh_value scalar(double x) { kh_value v{}; v.kind = KH_VALUE_DOUBLE; v.u.d = x; return v; }
kh_value flag(bool b) { kh_value v{}; v.kind = KH_VALUE_BOOL; v.u.b = b ? 1 : 0; return v; }
kh_value none() { kh_value v{}; v.kind = KH_VALUE_NONE; return v; }

using kh_bench::median;

// The op's own invoke, from the module descriptor of the very library file kh loaded.
kh_op_invoke_fn raw_invoke(const kh_kernel* k, const char* op) {
  const std::string library = kh_bench::package_library(kh_kernel_path(k));
  void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  auto negotiate = h ? reinterpret_cast<kh_kernel_negotiate_fn>(dlsym(h, KH_KERNEL_ENTRY_POINT)) : nullptr;
  kh_negotiation n{};
  n.struct_size = sizeof(n);
  n.loader_min_abi = n.loader_max_abi = KH_ABI_VERSION;
  if (negotiate == nullptr || negotiate(&n) != KH_OK || n.module == nullptr) return nullptr;
  for (uint32_t i = 0; i < n.module->num_ops; ++i)
    if (std::strcmp(n.module->ops[i].name, op) == 0) return n.module->ops[i].invoke;
  return nullptr;
}

struct Row {
  std::string what;
  double kh_us, raw_us;
};

// Times kh_op_call and the raw invoke on `args`, interleaved batch by batch.
bool measure(Driver& d, CUstream stream, const kh_op* op, kh_op_invoke_fn invoke, std::vector<kh_value>& args,
             int batches, Row* row) {
  char error[512] = "";
  kh_call_ctx ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.stream = stream;
  ctx.error_buf = error;
  ctx.error_buf_size = sizeof(error);
  const uint32_t n = static_cast<uint32_t>(args.size());
  // Validate before timing: both paths accept the call.
  if (kh_op_call(op, args.data(), n, stream) != KH_OK) {
    std::fprintf(stderr, "%s: kh_op_call: %s\n", row->what.c_str(), kh_last_error());
    return false;
  }
  if (invoke(args.data(), n, &ctx) != KH_OK) {
    std::fprintf(stderr, "%s: invoke: %s\n", row->what.c_str(), error);
    return false;
  }
  std::vector<double> via_kh, via_raw;
  for (int b = 0; b < batches + 2; ++b) {  // the first two batches warm up
    const bool use_kh = b % 2 == 0;
    std::vector<double>& times = use_kh ? via_kh : via_raw;
    for (int i = 0; i < kBatch; ++i) {
      const auto t0 = Clock::now();
      const kh_status s = use_kh ? kh_op_call(op, args.data(), n, stream) : invoke(args.data(), n, &ctx);
      const auto t1 = Clock::now();
      if (s != KH_OK) return false;
      if (b >= 2) times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (d.cuStreamSynchronize(stream) != 0) return false;
  }
  row->kh_us = median(via_kh);
  row->raw_us = median(via_raw);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <hub-url> <cache-dir> [batches]\n", argv[0]);
    return 2;
  }
  const int batches = argc > 3 ? std::max(2, std::atoi(argv[3])) : 40;
  Driver d{};
  const std::string no_gpu = d.open();
  if (!no_gpu.empty()) {
    std::printf("SKIP: %s; bench_call_overhead needs a CUDA GPU\n", no_gpu.c_str());
    return 0;
  }
  CUstream stream = nullptr;
  if (d.cuStreamCreate(&stream, 1 /* non-blocking */) != 0) return 1;
  kh_load_options options{};
  options.struct_size = sizeof(options);
  options.hub = argv[1];
  options.cache_dir = argv[2];

  std::vector<Row> rows;
  bool ok = true;
  auto bench = [&](const char* spec, const char* opname, const char* what, std::vector<kh_value> args) {
    kh_kernel* k = nullptr;
    const kh_op* op = nullptr;
    if (kh_load_kernel(spec, &options, &k) != KH_OK || kh_kernel_find_op(k, opname, &op) != KH_OK) {
      std::fprintf(stderr, "bench_call_overhead: %s: %s\n", spec, kh_last_error());
      ok = false;
      return;
    }
    kh_op_invoke_fn invoke = raw_invoke(k, opname);
    Row row{std::string(what) + " [" + kh_kernel_variant(k) + "]", 0, 0};
    if (invoke == nullptr || !measure(d, stream, op, invoke, args, batches, &row)) {
      std::fprintf(stderr, "bench_call_overhead: %s failed\n", what);
      ok = false;
    } else {
      rows.push_back(row);
    }
    kh_kernel_release(k);
  };

  Tensor x(d, {16, 4096}), out(d, {16, 4096}), res(d, {16, 4096}), res_out(d, {16, 4096}), w(d, {4096});
  bench("kernels-community/rms-norm@1", "rms_norm", "rms_norm 16x4096 (4 args)",
        {out.value(), x.value(), w.value(), scalar(1e-6)});
  bench("kernels-community/rms-norm@1", "fused_add_rms_norm", "fused_add_rms_norm 16x4096 (6 args)",
        {out.value(), res_out.value(), x.value(), res.value(), w.value(), scalar(1e-6)});
  Tensor q(d, {1, 128, 2, 64}), kk(d, {1, 128, 2, 64}), v(d, {1, 128, 2, 64}), o(d, {1, 128, 2, 64});
  bench("kernels-community/attention@1", "attention_fwd", "attention_fwd 1x128x2x64 (7 args)",
        {o.value(), none(), q.value(), kk.value(), v.value(), scalar(0.125), flag(true)});

  std::printf("CPU time per call (median of %d calls each, async launches on one stream)\n", batches / 2 * kBatch);
  std::printf("| op | via kh_op_call (us) | raw invoke (us) | overhead (us) | ratio | target < 2 us |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const Row& r : rows) {
    const double over = r.kh_us - r.raw_us;
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %s |\n", r.what.c_str(), r.kh_us, r.raw_us, over,
                r.kh_us / r.raw_us, over < 2.0 ? "met" : "MISSED");
  }
  return ok ? 0 : 1;
}
