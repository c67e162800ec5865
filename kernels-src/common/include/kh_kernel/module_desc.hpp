// kh_kernel/module_desc.hpp: a kernel library's module descriptor, made from its op table and
// the identity its build gives it (kh_add_kernel_library: KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
// KH_VARIANT_KEY, KH_DEVICE_TYPE), and the library's one export, kh_kernel_negotiate:
//
//   const kh_op_desc kOps[] = {...};                    // in the package's namespace
//   KH_KERNEL_MODULE(kh_rotary::kOps)                   // at file scope, once per library
#pragma once

#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"

#define KH_KERNEL_MODULE(OPS)                                                                                \
  namespace {                                                                                                \
  const kh_module_desc kh_kernel_module = {sizeof(kh_module_desc), KH_ABI_VERSION,   KH_PACKAGE_NAME,        \
                                           KH_PACKAGE_VERSION,     KH_VARIANT_KEY,   KH_DEVICE_TYPE,         \
                                           sizeof(OPS) / sizeof((OPS)[0]), (OPS)};                           \
  }                                                                                                          \
  extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {                  \
    return kh_kernels::negotiate(negotiation, &kh_kernel_module);                                           \
  }
