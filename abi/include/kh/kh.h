/* kh/kh.h: the host API of kh, the kernel hub. Stable C ABI, version 1.0.
 *
 * A host loads a kernel package by spec ("kernels-community/rms-norm@1"), looks up ops by
 * name and calls them on DLPack tensors and its own stream:
 *
 *   kh_kernel* k = NULL;
 *   if (kh_load_kernel("kernels-community/rms-norm@1", NULL, &k) != KH_OK)
 *     fprintf(stderr, "%s\n", kh_last_error());
 *   const kh_op* op = NULL;
 *   kh_kernel_find_op(k, "rms_norm", &op);
 *   kh_op_call(op, args, nargs, stream);
 *   kh_kernel_release(k);
 *
 * Ownership: every handle returned is owned by the kh_kernel it came from and lives until
 * kh_kernel_release(). Strings returned live as long as their handle, except
 * kh_last_error()'s, which lives until the calling thread's next kh call.
 * Every function here is safe to call with NULL handles: it returns an error (or does
 * nothing, for release) rather than crash. No function lets a C++ exception escape.
 *
 * C99-clean. */
#ifndef KH_KH_H
#define KH_KH_H

#include <stddef.h>
#include <stdint.h>

#include "kh/kernel_abi.h"
#include "kh/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KH_API __attribute__((visibility("default")))
#else
#define KH_API
#endif

typedef struct kh_kernel kh_kernel; /* a loaded kernel package */
typedef struct kh_op kh_op;         /* one op of a loaded package */

/* kh_load_options.flags */
#define KH_LOAD_OFFLINE (1u << 0) /* use the cache and cached metadata only; no connection */

/* Options of kh_load_kernel(). Zero-initialise, set struct_size, fill what you need;
 * NULL strings take the default. Passing NULL instead of the struct takes every default. */
typedef struct kh_load_options {
  uint32_t struct_size; /* sizeof(kh_load_options) */
  uint32_t flags;       /* KH_LOAD_* bits; KH_OFFLINE=1 in the environment adds OFFLINE */
  const char* hub;       /* hub URL; default $KH_HUB */
  const char* cache_dir; /* cache root; default $KH_CACHE, else $XDG_CACHE_HOME/kh, else ~/.cache/kh */
  const char* variant;   /* force this variant key; default $KH_TARGET, else select for this machine */
  const char* lockfile;  /* resolve only what this kernels.lock pins; default $KH_LOCKFILE */
  /* --- appended later: hosts built against an older kh.h pass a smaller struct_size and get device 0 --- */
  /* The GPU to select the build for, as DLPack names devices (DLDevice): device_type kDLCUDA (2)
   * or kDLROCM (10) and that backend's device ordinal device_id (CUDA_VISIBLE_DEVICES and
   * HIP_VISIBLE_DEVICES apply, as for the host's own runtime). device_type 0: each GPU build is
   * judged against device device_id of its own backend. Default {0, 0}: the first GPU. A device
   * this machine lacks is KH_ERROR_INVALID_ARGUMENT. Loading one package for two devices of
   * different archs gives two kernels, each with its build (kh_kernel_variant). */
  int32_t device_type;
  int32_t device_id;
  /* --- appended later: a host built against an older kh.h passes a smaller struct_size and gets the
   * defaults below (KH_OPERATION_TIMEOUT; KH_TRUSTED_ROOT, else the cache's own pin) --- */
  /* The operation's deadline, in milliseconds from the call: resolving, downloading and waiting for
   * another process's cache lock all end by it, with KH_ERROR_TIMEOUT naming the hub (or lock) and
   * what was awaited; the cache is then as before the call. 0: KH_OPERATION_TIMEOUT (default 1800 s).
   * A package whose cached metadata is fresh (KH_METADATA_TTL) loads without asking the hub at all;
   * within KH_STALE_GRACE of that, the hub gets half of what is left before the cached copy serves. */
  uint32_t timeout_ms;
  /* A hub's root of trust shipped with the host: the bytes of its root.json (trusted_root_size of
   * them; no NUL needed), read during the call only. A cache with no pinned root for the hub is
   * pinned to exactly this root on first use (no `kernels trust`); a cache pinned to another root
   * for that hub is KH_ERROR_SIGNATURE naming both, never re-pinned. NULL: $KH_TRUSTED_ROOT (a file),
   * else whatever the cache has pinned. See docs/trust.md. */
  const char* trusted_root;
  size_t trusted_root_size;
} kh_load_options;

/* Resolves spec ("org/name", "org/name@1.2", "org/name@sha256:<hex>", ...), uses the
 * cache when it already holds a matching verified package, else fetches and verifies it
 * from the hub; then loads it and negotiates the ABI. On success *out owns the package. */
KH_API kh_status kh_load_kernel(const char* spec, const kh_load_options* options, kh_kernel** out);

/* Pins options->trusted_root as the root of trust of options->hub (default $KH_HUB) in the cache
 * options->cache_dir (default as for kh_load_kernel), as `kernels trust` does, fetching nothing: with no
 * pin yet it becomes the pin; the same root again is KH_OK; a cache pinned to another root for that hub
 * is KH_ERROR_SIGNATURE naming both. A root that is malformed or not self-signed by a threshold of its
 * root keys is refused (KH_ERROR_BAD_METADATA, KH_ERROR_SIGNATURE) and nothing is written. The other
 * fields are ignored. */
KH_API kh_status kh_trust_root(const kh_load_options* options);

/* Loads a kernel library from a local file with no hub, cache or verification. For kernel
 * authors and tests; hosts should load verified packages with kh_load_kernel(). */
KH_API kh_status kh_load_kernel_library(const char* path, kh_kernel** out);

/* Unloads the package. Ops obtained from it must not be used afterwards. NULL is ignored. */
KH_API void kh_kernel_release(kh_kernel* kernel);

/* What was loaded. Strings live as long as the kernel. */
KH_API const char* kh_kernel_name(const kh_kernel* kernel);    /* "kernels-community/rms-norm" */
KH_API const char* kh_kernel_version(const kh_kernel* kernel); /* "1.0.0" */
KH_API const char* kh_kernel_variant(const kh_kernel* kernel); /* variant key */
KH_API const char* kh_kernel_path(const kh_kernel* kernel);    /* the package's directory in the cache, or the library file */
KH_API int32_t kh_kernel_device_type(const kh_kernel* kernel); /* DLDeviceType of its ops */

KH_API uint32_t kh_kernel_num_ops(const kh_kernel* kernel);
KH_API const kh_op* kh_kernel_op_at(const kh_kernel* kernel, uint32_t index); /* NULL if out of range */
KH_API kh_status kh_kernel_find_op(const kh_kernel* kernel, const char* name, const kh_op** out);

KH_API const char* kh_op_name(const kh_op* op);
KH_API const char* kh_op_schema(const kh_op* op);
KH_API uint32_t kh_op_num_args(const kh_op* op);

/* Calls the op. The arguments are checked against the op's schema and constraints first
 * (count, kinds, dtypes, ranks, devices); a bad call returns KH_ERROR_INVALID_ARGUMENT
 * with a message naming the argument and never reaches the kernel. stream is the host's
 * cudaStream_t / hipStream_t (NULL: default stream; ignored by CPU kernels).
 * Trailing arguments whose schema gives a default ("int window_left=-1", "Tensor? x=None")
 * may be left out (nargs below kh_op_num_args()): the op gets the defaults. Leaving out one
 * without a default is KH_ERROR_INVALID_ARGUMENT naming it. */
KH_API kh_status kh_op_call(const kh_op* op, const kh_value* args, uint32_t nargs, void* stream);

/* The bytes of workspace a call of op with these arguments needs, from the kernel itself, so
 * a host never re-derives a package's sizing rule. The arguments are those the call will
 * take, checked the same way, except that tensor data pointers may be NULL (shapes, strides,
 * dtypes and devices are what count) and the workspace argument (kh_op_workspace_arg) may be
 * KH_VALUE_NONE. KH_OK with *bytes; KH_ERROR_UNSUPPORTED when the op does not answer (it
 * takes no workspace, or its library was built before the query existed: size it by the
 * op's docs); other statuses as kh_op_call's for arguments the call would refuse. */
KH_API kh_status kh_op_workspace_size(const kh_op* op, const kh_value* args, uint32_t nargs, uint64_t* bytes);
/* The schema index of op's workspace argument, or -1 when it has none or does not say. */
KH_API int32_t kh_op_workspace_arg(const kh_op* op);

/* A fixed English name for a status code ("KH_ERROR_NOT_FOUND"); never NULL. */
KH_API const char* kh_status_string(kh_status status);

/* Detail of the last failure on this thread ("" if none). */
KH_API const char* kh_last_error(void);

/* The host ABI version this library implements (KH_ABI_VERSION) and its release. */
KH_API uint32_t kh_abi_version(void);
KH_API const char* kh_version_string(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KH_KH_H */
