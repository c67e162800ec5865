// kh.hpp must compile cleanly as C++17 with all warnings as errors.
#include "kh/kh.hpp"

int kh_hpp_check();
int kh_hpp_check() { return kh::arg(1.0).kind == KH_VALUE_DOUBLE ? 0 : 1; }
