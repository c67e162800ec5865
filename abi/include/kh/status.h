/* kh/status.h: the status codes every kh function and kernel op returns.
 *
 * Its own header so that code which reports statuses but never touches a tensor (the hub
 * client: registry/, install/) needs neither DLPack nor the kernel ABI. kernel_abi.h and
 * kh.h include it: users of those see no change.
 *
 * C99-clean; depends on nothing but <stdint.h>. */
#ifndef KH_STATUS_H
#define KH_STATUS_H

#include <stdint.h>

/* Status codes. Values are fixed forever; new codes are only appended. */
typedef int32_t kh_status;
#define KH_OK 0
#define KH_ERROR_INVALID_ARGUMENT 1      /* a bad argument to an API function or an op */
#define KH_ERROR_NOT_FOUND 2             /* unknown repo, version, variant or op */
#define KH_ERROR_NETWORK 3               /* a transfer from a hub failed */
#define KH_ERROR_VERIFICATION 4          /* size or sha256 of downloaded bytes is wrong */
#define KH_ERROR_BAD_METADATA 5          /* hub metadata is malformed or of an unknown schema */
#define KH_ERROR_BAD_ARCHIVE 6           /* a package archive is malformed or unsafe */
#define KH_ERROR_ABI_MISMATCH 7          /* a kernel library speaks no ABI version we speak */
#define KH_ERROR_LOAD_FAILED 8           /* dlopen failed or the entry point is missing */
#define KH_ERROR_NO_COMPATIBLE_VARIANT 9 /* no build of the package fits this machine */
#define KH_ERROR_IO 10                   /* a local file operation failed */
#define KH_ERROR_OFFLINE 11              /* the request needs a hub but offline mode is on */
#define KH_ERROR_UNSUPPORTED 12          /* valid request this kernel does not implement */
#define KH_ERROR_DEVICE 13               /* the GPU runtime reported an error */
#define KH_ERROR_INTERNAL 14             /* a bug: an unexpected exception or state */
#define KH_ERROR_OUT_OF_MEMORY 15
#define KH_ERROR_LOCKED 16               /* the lockfile pins something else */
#define KH_ERROR_SIGNATURE 17            /* a signature is missing, malformed or invalid */
#define KH_ERROR_ROLLBACK 18             /* hub metadata older than what was already seen */
#define KH_ERROR_EXPIRED 19              /* hub metadata past its expiry time */
/* The operation's deadline passed (kh_load_options.timeout_ms, else KH_OPERATION_TIMEOUT;
 * `kernels --timeout`) while kh waited for a hub, or for another process's cache lock; the
 * message names the hub (or lock) and what was awaited. The cache is as before the call. */
#define KH_ERROR_TIMEOUT 20

#endif /* KH_STATUS_H */
