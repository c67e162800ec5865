// The exported host API (kh/kh.h). Every function catches every exception and maps it to
// a status plus a thread-local message; nothing C++ crosses the C boundary.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "kh/loader/host_build_chooser.hpp"
#include "image_check.hpp"
#include "kh/loader/kernel_library.hpp"
#include "kh/install/install.hpp"
#include "kh/install/settings.hpp"
#include "kh/kh.h"
#include "kh/registry/hub_schemes.hpp"
#include "kh/registry/signed_metadata.hpp"
#include "kh/registry/status_error.hpp"

struct kh_op {
  const kh::loader::CheckedOp* checked = nullptr;
};

struct kh_kernel {
  std::unique_ptr<kh::loader::KernelLibrary> library;
  std::vector<kh_op> ops;
  std::string path;  // package directory, or the library file for kh_load_kernel_library
};

namespace {

thread_local std::string t_last_error;
constexpr size_t kOpErrorBufferSize = 1024;
thread_local char t_op_error[kOpErrorBufferSize];

kh_status set_error(kh_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

// Runs body, mapping exceptions to statuses and messages.
template <typename Body>
kh_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body();
  } catch (const kh::StatusError& e) {
    return set_error(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(KH_ERROR_OUT_OF_MEMORY, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return set_error(KH_ERROR_INTERNAL, std::string(function) + ": unexpected error: " + e.what());
  } catch (...) {
    return set_error(KH_ERROR_INTERNAL, std::string(function) + ": unexpected non-standard exception");
  }
}

std::unique_ptr<kh_kernel> wrap(std::unique_ptr<kh::loader::KernelLibrary> library, std::string path) {
  auto kernel = std::make_unique<kh_kernel>();
  kernel->path = std::move(path);
  kernel->ops.resize(library->ops().size());
  for (size_t i = 0; i < kernel->ops.size(); ++i) kernel->ops[i].checked = &library->ops()[i];
  kernel->library = std::move(library);
  return kernel;
}

// Reads a field of a caller's options struct only if the caller's struct is new enough to have it.
#define KH_OPTION(options, field) \
  ((options)->struct_size >= offsetof(kh_load_options, field) + sizeof((options)->field) ? (options)->field : 0)

// The caller's options over the settings (every field the caller's struct_size covers).
// Throws StatusError(KH_ERROR_INVALID_ARGUMENT) for a struct too small to be one.
kh::install::Options load_options(const kh_load_options* options, const char* function) {
  kh::install::Options o;
  if (options == nullptr) return o;
  if (options->struct_size < offsetof(kh_load_options, hub))
    kh::fail(KH_ERROR_INVALID_ARGUMENT, std::string(function) +
                                            ": options->struct_size is too small; set it to sizeof(kh_load_options)");
  if (const char* hub = KH_OPTION(options, hub)) o.hub_url = hub;
  if (const char* cache = KH_OPTION(options, cache_dir)) o.cache_root = cache;
  if (const char* variant = KH_OPTION(options, variant)) o.variant = variant;
  if (const char* lockfile = KH_OPTION(options, lockfile)) o.lockfile = lockfile;
  o.offline = (KH_OPTION(options, flags) & KH_LOAD_OFFLINE) != 0;
  if (const uint32_t ms = KH_OPTION(options, timeout_ms)) {
    o.timeout_s = ms / 1000.0;
    o.timeout_setting = "kh_load_options.timeout_ms";
  }
  const char* root = KH_OPTION(options, trusted_root);
  const size_t root_size = KH_OPTION(options, trusted_root_size);
  if (root != nullptr) {
    if (root_size == 0 || root_size > kh::registry::kMaxRootBytes)
      kh::fail(KH_ERROR_INVALID_ARGUMENT, std::string(function) + ": options->trusted_root_size is " +
                                              std::to_string(root_size) + "; give the size of the root.json bytes (1 to " +
                                              std::to_string(kh::registry::kMaxRootBytes) + ")");
    o.trusted_root.assign(root, root_size);
    o.trusted_root_source = "kh_load_options.trusted_root";
  }
  return o;
}

}  // namespace

extern "C" {

kh_status kh_load_kernel(const char* spec, const kh_load_options* options, kh_kernel** out) {
  return guarded("kh_load_kernel", [&]() -> kh_status {
    if (out == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_load_kernel: out is NULL");
    *out = nullptr;
    if (spec == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_load_kernel: spec is NULL");
    // The environment is read here, once per load, and nowhere below.
    kh::install::Settings settings = kh::install::Settings::from_environment();
    kh::install::Options fetch = load_options(options, "kh_load_kernel");
    fetch.metadata_max_age_s = settings.metadata_ttl_s;
    kh::loader::DeviceRequest device;
    if (options != nullptr) {
      // A host built against 1.0 passes a struct without these: device 0, as before.
      device.device_type = KH_OPTION(options, device_type);
      device.device_id = KH_OPTION(options, device_id);
    }
    fetch.selection_key = kh::loader::host_selection_key(device);
    kh::install::Session session(std::move(settings), fetch, kh::loader::host_build_chooser(device));
    const kh::install::InstalledPackage pkg = kh::install::get(session, spec);
    // A GPU build the device cannot run fails here, not at its first launch.
    kh::loader::check_device_runs_build(kh::loader::host_facts(), device, pkg.variant, pkg.dir,
                                        pkg.repo + " " + pkg.version);
    auto library = kh::loader::KernelLibrary::open(pkg.library_path, pkg.library_sha256);
    const kh_module_desc& m = library->module();
    if (pkg.repo != m.name || pkg.version != m.version || pkg.variant != m.variant)
      return set_error(KH_ERROR_VERIFICATION, "kernel library " + pkg.library_path + " calls itself " + m.name + " " +
                                                  m.version + " (" + m.variant + ") but its package is " + pkg.repo + " " +
                                                  pkg.version + " (" + pkg.variant + ")");
    *out = wrap(std::move(library), pkg.dir).release();
    return KH_OK;
  });
}

kh_status kh_trust_root(const kh_load_options* options) {
  return guarded("kh_trust_root", [&]() -> kh_status {
    kh::install::Options given = load_options(options, "kh_trust_root");
    given.trusted_root_source = "the root given to kh_trust_root";
    if (given.trusted_root.empty())
      return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_trust_root: options->trusted_root is NULL; give the root.json bytes to pin");
    const kh::install::Settings settings = kh::install::Settings::from_environment();
    const std::string hub_url = given.hub_url.empty() ? settings.hub : given.hub_url;
    if (hub_url.empty())
      return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_trust_root: no hub to pin the root for: set options->hub or KH_HUB");
    const kh::registry::Cache cache(given.cache_root.empty() ? settings.cache_root() : given.cache_root,
                                    settings.lock_policy());
    const std::unique_ptr<kh::registry::Hub> hub = kh::registry::open_hub(hub_url, settings.hub_access(hub_url));
    kh::registry::TrustStore(cache, hub->id()).pin_or_match(given.trusted_root, given.trusted_root_source, hub->url());
    return KH_OK;
  });
}

kh_status kh_load_kernel_library(const char* path, kh_kernel** out) {
  return guarded("kh_load_kernel_library", [&]() -> kh_status {
    if (out == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_load_kernel_library: out is NULL");
    *out = nullptr;
    if (path == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_load_kernel_library: path is NULL");
    *out = wrap(kh::loader::KernelLibrary::open(path, ""), path).release();
    return KH_OK;
  });
}

void kh_kernel_release(kh_kernel* kernel) { delete kernel; }

const char* kh_kernel_name(const kh_kernel* k) { return k ? k->library->module().name : ""; }
const char* kh_kernel_version(const kh_kernel* k) { return k ? k->library->module().version : ""; }
const char* kh_kernel_variant(const kh_kernel* k) { return k ? k->library->module().variant : ""; }
const char* kh_kernel_path(const kh_kernel* k) { return k ? k->path.c_str() : ""; }
int32_t kh_kernel_device_type(const kh_kernel* k) {
  return k ? static_cast<int32_t>(k->library->module().device_type) : 0;
}

uint32_t kh_kernel_num_ops(const kh_kernel* k) { return k ? static_cast<uint32_t>(k->ops.size()) : 0; }

const kh_op* kh_kernel_op_at(const kh_kernel* k, uint32_t index) {
  return (k && index < k->ops.size()) ? &k->ops[index] : nullptr;
}

kh_status kh_kernel_find_op(const kh_kernel* k, const char* name, const kh_op** out) {
  return guarded("kh_kernel_find_op", [&]() -> kh_status {
    if (out == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_kernel_find_op: out is NULL");
    *out = nullptr;
    if (k == nullptr || name == nullptr)
      return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_kernel_find_op: kernel or name is NULL");
    for (const kh_op& op : k->ops) {
      if (std::strcmp(op.checked->desc->name, name) == 0) {
        *out = &op;
        return KH_OK;
      }
    }
    std::string names;
    for (const kh_op& op : k->ops) names += std::string(names.empty() ? "" : ", ") + op.checked->desc->name;
    return set_error(KH_ERROR_NOT_FOUND, std::string(k->library->module().name) + " has no op '" + name +
                                             "'; its ops: " + (names.empty() ? "(none)" : names));
  });
}

const char* kh_op_name(const kh_op* op) { return op ? op->checked->desc->name : ""; }
const char* kh_op_schema(const kh_op* op) { return op ? op->checked->desc->schema : ""; }
uint32_t kh_op_num_args(const kh_op* op) { return op ? static_cast<uint32_t>(op->checked->schema.args.size()) : 0; }

namespace {

// The arguments as the op gets them: trailing ones left out take their schema defaults, on
// the stack for any real op so that a call allocates nothing; then the loader's checks.
class PreparedArgs {
 public:
  kh_status prepare(const kh_op* op, const kh_value*& args, uint32_t& nargs, kh::loader::CallCheck mode) {
    std::string message;
    const size_t expected = op->checked->schema.args.size();
    if (nargs < expected && (args != nullptr || nargs == 0)) {
      kh_value* filled = on_stack_;
      if (expected > kOnStack) {
        on_heap_.resize(expected);
        filled = on_heap_.data();
      }
      const kh_status defaults = kh::loader::fill_defaults(*op->checked, args, nargs, filled, &message);
      if (defaults != KH_OK) return set_error(defaults, std::move(message));
      args = filled;
      nargs = static_cast<uint32_t>(expected);
    }
    const kh_status checked = kh::loader::check_call(*op->checked, args, nargs, &message, mode);
    if (checked != KH_OK) return set_error(checked, std::move(message));
    return KH_OK;
  }

 private:
  static constexpr size_t kOnStack = 32;
  kh_value on_stack_[kOnStack];
  std::vector<kh_value> on_heap_;
};

// The context a kernel reports its failures through (this thread's error buffer).
kh_call_ctx op_context(void* stream) {
  kh_call_ctx ctx;
  ctx.struct_size = sizeof(ctx);
  ctx.reserved = 0;
  ctx.stream = stream;
  ctx.error_buf = t_op_error;
  ctx.error_buf_size = kOpErrorBufferSize;
  t_op_error[0] = '\0';
  return ctx;
}

// A kernel's failure, its message numbered by argument and prefixed with the op's name.
kh_status kernel_error(const kh_op* op, kh_status status) {
  t_op_error[kOpErrorBufferSize - 1] = '\0';
  const std::string& name = op->checked->schema.name;
  std::string detail = t_op_error[0] ? t_op_error : "the kernel reported no detail";
  // Kernels usually name their op already; prefix it only where they did not.
  if (detail.compare(0, name.size() + 1, name + ":") != 0) detail = name + ": " + detail;
  return set_error(status, kh::loader::number_arguments(op->checked->schema, std::move(detail)));
}

}  // namespace

kh_status kh_op_call(const kh_op* op, const kh_value* args, uint32_t nargs, void* stream) {
  return guarded("kh_op_call", [&]() -> kh_status {
    if (op == nullptr) return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_op_call: op is NULL");
    PreparedArgs prepared;
    const kh_status ready = prepared.prepare(op, args, nargs, kh::loader::CallCheck::kCall);
    if (ready != KH_OK) return ready;
    const kh_call_ctx ctx = op_context(stream);
    const kh_status status = op->checked->desc->invoke(args, nargs, &ctx);
    return status == KH_OK ? KH_OK : kernel_error(op, status);
  });
}

kh_status kh_op_workspace_size(const kh_op* op, const kh_value* args, uint32_t nargs, uint64_t* bytes) {
  return guarded("kh_op_workspace_size", [&]() -> kh_status {
    if (op == nullptr || bytes == nullptr)
      return set_error(KH_ERROR_INVALID_ARGUMENT, "kh_op_workspace_size: op and bytes must not be NULL");
    *bytes = 0;
    const kh::loader::CheckedOp& checked = *op->checked;
    if (checked.workspace_size == nullptr)
      return set_error(KH_ERROR_UNSUPPORTED,
                       checked.schema.name + (checked.workspace_arg < 0
                                                  ? ": the op does not give a workspace size (it takes no workspace, or "
                                                    "its library was built before kh_op_workspace_size existed: size "
                                                    "the workspace by the op's docs)"
                                                  : ": the op does not answer kh_op_workspace_size; size its workspace "
                                                    "by the op's docs"));
    PreparedArgs prepared;
    const kh_status ready = prepared.prepare(op, args, nargs, kh::loader::CallCheck::kShapesOnly);
    if (ready != KH_OK) return ready;
    const kh_call_ctx ctx = op_context(nullptr);
    uint64_t answer = 0;
    const kh_status status = checked.workspace_size(args, nargs, &ctx, &answer);
    if (status != KH_OK) return kernel_error(op, status);
    *bytes = answer;
    return KH_OK;
  });
}

int32_t kh_op_workspace_arg(const kh_op* op) { return op ? op->checked->workspace_arg : -1; }

const char* kh_status_string(kh_status status) {
  switch (status) {
    case KH_OK: return "KH_OK";
    case KH_ERROR_INVALID_ARGUMENT: return "KH_ERROR_INVALID_ARGUMENT";
    case KH_ERROR_NOT_FOUND: return "KH_ERROR_NOT_FOUND";
    case KH_ERROR_NETWORK: return "KH_ERROR_NETWORK";
    case KH_ERROR_VERIFICATION: return "KH_ERROR_VERIFICATION";
    case KH_ERROR_BAD_METADATA: return "KH_ERROR_BAD_METADATA";
    case KH_ERROR_BAD_ARCHIVE: return "KH_ERROR_BAD_ARCHIVE";
    case KH_ERROR_ABI_MISMATCH: return "KH_ERROR_ABI_MISMATCH";
    case KH_ERROR_LOAD_FAILED: return "KH_ERROR_LOAD_FAILED";
    case KH_ERROR_NO_COMPATIBLE_VARIANT: return "KH_ERROR_NO_COMPATIBLE_VARIANT";
    case KH_ERROR_IO: return "KH_ERROR_IO";
    case KH_ERROR_OFFLINE: return "KH_ERROR_OFFLINE";
    case KH_ERROR_UNSUPPORTED: return "KH_ERROR_UNSUPPORTED";
    case KH_ERROR_DEVICE: return "KH_ERROR_DEVICE";
    case KH_ERROR_INTERNAL: return "KH_ERROR_INTERNAL";
    case KH_ERROR_OUT_OF_MEMORY: return "KH_ERROR_OUT_OF_MEMORY";
    case KH_ERROR_LOCKED: return "KH_ERROR_LOCKED";
    case KH_ERROR_SIGNATURE: return "KH_ERROR_SIGNATURE";
    case KH_ERROR_ROLLBACK: return "KH_ERROR_ROLLBACK";
    case KH_ERROR_EXPIRED: return "KH_ERROR_EXPIRED";
    case KH_ERROR_TIMEOUT: return "KH_ERROR_TIMEOUT";
    default: return "KH_ERROR_UNKNOWN_STATUS";
  }
}

const char* kh_last_error(void) { return t_last_error.c_str(); }

uint32_t kh_abi_version(void) { return KH_ABI_VERSION; }

const char* kh_version_string(void) { return KH_VERSION_STRING; }

}  // extern "C"
