// rotary_args.hpp: the backend-independent argument rules of rotary_embedding. Its op entry
// (rotary_ops.cpp) calls parse_rotary_args() first; each backend computes from the params only
// (run_rotary, rotary_ops.hpp).
//
// In place, for every token t and head h of query (and key), with p = positions[t],
// r = rotary_dim = cos_sin_cache.shape[1], c_i = cos_sin_cache[p, i], s_i = cos_sin_cache[p, r/2 + i]
// and the pair (a, b) = (x[i], x[i + r/2]) (NeoX) or (x[2i], x[2i + 1]) (GPT-J), i < r/2:
//   a' = a c_i - b s_i,   b' = b c_i + a s_i;   x[r:] is left as it is.
#pragma once

#include <cstdint>

#include "kh/kernel_abi.h"
#include "kh_kernel/tensor.hpp"

namespace kh_rotary {

// Schema positions.
// rotary_embedding(Tensor(a!) query, Tensor(b!)? key, Tensor positions, Tensor cos_sin_cache,
//                  bool is_neox) -> ()
enum RotaryArg : uint32_t { kQuery = 0, kKey, kPositions, kCosSinCache, kIsNeox, kRotaryNumArgs };

// A validated call. Strides in elements; every tensor's last dim is contiguous. query and key
// share no memory with each other or with positions or the cache. Positions are not read here
// (they may be on a GPU): the CPU backend refuses one outside [0, max_position), the GPU
// backends leave its token untouched.
struct RotaryParams {
  void* query = nullptr;         // (tokens, heads_q, head_size)
  void* key = nullptr;           // (tokens, heads_kv, head_size), or nullptr
  const void* positions = nullptr;  // (tokens) int32 or int64
  const void* cache = nullptr;   // (max_position, rotary_dim): cos in [:, :r/2], sin in [:, r/2:]
  int64_t tokens = 0;
  int64_t heads_q = 0;
  int64_t heads_kv = 0;          // 0 without key
  int64_t head_size = 0;
  int64_t rotary_dim = 0;        // even, 2 <= rotary_dim <= head_size
  int64_t max_position = 0;      // >= 1
  int64_t q_token_stride = 0, q_head_stride = 0;
  int64_t k_token_stride = 0, k_head_stride = 0;
  int64_t positions_stride = 0;
  int64_t cache_row_stride = 0;
  kh_kernels::DType dtype = kh_kernels::DType::kUnknown;        // query, key: F32, F16 or BF16
  kh_kernels::DType cache_dtype = kh_kernels::DType::kUnknown;  // F32 or dtype
  bool positions_i64 = false;    // int64 positions, else int32
  bool neox = true;              // rotate halves (NeoX), else interleaved pairs (GPT-J)
  DLDevice device = {kDLCPU, 0};

  bool empty() const { return tokens == 0 || heads_q + heads_kv == 0; }
};

kh_status parse_rotary_args(const kh_value* args, uint32_t nargs, const kh_call_ctx* ctx, RotaryParams* p);

}  // namespace kh_rotary
