// Coverage of a release over the known GPUs; see coverage.hpp.
#include "kh/loader/coverage.hpp"

#include "kh/platform/known_targets.hpp"

namespace kh::loader {
namespace {

// A machine like `like` with one GPU and a driver and runtime newer than any build needs.
HostFacts with_gpu(const HostFacts& like, GpuDevice gpu) {
  HostFacts h = like;
  h.gpus = {std::move(gpu)};
  h.cuda_driver_major = h.rocm_major = 99;
  h.cuda_driver_minor = h.rocm_minor = 0;
  h.glibc_major = 99;  // coverage is about device code; the glibc floor is `kernels doctor`'s
  return h;
}

CoverageRow judge(const std::vector<registry::VariantEntry>& variants, const HostFacts& host, CoverageRow row) {
  const VariantSelection selection = select_variant(variants, host);
  for (const VariantVerdict& v : selection.verdicts) {
    if (v.device == nullptr) continue;  // CPU builds do not count as running on the GPU
    if (v.compatible) {
      row.runs = v.fit == platform::Fit::PtxJit ? CoverageRow::Runs::PtxJit : CoverageRow::Runs::Native;
      row.variant = v.entry->key;
      row.fit = v.fit;
      row.reason = v.reason;
      return row;
    }
    if (row.reason.empty()) row.reason = v.entry->key + ": " + v.reason;
  }
  if (row.reason.empty()) row.reason = "no build for this backend";
  return row;
}

}  // namespace

const char* runs_name(CoverageRow::Runs runs) {
  switch (runs) {
    case CoverageRow::Runs::Native: return "native";
    case CoverageRow::Runs::PtxJit: return "ptx-jit";
    case CoverageRow::Runs::No: return "no";
  }
  return "?";
}

std::vector<CoverageRow> release_coverage(const std::vector<registry::VariantEntry>& variants, const HostFacts& like) {
  std::vector<CoverageRow> rows;
  for (const platform::KnownCudaGpu& known : platform::known_cuda_gpus()) {
    GpuDevice gpu;
    gpu.backend = platform::Backend::Cuda;
    gpu.major = known.major;
    gpu.minor = known.minor;
    gpu.arch = "sm" + std::to_string(known.major) + std::to_string(known.minor);
    CoverageRow row;
    row.backend = gpu.backend;
    row.arch = gpu.arch;
    row.examples = known.examples;
    rows.push_back(judge(variants, with_gpu(like, gpu), row));
  }
  for (const platform::KnownAmdGpu& known : platform::known_amd_gpus()) {
    const auto target = platform::parse_amd_target(known.processor);
    GpuDevice gpu;
    gpu.backend = platform::Backend::Rocm;
    gpu.arch = known.processor;
    gpu.major = target->major;
    gpu.minor = target->minor;
    CoverageRow row;
    row.backend = gpu.backend;
    row.arch = gpu.arch;
    row.examples = known.examples;
    rows.push_back(judge(variants, with_gpu(like, gpu), row));
  }
  return rows;
}

}  // namespace kh::loader
