// attention_cache_gfx942.hpp: paged_kv_cache_write's gfx942 kernel (attention_cache_hip.hip) as the
// op entry (attention_hip.hip) launches it, on the caller's stream.
#pragma once

#include <hip/hip_runtime_api.h>

#include "attention_cache_args.hpp"

namespace kh_attention {

hipError_t launch_cache_write(const CacheWriteParams& p, hipStream_t stream);

}  // namespace kh_attention
