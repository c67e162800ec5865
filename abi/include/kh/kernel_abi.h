/* kh/kernel_abi.h: what every kh kernel library exports, ABI 1.0.
 *
 * A kernel library exports exactly one symbol, kh_kernel_negotiate(). The loader calls it
 * first with the range of ABI versions it speaks; the library answers with the version it
 * will speak and its module descriptor (name, version, variant key, op table).
 *
 * Stability rules (see docs/abi.md):
 *  - Structs that may grow begin with uint32_t struct_size; readers check it before
 *    touching a field added later. Fields are only ever appended.
 *  - Enumerations are carried in uint32_t/int32_t fields so their size never changes.
 *  - Status codes never change meaning; retired codes stay reserved.
 *  - A minor version adds; a major version breaks. The loader refuses a library whose major
 *    differs from its own or whose minor is newer than its own.
 *
 * C99-clean; depends on nothing but <dlpack/dlpack.h> and kh/status.h (the status codes). */
#ifndef KH_KERNEL_ABI_H
#define KH_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "kh/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KH_ABI_VERSION_MAJOR 1
#define KH_ABI_VERSION_MINOR 0
/* An ABI version packed into 32 bits: major in the high half, minor in the low half. */
#define KH_MAKE_ABI_VERSION(major, minor) ((((uint32_t)(major)) << 16) | ((uint32_t)(minor)&0xffffu))
#define KH_ABI_VERSION_GET_MAJOR(v) ((uint32_t)(v) >> 16)
#define KH_ABI_VERSION_GET_MINOR(v) ((uint32_t)(v)&0xffffu)
#define KH_ABI_VERSION KH_MAKE_ABI_VERSION(KH_ABI_VERSION_MAJOR, KH_ABI_VERSION_MINOR)

/* The name of the one symbol a kernel library exports. */
#define KH_KERNEL_ENTRY_POINT "kh_kernel_negotiate"

/* What a kh_value holds. Carried as uint32_t. */
typedef enum kh_value_kind {
  KH_VALUE_NONE = 0,   /* an omitted optional argument (Tensor?, float?, ...) */
  KH_VALUE_TENSOR = 1, /* DLTensor*, borrowed for the duration of the call */
  KH_VALUE_INT = 2,    /* int64_t */
  KH_VALUE_DOUBLE = 3, /* double; PyTorch's "float" */
  KH_VALUE_BOOL = 4,   /* stored as int32_t, 0 or 1 */
  KH_VALUE_STRING = 5, /* NUL-terminated UTF-8, borrowed for the duration of the call */
  KH_VALUE_KIND_MAX_ENUM = 0x7fffffff
} kh_value_kind;

/* One argument of an op call. Arguments are passed in schema order. */
typedef struct kh_value {
  uint32_t kind; /* kh_value_kind */
  uint32_t reserved;
  union {
    DLTensor* tensor;
    int64_t i;
    double d;
    int32_t b;
    const char* s;
  } u;
} kh_value;

/* Per-call context handed to an op by the loader. */
typedef struct kh_call_ctx {
  uint32_t struct_size;
  uint32_t reserved;
  void* stream;           /* cudaStream_t / hipStream_t of the host; NULL: default stream */
  char* error_buf;        /* an op that fails writes a NUL-terminated reason here */
  size_t error_buf_size;
} kh_call_ctx;

typedef kh_status (*kh_op_invoke_fn)(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx);

/* How many bytes of workspace a call with these arguments needs: the arguments as invoke
 * would get them, except that tensor data pointers may be NULL (only shapes, strides, dtypes
 * and devices are read) and the workspace argument itself may be KH_VALUE_NONE. KH_OK with
 * *bytes; for arguments invoke would refuse, the same status and ctx's error message. */
typedef kh_status (*kh_op_workspace_fn)(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx,
                                        uint64_t* bytes);

/* Bits of kh_arg_constraint.dtype_mask. */
#define KH_DTYPE_F32 (1u << 0)
#define KH_DTYPE_F16 (1u << 1)
#define KH_DTYPE_BF16 (1u << 2)
#define KH_DTYPE_F64 (1u << 3)
#define KH_DTYPE_I32 (1u << 4)
#define KH_DTYPE_I64 (1u << 5)
#define KH_DTYPE_U8 (1u << 6)
#define KH_DTYPE_I8 (1u << 7)
#define KH_DTYPE_BOOL (1u << 8)

/* What the loader checks for one tensor argument before the op runs, beyond its schema
 * type. Shape relations between arguments are the op's own to check. */
typedef struct kh_arg_constraint {
  uint32_t struct_size;
  uint32_t dtype_mask; /* accepted dtypes, KH_DTYPE_* bits; 0: any */
  int32_t min_ndim;    /* -1: no bound */
  int32_t max_ndim;    /* -1: no bound */
} kh_arg_constraint;

/* One op of a module. */
typedef struct kh_op_desc {
  uint32_t struct_size;
  uint32_t reserved;
  const char* name;   /* e.g. "rms_norm" */
  const char* schema; /* PyTorch schema syntax, e.g.
                         "rms_norm(Tensor(a!) out, Tensor x, Tensor weight, float eps) -> ()" */
  kh_op_invoke_fn invoke;
  /* One entry per schema argument (NULL: no constraints). Entries for non-tensor
   * arguments are ignored. */
  const kh_arg_constraint* arg_constraints;
} kh_op_desc;

/* What an op adds beyond its kh_op_desc (appended to the ABI later, so kept beside the op
 * table rather than inside it: a loader steps through op tables by sizeof(kh_op_desc)). */
typedef struct kh_op_ext {
  uint32_t struct_size;
  /* The schema argument that is the op's scratch memory, which the caller allocates and
   * workspace_size sizes; -1: none. */
  int32_t workspace_arg;
  kh_op_workspace_fn workspace_size; /* NULL: the op does not say */
} kh_op_ext;

/* What a kernel library is. Lives as long as the library stays loaded. */
typedef struct kh_module_desc {
  uint32_t struct_size;
  uint32_t abi_version;  /* KH_MAKE_ABI_VERSION the library was built against */
  const char* name;      /* repo name, e.g. "kernels-community/rms-norm" */
  const char* version;   /* semver of the package, e.g. "1.0.0" */
  const char* variant;   /* variant key, e.g. "cpu-x86_64-abi1-x86_64-linux" */
  uint32_t device_type;  /* DLDeviceType the ops' tensors must live on */
  uint32_t num_ops;
  const kh_op_desc* ops;
  /* --- appended: a loader reads these only when struct_size covers them --- */
  /* num_ops entries in the order of ops, each op_ext_stride bytes apart (a kh_op_ext that
   * may grow); NULL: no op says more than its kh_op_desc. */
  const kh_op_ext* op_ext;
  uint32_t op_ext_stride;
  uint32_t reserved;
} kh_module_desc;

/* The size of the module descriptor before op_ext: what every ABI 1.0 library gives. */
#define KH_MODULE_DESC_SIZE_1_0 (offsetof(kh_module_desc, op_ext))

/* The in/out record of the negotiation. The loader fills the "in" fields and zeroes the
 * rest; the library fills the "out" fields and returns KH_OK, or returns
 * KH_ERROR_ABI_MISMATCH if it speaks no version in [loader_min_abi, loader_max_abi]. */
typedef struct kh_negotiation {
  uint32_t struct_size;    /* in: sizeof(kh_negotiation) as the loader knows it */
  uint32_t loader_min_abi; /* in: oldest ABI the loader speaks */
  uint32_t loader_max_abi; /* in: newest ABI the loader speaks */
  uint32_t kernel_abi;     /* out: the ABI version the library will speak */
  const kh_module_desc* module; /* out */
} kh_negotiation;

typedef kh_status (*kh_kernel_negotiate_fn)(kh_negotiation* negotiation);

#if defined(__GNUC__)
#define KH_KERNEL_EXPORT __attribute__((visibility("default")))
#else
#define KH_KERNEL_EXPORT
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KH_KERNEL_ABI_H */
