// kh_kernel/negotiate.hpp: the ABI negotiation every kernel library's kh_kernel_negotiate()
// performs (see kh/kernel_abi.h): accept the loader's range if it holds the ABI version this
// library was built against, then hand out the module descriptor.
#pragma once

#include <cstddef>

#include "kh/kernel_abi.h"

namespace kh_kernels {

// Fills negotiation->kernel_abi and ->module and returns KH_OK when the loader's
// [loader_min_abi, loader_max_abi] admits module->abi_version (same major, minor not newer
// than the loader's); otherwise returns KH_ERROR_ABI_MISMATCH, leaving module NULL but
// kernel_abi set so the loader can say which version the library speaks.
inline kh_status negotiate(kh_negotiation* negotiation, const kh_module_desc* module) noexcept {
  if (negotiation == nullptr || module == nullptr) return KH_ERROR_INVALID_ARGUMENT;
  if (negotiation->struct_size < offsetof(kh_negotiation, module) + sizeof(negotiation->module))
    return KH_ERROR_ABI_MISMATCH;  // a loader too old to receive the module
  const uint32_t ours = module->abi_version;
  negotiation->kernel_abi = ours;
  negotiation->module = nullptr;
  const uint32_t lo = negotiation->loader_min_abi;
  const uint32_t hi = negotiation->loader_max_abi;
  // Packed versions order as (major, minor), so "same major, minor not newer" is this range test.
  if (lo > hi || ours < lo || ours > hi) return KH_ERROR_ABI_MISMATCH;
  negotiation->module = module;
  return KH_OK;
}

}  // namespace kh_kernels
