// activation_kernels.inl: the GPU kernel of the activation ops, written once for CUDA
// (cuda/activation_cuda.cuh, sm80 and sm90a) and HIP (hip/activation_hip.hpp, gfx942) against
// the element-wise primitives (kh_kernel/pointwise_cuda.cuh or pointwise_hip.hpp, included
// first), its thread layout, and its launchers (real GPU builds only: the host emulator of
// tests/hip/emulate runs the kernel with the thread layout, without a GPU runtime).
//
//   out[r, i] = act(x[r, i]) * x[r, d + i],  computed in fp32, rounded to T once
//
// Memory-bound: 2 d elements read and d written per row, nothing reused. Design:
//  - a block of kThreads threads takes 2^k consecutive rows of X = kThreads / 2^k threads each;
//    X, a power of two, is the smallest that gives each thread about kUnroll packs of the row
//    (so rows of a few packs still fill a block, and wide rows get all 256 threads);
//  - a thread loads kUnroll packs of act's input and kUnroll of the gate before it computes
//    (4 x 16 bytes in flight a thread), then stores kUnroll packs of out; every access is a
//    16-byte word (a pack of VEC = 16 / sizeof(T) elements) when both halves and out are
//    16-byte aligned (VEC = 1 otherwise: element accesses, still coalesced);
//  - loads and stores are streaming (evict-first / non-temporal): nothing is read twice;
//  - blocks loop over row groups past the runtime's grid bound.
// act() for fp32 outputs uses the accurate library functions; for 16-bit outputs, hardware
// approximations whose error sits far below the output's rounding (act_fast below).

namespace kh_activation {
namespace gpu {

using kh_pointwise::from_floats;
using kh_pointwise::load_pack;
using kh_pointwise::Pack;
using kh_pointwise::store_pack;
using kh_pointwise::to_floats;

constexpr int kThreads = 256;
constexpr int kUnroll = 2;

// What a launch needs: ActivationParams' device-side part.
struct ActLaunch {
  void* out;
  const void* x;
  kh_kernels::RowLayout out_rows, x_rows;
  int64_t rows;
  int64_t d;
  float threshold;       // fatrelu: ActivationParams::threshold_f32
  int row_threads_log2;  // X = 2^row_threads_log2 threads a row, kThreads / X rows a block
};

// act(a) for fp32 outputs: the accurate library functions (a few fp32 ulp), in the same
// cancellation-free forms as the CPU oracle (1 + erf(z) = erfc(-z); 0.5 a (1 + tanh(u)) =
// a / (1 + exp(-2 u))).
template <ActKind K>
KH_PW_DEV float act_accurate(float a, float threshold) {
  if constexpr (K == ActKind::kSilu) {
    return a / (1.f + expf(-a));
  } else if constexpr (K == ActKind::kGelu) {
    return 0.5f * a * erfcf(-0.70710678118654752f * a);
  } else if constexpr (K == ActKind::kGeluTanh) {
    const float two_u = a * (1.5957691216057308f + 0.071354816272922f * a * a);  // 2 sqrt(2/pi) (a + 0.044715 a^3)
    return a / (1.f + expf(-two_u));
  } else {
    return a > threshold ? a : 0.f;
  }
}

constexpr float kLog2e = 1.4426950408889634f;

// 0.5 erfc(z) for z >= 0 as 0.5 t exp(-z^2 + P(t)), t = 1 / (1 + z / 2): the classic Chebyshev
// form of erfc, with P's coefficients fitted by tools/fit_erfc.py (least squares on Chebyshev
// nodes in t; the script prints them and the worst relative error of this float32 evaluation,
// 1.1e-6 for z < 4 and 4.0e-6 up to z = 9, where the rounding of -z^2 + P dominates); the exp is
// taken as 2^x.
KH_PW_DEV float half_erfc_nonneg(float z) {
  const float t = kh_pointwise::rcp_approx(fmaf(0.5f, z, 1.f));
  float p = 0.170872778f;
  p = fmaf(p, t, -0.822152257f);
  p = fmaf(p, t, 1.48851585f);
  p = fmaf(p, t, -1.13520396f);
  p = fmaf(p, t, 0.278868079f);
  p = fmaf(p, t, -0.186288059f);
  p = fmaf(p, t, 0.0967841893f);
  p = fmaf(p, t, 0.374091953f);
  p = fmaf(p, t, 1.00002372f);
  p = fmaf(p, t, -1.26551223f);
  return t * kh_pointwise::exp2_approx(fmaf(fmaf(-z, z, p), kLog2e, -1.f));  // 0.5 t exp(p - z^2)
}

// act(a) for 16-bit outputs, about 10 (silu), 12 (tanh gelu) and 20 (erf gelu) instructions an
// element, so that the kernel stays bound by memory: the hardware's approximate 2^x and 1/x
// (1-2 ulp) and the rational erfc above. Their relative error, below 2^-19 (plus 2^-22 |s|, s the
// argument of exp, where the function amplifies the fp32 rounding of its own argument: measured
// on a dense grid by tests/hip/emulate/pointwise_emulate.cpp), is far under the output's
// rounding (2^-9 bf16, 2^-12 fp16).
template <ActKind K>
KH_PW_DEV float act_fast(float a, float threshold) {
  if constexpr (K == ActKind::kSilu) {
    return a * kh_pointwise::rcp_approx(1.f + kh_pointwise::exp2_approx(-kLog2e * a));
  } else if constexpr (K == ActKind::kGelu) {
    const float h = half_erfc_nonneg(0.70710678118654752f * fabsf(a));  // Phi(-|a|)
    return a * (a > 0.f ? 1.f - h : h);                                  // a Phi(a)
  } else if constexpr (K == ActKind::kGeluTanh) {
    const float x = a * fmaf(-0.071354816272922f * kLog2e, a * a, -1.5957691216057308f * kLog2e);  // -2 u log2(e)
    return a * kh_pointwise::rcp_approx(1.f + kh_pointwise::exp2_approx(x));
  } else {
    return a > threshold ? a : 0.f;
  }
}

template <ActKind K, typename T>
KH_PW_DEV float act(float a, float threshold) {
  if constexpr (sizeof(T) == 4) return act_accurate<K>(a, threshold);
  else return act_fast<K>(a, threshold);
}

// Element offset of row r: a multiply when rows are evenly spaced (the usual case).
KH_PW_DEV int64_t row_start(const kh_kernels::RowLayout& l, int64_t r) {
  return l.uniform() ? r * l.row_stride() : l.offset(r);
}

template <ActKind K, typename T, int VEC>
__global__ __launch_bounds__(kThreads) void act_and_mul_kernel(ActLaunch a) {
  const int row_threads = 1 << a.row_threads_log2;
  const int rows_per_block = kThreads >> a.row_threads_log2;
  const int lane = static_cast<int>(threadIdx.x) & (row_threads - 1);
  const int sub = static_cast<int>(threadIdx.x) >> a.row_threads_log2;
  const int64_t packs = a.d / VEC;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * rows_per_block + sub; r < a.rows;
       r += static_cast<int64_t>(gridDim.x) * rows_per_block) {
    const T* x = static_cast<const T*>(a.x) + row_start(a.x_rows, r);
    const T* gate = x + a.d;
    T* out = static_cast<T*>(a.out) + row_start(a.out_rows, r);  // may be x: each pack is read before its store
    for (int64_t c = lane; c < packs; c += static_cast<int64_t>(row_threads) * kUnroll) {
      Pack<T, VEC> in[kUnroll], g[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t col = c + static_cast<int64_t>(u) * row_threads;
        if (col < packs) {
          in[u] = load_pack<true, T, VEC>(x + col * VEC);
          g[u] = load_pack<true, T, VEC>(gate + col * VEC);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t col = c + static_cast<int64_t>(u) * row_threads;
        if (col < packs) {
          float f[VEC], fg[VEC];
          to_floats(in[u], f);
          to_floats(g[u], fg);
#pragma unroll
          for (int i = 0; i < VEC; ++i) f[i] = act<K, T>(f[i], a.threshold) * fg[i];
          store_pack(out + col * VEC, from_floats<T, VEC>(f));
        }
      }
    }
  }
}

// ---- host side: the thread layout (also used by the host emulator), then the launchers ----

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Every row of a tensor laid out as l starts a whole number of packs of vec after the base.
inline bool rows_aligned(const kh_kernels::RowLayout& l, int64_t vec) {
  for (int32_t i = 0; i < l.ndim; ++i)
    if (l.stride[i] % vec != 0) return false;
  return true;
}

inline ActLaunch make_launch(const ActivationParams& p, int64_t packs) {
  ActLaunch a{};
  a.out = p.out;
  a.x = p.x;
  a.out_rows = p.out_rows;
  a.x_rows = p.x_rows;
  a.rows = p.rows;
  a.d = p.d;
  a.threshold = p.threshold_f32;
  while ((1 << a.row_threads_log2) < kThreads && (int64_t{1} << a.row_threads_log2) * kUnroll < packs)
    ++a.row_threads_log2;
  return a;
}

// Blocks that give every row group one (kernels loop over row groups past the grid bound).
inline int64_t blocks_needed(const ActLaunch& a) {
  const int64_t rows_per_block = kThreads >> a.row_threads_log2;
  return (a.rows + rows_per_block - 1) / rows_per_block;
}

// 16-byte packs when out, x and the gate half start 16-byte aligned in every row.
template <typename T>
bool vector_path(const ActivationParams& p) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  return aligned16(p.x) && aligned16(p.out) && p.d % kVec == 0 && rows_aligned(p.x_rows, kVec) &&
         rows_aligned(p.out_rows, kVec);
}

#if !defined(KH_GFX942_EMULATION)

template <ActKind K, typename T, int VEC>
kh_pointwise::GpuError launch_kind(const ActivationParams& p, kh_pointwise::GpuStream stream) {
  const ActLaunch a = make_launch(p, p.d / VEC);
  act_and_mul_kernel<K, T, VEC><<<kh_pointwise::grid_blocks(blocks_needed(a)), kThreads, 0, stream>>>(a);
  return KH_PW_API(GetLastError)();
}

template <typename T, int VEC>
kh_pointwise::GpuError launch_vec(const ActivationParams& p, kh_pointwise::GpuStream stream) {
  switch (p.kind) {
    case ActKind::kSilu: return launch_kind<ActKind::kSilu, T, VEC>(p, stream);
    case ActKind::kGelu: return launch_kind<ActKind::kGelu, T, VEC>(p, stream);
    case ActKind::kGeluTanh: return launch_kind<ActKind::kGeluTanh, T, VEC>(p, stream);
    case ActKind::kFatRelu: return launch_kind<ActKind::kFatRelu, T, VEC>(p, stream);
  }
  return KH_PW_API(ErrorInvalidValue);
}

// One validated call of dtype T on the current device (p.rows > 0): 16-byte packs where
// vector_path allows, else element accesses.
template <typename T>
kh_pointwise::GpuError launch_act_and_mul(const ActivationParams& p, kh_pointwise::GpuStream stream) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  return vector_path<T>(p) ? launch_vec<T, kVec>(p, stream) : launch_vec<T, 1>(p, stream);
}

// The per-dtype launchers, each instantiated in its own translation unit (the backend's
// activation_<backend>_<dtype> file, through KH_ACTIVATION_LAUNCHER) so the builds run in parallel.
kh_pointwise::GpuError launch_f32(const ActivationParams& p, kh_pointwise::GpuStream stream);
kh_pointwise::GpuError launch_f16(const ActivationParams& p, kh_pointwise::GpuStream stream);
kh_pointwise::GpuError launch_bf16(const ActivationParams& p, kh_pointwise::GpuStream stream);
#define KH_ACTIVATION_LAUNCHER(name, T)                                                                \
  kh_pointwise::GpuError kh_activation::gpu::name(const ActivationParams& p, kh_pointwise::GpuStream s) { \
    return launch_act_and_mul<T>(p, s);                                                                \
  }

// run_activation of a GPU backend: the dtype's launcher on the tensors' device and the caller's
// stream. No allocation, copy or host synchronisation: legal under graph capture.
inline kh_status run_on_gpu(const kh_kernels::OpContext& c, const ActivationParams& p) {
  if (p.rows == 0) return KH_OK;
  kh_pointwise::GpuError (*launch)(const ActivationParams&, kh_pointwise::GpuStream) = nullptr;
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
}  // namespace kh_activation
