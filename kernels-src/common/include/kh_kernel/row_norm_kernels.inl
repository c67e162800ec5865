// row_norm_kernels.inl: the row-norm algorithm shared by the CUDA engine (row_norm_engine.cuh,
// sm80/sm90a) and the HIP engine (row_norm_engine_hip.hpp, gfx942): the launch arguments,
// packed accesses, row reductions and both kernels. It is written once against a few
// primitives each engine defines before including it, so the two cannot drift apart:
//   T's conversions      to_f32(T), from_f32<T>(float); kIsBf16<T> (bf16 packs convert by hand)
//   Raw16                a 16-byte word; load16_once / store16_once move one with a hint that
//                        the caches should not keep it (CUDA ld/st.cs, gfx942 "nt")
//   kLanes               threads of one lock-step group: a warp (32) or a wavefront (64)
//   lane_xor(v, o)       v of the lane whose index is this lane's xor o, within the group
//   stream_unroll<T, HEAVY>()  packs per input in flight per streaming step
//   KH_ROW_NORM_LAUNCH_BOUNDS(NT)  the kernels' launch bounds (CUDA adds a minimum of
//                        resident blocks to cap registers; HIP gives NT alone)
// Below, "group" means that warp or wavefront and "block" the CTA or workgroup.
//
// What it computes, per row r of `rows` rows of `hidden` elements (accumulation in fp32):
//   h   = FUSED ? round_T(x[r] + residual[r]) : x[r]      (h is also stored to residual_out)
//   rms:   out[r] = h * rsqrt(mean(h^2) + eps) * weight
//   layer: out[r] = (h - mean(h)) * rsqrt(var(h) + eps) * weight + bias   (biased variance)
// Weight and bias are each absent, float or T (a uniform run-time branch per pack, which
// halves the instantiations a W template would make).
//
// How (the design is bandwidth-first: each input byte is read from DRAM once):
//  - row_norm_registers: a row is held in registers while it is reduced, so x (and
//    residual) are read once and the output written once. Small rows get one group each
//    (no block barrier); large rows get one block each (block reductions: one for RMS, two
//    for layer norm, the mean and then the squared deviations from it).
//  - row_norm_streaming: rows too large for registers are read twice (statistics, then
//    output); the second read mostly hits L2. Layer norm merges per-chunk mean/M2 with
//    Chan's formula so one statistics pass stays numerically sound.
//  - Every access is a 16-byte vector when all row pointers are 16-byte aligned and every
//    row stride is a multiple of the vector width; the hidden % VEC tail is scalar. Other
//    layouts run the same kernels with VEC = 1.
// The host side (which kernel for which row size, grid, launch) is row_norm_launch.inl.
//
// Not a header of its own: included once, inside no namespace, by each engine header.
#if !defined(KH_ROW_NORM_LAUNCH_BOUNDS)
#error "row_norm_kernels.inl is included by row_norm_engine.cuh or row_norm_engine_hip.hpp after their primitives"
#endif

namespace kh_row_norm {
enum class NormKind { kRms, kLayer };

// What a weight or bias vector holds.
enum class ParamKind : uint32_t { kNone = 0, kF32 = 1, kSameAsInput = 2 };

// One launch's arguments: kh_kernels::NormParams with the dtypes resolved. Rows sit where
// each tensor's RowLayout says (evenly spaced in practice); elements within a row are
// contiguous. An absent weight is 1, an absent bias 0.
struct RowNormArgs {
  void* out;
  void* residual_out;    // FUSED only
  const void* x;
  const void* residual;  // FUSED only
  const void* weight;
  const void* bias;      // layer norm only
  kh_kernels::RowLayout out_rows, residual_out_rows, x_rows, residual_rows;
  int64_t rows;
  int64_t hidden;
  float eps;
  ParamKind weight_kind, bias_kind;
};

// Element offset of row r: a multiply when rows are evenly spaced. Otherwise the row index
// is split with 32-bit division (the launcher refuses 2^31 rows or more there): RowLayout's
// own 64-bit division is a called subroutine on CUDA whose register needs made the kernels spill.
__device__ __forceinline__ int64_t row_offset(const kh_kernels::RowLayout& l, int64_t r) {
  if (l.ndim <= 1) return r * l.row_stride();
  uint32_t rest = static_cast<uint32_t>(r);
  int64_t off = 0;
#pragma unroll
  for (int d = kh_kernels::kMaxRowDims - 1; d >= 0; --d) {
    if (d < l.ndim) {
      const uint32_t size = static_cast<uint32_t>(l.size[d]);
      off += static_cast<int64_t>(rest % size) * l.stride[d];
      rest /= size;
    }
  }
  return off;
}

// ---- packed accesses ------------------------------------------------------------------------

// N elements moved as one access. 16 bytes is the widest load/store sm80/sm90 and gfx942
// issue; a pack wider than that (8 fp32 weights next to 8 bf16 inputs) becomes two 16-byte
// accesses, so its alignment is capped at 16.
template <typename E, int N>
struct alignas(sizeof(E) * N > 16 ? 16 : sizeof(E) * N) Pack {
  E v[N];
};

template <typename E, int N>
__device__ __forceinline__ Pack<E, N> load_pack(const E* p) {
  return *reinterpret_cast<const Pack<E, N>*>(p);
}
template <typename E, int N>
__device__ __forceinline__ void store_pack(E* p, const Pack<E, N>& v) {
  *reinterpret_cast<Pack<E, N>*>(p) = v;
}
// Row data the register kernel touches once goes through load16_once / store16_once, so
// the caches keep weight and bias rather than rows nobody reads again.
template <typename E, int N>
__device__ __forceinline__ Pack<E, N> load_once(const E* p) {
  if constexpr (sizeof(Pack<E, N>) == 16) {
    const Raw16 u = load16_once(p);
    Pack<E, N> r;
    memcpy(&r, &u, 16);
    return r;
  } else {
    return load_pack<E, N>(p);
  }
}
template <typename E, int N>
__device__ __forceinline__ void store_once(E* p, const Pack<E, N>& v) {
  if constexpr (sizeof(Pack<E, N>) == 16) {
    Raw16 u;
    memcpy(&u, &v, 16);
    store16_once(p, u);
  } else {
    store_pack<E, N>(p, v);
  }
}

// A pack's N values as floats. A bf16 is the top half of an fp32, so a 32-bit word of two
// converts with one instruction a value (a shift for the low one, a mask for the high
// one); value by value, nvcc spends two on the high one (PRMT, then a shift). Plain layer
// norm, which converts each value of a row three times, is bound by instruction issue at
// 8192 columns and more (H200, Nsight Compute: 0.74 warp instructions a cycle a scheduler).
template <typename T, int N>
__device__ __forceinline__ void unpack(const Pack<T, N>& p, float (&f)[N]) {
  if constexpr (kIsBf16<T> && N % 2 == 0) {
    uint32_t w[N / 2];
    memcpy(w, &p, sizeof(w));
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const uint32_t lo = w[i] << 16, hi = w[i] & 0xffff0000u;
      memcpy(&f[2 * i], &lo, 4);
      memcpy(&f[2 * i + 1], &hi, 4);
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = to_f32(p.v[e]);
  }
}

// N consecutive elements of a weight/bias vector as fp32; `dflt` when absent. The vectors
// are read by every row, so they stay in the caches. Called with a constant `kind`, the
// branches fold away; BY_HAND converts 16-bit parameters with unpack.
template <typename T, int N, bool BY_HAND = false>
__device__ __forceinline__ void load_param(const void* p, ParamKind kind, int i, float dflt, float (&f)[N]) {
  if (kind == ParamKind::kF32) {
    const Pack<float, N> v = load_pack<float, N>(static_cast<const float*>(p) + i);
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = v.v[e];
  } else if (kind == ParamKind::kSameAsInput) {
    const Pack<T, N> v = load_pack<T, N>(static_cast<const T*>(p) + i);
    if constexpr (BY_HAND) {
      unpack(v, f);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) f[e] = to_f32(v.v[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = dflt;
  }
}

// ---- reductions --------------------------------------------------------------------------

// Threads a block may have, and so the per-group partials a block reduction stages in
// shared memory (LDS).
constexpr int kMaxBlockThreads = 1024;
constexpr int kRedSlots = kMaxBlockThreads / kLanes;

__device__ __forceinline__ float lane_group_sum(float v) {
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) v += lane_xor(v, o);
  return v;
}

// Sum over the threads that share a row: a group (ROW_THREADS == kLanes) or the whole block.
// `red` has two halves used alternately: a half is written again only after the next
// reduction's barrier, which every thread reaches after reading this one.
template <int ROW_THREADS>
__device__ __forceinline__ float row_sum(float v, float (*red)[kRedSlots], int& parity) {
  v = lane_group_sum(v);
  if constexpr (ROW_THREADS > kLanes) {
    constexpr int kGroups = ROW_THREADS / kLanes;
    const int group = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    if (lane == 0) red[parity][group] = v;
    __syncthreads();
    v = lane < kGroups ? red[parity][lane] : 0.f;
    v = lane_group_sum(v);
    parity ^= 1;
  }
  return v;
}

// Count, mean and sum of squared deviations of a set of values (Chan et al. merge).
struct MeanM2 {
  float n, mean, m2;
};
__device__ __forceinline__ MeanM2 merge(const MeanM2& a, const MeanM2& b) {
  const float n = a.n + b.n;
  if (n == 0.f) return a;
  const float d = b.mean - a.mean;
  // Fast division (gfx942: v_rcp_f32 and a multiply): IEEE division is a called slow path
  // on CUDA, whose registers spilled, and a long sequence on gfx942.
  const float fb = __fdividef(b.n, n);
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}
__device__ __forceinline__ MeanM2 lane_group_merge(MeanM2 s) {
#pragma unroll
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    const MeanM2 t{lane_xor(s.n, o), lane_xor(s.mean, o), lane_xor(s.m2, o)};
    s = merge(s, t);
  }
  return s;
}
// Merge over the threads that share a row, with the same alternating halves as row_sum.
template <int ROW_THREADS>
__device__ __forceinline__ MeanM2 row_merge(MeanM2 s, MeanM2 (*red)[kRedSlots], int& parity) {
  s = lane_group_merge(s);
  if constexpr (ROW_THREADS > kLanes) {
    constexpr int kGroups = ROW_THREADS / kLanes;
    const int group = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    if (lane == 0) red[parity][group] = s;
    __syncthreads();
    s = lane < kGroups ? red[parity][lane] : MeanM2{0.f, 0.f, 0.f};
    s = lane_group_merge(s);
    parity ^= 1;
  }
  return s;
}

// The plain register kernel's output: this thread's packs of a row, normalised, times the
// weight, plus the bias, converted with unpack. Called with constant parameter kinds, the
// kind checks fold away.
template <typename T, int VEC, int ROW_THREADS, int ITEMS>
__device__ __forceinline__ void store_normalised(T* orow, const Pack<T, VEC> (&v)[ITEMS], int t, int hv, float shift,
                                                 float scale, const void* weight, ParamKind weight_kind,
                                                 const void* bias, ParamKind bias_kind) {
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const int j = t + i * ROW_THREADS;
    if (j < hv) {
      float f[VEC], wf[VEC], bf[VEC];
      load_param<T, VEC, true>(weight, weight_kind, j * VEC, 1.f, wf);
      load_param<T, VEC, true>(bias, bias_kind, j * VEC, 0.f, bf);
      unpack(v[i], f);
      Pack<T, VEC> o;
#pragma unroll
      for (int e = 0; e < VEC; ++e) o.v[e] = from_f32<T>((f[e] - shift) * scale * wf[e] + bf[e]);
      store_once<T, VEC>(orow + j * VEC, o);
    }
  }
}

// ---- kernel 1: the row lives in registers --------------------------------------------------
//
// NT threads per block; ROW_THREADS (kLanes or NT) threads share a row; each holds up to ITEMS
// packs of VEC elements (packs t, t + ROW_THREADS, ...), plus one scalar of the tail
// (threads t < hidden % VEC), so a row of up to ROW_THREADS * ITEMS * VEC (+ tail) fits.
template <NormKind K, typename T, int VEC, int NT, int ROW_THREADS, int ITEMS, bool FUSED>
__global__ void KH_ROW_NORM_LAUNCH_BOUNDS(NT) row_norm_registers(const RowNormArgs a) {
  static_assert(ROW_THREADS == kLanes || ROW_THREADS == NT, "a row is one group or one block");
  static_assert(NT % kLanes == 0 && NT <= kMaxBlockThreads, "");
  constexpr int kRowsPerCta = NT / ROW_THREADS;
  __shared__ float red[2][kRedSlots];
  int parity = 0;

  const int t = threadIdx.x % ROW_THREADS;
  // Offsets inside a row are 32-bit (the launcher refuses rows over kMaxHidden):
  // 64-bit index arithmetic cost the fused kernels registers and then spills (nvcc).
  const int hidden = static_cast<int>(a.hidden);
  const int hv = hidden / VEC;  // whole packs per row
  const int tail = hidden - hv * VEC;
  const bool has_tail = t < tail;
  const int tail_at = hv * VEC + t;
  const float inv_n = 1.f / static_cast<float>(a.hidden);
  const ParamKind bias_kind = K == NormKind::kLayer ? a.bias_kind : ParamKind::kNone;

  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerCta + threadIdx.x / ROW_THREADS;
       row < a.rows; row += static_cast<int64_t>(gridDim.x) * kRowsPerCta) {
    // Load the row: every load of the row is issued before the first use.
    Pack<T, VEC> v[ITEMS];
    T vt = from_f32<T>(0.f);
    const T* xr = static_cast<const T*>(a.x) + row_offset(a.x_rows, row);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int j = t + i * ROW_THREADS;
      if (j < hv) v[i] = load_once<T, VEC>(xr + j * VEC);
    }
    if (has_tail) vt = xr[tail_at];

    if constexpr (FUSED) {
      const T* rr = static_cast<const T*>(a.residual) + row_offset(a.residual_rows, row);
      T* ro = static_cast<T*>(a.residual_out) + row_offset(a.residual_out_rows, row);
      Pack<T, VEC> r[ITEMS];
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int j = t + i * ROW_THREADS;
        if (j < hv) r[i] = load_once<T, VEC>(rr + j * VEC);
      }
      T rt = has_tail ? rr[tail_at] : from_f32<T>(0.f);
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int j = t + i * ROW_THREADS;
        if (j < hv) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) v[i].v[e] = from_f32<T>(to_f32(v[i].v[e]) + to_f32(r[i].v[e]));
          store_once<T, VEC>(ro + j * VEC, v[i]);
        }
      }
      if (has_tail) {
        vt = from_f32<T>(to_f32(vt) + to_f32(rt));
        ro[tail_at] = vt;
      }
    }

    // Statistics. Values past the row end are never read, so they are masked here.
    float shift = 0.f;  // mean (layer norm)
    float scale;        // rsqrt(mean square or variance + eps)
    if constexpr (K == NormKind::kLayer) {
      // Exact two-pass statistics over the registers: the mean, then the squared deviations
      // from it. (One Chan merge of per-thread mean/M2 saves a barrier but measured 5%
      // slower on the H200: its merge steps are a serial chain of shuffles and divisions.)
      float s = has_tail ? to_f32(vt) : 0.f;
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        if (t + i * ROW_THREADS < hv) {
          if constexpr (FUSED) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) s += to_f32(v[i].v[e]);
          } else {
            float f[VEC];
            unpack(v[i], f);
#pragma unroll
            for (int e = 0; e < VEC; ++e) s += f[e];
          }
        }
      }
      shift = row_sum<ROW_THREADS>(s, red, parity) * inv_n;
    }
    {
      float q = 0.f;
      if (has_tail) q = (to_f32(vt) - shift) * (to_f32(vt) - shift);
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        if (t + i * ROW_THREADS < hv) {
          if constexpr (FUSED) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
              const float d = to_f32(v[i].v[e]) - shift;
              q += d * d;
            }
          } else {
            float f[VEC];
            unpack(v[i], f);
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
              const float d = f[e] - shift;
              q += d * d;
            }
          }
        }
      }
      scale = rsqrtf(row_sum<ROW_THREADS>(q, red, parity) * inv_n + a.eps);
    }

    // Normalise and store. The plain kernels check the weight and bias kinds once a row, not
    // once a pack: the usual kinds (16-bit parameters like the input) get a copy of the loop
    // where they are constants (per pack, the checks and the absent-parameter defaults cost
    // ~2.5 instructions a value at 8 values a pack), and convert with unpack. The fused
    // kernels keep the per-value conversions and per-pack checks: both changes made them
    // 5-13% slower on the H200 (their registers, at the 64 cap, were allocated otherwise).
    T* orow = static_cast<T*>(a.out) + row_offset(a.out_rows, row);
    if constexpr (!FUSED) {
      constexpr ParamKind kUsualBias = K == NormKind::kLayer ? ParamKind::kSameAsInput : ParamKind::kNone;
      if (a.weight_kind == ParamKind::kSameAsInput && bias_kind == kUsualBias)
        store_normalised<T, VEC, ROW_THREADS, ITEMS>(orow, v, t, hv, shift, scale, a.weight, ParamKind::kSameAsInput,
                                                    a.bias, kUsualBias);
      else
        store_normalised<T, VEC, ROW_THREADS, ITEMS>(orow, v, t, hv, shift, scale, a.weight, a.weight_kind, a.bias,
                                                    bias_kind);
    } else {
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        const int j = t + i * ROW_THREADS;
        if (j < hv) {
          float wf[VEC], bf[VEC];
          load_param<T, VEC>(a.weight, a.weight_kind, j * VEC, 1.f, wf);
          load_param<T, VEC>(a.bias, bias_kind, j * VEC, 0.f, bf);
          Pack<T, VEC> o;
#pragma unroll
          for (int e = 0; e < VEC; ++e) o.v[e] = from_f32<T>((to_f32(v[i].v[e]) - shift) * scale * wf[e] + bf[e]);
          store_once<T, VEC>(orow + j * VEC, o);
        }
      }
    }
    if (has_tail) {
      float wf[1], bf[1];
      load_param<T, 1>(a.weight, a.weight_kind, tail_at, 1.f, wf);
      load_param<T, 1>(a.bias, bias_kind, tail_at, 0.f, bf);
      orow[tail_at] = from_f32<T>((to_f32(vt) - shift) * scale * wf[0] + bf[0]);
    }
  }
}
// ---- kernel 2: rows too large for registers --------------------------------------------------
//
// One block per row. Pass 1 reads the row (and, FUSED, writes residual_out) and reduces;
// pass 2 reads it again (FUSED: residual_out, which the same thread wrote) and writes out.
// Each thread keeps stream_unroll<T, HEAVY>() packs per input in flight per step; HEAVY when
// a pass moves more than the row: the fused add (x and residual in pass 1) and layer norm
// (weight and bias beside the row in pass 2).
template <NormKind K, typename T, int VEC, int NT, bool FUSED>
__global__ void KH_ROW_NORM_LAUNCH_BOUNDS(NT) row_norm_streaming(const RowNormArgs a) {
  constexpr int U = stream_unroll<T, FUSED || K == NormKind::kLayer>();
  __shared__ float red[2][kRedSlots];
  __shared__ MeanM2 red3[2][kRedSlots];
  int parity = 0;

  const int t = threadIdx.x;
  const int hidden = static_cast<int>(a.hidden);
  const int hv = hidden / VEC;
  const int tail = hidden - hv * VEC;
  const bool has_tail = t < tail;
  const int tail_at = hv * VEC + t;
  const float inv_n = 1.f / static_cast<float>(a.hidden);
  const ParamKind bias_kind = K == NormKind::kLayer ? a.bias_kind : ParamKind::kNone;

  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(a.x) + row_offset(a.x_rows, row);
    T* ro = nullptr;
    const T* rr = nullptr;
    if constexpr (FUSED) {
      ro = static_cast<T*>(a.residual_out) + row_offset(a.residual_out_rows, row);
      rr = static_cast<const T*>(a.residual) + row_offset(a.residual_rows, row);
    }

    // Pass 1: statistics (layer norm: per-thread Chan merge of per-step mean/M2).
    float sq = 0.f;
    MeanM2 st{0.f, 0.f, 0.f};
    for (int base = 0; base < hv; base += NT * U) {
      Pack<T, VEC> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = base + t + u * NT;
        if (j < hv) v[u] = load_pack<T, VEC>(xr + j * VEC);
      }
      if constexpr (FUSED) {
        Pack<T, VEC> r[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int j = base + t + u * NT;
          if (j < hv) r[u] = load_pack<T, VEC>(rr + j * VEC);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int j = base + t + u * NT;
          if (j < hv) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) v[u].v[e] = from_f32<T>(to_f32(v[u].v[e]) + to_f32(r[u].v[e]));
            store_pack<T, VEC>(ro + j * VEC, v[u]);
          }
        }
      }
      if constexpr (K == NormKind::kRms) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (base + t + u * NT < hv) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) sq += to_f32(v[u].v[e]) * to_f32(v[u].v[e]);
          }
        }
      } else {
        float s = 0.f, c = 0.f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (base + t + u * NT < hv) {
            c += VEC;
#pragma unroll
            for (int e = 0; e < VEC; ++e) s += to_f32(v[u].v[e]);
          }
        }
        if (c > 0.f) {
          const float m = __fdividef(s, c);
          float m2 = 0.f;
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (base + t + u * NT < hv) {
#pragma unroll
              for (int e = 0; e < VEC; ++e) {
                const float d = to_f32(v[u].v[e]) - m;
                m2 += d * d;
              }
            }
          }
          st = merge(st, MeanM2{c, m, m2});
        }
      }
    }
    if (has_tail) {
      T h = xr[tail_at];
      if constexpr (FUSED) {
        h = from_f32<T>(to_f32(h) + to_f32(rr[tail_at]));
        ro[tail_at] = h;
      }
      const float f = to_f32(h);
      if constexpr (K == NormKind::kRms) {
        sq += f * f;
      } else {
        st = merge(st, MeanM2{1.f, f, 0.f});
      }
    }
    float shift = 0.f, scale;
    if constexpr (K == NormKind::kRms) {
      scale = rsqrtf(row_sum<NT>(sq, red, parity) * inv_n + a.eps);
    } else {
      const MeanM2 all = row_merge<NT>(st, red3, parity);
      shift = all.mean;
      scale = rsqrtf(all.m2 * inv_n + a.eps);
    }

    // Pass 2: normalise. FUSED re-reads residual_out, which this same thread wrote.
    const T* src = FUSED ? static_cast<const T*>(ro) : xr;
    T* orow = static_cast<T*>(a.out) + row_offset(a.out_rows, row);
    for (int base = 0; base < hv; base += NT * U) {
      Pack<T, VEC> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = base + t + u * NT;
        if (j < hv) v[u] = load_pack<T, VEC>(src + j * VEC);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = base + t + u * NT;
        if (j < hv) {
          float wf[VEC], bf[VEC];
          load_param<T, VEC>(a.weight, a.weight_kind, j * VEC, 1.f, wf);
          load_param<T, VEC>(a.bias, bias_kind, j * VEC, 0.f, bf);
          Pack<T, VEC> o;
#pragma unroll
          for (int e = 0; e < VEC; ++e) o.v[e] = from_f32<T>((to_f32(v[u].v[e]) - shift) * scale * wf[e] + bf[e]);
          store_pack<T, VEC>(orow + j * VEC, o);
        }
      }
    }
    if (has_tail) {
      float wf[1], bf[1];
      load_param<T, 1>(a.weight, a.weight_kind, tail_at, 1.f, wf);
      load_param<T, 1>(a.bias, bias_kind, tail_at, 0.f, bf);
      orow[tail_at] = from_f32<T>((to_f32(src[tail_at]) - shift) * scale * wf[0] + bf[0]);
    }
  }
}

}  // namespace kh_row_norm
