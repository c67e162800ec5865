// attention_emulate.cpp: runs the gfx942 prefill attention kernel (kernels-src/attention/hip/
// attention_fwd_gfx942_kernel.hpp, the kernel of attention_fwd and attention_varlen_fwd) on the
// host through the SIMT emulator (simt.hpp) and compares out and lse with a float64 reference of
// the same inputs, over the shapes that exercise its index arithmetic: every head-dim bucket
// (64, 96, 128, 192, 256, 192/128) at and below its own dims (80 in the 96 bucket, 200 in 256),
// bf16/fp16, causal or not, seqlen_q <, = and > seqlen_k, lengths that are not tile multiples,
// GQA/MQA, fully masked rows, strided (packed qkv) inputs, and the three kernel modes: packed
// variable-length sequences (lengths 0, 1, odd; packed rows outside every sequence filled with
// NaN, which must not reach any output), sliding windows and soft-cap. No AMD GPU is needed;
// see simt.hpp for what this does and does not show.
//
// Build and run: tests/hip/emulate/run_emulate.sh (clang-19, host only).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#define KH_GFX942_EMULATION 1
#include "attention_fwd_gfx942_kernel.hpp"

namespace {

using kh_attention::FwdBucket;
using kh_attention::gfx942_fwd_bucket;
using kh_attention::gfx942::ElementType;
using kh_attention::gfx942::FwdParams;
using kh_attention::gfx942::Gfx942Mode;
using kh_attention::gfx942::TileConfig;

uint16_t to_bits(float x, ElementType t) {
  if (t == ElementType::kF16) {
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
double to_double(uint16_t b, ElementType t) {
  return t == ElementType::kF16 ? simt::f16_bits_to_float(b) : simt::bf16_bits_to_float(b);
}

// The kernel instantiations the cases use, by (bucket, dtype, causal, mode).
using KernelFn = void (*)(FwdParams);
struct Instance {
  int qk, v;
  bool bf16, causal;
  Gfx942Mode mode;
  KernelFn fn;
  int block_m;
};
#define KH_EMU_INSTANCE(QK, V, T, C, M)                                                              \
  Instance {                                                                                         \
    QK, V, ElementType::T == ElementType::kBF16, C, Gfx942Mode::M,                                   \
        &kh_attention::gfx942::attention_fwd_gfx942_kernel<QK, V, ElementType::T, C, Gfx942Mode::M>, \
        TileConfig<QK, V>::kBlockM                                                                   \
  }
const Instance kInstances[] = {
    KH_EMU_INSTANCE(64, 64, kBF16, false, kFixed),     KH_EMU_INSTANCE(64, 64, kBF16, true, kFixed),
    KH_EMU_INSTANCE(64, 64, kF16, false, kFixed),      KH_EMU_INSTANCE(64, 64, kF16, true, kFixed),
    KH_EMU_INSTANCE(128, 128, kBF16, false, kFixed),   KH_EMU_INSTANCE(128, 128, kBF16, true, kFixed),
    KH_EMU_INSTANCE(128, 128, kF16, false, kFixed),    KH_EMU_INSTANCE(128, 128, kF16, true, kFixed),
    KH_EMU_INSTANCE(96, 96, kBF16, true, kGeneral),    KH_EMU_INSTANCE(96, 96, kF16, false, kGeneral),
    KH_EMU_INSTANCE(128, 128, kBF16, true, kVarlen),   KH_EMU_INSTANCE(128, 128, kF16, false, kVarlen),
    KH_EMU_INSTANCE(64, 64, kBF16, true, kGeneral),    KH_EMU_INSTANCE(64, 64, kF16, false, kGeneral),
    KH_EMU_INSTANCE(192, 128, kBF16, true, kFixed),    KH_EMU_INSTANCE(192, 128, kF16, true, kVarlen),
    KH_EMU_INSTANCE(192, 192, kF16, false, kFixed),    KH_EMU_INSTANCE(256, 256, kBF16, true, kGeneral),
};
#undef KH_EMU_INSTANCE

struct Case {
  int d, dv;
  int batch, sq, sk;           // attention_fwd; varlen: lens below
  std::vector<int> lens_q, lens_k;  // non-empty: attention_varlen_fwd
  int hq, hkv;
  bool causal, bf16, packed, lse;
  int window = -1;
  float softcap = 0.f;
};

// Returns true when out and lse are within tolerance and nothing outside the sequences changed.
bool run_case(const Case& c, std::mt19937& rng) {
  const ElementType t = c.bf16 ? ElementType::kBF16 : ElementType::kF16;
  const bool varlen = !c.lens_q.empty();
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  const int hq = c.hq, hkv = c.hkv, d = c.d, dv = c.dv;
  // Sequences: (q_start, len_q, k_start, len_k) and the packed/batched extents.
  std::vector<int> qs, lq, ks, lk;
  int total_q = 0, total_k = 0;
  const int nseq = varlen ? static_cast<int>(c.lens_q.size()) : c.batch;
  for (int b = 0; b < nseq; ++b) {
    const int a = varlen ? c.lens_q[b] : c.sq, k = varlen ? c.lens_k[b] : c.sk;
    qs.push_back(varlen ? total_q : 0), lq.push_back(a), ks.push_back(varlen ? total_k : 0), lk.push_back(k);
    total_q += a, total_k += k;
  }
  const int tail = varlen ? 5 : 0;  // packed rows after the last sequence
  if (varlen) total_q += tail, total_k += tail;
  const int rows_q = varlen ? total_q : c.batch * c.sq, rows_k = varlen ? total_k : c.batch * c.sk;

  // q, k, v as (rows, heads, dims); packed: one buffer (rows, hq + 2 hkv, d) when q and k rows
  // and dims agree. attention_fwd's rows are batch-major (b * seq + i).
  std::vector<uint16_t> qbuf, kbuf, vbuf, pbuf;
  FwdParams p;
  const uint16_t *q, *k, *v;
  int64_t q_rs, k_rs, v_rs;
  if (c.packed) {
    const int hs = hq + 2 * hkv;
    pbuf.resize(static_cast<size_t>(rows_q) * hs * d);
    for (auto& x : pbuf) x = to_bits(uni(rng), t);
    q = pbuf.data(), k = pbuf.data() + hq * d, v = pbuf.data() + (hq + hkv) * d;
    q_rs = k_rs = v_rs = hs * d;
    p.q_head_stride = p.k_head_stride = p.v_head_stride = d;
  } else {
    qbuf.resize(static_cast<size_t>(rows_q) * hq * d);
    kbuf.resize(static_cast<size_t>(rows_k) * hkv * d);
    vbuf.resize(static_cast<size_t>(rows_k) * hkv * dv);
    for (auto* b : {&qbuf, &kbuf, &vbuf})
      for (auto& x : *b) x = to_bits(uni(rng), t);
    q = qbuf.data(), k = kbuf.data(), v = vbuf.data();
    q_rs = hq * d, k_rs = hkv * d, v_rs = hkv * dv;
    p.q_head_stride = d, p.k_head_stride = d, p.v_head_stride = dv;
  }
  // Rows outside every sequence: NaN in k and v (a NaN that reached a kept score or a P V sum
  // would show in the output), and in q.
  auto poison = [&](const uint16_t* base, int64_t rs, int heads, int dims, int row) {
    uint16_t* r = const_cast<uint16_t*>(base) + static_cast<int64_t>(row) * rs;
    for (int h = 0; h < heads; ++h)
      for (int e = 0; e < dims; ++e) r[h * (c.packed ? d : dims) + e] = t == ElementType::kF16 ? 0x7e00 : 0x7fc0;
  };
  for (int r = total_q - tail; r < total_q; ++r) poison(q, q_rs, hq, d, r);
  for (int r = total_k - tail; r < total_k; ++r) poison(k, k_rs, hkv, d, r), poison(v, v_rs, hkv, dv, r);

  std::vector<uint16_t> out(static_cast<size_t>(rows_q) * hq * dv, 0x7e00);  // NaN-ish canary
  std::vector<float> lse(static_cast<size_t>(rows_q) * hq, 12345.f);
  std::vector<int32_t> cu_q, cu_k;
  p.q = q, p.k = k, p.v = v, p.out = out.data(), p.lse = c.lse ? lse.data() : nullptr;
  p.q_row_stride = q_rs, p.k_row_stride = k_rs, p.v_row_stride = v_rs;
  p.o_row_stride = hq * dv, p.o_head_stride = dv;
  if (varlen) {
    for (int b = 0; b <= nseq; ++b) {
      cu_q.push_back(b < nseq ? qs[b] : total_q - tail);
      cu_k.push_back(b < nseq ? ks[b] : total_k - tail);
    }
    p.cu_seqlens_q = cu_q.data(), p.cu_seqlens_k = cu_k.data();
    p.total_q = total_q, p.total_k = total_k;
    p.seqlen_q = 0, p.seqlen_k = 0;
    for (int b = 0; b < nseq; ++b) p.seqlen_q = std::max(p.seqlen_q, lq[b]), p.seqlen_k = std::max(p.seqlen_k, lk[b]);
    p.lse_head_stride = total_q, p.lse_row_stride = 1;
  } else {
    p.q_batch_stride = static_cast<int64_t>(c.sq) * q_rs, p.k_batch_stride = static_cast<int64_t>(c.sk) * k_rs;
    p.v_batch_stride = static_cast<int64_t>(c.sk) * v_rs, p.o_batch_stride = static_cast<int64_t>(c.sq) * hq * dv;
    p.seqlen_q = c.sq, p.seqlen_k = c.sk;
    p.lse_batch_stride = static_cast<int64_t>(hq) * c.sq, p.lse_head_stride = c.sq, p.lse_row_stride = 1;
  }
  p.batch = nseq, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d, p.head_dim_v = dv;
  p.scale = 1.f / std::sqrt(static_cast<float>(d));
  p.window_left = c.window;
  p.softcap = c.softcap;
  if (c.softcap > 0.f) {
    p.softcap_log2 = c.softcap * 1.4426950408889634f;
    p.scale_over_softcap = p.scale / c.softcap;
  }
  p.causal = c.causal;
  p.dtype = t;

  const FwdBucket bucket = gfx942_fwd_bucket(d, dv);
  const Gfx942Mode mode = kh_attention::gfx942::gfx942_mode(p, bucket.qk, bucket.v);
  const Instance* inst = nullptr;
  for (const Instance& i : kInstances)
    if (i.qk == bucket.qk && i.v == bucket.v && i.bf16 == c.bf16 && i.causal == c.causal && i.mode == mode) inst = &i;
  if (inst == nullptr) {
    std::printf("FAIL d=%d/%d: no emulated instance for bucket %d/%d mode %d\n", d, dv, bucket.qk, bucket.v,
                static_cast<int>(mode));
    return false;
  }
  simt::launch(simt::Dim3{static_cast<unsigned>((p.seqlen_q + inst->block_m - 1) / inst->block_m),
                          static_cast<unsigned>(hq), static_cast<unsigned>(nseq)},
               256, inst->fn, p);

  // float64 reference on the same 16-bit inputs, per sequence (the CPU backend's algorithm).
  double max_err = 0, max_lse_err = 0;
  bool masked_ok = true, untouched_ok = true;
  const int group = hq / hkv;
  std::vector<char> covered(static_cast<size_t>(rows_q), 0);
  for (int b = 0; b < nseq; ++b) {
    const int64_t qrow0 = varlen ? qs[b] : static_cast<int64_t>(b) * c.sq;
    const int64_t krow0 = varlen ? ks[b] : static_cast<int64_t>(b) * c.sk;
    std::vector<double> s(static_cast<size_t>(lk[b]) + 1);
    for (int h = 0; h < hq; ++h) {
      const int hk = h / group;
      for (int i = 0; i < lq[b]; ++i) {
        covered[static_cast<size_t>(qrow0 + i)] = 1;
        const int pos = i + lk[b] - lq[b];
        const int hi = c.causal ? std::min(lk[b] - 1, pos) : lk[b] - 1;
        const int lo = c.window >= 0 ? std::max(0, pos - c.window) : 0;
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = lo; j <= hi; ++j) {
          double acc = 0;
          for (int e = 0; e < d; ++e)
            acc += to_double(q[(qrow0 + i) * q_rs + h * p.q_head_stride + e], t) *
                   to_double(k[(krow0 + j) * k_rs + hk * p.k_head_stride + e], t);
          double x = acc * p.scale;
          if (c.softcap > 0.f) x = c.softcap * std::tanh(x / c.softcap);
          s[j] = x;
          mx = std::max(mx, x);
        }
        double denom = 0;
        for (int j = lo; j <= hi; ++j) denom += std::exp(s[j] - mx);
        for (int e = 0; e < dv; ++e) {
          double o = 0;
          for (int j = lo; j <= hi; ++j)
            o += std::exp(s[j] - mx) * to_double(v[(krow0 + j) * v_rs + hk * p.v_head_stride + e], t);
          o = hi >= lo ? o / denom : 0.0;
          const double got = to_double(out[(qrow0 + i) * p.o_row_stride + h * dv + e], t);
          const double err = std::fabs(got - o);
          if (!(err <= max_err)) max_err = std::isnan(err) ? INFINITY : std::max(max_err, err);
        }
        if (c.lse) {
          const float got = lse[b * p.lse_batch_stride + h * p.lse_head_stride + (varlen ? qrow0 : 0) + i];
          if (hi < lo) {
            masked_ok = masked_ok && std::isinf(got) && got < 0;
          } else {
            const double err = std::fabs(got - (mx + std::log(denom)));
            max_lse_err = std::isnan(err) ? INFINITY : std::max(max_lse_err, err);
          }
        }
      }
    }
  }
  for (int r = 0; r < rows_q; ++r)  // rows of no sequence keep the canary
    if (!covered[static_cast<size_t>(r)])
      for (int e = 0; e < hq * dv; ++e) untouched_ok = untouched_ok && out[static_cast<size_t>(r) * hq * dv + e] == 0x7e00;
  // P is rounded to 16 bits before P V (as in FlashAttention): a few units in the last place
  // of the output dtype.
  const double tol = c.bf16 ? 2 * 0.00390625 : 2 * 0.00048828125;
  const bool ok = max_err <= tol && max_lse_err <= 2e-3 && masked_ok && untouched_ok;
  std::printf("%s d=%-3d/%-3d %s %-6s hq=%d hkv=%d %-6s %-6s lse=%d w=%d cap=%g mode=%d  max|out-ref| %.2e (tol %.2e)  "
              "max|lse-ref| %.2e%s%s\n",
              ok ? "ok  " : "FAIL", c.d, c.dv, c.bf16 ? "bf16" : "fp16", varlen ? "varlen" : "fixed", c.hq, c.hkv,
              c.causal ? "causal" : "full", c.packed ? "packed" : "dense", c.lse ? 1 : 0, c.window, c.softcap,
              static_cast<int>(mode), max_err, tol, max_lse_err, masked_ok ? "" : "  (masked rows: lse is not -inf)",
              untouched_ok ? "" : "  (rows of no sequence written)");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::mt19937 rng(42);
  std::vector<Case> cases;
  auto fixed = [](int d, int dv, int b, int sq, int sk, int hq, int hkv, bool causal, bool bf16, bool packed, bool lse) {
    Case c{d, dv, b, sq, sk, {}, {}, hq, hkv, causal, bf16, packed, lse};
    return c;
  };
  auto packed_seqs = [](int d, int dv, std::vector<int> lq, std::vector<int> lk, int hq, int hkv, bool causal,
                        bool bf16) {
    Case c{d, dv, 0, 0, 0, std::move(lq), std::move(lk), hq, hkv, causal, bf16, false, true};
    return c;
  };
  for (int d : {64, 128})
    for (bool bf16 : {true, false}) {
      cases.push_back(fixed(d, d, 1, 130, 130, 2, 1, false, bf16, false, true));  // GQA 2:1, past one tile
      cases.push_back(fixed(d, d, 1, 130, 130, 2, 2, true, bf16, false, true));   // causal, square
      if (quick) continue;
      cases.push_back(fixed(d, d, 2, 17, 200, 2, 2, true, bf16, false, true));    // sq < sk, bottom-right
      cases.push_back(fixed(d, d, 1, 150, 37, 3, 1, true, bf16, false, true));    // sq > sk: fully masked rows
      cases.push_back(fixed(d, d, 1, 1, 65, 1, 1, false, bf16, false, false));    // one query, no lse
      cases.push_back(fixed(d, d, 1, 70, 70, 2, 1, true, bf16, true, true));      // packed qkv strides
    }
  // 1.1: packed variable-length sequences (lengths 0, 1, odd, q != k), NaN past the last one.
  cases.push_back(packed_seqs(128, 128, {0, 37, 1, 130}, {5, 70, 1, 130}, 2, 1, true, true));
  cases.push_back(packed_seqs(192, 128, {20, 3}, {33, 3}, 2, 2, true, false));   // 192/128, varlen
  // Head dims below their bucket's (the general mode), window and soft-cap.
  Case c80 = fixed(80, 80, 1, 70, 90, 2, 1, true, true, false, true);            // d 80 in the 96 bucket
  c80.window = 20;
  cases.push_back(c80);
  Case c200 = fixed(200, 200, 1, 40, 40, 1, 1, true, true, false, true);         // d 200 in the 256 bucket
  c200.softcap = 5.f;
  cases.push_back(c200);
  if (!quick) {
    cases.push_back(fixed(192, 128, 1, 50, 64, 2, 1, true, true, false, true));  // 192/128
    cases.push_back(fixed(192, 192, 1, 33, 33, 2, 2, false, false, true, true)); // 192, packed qkv
    cases.push_back(packed_seqs(128, 128, {9, 64, 0}, {40, 64, 7}, 4, 1, false, false));  // MQA, k longer
    Case w = fixed(64, 64, 1, 80, 80, 2, 2, true, true, false, true);             // window 0: own key only
    w.window = 0;
    cases.push_back(w);
    Case cap = fixed(40, 40, 1, 50, 70, 2, 1, false, false, false, true);         // d 40, soft-cap, window
    cap.softcap = 3.f, cap.window = 30;
    cases.push_back(cap);
    Case vw = packed_seqs(96, 96, {25, 1}, {60, 8}, 2, 1, false, false);          // varlen + window (general)
    vw.window = 10;
    cases.push_back(vw);
  }
  int failed = 0;
  for (const Case& c : cases) failed += run_case(c, rng) ? 0 : 1;
  std::printf("%s: %d of %zu cases failed\n", failed ? "FAIL" : "OK", failed, cases.size());
  return failed ? 1 : 0;
}
