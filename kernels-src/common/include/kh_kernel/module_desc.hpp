// kh_kernel/module_desc.hpp: a kernel library's module descriptor, made from its op table and
// the identity its build gives it (kh_add_kernel_library: KH_PACKAGE_NAME, KH_PACKAGE_VERSION,
// KH_VARIANT_KEY, KH_DEVICE_TYPE), and the library's one export, kh_kernel_negotiate:
//
//   const kh_op_desc kOps[] = {...};                    // in the package's namespace
//   KH_KERNEL_MODULE(kh_rotary::kOps)                   // at file scope, once per library
//
// A library whose ops take a workspace says which argument it is and how large it must be
// for a call (kh_op_ext), by op name:
//
//   constexpr kh_op_desc kOps[] = {...};
//   constexpr kh_kernels::OpWorkspace kWorkspaces[] = {{"decode", kDecWorkspaceArg, &decode_workspace}};
//   constexpr auto kOpExt = kh_kernels::op_ext_table(kOps, kWorkspaces);
//   KH_KERNEL_MODULE_EXT(kh_x::kOps, kh_x::kOpExt)
#pragma once

#include <array>
#include <cstddef>

#include "kh/kernel_abi.h"
#include "kh_kernel/negotiate.hpp"

namespace kh_kernels {

// An op with a workspace: its name, the schema argument that is the workspace, its size query.
struct OpWorkspace {
  const char* op;
  int32_t arg;
  kh_op_workspace_fn size;
};

constexpr bool same_name(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

// True when every entry of `workspaces` names an op of `ops` (a misspelt name would leave an
// op without its query, silently).
template <size_t N, size_t M>
constexpr bool names_ops(const kh_op_desc (&ops)[N], const OpWorkspace (&workspaces)[M]) {
  for (size_t j = 0; j < M; ++j) {
    bool found = false;
    for (size_t i = 0; i < N; ++i) found = found || same_name(ops[i].name, workspaces[j].op);
    if (!found) return false;
  }
  return true;
}

// One kh_op_ext per op, in the op table's order: the workspace entry naming it, else none.
template <size_t N, size_t M>
constexpr std::array<kh_op_ext, N> op_ext_table(const kh_op_desc (&ops)[N], const OpWorkspace (&workspaces)[M]) {
  std::array<kh_op_ext, N> table{};
  for (size_t i = 0; i < N; ++i) {
    table[i] = kh_op_ext{sizeof(kh_op_ext), -1, nullptr};
    for (size_t j = 0; j < M; ++j)
      if (same_name(ops[i].name, workspaces[j].op)) table[i] = kh_op_ext{sizeof(kh_op_ext), workspaces[j].arg, workspaces[j].size};
  }
  return table;
}

}  // namespace kh_kernels

#define KH_KERNEL_MODULE(OPS)                                                                                \
  namespace {                                                                                                \
  const kh_module_desc kh_kernel_module = {sizeof(kh_module_desc), KH_ABI_VERSION,   KH_PACKAGE_NAME,        \
                                           KH_PACKAGE_VERSION,     KH_VARIANT_KEY,   KH_DEVICE_TYPE,         \
                                           sizeof(OPS) / sizeof((OPS)[0]), (OPS)};                           \
  }                                                                                                          \
  extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {                  \
    return kh_kernels::negotiate(negotiation, &kh_kernel_module);                                           \
  }

// KH_KERNEL_MODULE with each op's kh_op_ext (op_ext_table above).
#define KH_KERNEL_MODULE_EXT(OPS, EXT)                                                                       \
  static_assert(sizeof(OPS) / sizeof((OPS)[0]) == (EXT).size(), "one kh_op_ext per op");                    \
  namespace {                                                                                                \
  const kh_module_desc kh_kernel_module = {sizeof(kh_module_desc), KH_ABI_VERSION,   KH_PACKAGE_NAME,        \
                                           KH_PACKAGE_VERSION,     KH_VARIANT_KEY,   KH_DEVICE_TYPE,         \
                                           sizeof(OPS) / sizeof((OPS)[0]), (OPS), (EXT).data(),              \
                                           sizeof(kh_op_ext),      0};                                       \
  }                                                                                                          \
  extern "C" KH_KERNEL_EXPORT kh_status kh_kernel_negotiate(kh_negotiation* negotiation) {                  \
    return kh_kernels::negotiate(negotiation, &kh_kernel_module);                                           \
  }
