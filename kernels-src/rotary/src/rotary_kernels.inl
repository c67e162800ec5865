// rotary_kernels.inl: the GPU kernel of rotary_embedding, written once for CUDA
// (cuda/rotary_cuda.cuh, sm80 and sm90a) and HIP (hip/rotary_hip.hpp, gfx942) against the
// element-wise primitives (kh_kernel/pointwise_cuda.cuh or pointwise_hip.hpp, included first),
// its path choice and thread layout, and its launchers (real GPU builds only: the host emulator
// of tests/hip/emulate runs the kernel with the same layout, without a GPU runtime). What it
// computes: rotary_args.hpp.
//
// Memory-bound: each rotated element is read and written once, in place; a token's cos/sin row
// (r values) is read by every head. Design:
//  - a block holds tz tokens x hy heads x gx "groups"; a group is P consecutive pairs of a
//    head, so a thread's cos/sin (P of each) are loaded once per token into registers and
//    reused for every head it rotates (tz, hy, gx from the shapes: about 128 threads a token);
//  - NeoX: a group is two packs of P elements, x[gP ..] and x[r/2 + gP ..]; GPT-J: one pack of
//    2P interleaved elements, x[2gP ..]; each pack is one 16-byte access when every head and
//    the cache rows are aligned for it (P = 1 otherwise: element accesses);
//  - a thread loads the packs of kUnroll heads before it rotates and stores them;
//  - rotated data streams (evict-first / non-temporal); cache rows and positions take the
//    read-only path: they are read by many threads;
//  - a position outside [0, max_position) skips its token (nothing read from the cache,
//    nothing written), as the op documents: the GPU cannot report it without a host sync.

namespace kh_rotary {
namespace gpu {

using kh_pointwise::from_floats;
using kh_pointwise::load_pack;
using kh_pointwise::Pack;
using kh_pointwise::store_pack;
using kh_pointwise::to_floats;

constexpr int kMaxThreads = 256;
constexpr int kThreadsPerToken = 128;  // at most, over heads x groups
constexpr int kUnroll = 2;

// What a launch needs: RotaryParams' device-side part and the thread layout.
struct RotaryLaunch {
  void* query;
  void* key;
  const void* positions;
  const void* cache;
  int64_t tokens;
  int64_t q_token_stride, q_head_stride, k_token_stride, k_head_stride;
  int64_t positions_stride, cache_row_stride, max_position;
  int heads_q;
  int heads;   // heads_q + heads_kv
  int half;    // rotary_dim / 2
  int groups;  // half / P
  int gx, hy, tz;  // threads over groups, over heads, tokens a block
  bool positions_i64, cache_f32;
};

template <typename T>
KH_PW_DEV T* head_at(const RotaryLaunch& a, int64_t t, int h) {
  return h < a.heads_q ? static_cast<T*>(a.query) + t * a.q_token_stride + h * a.q_head_stride
                       : static_cast<T*>(a.key) + t * a.k_token_stride + (h - a.heads_q) * a.k_head_stride;
}

template <typename C, int P>
KH_PW_DEV void load_cos_sin(const C* row, int first, int half, float (&c)[P], float (&s)[P]) {
  to_floats(load_pack<false, C, P>(row + first), c);
  to_floats(load_pack<false, C, P>(row + half + first), s);
}

template <typename I>
KH_PW_DEV int64_t position(const RotaryLaunch& a, int64_t t) {
  return load_pack<false, I, 1>(static_cast<const I*>(a.positions) + t * a.positions_stride).v[0];
}

// (a, b) -> (a c - b s, b c + a s), in fp32.
KH_PW_DEV void rotate_pair(float& a, float& b, float c, float s) {
  const float ra = fmaf(a, c, -b * s);
  b = fmaf(b, c, a * s);
  a = ra;
}

template <typename T, bool NEOX, int P>
__global__ __launch_bounds__(kMaxThreads) void rotary_kernel(RotaryLaunch a) {
  // Two packs of P a group, at offsets oa and ob of the head (NeoX, or GPT-J one pair at a
  // time), else one interleaved pack of 2 P (GPT-J, P > 1).
  constexpr bool kTwoPacks = NEOX || P == 1;
  constexpr int kPackElems = kTwoPacks ? P : 2 * P;
  const int tid = static_cast<int>(threadIdx.x);
  const int g0 = tid % a.gx;
  const int h0 = tid / a.gx % a.hy;
  const int z = tid / (a.gx * a.hy);
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * a.tz + z; t < a.tokens;
       t += static_cast<int64_t>(gridDim.x) * a.tz) {
    const int64_t pos = a.positions_i64 ? position<int64_t>(a, t) : position<int32_t>(a, t);
    if (pos < 0 || pos >= a.max_position) continue;
    for (int g = g0; g < a.groups; g += a.gx) {
      float c[P], s[P];
      if (a.cache_f32)
        load_cos_sin<float, P>(static_cast<const float*>(a.cache) + pos * a.cache_row_stride, g * P, a.half, c, s);
      else
        load_cos_sin<T, P>(static_cast<const T*>(a.cache) + pos * a.cache_row_stride, g * P, a.half, c, s);
      const int oa = kTwoPacks ? (NEOX ? g * P : 2 * g) : 2 * g * P;
      const int ob = NEOX ? a.half + g * P : 2 * g + 1;
      for (int h = h0; h < a.heads; h += a.hy * kUnroll) {
        Pack<T, kPackElems> pa[kUnroll], pb[kUnroll];
        T* x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int hu = h + u * a.hy;
          x[u] = hu < a.heads ? head_at<T>(a, t, hu) : nullptr;
          if (x[u] != nullptr) {
            pa[u] = load_pack<true, T, kPackElems>(x[u] + oa);
            if constexpr (kTwoPacks) pb[u] = load_pack<true, T, kPackElems>(x[u] + ob);
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (x[u] == nullptr) continue;
          float fa[kPackElems];
          to_floats(pa[u], fa);
          if constexpr (kTwoPacks) {
            float fb[P];
            to_floats(pb[u], fb);
#pragma unroll
            for (int i = 0; i < P; ++i) rotate_pair(fa[i], fb[i], c[i], s[i]);
            store_pack(x[u] + oa, from_floats<T, P>(fa));
            store_pack(x[u] + ob, from_floats<T, P>(fb));
          } else {
#pragma unroll
            for (int i = 0; i < P; ++i) rotate_pair(fa[2 * i], fa[2 * i + 1], c[i], s[i]);
            store_pack(x[u] + oa, from_floats<T, kPackElems>(fa));
          }
        }
      }
    }
  }
}

// ---- host side: the path and thread layout (also used by the host emulator), then the launchers

inline bool aligned_to(const void* p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Pairs a group holds on the vector path: one 16-byte pack of a head's elements per group
// (GPT-J) or per half-group (NeoX).
template <typename T, bool NEOX>
constexpr int vector_pairs() {
  return (NEOX ? 16 : 8) / static_cast<int>(sizeof(T));
}

// Whether every access of the vector path is aligned: both heads' tensors at 16 bytes with
// token and head strides in whole packs; r/2 a whole number of groups; cache rows aligned for
// a pack of P values.
template <typename T, bool NEOX>
bool vector_path(const RotaryParams& p) {
  constexpr int P = vector_pairs<T, NEOX>();
  constexpr int kElems = 16 / static_cast<int>(sizeof(T));
  const int64_t cache_bytes = kh_kernels::dtype_size(p.cache_dtype);
  const int64_t cache_align = P * cache_bytes < 16 ? P * cache_bytes : 16;
  bool ok = aligned_to(p.query, 16) && p.q_token_stride % kElems == 0 && p.q_head_stride % kElems == 0;
  if (p.key != nullptr) ok = ok && aligned_to(p.key, 16) && p.k_token_stride % kElems == 0 && p.k_head_stride % kElems == 0;
  return ok && (p.rotary_dim / 2) % P == 0 && aligned_to(p.cache, cache_align) && p.cache_row_stride % P == 0;
}

inline RotaryLaunch make_launch(const RotaryParams& p, int pairs_per_group) {
  RotaryLaunch a{};
  a.query = p.query;
  a.key = p.key;
  a.positions = p.positions;
  a.cache = p.cache;
  a.tokens = p.tokens;
  a.q_token_stride = p.q_token_stride;
  a.q_head_stride = p.q_head_stride;
  a.k_token_stride = p.k_token_stride;
  a.k_head_stride = p.k_head_stride;
  a.positions_stride = p.positions_stride;
  a.cache_row_stride = p.cache_row_stride;
  a.max_position = p.max_position;
  a.heads_q = static_cast<int>(p.heads_q);
  a.heads = static_cast<int>(p.heads_q + p.heads_kv);
  a.half = static_cast<int>(p.rotary_dim / 2);
  a.groups = a.half / pairs_per_group;
  a.positions_i64 = p.positions_i64;
  a.cache_f32 = p.cache_dtype == kh_kernels::DType::kF32;
  // Threads: every group of a head (up to kThreadsPerToken), then heads up to kThreadsPerToken
  // a token, balanced so the last round over heads is as full as the others; then tokens.
  a.gx = a.groups < kThreadsPerToken ? a.groups : kThreadsPerToken;
  int hy = kThreadsPerToken / a.gx < a.heads ? kThreadsPerToken / a.gx : a.heads;
  const int rounds = (a.heads + hy - 1) / hy;
  a.hy = (a.heads + rounds - 1) / rounds;
  const int64_t per_block = kMaxThreads / (a.gx * a.hy);
  a.tz = static_cast<int>(per_block < p.tokens ? per_block : p.tokens);
  return a;
}

inline int64_t blocks_needed(const RotaryLaunch& a) { return (a.tokens + a.tz - 1) / a.tz; }

#if !defined(KH_GFX942_EMULATION)

template <typename T, bool NEOX, int P>
kh_pointwise::GpuError launch_rotary(const RotaryParams& p, kh_pointwise::GpuStream stream) {
  const RotaryLaunch a = make_launch(p, P);
  rotary_kernel<T, NEOX, P><<<kh_pointwise::grid_blocks(blocks_needed(a)), a.gx * a.hy * a.tz, 0, stream>>>(a);
  return KH_PW_API(GetLastError)();
}

// One validated, non-empty call of dtype T on the current device.
template <typename T>
kh_pointwise::GpuError launch_rotary_embedding(const RotaryParams& p, kh_pointwise::GpuStream stream) {
  if (p.neox) {
    if (vector_path<T, true>(p)) return launch_rotary<T, true, vector_pairs<T, true>()>(p, stream);
    return launch_rotary<T, true, 1>(p, stream);
  }
  if (vector_path<T, false>(p)) return launch_rotary<T, false, vector_pairs<T, false>()>(p, stream);
  return launch_rotary<T, false, 1>(p, stream);
}

// The per-dtype launchers, each instantiated in its own translation unit (the backend's
// rotary_<backend>_<dtype> file, through KH_ROTARY_LAUNCHER) so the builds run in parallel.
kh_pointwise::GpuError launch_f32(const RotaryParams& p, kh_pointwise::GpuStream stream);
kh_pointwise::GpuError launch_f16(const RotaryParams& p, kh_pointwise::GpuStream stream);
kh_pointwise::GpuError launch_bf16(const RotaryParams& p, kh_pointwise::GpuStream stream);
#define KH_ROTARY_LAUNCHER(name, T)                                                               \
  kh_pointwise::GpuError kh_rotary::gpu::name(const RotaryParams& p, kh_pointwise::GpuStream s) { \
    return launch_rotary_embedding<T>(p, s);                                                      \
  }

// run_rotary of a GPU backend: the dtype's launcher on the tensors' device and the caller's
// stream. No allocation, copy or host synchronisation (positions stay on the device): legal
// under graph capture.
inline kh_status run_on_gpu(const kh_kernels::OpContext& c, const RotaryParams& p) {
  if (p.empty()) return KH_OK;
  kh_pointwise::GpuError (*launch)(const RotaryParams&, kh_pointwise::GpuStream) = nullptr;
  switch (p.dtype) {
    case kh_kernels::DType::kF32: launch = &launch_f32; break;
    case kh_kernels::DType::kF16: launch = &launch_f16; break;
    case kh_kernels::DType::kBF16: launch = &launch_bf16; break;
    default:
      return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "dtype %s is not supported",
                                  kh_kernels::dtype_name(p.dtype));
  }
  return kh_pointwise::run_on_device(c, p.device.device_id,
                                     [&](kh_pointwise::GpuStream s) { return launch(p, s); });
}

#endif  // !KH_GFX942_EMULATION

}  // namespace gpu
}  // namespace kh_rotary
