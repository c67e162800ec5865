// pointwise_packs.inl: packs of N elements as the element-wise kernels move them, written once
// for CUDA and HIP against the primitives of pointwise_cuda.cuh / pointwise_hip.hpp (which
// include this file after defining them):
//   KH_PW_DEV                       the device-function prefix
//   to_f32(T), from_f32<T>(float)   T is float, F16 or Bf16; round to nearest even
//   pack2_from_f32<T>(lo, hi)       two 16-bit values rounded into one 32-bit word, lo first
//   Raw8, Raw16                     the 8- and 16-byte words
//   load_word<STREAM, W>(p), store_word<W>(p, w)   a word's load (streamed or read-only) and store
// A pack of N * sizeof(T) bytes (a power of two up to 32) moves as words of at most 16 bytes:
// 16 is the widest access sm80/sm90 and gfx942 issue.
#if !defined(KH_PW_DEV)
#error "pointwise_packs.inl is included by pointwise_cuda.cuh or pointwise_hip.hpp after their primitives"
#endif

namespace kh_pointwise {

template <typename T>
constexpr bool kIsBf16 = std::is_same_v<T, Bf16>;

// The word of B bytes.
template <int B>
struct Word;
template <>
struct Word<2> { using type = uint16_t; };
template <>
struct Word<4> { using type = uint32_t; };
template <>
struct Word<8> { using type = Raw8; };
template <>
struct Word<16> { using type = Raw16; };

template <typename E, int N>
struct alignas(sizeof(E) * N > 16 ? 16 : sizeof(E) * N) Pack {
  E v[N];
};

// p must be aligned to min(16, N * sizeof(E)) bytes.
template <bool STREAM, typename E, int N>
KH_PW_DEV Pack<E, N> load_pack(const E* p) {
  constexpr int kBytes = static_cast<int>(sizeof(E)) * N;
  constexpr int kWordBytes = kBytes < 16 ? kBytes : 16;
  static_assert(kBytes % kWordBytes == 0, "a pack is a whole number of words");
  Pack<E, N> r;
#pragma unroll
  for (int i = 0; i < kBytes / kWordBytes; ++i) {
    using W = typename Word<kWordBytes>::type;
    const W w = load_word<STREAM, W>(reinterpret_cast<const char*>(p) + i * kWordBytes);
    memcpy(reinterpret_cast<char*>(&r) + i * kWordBytes, &w, kWordBytes);
  }
  return r;
}

template <typename E, int N>
KH_PW_DEV void store_pack(E* p, const Pack<E, N>& v) {
  constexpr int kBytes = static_cast<int>(sizeof(E)) * N;
  constexpr int kWordBytes = kBytes < 16 ? kBytes : 16;
#pragma unroll
  for (int i = 0; i < kBytes / kWordBytes; ++i) {
    typename Word<kWordBytes>::type w;
    memcpy(&w, reinterpret_cast<const char*>(&v) + i * kWordBytes, kWordBytes);
    store_word(reinterpret_cast<char*>(p) + i * kWordBytes, w);
  }
}

// A pack's values as floats. A bf16 is the top half of an fp32: a word of two converts with a
// shift (low value) and a mask (high value), one instruction each.
template <typename E, int N>
KH_PW_DEV void to_floats(const Pack<E, N>& p, float (&f)[N]) {
  if constexpr (kIsBf16<E> && N % 2 == 0) {
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
    for (int i = 0; i < N; ++i) f[i] = to_f32(p.v[i]);
  }
}

// N floats rounded into a pack of E (pairs of 16-bit values with one conversion each).
template <typename E, int N>
KH_PW_DEV Pack<E, N> from_floats(const float (&f)[N]) {
  Pack<E, N> p;
  if constexpr (sizeof(E) == 2 && N % 2 == 0) {
    uint32_t w[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) w[i] = pack2_from_f32<E>(f[2 * i], f[2 * i + 1]);
    memcpy(&p, w, sizeof(w));
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p.v[i] = from_f32<E>(f[i]);
  }
  return p;
}

}  // namespace kh_pointwise
