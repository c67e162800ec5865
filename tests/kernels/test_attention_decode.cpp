// test_attention_decode.cpp: attention_decode_paged of the attention CPU library through the
// public host API, against a float64 computation written here: shuffled, non-contiguous
// block tables (padded rows, blocks in random order), lengths 0, 1, off and on multiples of
// the block size and the table's full capacity, q_len 1 and 5 (causal among the new tokens,
// bottom-right aligned), MHA/GQA/MQA, head dims 32..256 including ones that are not powers
// of two, sliding window, soft-cap, lse present or not, padded out rows; and bad calls
// refused with the argument named (shapes, dtypes, block table width, missing or too small
// workspace, window, soft-cap).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "attention_test_support.hpp"
#include "kernel_test_support.hpp"
#include "kh/kh.hpp"

using namespace kh_test;

namespace {

// The workspace rule, as the docs state it (written here independently of kernels-src).
int64_t workspace_floats(int64_t batch, int64_t q_len, int64_t hq, int64_t hkv, int64_t d, int64_t max_kv) {
  auto cdiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t by_fill = batch * hkv > 0 ? cdiv(4096, batch * hkv) : 1;
  int64_t s = std::min<int64_t>({64, cdiv(max_kv, 128), by_fill});
  s = std::max<int64_t>(s, 1);
  return s > 1 ? batch * q_len * hq * s * (d + 1) : 0;
}

struct DecodeCase {
  Dt dt = Dt::bf16;
  int64_t batch = 3, q_len = 1, hq = 4, hkv = 2, d = 64, block_size = 16, max_blocks = 6;
  std::vector<int64_t> lens = {0, 1, 45};  // one per sequence (cycled)
  int64_t window_left = -1;
  double softcap = 0.0;
  bool lse = true;
  int64_t out_pad = 0;  // extra elements per out row
};

void run_decode_case(const DecodeCase& c, uint64_t seed) {
  CAPTURE(dt_name(c.dt));
  CAPTURE(c.batch);
  CAPTURE(c.q_len);
  CAPTURE(c.hq);
  CAPTURE(c.hkv);
  CAPTURE(c.d);
  CAPTURE(c.block_size);
  CAPTURE(c.window_left);
  CAPTURE(c.softcap);
  Random rnd(seed);
  std::mt19937_64 rng(seed * 7 + 1);
  const int64_t bs = c.block_size, max_kv = c.max_blocks * bs;
  const int64_t num_blocks = c.batch * c.max_blocks + 3;  // spare blocks nobody references
  Tensor q = make_tensor(c.dt, {c.batch, c.q_len, c.hq, c.d});
  // k_cache with a padded head stride, v_cache packed: strides come from the DLTensor.
  const int64_t kh_stride = c.d + 8;
  Tensor kc = make_tensor(c.dt, {num_blocks, bs, c.hkv, c.d}, {bs * c.hkv * kh_stride, c.hkv * kh_stride, kh_stride, 1});
  Tensor vc = make_tensor(c.dt, {num_blocks, bs, c.hkv, c.d});
  rnd.fill(q);
  rnd.fill(kc);
  rnd.fill(vc);
  // Block table rows padded (row stride max_blocks + 5), blocks shuffled over the whole cache.
  IntTensor table({c.batch, c.max_blocks}, {c.max_blocks + 5, 1});
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t j = 0; j < c.max_blocks; ++j) table.at(b, j) = perm[static_cast<size_t>(b * c.max_blocks + j)];
  IntTensor lens({c.batch});
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t len = c.lens[static_cast<size_t>(b) % c.lens.size()];
    REQUIRE(len <= max_kv);
    lens.at(b) = static_cast<int32_t>(len);
  }
  const int64_t orow = c.hq * c.d + c.out_pad;
  Tensor out = make_tensor(c.dt, {c.batch, c.q_len, c.hq, c.d}, {c.q_len * orow, orow, c.d, 1});
  Tensor lse = make_tensor(Dt::f32, {c.batch, c.hq, c.q_len});
  const int64_t ws_n = workspace_floats(c.batch, c.q_len, c.hq, c.hkv, c.d, max_kv);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  // The op's own answer (kh_op_workspace_size, asked before the workspace exists) is the
  // documented rule's, for every case of the grid; the call then gets exactly that much.
  const kh::Op decode = attention_kernel().op("attention_decode_paged");
  const uint64_t asked = decode.workspace_size(
      {targ(out), c.lse ? targ(lse) : kh::none(), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), kh::arg(nullptr),
       kh::arg(scale), kh::arg(static_cast<int64_t>(c.window_left)), kh::arg(c.softcap)});
  CHECK(asked == static_cast<uint64_t>(ws_n) * sizeof(float));
  Tensor ws = make_tensor(Dt::f32, {static_cast<int64_t>(asked / sizeof(float))});

  const kh_status status =
      call(attention_kernel().op("attention_decode_paged"),
           {targ(out), c.lse ? targ(lse) : kh::none(), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), targ(ws),
            kh::arg(scale), kh::arg(static_cast<int64_t>(c.window_left)), kh::arg(c.softcap)});
  INFO(kh_last_error());
  REQUIRE(status == KH_OK);

  // The reference: each sequence's keys gathered into a dense (len, hkv, d) array first.
  int64_t bad = 0, bad_lse = 0;
  const int64_t group = c.hq / c.hkv;
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t len = lens.at(b);
    std::vector<double> kd(static_cast<size_t>(len * c.hkv * c.d)), vd(kd.size());
    for (int64_t j = 0; j < len; ++j) {
      const int64_t blk = table.at(b, j / bs), off = j % bs;
      for (int64_t h = 0; h < c.hkv; ++h)
        for (int64_t e = 0; e < c.d; ++e) {
          kd[static_cast<size_t>((j * c.hkv + h) * c.d + e)] = kc.get({blk, off, h, e});
          vd[static_cast<size_t>((j * c.hkv + h) * c.d + e)] = vc.get({blk, off, h, e});
        }
    }
    for (int64_t i = 0; i < c.q_len; ++i)
      for (int64_t h = 0; h < c.hq; ++h) {
        const int64_t hk = h / group;
        const int64_t newest = len - c.q_len + i;  // bottom-right aligned causal
        const int64_t oldest = c.window_left < 0 ? 0 : std::max<int64_t>(0, newest - c.window_left);
        std::vector<double> s;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = oldest; j <= newest; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.d; ++e)
            dot += q.get({b, i, h, e}) * kd[static_cast<size_t>((j * c.hkv + hk) * c.d + e)];
          double x = dot * scale;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          s.push_back(x);
          mx = std::max(mx, x);
        }
        double denom = 0;
        for (double x : s) denom += std::exp(x - mx);
        for (int64_t e = 0; e < c.d; ++e) {
          double want = 0;
          for (size_t n = 0; n < s.size(); ++n)
            want += std::exp(s[n] - mx) / denom * vd[static_cast<size_t>(((oldest + static_cast<int64_t>(n)) * c.hkv + hk) * c.d + e)];
          const double got = out.get({b, i, h, e});
          if (!close(got, want, c.dt) && bad++ < 3)
            MESSAGE("out[" << b << "," << i << "," << h << "," << e << "] = " << got << ", want " << want
                           << " (len " << len << ")");
        }
        if (c.lse) {
          const double want = s.empty() ? -std::numeric_limits<double>::infinity() : mx + std::log(denom);
          const double got = lse.get({b, h, i});
          if (!close(got, want, Dt::f32, 4.0) && bad_lse++ < 3)
            MESSAGE("lse[" << b << "," << h << "," << i << "] = " << got << ", want " << want);
        }
      }
  }
  CHECK(bad == 0);
  CHECK(bad_lse == 0);
  CHECK(count_gap_writes(out) == 0);
  if (!c.lse) {
    int64_t written = 0;
    for (int64_t i = 0; i < lse.storage_elems(); ++i) written += !std::isnan(lse.get_at(i));
    CHECK(written == 0);
  }
}

}  // namespace

TEST_CASE("attention_decode_paged: descriptor") {
  const kh::Kernel& k = attention_kernel();
  CHECK(k.version() == "1.2.0");
  CHECK(k.op("attention_decode_paged").schema() ==
        "attention_decode_paged(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k_cache, Tensor v_cache, "
        "Tensor block_table, Tensor seq_lens, Tensor(c!) workspace, float scale, int window_left=-1, "
        "float softcap=0.0) -> ()");
  // 1.0's op keeps its exact meaning.
  CHECK(k.op("attention_fwd").schema() ==
        "attention_fwd(Tensor(a!) out, Tensor(b!)? lse, Tensor q, Tensor k, Tensor v, float scale, bool causal) -> ()");
}

TEST_CASE("attention_decode_paged: the workspace-size query (kh_op_workspace_size)") {
  const kh::Kernel& k = attention_kernel();
  const kh::Op decode = k.op("attention_decode_paged");
  CHECK(decode.workspace_arg() == 7);
  CHECK(k.op("attention_decode_paged_fp8").workspace_arg() == 9);
  CHECK(k.op("attention_fwd").workspace_arg() == -1);

  // Shapes alone: every tensor without data, as a host asks before allocating anything.
  const int64_t B = 3, H = 8, HK = 2, D = 64, BS = 16, MB = 40;
  auto shape_only = [](Tensor& t) {
    DLTensor d = *t.t();
    d.data = nullptr;
    return d;
  };
  Tensor q = make_tensor(Dt::bf16, {B, 1, H, D}), out = make_tensor(Dt::bf16, {B, 1, H, D});
  Tensor kc = make_tensor(Dt::bf16, {B * MB, BS, HK, D}), vc = make_tensor(Dt::bf16, {B * MB, BS, HK, D});
  IntTensor table({B, MB}), lens({B});
  DLTensor dq = shape_only(q), dout = shape_only(out), dkc = shape_only(kc), dvc = shape_only(vc);
  DLTensor dtable = table.dl, dlens = lens.dl;
  dtable.data = nullptr;
  dlens.data = nullptr;
  const std::vector<kh_value> shapes = {kh::arg(&dout), kh::none(), kh::arg(&dq),    kh::arg(&dkc),
                                        kh::arg(&dvc),  kh::arg(&dtable), kh::arg(&dlens), kh::arg(nullptr),
                                        kh::arg(0.125)};  // window_left and softcap: their defaults
  const uint64_t bytes = decode.workspace_size(shapes);
  CHECK(bytes == static_cast<uint64_t>(workspace_floats(B, 1, H, HK, D, MB * BS)) * sizeof(float));
  REQUIRE(bytes > 0);

  // A call with one float less than the answer is refused, naming the workspace.
  {
    Random rnd(7);
    rnd.fill(q);
    rnd.fill(kc);
    rnd.fill(vc);
    for (int64_t b = 0; b < B; ++b) {
      lens.at(b) = static_cast<int32_t>(MB * BS - b);
      for (int64_t j = 0; j < MB; ++j) table.at(b, j) = static_cast<int32_t>(b * MB + j);
    }
    Tensor short_ws = make_tensor(Dt::f32, {static_cast<int64_t>(bytes / sizeof(float)) - 1});
    Tensor ws = make_tensor(Dt::f32, {static_cast<int64_t>(bytes / sizeof(float))});
    CHECK(call(decode, {targ(out), kh::none(), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), targ(short_ws),
                        kh::arg(0.125)}) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(kh_last_error()).find("'workspace'") != std::string::npos);
    CHECK(call(decode, {targ(out), kh::none(), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), targ(ws),
                        kh::arg(0.125)}) == KH_OK);
  }

  // Arguments the call would refuse are refused by the query too, naming the argument.
  DLTensor bad_kc = dkc;
  int64_t bad_shape[4] = {B * MB, BS, 3, D};  // 3 kv heads do not divide 8 query heads
  bad_kc.shape = bad_shape;
  std::vector<kh_value> bad = shapes;
  bad[3] = kh::arg(&bad_kc);
  bad[4] = kh::arg(&bad_kc);
  uint64_t ignored = 1;
  CHECK(kh_op_workspace_size(decode.get(), bad.data(), static_cast<uint32_t>(bad.size()), &ignored) ==
        KH_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(kh_last_error()).find("'k_cache'") != std::string::npos);
  CHECK(ignored == 0);

  // An op without a workspace does not answer.
  const kh::Op fwd = k.op("attention_fwd");
  CHECK(kh_op_workspace_size(fwd.get(), nullptr, 0, &ignored) == KH_ERROR_UNSUPPORTED);
  CHECK(std::string(kh_last_error()).find("does not give a workspace size") != std::string::npos);
}

TEST_CASE("attention_decode_paged: the workspace rule") {
  CHECK(workspace_floats(1, 1, 32, 8, 128, 32768) == 1 * 1 * 32 * 64 * 129);  // split 64 ways
  CHECK(workspace_floats(1, 1, 32, 8, 128, 4096) == 32 * 32 * 129);            // 4096 / 128 = 32
  CHECK(workspace_floats(16, 1, 32, 8, 128, 4096) == 16 * 32 * 32 * 129);      // 4096 / 128 = 32
  CHECK(workspace_floats(128, 1, 32, 8, 128, 4096) == 128 * 32 * 4 * 129);     // 4096 / 1024 = 4
  CHECK(workspace_floats(512, 1, 32, 8, 128, 4096) == 0);                      // one split: none
  CHECK(workspace_floats(4, 1, 4, 1, 64, 100) == 0);                           // one 128-key chunk
}

TEST_CASE("attention_decode_paged: values") {
  uint64_t seed = 5000;
  for (Dt dt : {Dt::bf16, Dt::f16}) {
    DecodeCase c;
    c.dt = dt;
    run_decode_case(c, seed++);  // GQA 4/2, lengths 0, 1, 45 at block size 16
    c.q_len = 5;                 // speculative: 5 new tokens, causal among them
    c.lens = {0, 3, 5, 96, 77};  // shorter than q_len: the oldest rows see nothing
    c.batch = 5;
    run_decode_case(c, seed++);
    c.window_left = 7;
    run_decode_case(c, seed++);
    c.window_left = 0;  // each row sees its own key only
    run_decode_case(c, seed++);
    c = DecodeCase{};
    c.dt = dt, c.hq = 4, c.hkv = 1, c.d = 128, c.block_size = 32, c.max_blocks = 5, c.lens = {160, 33, 32};
    c.softcap = 5.0, c.out_pad = 8;  // MQA, soft-cap, the table's full capacity
    run_decode_case(c, seed++);
    c = DecodeCase{};
    c.dt = dt, c.hq = 3, c.hkv = 3, c.d = 80, c.lens = {90, 1}, c.batch = 2, c.lse = false;  // MHA, d 80
    run_decode_case(c, seed++);
    c = DecodeCase{};
    c.dt = dt, c.hq = 8, c.hkv = 2, c.d = 256, c.block_size = 256, c.max_blocks = 2, c.lens = {300, 256, 511};
    c.q_len = 2, c.window_left = 100;  // block size 256, head dim 256
    run_decode_case(c, seed++);
    c = DecodeCase{};
    c.dt = dt, c.hq = 2, c.hkv = 1, c.d = 32, c.block_size = 1, c.max_blocks = 40, c.lens = {40, 17};
    run_decode_case(c, seed++);  // block size 1, head dim 32
    c = DecodeCase{};
    c.dt = dt, c.d = 104, c.max_blocks = 0, c.lens = {0};  // an empty block table: every row empty
    run_decode_case(c, seed++);
    c = DecodeCase{};
    c.dt = dt, c.batch = 0;
    run_decode_case(c, seed++);
  }
}

// bf16 q (B, q_len, H, D) and caches of B x MB blocks of BS rows, random values, each sequence's
// table row naming its own MB blocks in reverse order (a shuffled, non-identity table).
struct SmallPagedCache {
  Tensor q, kc, vc;
  IntTensor table;
  SmallPagedCache(int64_t B, int64_t q_len, int64_t H, int64_t HK, int64_t D, int64_t BS, int64_t MB, uint64_t seed)
      : q(make_tensor(Dt::bf16, {B, q_len, H, D})), kc(make_tensor(Dt::bf16, {B * MB, BS, HK, D})),
        vc(make_tensor(Dt::bf16, {B * MB, BS, HK, D})), table({B, MB}) {
    Random rnd(seed);
    rnd.fill(q), rnd.fill(kc), rnd.fill(vc);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < MB; ++j) table.at(b, j) = static_cast<int32_t>(B * MB - 1 - (b * MB + j));
  }
};

// Values the host cannot refuse without reading them are clamped: lengths below 0 act as 0,
// above the table's capacity as the capacity; a window as wide as the table as no window.
TEST_CASE("attention_decode_paged: lengths and windows outside the table are clamped") {
  const kh::Op op = attention_kernel().op("attention_decode_paged");
  const int64_t B = 2, H = 4, HK = 2, D = 64, BS = 16, MB = 3;
  SmallPagedCache cache(B, 2, H, HK, D, BS, MB, 21);
  Tensor &q = cache.q, &kc = cache.kc, &vc = cache.vc;
  IntTensor& table = cache.table;
  Tensor ws = make_tensor(Dt::f32, {1});
  auto run = [&](int32_t len0, int32_t len1, int64_t window, Tensor& out, Tensor& lse) {
    IntTensor lens({B});
    lens.at(0) = len0, lens.at(1) = len1;
    const kh_status s = call(op, {targ(out), targ(lse), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), targ(ws),
                                  kh::arg(0.125), kh::arg(window), kh::arg(0.0)});
    INFO(kh_last_error());
    REQUIRE(s == KH_OK);
  };
  auto same = [](const Tensor& a, const Tensor& b) {
    for (int64_t i = 0; i < a.storage_elems(); ++i) {
      const double x = a.get_at(i), y = b.get_at(i);
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
    return true;
  };
  Tensor o1 = make_tensor(Dt::bf16, {B, 2, H, D}), o2 = make_tensor(Dt::bf16, {B, 2, H, D});
  Tensor l1 = make_tensor(Dt::f32, {B, H, 2}), l2 = make_tensor(Dt::f32, {B, H, 2});
  run(-3, static_cast<int32_t>(MB * BS + 50), -1, o1, l1);
  run(0, static_cast<int32_t>(MB * BS), -1, o2, l2);
  CHECK(same(o1, o2));
  CHECK(same(l1, l2));
  CHECK(std::isinf(l1.get({0, 0, 0})));  // length 0: nothing seen
  run(40, 48, MB * BS, o1, l1);           // a window as wide as the table ...
  run(40, 48, -1, o2, l2);                // ... is no window
  CHECK(same(o1, o2));
  CHECK(same(l1, l2));
}

// The CPU build reads the table on the host: an entry the call reads (a block holding a key some
// row sees) outside [0, num_blocks) refuses the call before anything is written, whatever the
// bad value; entries it never reads (past a sequence's length, wholly before its window) may
// hold anything, as an engine's table does.
TEST_CASE("attention_decode_paged: block ids outside the cache are refused where they are read") {
  const kh::Op op = attention_kernel().op("attention_decode_paged");
  const int64_t B = 2, H = 4, HK = 2, D = 64, BS = 16, MB = 4, NB = B * MB;
  SmallPagedCache cache(B, 1, H, HK, D, BS, MB, 31);
  Tensor &q = cache.q, &kc = cache.kc, &vc = cache.vc;
  IntTensor& table = cache.table;
  IntTensor lens({B});
  lens.at(0) = 40, lens.at(1) = 20;  // sequence 0 reads blocks 0-2, sequence 1 blocks 0-1
  Tensor ws = make_tensor(Dt::f32, {std::max<int64_t>(workspace_floats(B, 1, H, HK, D, MB * BS), 1)});
  auto run = [&](int64_t window, Tensor& out) {
    return call(op, {targ(out), kh::none(), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(), targ(ws),
                     kh::arg(0.125), kh::arg(window), kh::arg(0.0)});
  };
  auto same = [](const Tensor& a, const Tensor& b) {
    for (int64_t i = 0; i < a.storage_elems(); ++i)
      if (a.get_at(i) != b.get_at(i)) return false;
    return true;
  };
  auto untouched = [](const Tensor& t) {
    for (int64_t i = 0; i < t.storage_elems(); ++i)
      if (!std::isnan(t.get_at(i))) return false;
    return true;
  };
  Tensor ref = make_tensor(Dt::bf16, {B, 1, H, D}), ref_w = make_tensor(Dt::bf16, {B, 1, H, D});
  REQUIRE(run(-1, ref) == KH_OK);
  REQUIRE(run(7, ref_w) == KH_OK);  // window 7: sequence 0's one row sees keys 32-39 (block 2) only
  for (int32_t bad : {int32_t{-1}, static_cast<int32_t>(NB), std::numeric_limits<int32_t>::min(),
                      std::numeric_limits<int32_t>::max()}) {
    CAPTURE(bad);
    const std::vector<int32_t> good = table.data;
    Tensor out = make_tensor(Dt::bf16, {B, 1, H, D});
    table.at(0, 2) = bad;  // holds sequence 0's keys 32-39
    CHECK(run(-1, out) == KH_ERROR_INVALID_ARGUMENT);
    INFO(kh_last_error());
    CHECK(error_names("block_table"));
    CHECK(std::string(kh_last_error()).find("block_table[0, 2] = " + std::to_string(bad)) != std::string::npos);
    CHECK(untouched(out));
    std::copy(good.begin(), good.end(), table.data.begin());  // in place: table.dl points at it
    table.at(1, 1) = bad;  // sequence 1's keys 16-19: read too
    CHECK(run(-1, out) == KH_ERROR_INVALID_ARGUMENT);
    CHECK(untouched(out));
    std::copy(good.begin(), good.end(), table.data.begin());  // in place: table.dl points at it
    table.at(0, 3) = bad, table.at(1, 2) = bad, table.at(1, 3) = bad;  // past both lengths: never read
    REQUIRE(run(-1, out) == KH_OK);
    CHECK(same(out, ref));
    table.at(0, 0) = bad, table.at(0, 1) = bad;  // wholly before sequence 0's window: never read
    Tensor out_w = make_tensor(Dt::bf16, {B, 1, H, D});
    REQUIRE(run(7, out_w) == KH_OK);
    CHECK(same(out_w, ref_w));
    CHECK(run(-1, out) == KH_ERROR_INVALID_ARGUMENT);  // without the window they are read
    std::copy(good.begin(), good.end(), table.data.begin());  // in place: table.dl points at it
  }
}

TEST_CASE("attention_decode_paged: bad arguments are refused and named") {
  const kh::Op op = attention_kernel().op("attention_decode_paged");
  const int64_t B = 2, H = 4, HK = 2, D = 64, BS = 16, NB = 8, MB = 4;
  Tensor q = make_tensor(Dt::bf16, {B, 1, H, D});
  Tensor kc = make_tensor(Dt::bf16, {NB, BS, HK, D});
  Tensor vc = make_tensor(Dt::bf16, {NB, BS, HK, D});
  Tensor out = make_tensor(Dt::bf16, {B, 1, H, D});
  Tensor lse = make_tensor(Dt::f32, {B, H, 1});
  IntTensor table({B, MB});
  IntTensor lens({B});
  for (int64_t b = 0; b < B; ++b) {
    lens.at(b) = 20;
    for (int64_t j = 0; j < MB; ++j) table.at(b, j) = static_cast<int32_t>(b * MB + j);
  }
  const int64_t need = workspace_floats(B, 1, H, HK, D, MB * BS);
  Tensor ws = make_tensor(Dt::f32, {std::max<int64_t>(need, 1)});
  Random rnd(11);
  rnd.fill(q), rnd.fill(kc), rnd.fill(vc);
  auto base = [&]() {
    return std::vector<kh_value>{targ(out), targ(lse), targ(q), targ(kc), targ(vc), table.arg(), lens.arg(),
                                 targ(ws), kh::arg(0.125), kh::arg(int64_t{-1}), kh::arg(0.0)};
  };
  auto refused = [&](std::vector<kh_value> args, const char* name, kh_status want = KH_ERROR_INVALID_ARGUMENT) {
    const kh_status s = call(op, std::move(args));
    INFO(kh_last_error());
    CHECK(s == want);
    CHECK(error_names(name));
  };
  SUBCASE("valid call for reference") { CHECK(call(op, base()) == KH_OK); }
  SUBCASE("workspace missing, too small, of another dtype") {
    auto a = base();
    a[7] = kh::none();
    refused(a, "workspace");
    REQUIRE(need == 0);  // 2 x 2 kv heads, 64 keys: one split, nothing needed ...
    Tensor q1 = make_tensor(Dt::bf16, {1, 1, H, D});
    Tensor o1 = make_tensor(Dt::bf16, {1, 1, H, D});
    IntTensor t1({1, 512});
    IntTensor l1({1});
    const int64_t need1 = workspace_floats(1, 1, H, HK, D, 512 * BS);
    REQUIRE(need1 > 0);  // ... but one sequence of 8192 keys splits
    Tensor small = make_tensor(Dt::f32, {need1 - 1});
    refused({targ(o1), kh::none(), targ(q1), targ(kc), targ(vc), t1.arg(), l1.arg(), targ(small), kh::arg(0.125),
             kh::arg(int64_t{-1}), kh::arg(0.0)},
            "workspace");
    CHECK(std::string(kh_last_error()).find(std::to_string(need1)) != std::string::npos);
    Tensor ws16 = make_tensor(Dt::bf16, {need1});
    refused({targ(o1), kh::none(), targ(q1), targ(kc), targ(vc), t1.arg(), l1.arg(), targ(ws16), kh::arg(0.125),
             kh::arg(int64_t{-1}), kh::arg(0.0)},
            "workspace");
  }
  SUBCASE("block table of the wrong dtype, batch or rank") {
    Tensor tf = make_tensor(Dt::f32, {B, MB});
    auto a = base();
    a[5] = targ(tf);
    refused(a, "block_table");
    IntTensor t3({B + 1, MB});
    a[5] = t3.arg();
    refused(a, "block_table");
    IntTensor t1({B * MB});
    a[5] = t1.arg();
    refused(a, "block_table");
    IntTensor tnc({B, MB}, {1, B});  // column-major: last dim not contiguous
    a[5] = tnc.arg();
    refused(a, "block_table");
  }
  SUBCASE("seq_lens of the wrong size") {
    IntTensor l3({B + 1});
    auto a = base();
    a[6] = l3.arg();
    refused(a, "seq_lens");
  }
  SUBCASE("block size not a power of two") {
    Tensor k24 = make_tensor(Dt::bf16, {NB, 24, HK, D});
    Tensor v24 = make_tensor(Dt::bf16, {NB, 24, HK, D});
    auto a = base();
    a[3] = targ(k24), a[4] = targ(v24);
    refused(a, "k_cache");
  }
  SUBCASE("v_cache of another shape, k_cache of another dtype") {
    Tensor v2 = make_tensor(Dt::bf16, {NB + 1, BS, HK, D});
    auto a = base();
    a[4] = targ(v2);
    refused(a, "v_cache");
    Tensor k16 = make_tensor(Dt::f16, {NB, BS, HK, D});
    a = base();
    a[3] = targ(k16);
    refused(a, "k_cache");
  }
  SUBCASE("heads_kv does not divide heads_q") {
    Tensor k3 = make_tensor(Dt::bf16, {NB, BS, 3, D});
    Tensor v3 = make_tensor(Dt::bf16, {NB, BS, 3, D});
    auto a = base();
    a[3] = targ(k3), a[4] = targ(v3);
    refused(a, "k_cache");
  }
  SUBCASE("head dims off the grid") {
    for (int64_t d : {36, 24, 264}) {
      Tensor qd = make_tensor(Dt::bf16, {B, 1, H, d});
      Tensor od = make_tensor(Dt::bf16, {B, 1, H, d});
      Tensor kd = make_tensor(Dt::bf16, {NB, BS, HK, d});
      Tensor vd = make_tensor(Dt::bf16, {NB, BS, HK, d});
      refused({targ(od), kh::none(), targ(qd), targ(kd), targ(vd), table.arg(), lens.arg(), targ(ws), kh::arg(0.125),
               kh::arg(int64_t{-1}), kh::arg(0.0)},
              "q", KH_ERROR_UNSUPPORTED);
    }
  }
  SUBCASE("lse of the wrong shape") {
    Tensor l2 = make_tensor(Dt::f32, {B, 1, H});
    auto a = base();
    a[1] = targ(l2);
    refused(a, "lse");
  }
  SUBCASE("window, soft-cap and scale out of range or of the wrong kind") {
    auto a = base();
    a[9] = kh::arg(int64_t{-2});
    refused(a, "window_left");
    a = base();
    a[9] = kh::arg(3.0);
    refused(a, "window_left");
    a = base();
    a[10] = kh::arg(-1.0);
    refused(a, "softcap");
    a = base();
    a[10] = kh::arg(INFINITY);
    refused(a, "softcap");
    a = base();
    a[8] = kh::arg(std::nan(""));
    refused(a, "scale");
  }
  SUBCASE("out is the workspace's memory or of the wrong shape") {
    Tensor o2 = make_tensor(Dt::bf16, {B, 2, H, D});
    auto a = base();
    a[0] = targ(o2);
    refused(a, "out");
    a = base();
    a[0] = targ(q);
    refused(a, "out");
  }
}
