// A stand-in HIP runtime for the HIP shim's loader test: built with a real runtime's soname
// (libamdhip64.so.6, and linked as .so.5 for the fallback), it answers the calls a kernel
// library's shim makes as one MI300X would, and appends one line per call to the file
// $KH_HIP_STANDIN_LOG: what code object it was given, which function was looked up, what
// grid, block, stream and arguments a launch had. It runs no kernel.
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void log_line(const char* format, ...) {
  const char* path = std::getenv("KH_HIP_STANDIN_LOG");
  if (path == nullptr) return;
  FILE* f = std::fopen(path, "a");
  if (f == nullptr) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(f, format, args);
  va_end(args);
  std::fputc('\n', f);
  std::fclose(f);
}

struct Module {
  int id;
};
struct Function {
  std::string name;
};
int g_device = 0;
int g_modules = 0;

__attribute__((constructor)) void say_loaded() {
  Dl_info info{};
  ::dladdr(reinterpret_cast<void*>(&say_loaded), &info);
  log_line("loaded %s", info.dli_fname ? info.dli_fname : "?");
}

}  // namespace

extern "C" {

hipError_t hipRuntimeGetVersion(int* v) { *v = 60243483; return hipSuccess; }  // HIP 6.2
hipError_t hipDriverGetVersion(int* v) { *v = 60243483; return hipSuccess; }
hipError_t hipGetDeviceCount(int* n) { *n = 1; return hipSuccess; }
hipError_t hipGetDevice(int* d) {
  log_line("hipGetDevice %d", g_device);
  *d = g_device;
  return hipSuccess;
}
hipError_t hipSetDevice(int d) {
  log_line("hipSetDevice %d", d);
  if (d != 0) return hipErrorInvalidDevice;
  g_device = d;
  return hipSuccess;
}
hipError_t hipDeviceGetAttribute(int* value, hipDeviceAttribute_t attribute, int device) {
  *value = attribute == hipDeviceAttributeMultiprocessorCount ? 304 : 0;
  log_line("hipDeviceGetAttribute %d device=%d -> %d", static_cast<int>(attribute), device, *value);
  return hipSuccess;
}
hipError_t hipGetLastError(void) { return hipSuccess; }
hipError_t hipPeekAtLastError(void) { return hipSuccess; }
const char* hipGetErrorName(hipError_t) { return "hipErrorStandin"; }
const char* hipGetErrorString(hipError_t) { return "an error of the stand-in runtime"; }

hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  // The ELF header of an AMDGPU code object: e_machine EM_AMDGPU (224), the processor in the
  // low byte of e_flags (EF_AMDGPU_MACH_AMDGCN_GFX942 = 0x4c), e_ident[8] its ABI version.
  const auto* p = static_cast<const unsigned char*>(image);
  uint16_t machine = 0;
  uint32_t flags = 0;
  std::memcpy(&machine, p + 18, 2);
  std::memcpy(&flags, p + 48, 4);
  log_line("hipModuleLoadData elf=%d machine=%u mach=0x%x abi_version=%u", std::memcmp(p, "\x7f" "ELF", 4) == 0,
           machine, flags & 0xffu, p[8]);
  *module = reinterpret_cast<hipModule_t>(new Module{++g_modules});
  return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  log_line("hipModuleGetFunction module=%d name=%s", reinterpret_cast<Module*>(module)->id, name);
  *function = reinterpret_cast<hipFunction_t>(new Function{name});
  return hipSuccess;
}

hipError_t hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, hipFunction_t f, int block_size, size_t shared) {
  log_line("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor name=%s block=%d shared=%zu",
           reinterpret_cast<Function*>(f)->name.c_str(), block_size, shared);
  *blocks = 4;
  return hipSuccess;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, hipStream_t stream, void** params, void** extra) {
  // The first KH_HIP_STANDIN_ARG_BYTES (default 48) bytes of the first kernel argument, as
  // 8-byte words: what the test knows of the kernel's argument struct.
  const char* n = std::getenv("KH_HIP_STANDIN_ARG_BYTES");
  const size_t bytes = n ? std::strtoul(n, nullptr, 10) : 48;
  std::string words;
  for (size_t i = 0; params != nullptr && params[0] != nullptr && i + 8 <= bytes; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, static_cast<const char*>(params[0]) + i, 8);
    char text[24];
    std::snprintf(text, sizeof text, "%s0x%llx", words.empty() ? "" : ",", static_cast<unsigned long long>(w));
    words += text;
  }
  log_line("hipModuleLaunchKernel name=%s grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%p extra=%p arg0=%s",
           reinterpret_cast<Function*>(f)->name.c_str(), gx, gy, gz, bx, by, bz, shared, static_cast<void*>(stream),
           static_cast<void*>(extra), words.c_str());
  return hipSuccess;
}

hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
  log_line("hipMemsetAsync %p %d %zu %p", dst, value, bytes, static_cast<void*>(stream));
  return hipSuccess;
}
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t stream) {
  log_line("hipMemcpyAsync %p %p %zu %d %p", dst, src, bytes, static_cast<int>(kind), static_cast<void*>(stream));
  return hipSuccess;
}

}  // extern "C"
