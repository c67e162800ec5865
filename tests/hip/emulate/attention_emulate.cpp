// attention_emulate.cpp: runs the gfx942 attention kernel (kernels-src/attention/hip/
// attention_fwd_gfx942_kernel.hpp) on the host through the SIMT emulator (simt.hpp) and
// compares out and lse with a float64 reference of the same inputs, over the shapes that
// exercise its index arithmetic: head dims 64/128, bf16/fp16, causal or not, seqlen_q <,
// = and > seqlen_k, lengths that are not tile multiples, GQA, fully masked rows, strided
// (packed qkv) inputs. No AMD GPU is needed; see simt.hpp for what this does and does not show.
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

using kh_attention::gfx942::ElementType;
using kh_attention::gfx942::FwdParams;
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

struct Case {
  int d, batch, sq, sk, hq, hkv;
  bool causal, bf16, packed, lse;
};

// Returns true when out and lse are within tolerance.
bool run_case(const Case& c, std::mt19937& rng) {
  const ElementType t = c.bf16 ? ElementType::kBF16 : ElementType::kF16;
  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  // q, k, v as (batch, seq, heads, d); packed: one buffer (batch, s, hq + 2 hkv, d) when sq == sk.
  const int hq = c.hq, hkv = c.hkv, d = c.d;
  std::vector<uint16_t> qbuf, kbuf, vbuf, pbuf;
  FwdParams p;
  const uint16_t *q, *k, *v;
  if (c.packed) {
    const int hs = hq + 2 * hkv;
    pbuf.resize(static_cast<size_t>(c.batch) * c.sq * hs * d);
    for (auto& x : pbuf) x = to_bits(uni(rng), t);
    q = pbuf.data();
    k = pbuf.data() + hq * d;
    v = pbuf.data() + (hq + hkv) * d;
    p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = static_cast<int64_t>(c.sq) * hs * d;
    p.q_row_stride = p.k_row_stride = p.v_row_stride = hs * d;
    p.q_head_stride = p.k_head_stride = p.v_head_stride = d;
  } else {
    qbuf.resize(static_cast<size_t>(c.batch) * c.sq * hq * d);
    kbuf.resize(static_cast<size_t>(c.batch) * c.sk * hkv * d);
    vbuf.resize(kbuf.size());
    for (auto* b : {&qbuf, &kbuf, &vbuf})
      for (auto& x : *b) x = to_bits(uni(rng), t);
    q = qbuf.data(), k = kbuf.data(), v = vbuf.data();
    p.q_batch_stride = static_cast<int64_t>(c.sq) * hq * d, p.q_row_stride = hq * d, p.q_head_stride = d;
    p.k_batch_stride = static_cast<int64_t>(c.sk) * hkv * d, p.k_row_stride = hkv * d, p.k_head_stride = d;
    p.v_batch_stride = p.k_batch_stride, p.v_row_stride = p.k_row_stride, p.v_head_stride = d;
  }
  std::vector<uint16_t> out(static_cast<size_t>(c.batch) * c.sq * hq * d, 0x7e00);  // NaN-ish canary
  std::vector<float> lse(static_cast<size_t>(c.batch) * hq * c.sq, 12345.f);
  p.q = q, p.k = k, p.v = v, p.out = out.data(), p.lse = c.lse ? lse.data() : nullptr;
  p.o_batch_stride = static_cast<int64_t>(c.sq) * hq * d, p.o_row_stride = hq * d, p.o_head_stride = d;
  p.lse_batch_stride = static_cast<int64_t>(hq) * c.sq, p.lse_head_stride = c.sq, p.lse_row_stride = 1;
  p.batch = c.batch, p.seqlen_q = c.sq, p.seqlen_k = c.sk, p.heads_q = hq, p.heads_kv = hkv, p.head_dim = d;
  p.scale = 1.f / std::sqrt(static_cast<float>(d));
  p.causal = c.causal;
  p.dtype = t;

  using KernelFn = void (*)(FwdParams);
  auto launch = [&](KernelFn full, KernelFn causal, int block_m, int threads) {
    simt::launch(simt::Dim3{static_cast<unsigned>((c.sq + block_m - 1) / block_m), static_cast<unsigned>(hq),
                            static_cast<unsigned>(c.batch)},
                 threads, c.causal ? causal : full, p);
  };
#define KH_EMU_LAUNCH(D, T)                                                                      \
  launch(&kh_attention::gfx942::attention_fwd_gfx942_kernel<D, T, false>,                        \
         &kh_attention::gfx942::attention_fwd_gfx942_kernel<D, T, true>, TileConfig<D>::kBlockM, \
         TileConfig<D>::kWaves * 64)
  if (d == 64) {
    if (c.bf16) KH_EMU_LAUNCH(64, ElementType::kBF16); else KH_EMU_LAUNCH(64, ElementType::kF16);
  } else {
    if (c.bf16) KH_EMU_LAUNCH(128, ElementType::kBF16); else KH_EMU_LAUNCH(128, ElementType::kF16);
  }
#undef KH_EMU_LAUNCH

  // float64 reference on the same 16-bit inputs (the CPU backend's algorithm).
  double max_err = 0, max_lse_err = 0;
  bool masked_ok = true;
  const int group = hq / hkv;
  std::vector<double> s(c.sk);
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < hq; ++h) {
      const int hk = h / group;
      for (int i = 0; i < c.sq; ++i) {
        int visible = c.sk;
        if (c.causal) visible = std::min(c.sk, std::max(0, i + c.sk - c.sq + 1));
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < visible; ++j) {
          double acc = 0;
          for (int e = 0; e < d; ++e)
            acc += to_double(q[b * p.q_batch_stride + i * p.q_row_stride + h * p.q_head_stride + e], t) *
                   to_double(k[b * p.k_batch_stride + j * p.k_row_stride + hk * p.k_head_stride + e], t);
          s[j] = acc * p.scale;
          mx = std::max(mx, s[j]);
        }
        double denom = 0;
        for (int j = 0; j < visible; ++j) denom += std::exp(s[j] - mx);
        for (int e = 0; e < d; ++e) {
          double o = 0;
          for (int j = 0; j < visible; ++j)
            o += std::exp(s[j] - mx) * to_double(v[b * p.v_batch_stride + j * p.v_row_stride + hk * p.v_head_stride + e], t);
          o = visible > 0 ? o / denom : 0.0;
          const double got = to_double(out[b * p.o_batch_stride + i * p.o_row_stride + h * p.o_head_stride + e], t);
          const double err = std::fabs(got - o);
          if (!(err <= max_err)) max_err = std::isnan(err) ? INFINITY : std::max(max_err, err);
        }
        if (c.lse) {
          const float got = lse[b * p.lse_batch_stride + h * p.lse_head_stride + i];
          if (visible == 0) {
            masked_ok = masked_ok && std::isinf(got) && got < 0;
          } else {
            const double err = std::fabs(got - (mx + std::log(denom)));
            max_lse_err = std::isnan(err) ? INFINITY : std::max(max_lse_err, err);
          }
        }
      }
    }
  // P is rounded to 16 bits before P V (as in FlashAttention): a few units in the last place
  // of the output dtype.
  const double tol = c.bf16 ? 2 * 0.00390625 : 2 * 0.00048828125;
  const bool ok = max_err <= tol && max_lse_err <= 2e-3 && masked_ok;
  std::printf("%s d=%-3d %s b=%d sq=%-4d sk=%-4d hq=%d hkv=%d %-6s %-6s lse=%d  max|out-ref| %.2e (tol %.2e)  "
              "max|lse-ref| %.2e%s\n",
              ok ? "ok  " : "FAIL", c.d, c.bf16 ? "bf16" : "fp16", c.batch, c.sq, c.sk, c.hq, c.hkv,
              c.causal ? "causal" : "full", c.packed ? "packed" : "dense", c.lse ? 1 : 0, max_err, tol, max_lse_err,
              masked_ok ? "" : "  (masked rows: lse is not -inf)");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::mt19937 rng(42);
  std::vector<Case> cases;
  for (int d : {64, 128})
    for (bool bf16 : {true, false}) {
      cases.push_back({d, 1, 130, 130, 2, 1, false, bf16, false, true});   // GQA 2:1, past one tile
      cases.push_back({d, 1, 130, 130, 2, 2, true, bf16, false, true});    // causal, square
      if (quick) continue;
      cases.push_back({d, 2, 17, 200, 2, 2, true, bf16, false, true});     // sq < sk, bottom-right
      cases.push_back({d, 1, 150, 37, 3, 1, true, bf16, false, true});     // sq > sk: fully masked rows
      cases.push_back({d, 1, 1, 65, 1, 1, false, bf16, false, false});     // one query, no lse
      cases.push_back({d, 1, 70, 70, 2, 1, true, bf16, true, true});       // packed qkv strides
    }
  int failed = 0;
  for (const Case& c : cases) failed += run_case(c, rng) ? 0 : 1;
  std::printf("%s: %d of %zu cases failed\n", failed ? "FAIL" : "OK", failed, cases.size());
  return failed ? 1 : 0;
}
