// run_scale for CPU builds: a plain loop the compiler vectorizes for the build's ISA level.
#include "scale_args.hpp"

namespace kh_@KH_IDENT@ {

kh_status run_scale(const kh_kernels::OpContext&, const ScaleParams& p) {
  for (int64_t i = 0; i < p.n; ++i) p.out[i] = p.alpha * p.x[i];
  return KH_OK;
}

}  // namespace kh_@KH_IDENT@
