// hip/hip_runtime.h stand-in for the gfx942 kernel emulator (tests/hip/emulate). Not HIP:
// see simt.hpp.
#pragma once
#include "../simt.hpp"
