/* kh/status.h compiles on its own (no DLPack, no other kh header) and defines the codes. */
#include "kh/status.h"

#if !defined(KH_OK) || KH_ERROR_EXPIRED != 19
#error "kh/status.h lacks the status codes"
#endif

#ifdef DLPACK_VERSION
#error "kh/status.h must not pull in DLPack"
#endif

kh_status kh_status_alone(void);
kh_status kh_status_alone(void) { return KH_ERROR_NOT_FOUND; }
