// test_kernel_common.cpp: the kernel-side helpers of kernels-src/common: fp16/bf16
// conversions against the IEEE definitions (exhaustively where the space allows), row
// layouts of strided tensors, argument messages, and the negotiation rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ieee_reference.hpp"
#include "kh_kernel/args.hpp"
#include "kh_kernel/half.hpp"
#include "kh_kernel/negotiate.hpp"
#include "kh_kernel/tensor.hpp"

using kh_test::decode_bf16;
using kh_test::decode_f16;
using kh_test::Dt;
using kh_test::round_to;

namespace {

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

float random_float(std::mt19937_64& rng) {
  // Any finite bit pattern: covers subnormals, every exponent and both signs.
  for (;;) {
    const uint32_t u = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isfinite(f)) return f;
  }
}

}  // namespace

TEST_CASE("half: every fp16 bit pattern decodes exactly and round-trips") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    CAPTURE(h);
    const float f = kh_kernels::half_bits_to_float(static_cast<uint16_t>(h));
    REQUIRE(same_value(f, decode_f16(static_cast<uint16_t>(h))));
    if (!std::isnan(f)) REQUIRE(kh_kernels::float_to_half_bits(f) == h);
    else REQUIRE(std::isnan(kh_kernels::half_bits_to_float(kh_kernels::float_to_half_bits(f))));
  }
}

TEST_CASE("half: float -> fp16 rounds to nearest even") {
  // Midpoints between neighbours tie to the even one; just above goes up.
  for (uint32_t h = 0; h < 0x7bffu; ++h) {
    const double lo = decode_f16(static_cast<uint16_t>(h)), hi = decode_f16(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact in float
    REQUIRE(kh_kernels::float_to_half_bits(mid) == ((h & 1) ? h + 1 : h));
  }
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    const float f = random_float(rng);
    CAPTURE(f);
    REQUIRE(same_value(decode_f16(kh_kernels::float_to_half_bits(f)), round_to(f, Dt::f16)));
#ifdef __FLT16_MAX__
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    REQUIRE(kh_kernels::float_to_half_bits(f) == ref_bits);
#endif
  }
  CHECK(kh_kernels::float_to_half_bits(65504.0f) == 0x7bffu);
  CHECK(kh_kernels::float_to_half_bits(65519.99f) == 0x7bffu);
  CHECK(kh_kernels::float_to_half_bits(65520.0f) == 0x7c00u);
  CHECK(kh_kernels::float_to_half_bits(-INFINITY) == 0xfc00u);
  CHECK(kh_kernels::float_to_half_bits(0x1p-24f) == 0x0001u);
  CHECK(kh_kernels::float_to_half_bits(0x1p-25f) == 0x0000u);
  CHECK(kh_kernels::float_to_half_bits(0x1.000002p-25f) == 0x0001u);
  CHECK(kh_kernels::float_to_half_bits(-0.0f) == 0x8000u);
  CHECK(std::isnan(decode_f16(kh_kernels::float_to_half_bits(std::nanf("")))));
  CHECK(std::isnan(decode_f16(kh_kernels::float_to_half_bits(-std::nanf("0x1")))));  // low payload bits only
}

TEST_CASE("half: bf16 decodes every pattern and rounds to nearest even") {
  for (uint32_t b = 0; b < 0x10000u; ++b)
    REQUIRE(same_value(kh_kernels::bf16_bits_to_float(static_cast<uint16_t>(b)), decode_bf16(static_cast<uint16_t>(b))));
  std::mt19937_64 rng(43);
  for (int i = 0; i < 200000; ++i) {
    const float f = random_float(rng);
    CAPTURE(f);
    REQUIRE(same_value(decode_bf16(kh_kernels::float_to_bf16_bits(f)), round_to(f, Dt::bf16)));
  }
  CHECK(kh_kernels::float_to_bf16_bits(3.4028235e38f) == 0x7f80u);  // rounds up to Inf
  CHECK(kh_kernels::float_to_bf16_bits(1.0f + 0x1p-8f) == 0x3f80u);  // tie, to even
  CHECK(kh_kernels::float_to_bf16_bits(1.0f + 0x1p-7f + 0x1p-8f) == 0x3f82u);  // tie, to even (up)
  CHECK(std::isnan(decode_bf16(kh_kernels::float_to_bf16_bits(std::nanf("0x1")))));
}

TEST_CASE("half: double rounds once, not twice") {
  // 1 + 2^-11 + 2^-40 is just above an fp16 midpoint; rounding through float first would
  // land on the midpoint and tie down to 1.
  CHECK(kh_kernels::double_to_half_bits(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01u);
  CHECK(kh_kernels::double_to_bf16_bits(1.0 + 0x1p-8 + 0x1p-40) == 0x3f81u);
  std::mt19937_64 rng(44);
  std::uniform_real_distribution<double> dist(-70000.0, 70000.0);
  for (int i = 0; i < 100000; ++i) {
    const double d = dist(rng) * std::ldexp(1.0, static_cast<int>(rng() % 40) - 30);
    CAPTURE(d);
    REQUIRE(same_value(decode_f16(kh_kernels::double_to_half_bits(d)), round_to(d, Dt::f16)));
    REQUIRE(same_value(decode_bf16(kh_kernels::double_to_bf16_bits(d)), round_to(d, Dt::bf16)));
  }
}

TEST_CASE("RowLayout: collapses what it can and maps rows to offsets") {
  kh_kernels::TensorView t;
  t.ndim = 4;
  const int64_t shape[] = {2, 3, 5, 8};
  SUBCASE("contiguous: one uniform dim") {
    const int64_t strides[] = {120, 40, 8, 1};
    std::memcpy(t.shape, shape, sizeof shape);
    std::memcpy(t.strides, strides, sizeof strides);
    kh_kernels::RowLayout r;
    REQUIRE(kh_kernels::make_row_layout(t, &r));
    CHECK(r.ndim == 1);
    CHECK(r.uniform());
    CHECK(r.row_stride() == 8);
    CHECK(r.offset(29) == 29 * 8);
  }
  SUBCASE("padded: each leading dim kept, offsets by index") {
    const int64_t strides[] = {1000, 100, 10, 1};
    std::memcpy(t.shape, shape, sizeof shape);
    std::memcpy(t.strides, strides, sizeof strides);
    kh_kernels::RowLayout r;
    REQUIRE(kh_kernels::make_row_layout(t, &r));
    CHECK(r.ndim == 3);
    CHECK(!r.uniform());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t k = 0; k < 5; ++k) CHECK(r.offset((i * 3 + j) * 5 + k) == i * 1000 + j * 100 + k * 10);
  }
  SUBCASE("size-1 dims vanish, negative strides work") {
    const int64_t shape1[] = {1, 3, 1, 8};
    const int64_t strides[] = {7, -16, 3, 1};
    std::memcpy(t.shape, shape1, sizeof shape1);
    std::memcpy(t.strides, strides, sizeof strides);
    kh_kernels::RowLayout r;
    REQUIRE(kh_kernels::make_row_layout(t, &r));
    CHECK(r.ndim == 1);
    CHECK(r.offset(2) == -32);
  }
}

namespace {

// A bf16 (T, H, D) view at element offset `off` of a buffer, rows `row` elements apart.
kh_kernels::TensorView rows_view(uint16_t* buf, int64_t off, int64_t t, int64_t h, int64_t d, int64_t row,
                                 int64_t head) {
  kh_kernels::TensorView v;
  v.tensor = reinterpret_cast<const DLTensor*>(buf);  // present(); never dereferenced here
  v.data = buf + off;
  v.dtype = kh_kernels::DType::kBF16;
  v.ndim = 3;
  v.shape[0] = t, v.shape[1] = h, v.shape[2] = d;
  v.strides[0] = row, v.strides[1] = head, v.strides[2] = 1;
  return v;
}

// Whether any element address of a equals one of b, by listing them.
bool elements_meet(const kh_kernels::TensorView& a, const kh_kernels::TensorView& b) {
  std::vector<uintptr_t> seen;
  auto each = [](const kh_kernels::TensorView& v, auto&& fn) {
    for (int64_t i = 0; i < v.shape[0]; ++i)
      for (int64_t j = 0; j < v.shape[1]; ++j)
        for (int64_t k = 0; k < v.shape[2]; ++k)
          fn(reinterpret_cast<uintptr_t>(static_cast<uint16_t*>(v.data) + i * v.strides[0] + j * v.strides[1] +
                                         k * v.strides[2]));
  };
  each(a, [&](uintptr_t p) { seen.push_back(p); });
  std::sort(seen.begin(), seen.end());
  bool meet = false;
  each(b, [&](uintptr_t p) { meet = meet || std::binary_search(seen.begin(), seen.end(), p); });
  return meet;
}

}  // namespace

TEST_CASE("args: views whose rows interleave (packed qkv) overlap exactly when an element is shared") {
  std::vector<uint16_t> buf(1 << 16);
  char msg[256] = {0};
  kh_call_ctx ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.error_buf = msg;
  ctx.error_buf_size = sizeof msg;
  const kh_kernels::OpContext c{"rotary_embedding", &ctx, kDLCPU};
  SUBCASE("the query and key slices of one qkv tensor do not overlap") {
    // qkv (T, (8 + 2 + 2) * 64): q heads 0..7, k heads 8..9, v heads 10..11.
    const int64_t row = 12 * 64;
    const auto q = rows_view(buf.data(), 0, 40, 8, 64, row, 64);
    const auto k = rows_view(buf.data(), 8 * 64, 40, 2, 64, row, 64);
    bool decided = false;
    CHECK_FALSE(kh_kernels::interleaved_rows_overlap(q, k, &decided));
    CHECK(decided);
    CHECK(kh_kernels::check_no_overlap(c, "query", q, "key", k, kh_kernels::Alias::kForbidden) == KH_OK);
    CHECK(kh_kernels::check_no_overlap(c, "key", k, "query", q, kh_kernels::Alias::kForbidden) == KH_OK);
  }
  SUBCASE("a key slice reaching into the query's heads is refused") {
    const int64_t row = 12 * 64;
    const auto q = rows_view(buf.data(), 0, 40, 8, 64, row, 64);
    const auto k = rows_view(buf.data(), 7 * 64 + 8, 40, 2, 64, row, 64);
    CHECK(kh_kernels::check_no_overlap(c, "query", q, "key", k, kh_kernels::Alias::kForbidden) ==
          KH_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(msg).find("'query': overlaps key") != std::string::npos);
  }
  SUBCASE("every offset and row count agrees with the element-by-element answer") {
    const int64_t row = 6 * 16;  // rows of 96 elements; views of 2 heads x 16
    for (int64_t off = -3 * row; off <= 3 * row; off += 5)
      for (int64_t tb : {1, 2, 7}) {
        const auto a = rows_view(buf.data(), 4 * row, 7, 2, 16, row, 16);
        const auto b = rows_view(buf.data(), 4 * row + off, tb, 2, 16, row, 24);
        bool decided = false;
        const bool meet = kh_kernels::interleaved_rows_overlap(a, b, &decided);
        CAPTURE(off);
        CAPTURE(tb);
        REQUIRE(decided);
        CHECK(meet == elements_meet(a, b));
      }
  }
  SUBCASE("other layouts fall back to whole extents") {
    const auto a = rows_view(buf.data(), 0, 4, 2, 16, 64, 16);
    const auto b = rows_view(buf.data(), 40, 4, 2, 16, 128, 16);  // another row stride
    bool decided = true;
    kh_kernels::interleaved_rows_overlap(a, b, &decided);
    CHECK_FALSE(decided);
    CHECK(kh_kernels::check_no_overlap(c, "out", a, "x", b, kh_kernels::Alias::kForbidden) ==
          KH_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("args: messages name the op and the argument") {
  char buf[256] = {0};
  kh_call_ctx ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.error_buf = buf;
  ctx.error_buf_size = sizeof buf;
  const kh_kernels::OpContext c{"rms_norm", &ctx, kDLCPU};
  CHECK(kh_kernels::arg_error(c, "weight", "shape [%d] does not match x's last dim %d", 4096, 2048) ==
        KH_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(buf) == "rms_norm: argument 'weight': shape [4096] does not match x's last dim 2048");
  // A small buffer truncates, a missing one is ignored.
  char tiny[8];
  ctx.error_buf = tiny;
  ctx.error_buf_size = sizeof tiny;
  kh_kernels::arg_error(c, "weight", "long message");
  CHECK(std::string(tiny) == "rms_nor");
  ctx.error_buf = nullptr;
  CHECK(kh_kernels::arg_error(c, "x", "ignored") == KH_ERROR_INVALID_ARGUMENT);
  CHECK(kh_kernels::arg_error({"op", nullptr, kDLCPU}, "x", "no ctx") == KH_ERROR_INVALID_ARGUMENT);
  CHECK(kh_kernels::dtype_mask_names(KH_DTYPE_F32 | KH_DTYPE_F16 | KH_DTYPE_BF16) == "float32, float16 or bfloat16");
}

TEST_CASE("negotiate: admits exactly the same major with a minor the loader knows") {
  kh_module_desc module{};
  module.struct_size = sizeof module;
  module.abi_version = KH_MAKE_ABI_VERSION(1, 2);
  auto run = [&](uint32_t lo, uint32_t hi, uint32_t size = sizeof(kh_negotiation)) {
    kh_negotiation n{};
    n.struct_size = size;
    n.loader_min_abi = lo;
    n.loader_max_abi = hi;
    const kh_status s = kh_kernels::negotiate(&n, &module);
    if (s == KH_OK) {
      CHECK(n.module == &module);
      CHECK(n.kernel_abi == module.abi_version);
    } else {
      CHECK(n.module == nullptr);
    }
    return s;
  };
  CHECK(run(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 2)) == KH_OK);
  CHECK(run(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 7)) == KH_OK);
  CHECK(run(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 1)) == KH_ERROR_ABI_MISMATCH);  // minor too new
  CHECK(run(KH_MAKE_ABI_VERSION(2, 0), KH_MAKE_ABI_VERSION(2, 5)) == KH_ERROR_ABI_MISMATCH);  // other major
  CHECK(run(KH_MAKE_ABI_VERSION(0, 1), KH_MAKE_ABI_VERSION(0, 9)) == KH_ERROR_ABI_MISMATCH);
  CHECK(run(KH_MAKE_ABI_VERSION(1, 5), KH_MAKE_ABI_VERSION(1, 0)) == KH_ERROR_ABI_MISMATCH);  // empty range
  CHECK(run(KH_MAKE_ABI_VERSION(1, 0), KH_MAKE_ABI_VERSION(1, 2), offsetof(kh_negotiation, module)) ==
        KH_ERROR_ABI_MISMATCH);
  CHECK(kh_kernels::negotiate(nullptr, &module) == KH_ERROR_INVALID_ARGUMENT);
}
