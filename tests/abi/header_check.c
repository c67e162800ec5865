/* Compiled as C99 and as C++ with all warnings as errors: the public headers must be clean in both. */
#include "kh/kernel_abi.h"
#include "kh/kh.h"

int kh_header_check(void);
int kh_header_check(void) {
  kh_value v;
  kh_load_options options;
  v.kind = KH_VALUE_INT;
  v.u.i = 1;
  options.struct_size = (uint32_t)sizeof(options);
  return (int)(v.u.i + (int64_t)options.struct_size + (int64_t)KH_ABI_VERSION);
}
