// simt.hpp: a small SIMT emulator that runs gfx942 HIP kernels on the host, for checking
// kernels that cannot run here (no AMD GPU is reachable). Each work-item of a workgroup is a
// ucontext coroutine on one OS thread; the collective operations the kernels use are
// barriers among the work-items that take part:
//   __syncthreads()                      the workgroup
//   __shfl_xor(v, mask, 64)              the wavefront (64 work-items)
//   __builtin_amdgcn_mfma_f32_16x16x16{bf16_1k,f16}
//                                        the wavefront, with the operand layouts of the CDNA3
//                                        ISA guide (AMD matrix instruction calculator):
//     a: lane l holds A[l % 16][4 (l / 16) + 0..3]     b: lane l holds B[4 (l / 16) + 0..3][l % 16]
//     d: lane l holds D[4 (l / 16) + 0..3][l % 16]     (fp32 products summed in fp32)
// What it proves is the kernel's own index arithmetic, masking and online softmax given those
// layouts; not the layouts themselves, timing, or memory-model details.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace simt {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

constexpr int kWave = 64;

struct Lane {
  ucontext_t ctx;
  std::unique_ptr<char[]> stack;
  bool done = false;
  int group = -1;              // barrier group waited on, -1: runnable
  unsigned long target = 0;    // generation that releases it
};

struct Barrier {
  int size = 0, arrived = 0;
  unsigned long generation = 0;
};

struct State {
  Dim3 block_idx, grid_dim, block_dim;
  int threads = 0;
  int current = -1;
  std::vector<Lane> lanes;
  std::vector<Barrier> barriers;  // [0]: workgroup, [1 + w]: wavefront w
  ucontext_t scheduler;
  std::function<void()> body;
  // Per-wavefront exchange slots of the collectives.
  std::vector<uint32_t> slot_u32;   // [thread][4]
  std::vector<float> slot_f32;      // [thread]
};
inline State& state() {
  static State s;
  return s;
}

inline Dim3 thread_idx() { return Dim3{static_cast<unsigned>(state().current), 0, 0}; }

inline void arrive(int group) {
  State& s = state();
  Barrier& b = s.barriers[group];
  if (++b.arrived == b.size) {
    b.arrived = 0;
    ++b.generation;
    return;  // the last one to arrive releases the others and runs on
  }
  Lane& me = s.lanes[s.current];
  me.group = group;
  me.target = b.generation + 1;
  swapcontext(&me.ctx, &s.scheduler);
}

inline void wave_barrier() { arrive(1 + state().current / kWave); }
inline void syncthreads() { arrive(0); }

inline float shfl_xor(float v, int mask, int width) {
  if (width != kWave) {
    std::fprintf(stderr, "simt: __shfl_xor width %d (only 64 is emulated)\n", width);
    std::abort();
  }
  State& s = state();
  const int tid = s.current, base = tid / kWave * kWave;
  s.slot_f32[tid] = v;
  wave_barrier();
  const float r = s.slot_f32[base + ((tid - base) ^ mask)];
  wave_barrier();
  return r;
}

inline float bf16_bits_to_float(uint32_t h) {
  const uint32_t u = (h & 0xffffu) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float f16_bits_to_float(uint32_t h) {
  const uint16_t b = static_cast<uint16_t>(h);
  _Float16 x;
  std::memcpy(&x, &b, 2);
  return static_cast<float>(x);
}

typedef float F32x4 __attribute__((ext_vector_type(4)));

// D = A B + C for 16x16x16 on the wavefront; a and b hold 4 16-bit values each (64 bits).
template <typename V, typename Decode>
inline F32x4 mfma_16x16x16(V a, V b, F32x4 c, Decode decode) {
  State& s = state();
  const int tid = s.current, base = tid / kWave * kWave, lane = tid - base;
  uint32_t ab[2][2];
  std::memcpy(ab[0], &a, 8);
  std::memcpy(ab[1], &b, 8);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) s.slot_u32[tid * 4 + 2 * i + j] = ab[i][j];
  wave_barrier();
  auto elem = [&](int which, int l, int e) {  // element e (0..3) of operand which (0 a, 1 b) of lane l
    const uint32_t w = s.slot_u32[(base + l) * 4 + 2 * which + e / 2];
    return decode((e & 1) ? w >> 16 : w & 0xffffu);
  };
  F32x4 d = c;
  const int j = lane % 16;
  for (int r = 0; r < 4; ++r) {
    const int i = 4 * (lane / 16) + r;
    float acc = 0.f;
    for (int k = 0; k < 16; ++k) acc += elem(0, i + 16 * (k / 4), k % 4) * elem(1, j + 16 * (k / 4), k % 4);
    d[r] += acc;
  }
  wave_barrier();
  return d;
}

inline void lane_entry() {
  State& s = state();
  s.body();
  s.lanes[s.current].done = true;
  swapcontext(&s.lanes[s.current].ctx, &s.scheduler);
}

// Runs body() as every work-item of one workgroup of `threads` work-items.
inline void run_workgroup(int threads, const std::function<void()>& body) {
  constexpr size_t kStack = 256 * 1024;
  State& s = state();
  s.threads = threads;
  s.body = body;
  s.lanes.clear();
  s.lanes.resize(threads);
  s.barriers.assign(1 + (threads + kWave - 1) / kWave, Barrier{});
  s.barriers[0].size = threads;
  for (int w = 0; w * kWave < threads; ++w) s.barriers[1 + w].size = std::min(kWave, threads - w * kWave);
  s.slot_u32.assign(static_cast<size_t>(threads) * 4, 0);
  s.slot_f32.assign(threads, 0.f);
  for (int t = 0; t < threads; ++t) {
    Lane& l = s.lanes[t];
    l.stack.reset(new char[kStack]);
    getcontext(&l.ctx);
    l.ctx.uc_stack.ss_sp = l.stack.get();
    l.ctx.uc_stack.ss_size = kStack;
    l.ctx.uc_link = nullptr;
    makecontext(&l.ctx, lane_entry, 0);
  }
  for (;;) {
    bool progressed = false, all_done = true;
    for (int t = 0; t < threads; ++t) {
      Lane& l = s.lanes[t];
      if (l.done) continue;
      all_done = false;
      if (l.group >= 0 && s.barriers[l.group].generation < l.target) continue;
      l.group = -1;
      s.current = t;
      swapcontext(&s.scheduler, &l.ctx);
      progressed = true;
    }
    if (all_done) break;
    if (!progressed) {
      std::fprintf(stderr, "simt: deadlock: work-items wait at barriers that cannot complete\n");
      std::abort();
    }
  }
  s.current = -1;
}

template <typename Kernel, typename Params>
inline void launch(Dim3 grid, int threads, Kernel kernel, const Params& p) {
  State& s = state();
  s.grid_dim = grid;
  s.block_dim = Dim3{static_cast<unsigned>(threads), 1, 1};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        s.block_idx = Dim3{x, y, z};
        run_workgroup(threads, [&] { kernel(p); });
      }
}

}  // namespace simt

// What the kernel sources use of HIP.
typedef int hipError_t;
typedef struct ihipStream_t* hipStream_t;
#define hipSuccess 0
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define threadIdx (::simt::thread_idx())
#define blockIdx (::simt::state().block_idx)
#define gridDim (::simt::state().grid_dim)
#define blockDim (::simt::state().block_dim)
#define __syncthreads() ::simt::syncthreads()
#define __shfl_xor(v, mask, width) ::simt::shfl_xor((v), (mask), (width))
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, cbsz, abid, blgp) \
  ::simt::mfma_16x16x16((a), (b), (c), ::simt::bf16_bits_to_float)
#define __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, cbsz, abid, blgp) \
  ::simt::mfma_16x16x16((a), (b), (c), ::simt::f16_bits_to_float)
using std::max;
using std::min;
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }
