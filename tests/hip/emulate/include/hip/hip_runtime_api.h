// hip/hip_runtime_api.h stand-in for the gfx942 kernel emulator (tests/hip/emulate): the few
// host types the kernel headers name. Not HIP: see simt.hpp.
#pragma once
#include "../simt.hpp"
