// attention_cache_launch.hpp: paged_kv_cache_write's CUDA kernel (attention_cache_cuda.cu) as the op
// entry (attention_cuda.cu) launches it, on the caller's stream.
#pragma once

#include <cuda_runtime_api.h>

#include "attention_cache_args.hpp"

namespace kh_attention {

cudaError_t launch_cache_write(const CacheWriteParams& p, cudaStream_t stream);

}  // namespace kh_attention
