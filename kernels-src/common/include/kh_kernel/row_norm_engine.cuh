// row_norm_engine.cuh: RMS norm and layer norm (each with an optional fused residual add)
// over the last dimension of a row-strided 2-D view, for CUDA sm80 and sm90a.
//
// What it computes, per row r of `rows` rows of `hidden` elements (accumulation in fp32):
//   h   = FUSED ? round_T(x[r] + residual[r]) : x[r]      (h is also stored to residual_out)
//   rms:   out[r] = h * rsqrt(mean(h^2) + eps) * weight
//   layer: out[r] = (h - mean(h)) * rsqrt(var(h) + eps) * weight + bias   (biased variance)
// T is float, __half or __nv_bfloat16; weight and bias are each absent, float or T (a
// uniform run-time branch per pack, which halves the instantiations a W template would make).
//
// How (the design is bandwidth-first: each input byte is read from DRAM once):
//  - row_norm_registers: a row is held in registers while it is reduced, so x (and
//    residual) are read once and the output written once. Small rows get one warp each
//    (no block barrier); large rows get one CTA each (block reductions: one for RMS, two
//    for layer norm, the mean and then the squared deviations from it).
//  - row_norm_streaming: rows too large for registers are read twice (statistics, then
//    output); the second read mostly hits L2. Layer norm merges per-chunk mean/M2 with
//    Chan's formula so one statistics pass stays numerically sound.
//  - Every access is a 16-byte vector when all row pointers are 16-byte aligned and every
//    row stride is a multiple of the vector width; the hidden % VEC tail is scalar. Other
//    layouts run the same kernels with VEC = 1.
//  - One CTA per row (group) up to 64 waves of resident CTAs, the hardware scheduling them as
//    SMs free up; longer batches loop inside CTAs.
//
// Shared by the rms-norm and layer-norm packages (kernels-src/common/include). Measurements
// and versions (v5 and v6 were measured and dropped): kernels-src/rms-norm/cuda/NOTES.md and
// kernels-src/layer-norm/cuda/NOTES.md.
//
// Build: included by one .cu per (package, dtype); see the package's cuda/CMakeLists.txt.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "kh_kernel/args.hpp"
#include "kh_kernel/norm_args.hpp"
#include "kh_kernel/tensor.hpp"

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
// own 64-bit division is a called subroutine whose register needs made the kernels spill.
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

// ---- element conversions ---------------------------------------------------------------

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// N elements moved as one access. 16 bytes is the widest load/store sm80/sm90 issue; a
// pack wider than that (8 fp32 weights next to 8 bf16 inputs) becomes two 16-byte
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
// Row data the register kernel touches once goes through evict-first accesses (ld/st.cs),
// so L1/L2 keep weight and bias rather than rows nobody reads again. On the H200 this took
// fused_add_rms_norm bf16 65536x1024 from 0.76x to 0.90x of copy bandwidth, 4096x16384
// from 0.86x to 0.94x; plain norms moved within noise.
template <typename E, int N>
__device__ __forceinline__ Pack<E, N> load_once(const E* p) {
  if constexpr (sizeof(Pack<E, N>) == 16) {
    const uint4 u = __ldcs(reinterpret_cast<const uint4*>(p));
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
    uint4 u;
    memcpy(&u, &v, 16);
    __stcs(reinterpret_cast<uint4*>(p), u);
  } else {
    store_pack<E, N>(p, v);
  }
}

// N consecutive elements of a weight/bias vector as fp32; `dflt` when absent. The vectors
// are read by every row, so they stay in L1/L2.
template <typename T, int N>
__device__ __forceinline__ void load_param(const void* p, ParamKind kind, int i, float dflt, float (&f)[N]) {
  if (kind == ParamKind::kF32) {
    const Pack<float, N> v = load_pack<float, N>(static_cast<const float*>(p) + i);
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = v.v[e];
  } else if (kind == ParamKind::kSameAsInput) {
    const Pack<T, N> v = load_pack<T, N>(static_cast<const T*>(p) + i);
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = to_f32(v.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) f[e] = dflt;
  }
}

// ---- reductions --------------------------------------------------------------------------

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the threads that share a row: a warp (ROW_THREADS == 32) or the whole CTA.
// `red` has two halves used alternately: a half is written again only after the next
// reduction's barrier, which every thread reaches after reading this one.
template <int ROW_THREADS>
__device__ __forceinline__ float row_sum(float v, float (*red)[32], int& parity) {
  v = warp_sum(v);
  if constexpr (ROW_THREADS > 32) {
    constexpr int kWarps = ROW_THREADS / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) red[parity][warp] = v;
    __syncthreads();
    v = lane < kWarps ? red[parity][lane] : 0.f;
    v = warp_sum(v);
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
  const float fb = __fdividef(b.n, n);  // IEEE division is a called slow path: registers
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}
__device__ __forceinline__ MeanM2 warp_merge(MeanM2 s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const MeanM2 t{__shfl_xor_sync(0xffffffffu, s.n, o), __shfl_xor_sync(0xffffffffu, s.mean, o),
                   __shfl_xor_sync(0xffffffffu, s.m2, o)};
    s = merge(s, t);
  }
  return s;
}
// Merge over the threads that share a row, with the same alternating halves as row_sum.
template <int ROW_THREADS>
__device__ __forceinline__ MeanM2 row_merge(MeanM2 s, MeanM2 (*red)[32], int& parity) {
  s = warp_merge(s);
  if constexpr (ROW_THREADS > 32) {
    constexpr int kWarps = ROW_THREADS / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) red[parity][warp] = s;
    __syncthreads();
    s = lane < kWarps ? red[parity][lane] : MeanM2{0.f, 0.f, 0.f};
    s = warp_merge(s);
    parity ^= 1;
  }
  return s;
}

// Every kernel is compiled for at least this many resident threads per SM, which caps it at
// 64 registers a thread: half the register file then holds rows (up to 64 KB of bf16 per SM
// in flight), and a CTA that waits at a barrier leaves others running. Without the cap the
// fused layer norm took 110 registers, one 512-thread CTA per SM, and nothing overlapped.
constexpr int kMinThreadsPerSm = 1024;
constexpr int min_ctas_per_sm(int nt) { return nt >= kMinThreadsPerSm ? 1 : kMinThreadsPerSm / nt; }

// ---- kernel 1: the row lives in registers --------------------------------------------------
//
// NT threads per CTA; ROW_THREADS (32 or NT) threads share a row; each holds up to ITEMS
// packs of VEC elements (packs t, t + ROW_THREADS, ...), plus one scalar of the tail
// (threads t < hidden % VEC), so a row of up to ROW_THREADS * ITEMS * VEC (+ tail) fits.
template <NormKind K, typename T, int VEC, int NT, int ROW_THREADS, int ITEMS, bool FUSED>
__global__ void __launch_bounds__(NT, min_ctas_per_sm(NT)) row_norm_registers(const RowNormArgs a) {
  static_assert(ROW_THREADS == 32 || ROW_THREADS == NT, "a row is one warp or one CTA");
  static_assert(NT % 32 == 0 && NT <= 1024, "");
  constexpr int kRowsPerCta = NT / ROW_THREADS;
  __shared__ float red[2][32];
  int parity = 0;

  const int t = threadIdx.x % ROW_THREADS;
  // Offsets inside a row are 32-bit (the launcher refuses rows over kMaxHidden):
  // 64-bit index arithmetic cost the fused kernels registers and then spills.
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
      // slower: its merge steps are a serial chain of shuffles and divisions.)
      float s = has_tail ? to_f32(vt) : 0.f;
#pragma unroll
      for (int i = 0; i < ITEMS; ++i) {
        if (t + i * ROW_THREADS < hv) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) s += to_f32(v[i].v[e]);
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
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const float d = to_f32(v[i].v[e]) - shift;
            q += d * d;
          }
        }
      }
      scale = rsqrtf(row_sum<ROW_THREADS>(q, red, parity) * inv_n + a.eps);
    }

    // Normalise and store.
    T* orow = static_cast<T*>(a.out) + row_offset(a.out_rows, row);
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
// One CTA per row. Pass 1 reads the row (and, FUSED, writes residual_out) and reduces;
// pass 2 reads it again (FUSED: residual_out, which the same thread wrote) and writes out.
// Each thread keeps stream_unroll() packs per input in flight per step.
// Packs in flight per thread and pass step: 2 x 16 B (32 KB per SM at one 1024-thread CTA)
// covers DRAM latency. 4 spilled under the 64-register cap for fp32 weights; with 16-bit
// inputs, the fused add (two input streams) and layer norm (weight and bias beside the row
// in pass 2) spilled even at 2, so they take 1.
template <NormKind K, typename T, bool FUSED>
__host__ __device__ constexpr int stream_unroll() {
  return sizeof(T) == 2 && (FUSED || K == NormKind::kLayer) ? 1 : 2;
}

template <NormKind K, typename T, int VEC, int NT, bool FUSED>
__global__ void __launch_bounds__(NT, min_ctas_per_sm(NT)) row_norm_streaming(const RowNormArgs a) {
  constexpr int U = stream_unroll<K, T, FUSED>();
  __shared__ float red[2][32];
  __shared__ MeanM2 red3[2][32];
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

// ---- host side: pick a kernel, size the grid, launch ------------------------------------------

// CTAs of `kernel` resident on one SM times the SM count, cached per device (it cannot change).
template <auto Kernel, int NT>
cudaError_t resident_ctas(int device, int* out) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cache[kMaxDevices];
  if (device >= 0 && device < kMaxDevices) {
    const int c = cache[device].load(std::memory_order_relaxed);
    if (c > 0) {
      *out = c;
      return cudaSuccess;
    }
  }
  int sms = 0, per_sm = 0;
  cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, NT, 0);
  if (e != cudaSuccess) return e;
  *out = std::max(1, per_sm) * sms;
  if (device >= 0 && device < kMaxDevices) cache[device].store(*out, std::memory_order_relaxed);
  return cudaSuccess;
}

// A CTA per row group while that is at most this many waves of resident CTAs, so the
// hardware hands rows to SMs as they free up. A persistent grid that walked the rows itself
// ran in lock step and left its last partial wave alone: rms_norm bf16 32768x4096 went from
// 0.87x to 0.97x of copy bandwidth on the H200 without it. Beyond, CTAs loop over rows.
constexpr int kMaxWaves = 64;

template <auto Kernel, int NT, int ROWS_PER_CTA>
cudaError_t launch_rows(const RowNormArgs& a, cudaStream_t stream) {
  int device = 0, resident = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = resident_ctas<Kernel, NT>(device, &resident);
  if (e != cudaSuccess) return e;
  const int64_t needed = (a.rows + ROWS_PER_CTA - 1) / ROWS_PER_CTA;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(needed, int64_t(resident) * kMaxWaves));
  Kernel<<<grid, NT, 0, stream>>>(a);
  return cudaGetLastError();
}

template <NormKind K, typename T, int VEC, int NT, int ROW_THREADS, int ITEMS, bool FUSED>
cudaError_t launch_registers(const RowNormArgs& a, cudaStream_t s) {
  return launch_rows<row_norm_registers<K, T, VEC, NT, ROW_THREADS, ITEMS, FUSED>, NT,
                     NT / ROW_THREADS>(a, s);
}

// Threads per CTA for huge rows: the most a CTA may have, so that each step of a pass moves
// NT * stream_unroll() * 16 B (16-32 KB) of one row.
constexpr int kStreamThreads = 1024;
// Threads per CTA when a warp owns a row: 4 rows per CTA keeps CTAs small, so the last wave
// of a short batch is spread over every SM.
constexpr int kWarpRowCtaThreads = 128;

// Packs a thread may hold in the register kernel under the 64-register cap. The fused add of
// 16-bit inputs keeps both x and residual in flight and the sums as fp32: at 4 packs ptxas
// spilled 100-180 bytes a thread, at 2 it spills nothing (nvcc 13.0, -Xptxas -v).
template <typename T, bool FUSED>
__host__ __device__ constexpr int max_items() {
  return FUSED && sizeof(T) == 2 ? 2 : 4;
}

// Picks the smallest configuration whose registers hold the row. Capacities are in packs
// (VEC elements) per row; the tail (< VEC elements) rides along as one scalar per thread.
// Rows of up to ITEMS packs per lane get a warp; beyond, a CTA of up to 1024 threads keeps
// ITEMS packs per thread (64 B of bf16 each: four 16-byte loads in flight a thread); rows
// too large for that are read twice by the streaming kernel.
template <NormKind K, typename T, int VEC, bool FUSED>
cudaError_t launch_for_width(const RowNormArgs& a, cudaStream_t s) {
  const int64_t packs = a.hidden / VEC;
  constexpr int kW = kWarpRowCtaThreads;
  constexpr int kItems = max_items<T, FUSED>();
  if (packs <= 32 * 1) return launch_registers<K, T, VEC, kW, 32, 1, FUSED>(a, s);
  if (packs <= 32 * 2) return launch_registers<K, T, VEC, kW, 32, 2, FUSED>(a, s);
  if constexpr (kItems == 4) {
    if (packs <= 32 * 4) return launch_registers<K, T, VEC, kW, 32, 4, FUSED>(a, s);
    if (packs <= 128 * 2) return launch_registers<K, T, VEC, 128, 128, 2, FUSED>(a, s);
  } else {
    // Two warps a row where one warp's registers no longer fit it: without this step a
    // fused 1024-wide bf16 row took a 128-thread CTA with half its packs idle (0.62x copy).
    if (packs <= 64 * 2) return launch_registers<K, T, VEC, 64, 64, 2, FUSED>(a, s);
  }
  if (packs <= 128 * kItems) return launch_registers<K, T, VEC, 128, 128, kItems, FUSED>(a, s);
  if (packs <= 256 * kItems) return launch_registers<K, T, VEC, 256, 256, kItems, FUSED>(a, s);
  if (packs <= 512 * kItems) return launch_registers<K, T, VEC, 512, 512, kItems, FUSED>(a, s);
  if (packs <= 1024 * kItems) return launch_registers<K, T, VEC, 1024, 1024, kItems, FUSED>(a, s);
  return launch_rows<row_norm_streaming<K, T, VEC, kStreamThreads, FUSED>, kStreamThreads, 1>(a, s);
}

// In-row offsets are 32-bit; 2^30 leaves headroom for the last step of a pass.
constexpr int64_t kMaxHidden = int64_t(1) << 30;

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// True when every row of a tensor laid out as `l` starts 16-byte aligned, given a base that is.
inline bool rows_aligned(const kh_kernels::RowLayout& l, int vec) {
  for (int32_t d = 0; d < l.ndim; ++d)
    if (l.stride[d] % vec != 0) return false;
  return true;
}

// Entry for one (kind, dtype, fused): 16-byte packs when every row of every tensor starts
// 16-byte aligned (weight and bias too, read as packs), else scalar accesses.
template <NormKind K, typename T, bool FUSED>
cudaError_t launch_row_norm(const RowNormArgs& a, cudaStream_t s) {
  if (a.rows <= 0 || a.hidden <= 0) return cudaSuccess;
  if (a.hidden > kMaxHidden) return cudaErrorInvalidValue;
  if (a.rows > INT32_MAX && !(a.x_rows.uniform() && a.out_rows.uniform() && a.residual_rows.uniform() &&
                              a.residual_out_rows.uniform()))
    return cudaErrorInvalidValue;
  constexpr int kVec = 16 / sizeof(T);
  bool vec = aligned16(a.x) && aligned16(a.out) && rows_aligned(a.x_rows, kVec) && rows_aligned(a.out_rows, kVec);
  if constexpr (FUSED) {
    vec = vec && aligned16(a.residual) && aligned16(a.residual_out) && rows_aligned(a.residual_rows, kVec) &&
          rows_aligned(a.residual_out_rows, kVec);
  }
  vec = vec && (a.weight_kind == ParamKind::kNone || aligned16(a.weight)) &&
        (K == NormKind::kRms || a.bias_kind == ParamKind::kNone || aligned16(a.bias));
  if (vec) return launch_for_width<K, T, kVec, FUSED>(a, s);
  return launch_for_width<K, T, 1, FUSED>(a, s);
}

template <NormKind K, typename T>
cudaError_t launch_row_norm(const RowNormArgs& a, bool fused, cudaStream_t s) {
  return fused ? launch_row_norm<K, T, true>(a, s) : launch_row_norm<K, T, false>(a, s);
}

// ---- host side: from validated op arguments to a launch ------------------------------------

inline ParamKind param_kind(kh_kernels::DType param, kh_kernels::DType input) {
  if (param == kh_kernels::DType::kUnknown) return ParamKind::kNone;
  return param == kh_kernels::DType::kF32 ? ParamKind::kF32 : (param == input ? ParamKind::kSameAsInput : ParamKind::kNone);
}

inline RowNormArgs make_row_norm_args(const kh_kernels::NormParams& p) {
  RowNormArgs a{};
  a.out = p.out;
  a.residual_out = p.residual_out;
  a.x = p.x;
  a.residual = p.residual;
  a.weight = p.weight;
  a.bias = p.bias;
  a.out_rows = p.out_rows;
  a.residual_out_rows = p.residual_out_rows;
  a.x_rows = p.x_rows;
  a.residual_rows = p.residual_rows;
  a.rows = p.rows;
  a.hidden = p.hidden;
  a.eps = static_cast<float>(p.eps);
  a.weight_kind = p.weight != nullptr ? param_kind(p.weight_dtype, p.dtype) : ParamKind::kNone;
  a.bias_kind = p.bias != nullptr ? param_kind(p.bias_dtype, p.dtype) : ParamKind::kNone;
  return a;
}

// The per-dtype launchers of one package, each defined in its own translation unit.
struct RowNormLaunchers {
  cudaError_t (*f32)(const RowNormArgs&, bool fused, cudaStream_t);
  cudaError_t (*f16)(const RowNormArgs&, bool fused, cudaStream_t);
  cudaError_t (*bf16)(const RowNormArgs&, bool fused, cudaStream_t);
};

// Runs one validated norm call on the tensors' device and the caller's stream (NULL: the
// default stream). A CUDA error becomes KH_ERROR_DEVICE with the runtime's message.
inline kh_status run_row_norm(const kh_kernels::OpContext& c, const kh_kernels::NormParams& p,
                              const RowNormLaunchers& launchers) {
  if (p.rows == 0) return KH_OK;
  if (p.hidden > kMaxHidden)
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "hidden size %lld is over this kernel's limit of %lld",
                               (long long)p.hidden, (long long)kMaxHidden);
  if (p.rows > INT32_MAX && !(p.x_rows.uniform() && p.out_rows.uniform() && p.residual_rows.uniform() &&
                              p.residual_out_rows.uniform()))
    return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED,
                               "%lld rows whose leading dimensions are not evenly spaced; this kernel takes "
                               "at most 2^31 - 1 such rows (make the tensors contiguous)", (long long)p.rows);
  cudaError_t (*launch)(const RowNormArgs&, bool, cudaStream_t) = nullptr;
  switch (p.dtype) {
    case kh_kernels::DType::kF32: launch = launchers.f32; break;
    case kh_kernels::DType::kF16: launch = launchers.f16; break;
    case kh_kernels::DType::kBF16: launch = launchers.bf16; break;
    default:
      return kh_kernels::op_error(c, KH_ERROR_UNSUPPORTED, "dtype %s is not supported", kh_kernels::dtype_name(p.dtype));
  }
  const bool has_stream = c.ctx != nullptr && c.ctx->struct_size >= offsetof(kh_call_ctx, stream) + sizeof(void*);
  cudaStream_t stream = has_stream ? static_cast<cudaStream_t>(c.ctx->stream) : nullptr;

  // Launch on the tensors' device; give the caller back the device it had.
  int previous = -1;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess && previous != p.device.device_id) e = cudaSetDevice(p.device.device_id);
  if (e == cudaSuccess) e = launch(make_row_norm_args(p), p.fused, stream);
  if (previous >= 0 && previous != p.device.device_id) cudaSetDevice(previous);
  if (e != cudaSuccess)
    return kh_kernels::op_error(c, KH_ERROR_DEVICE, "CUDA error on device %d: %s (%s)", p.device.device_id,
                               cudaGetErrorString(e), cudaGetErrorName(e));
  return KH_OK;
}

}  // namespace kh_row_norm
