// cache_write_division_check.c: the CPU proof for attention_cache_cuda.cu's divide_rn: for every bf16 and
// fp16 value and 3000 scales (9 fixed, the rest log-uniform over [2^-59, 2^59] with random mantissas), both
// in the range where the kernel takes the reciprocal path, RN(1/s), q0 = RN(x r) and RN(q0 + RN(x - q0 s) r)
// by FMA give exactly IEEE x / s. Exit status 1 on the first difference found. Build and run:
//   gcc -O2 -mfma -ffp-contract=off dev/attention/cache_write_division_check.c -lm -o /tmp/divcheck && /tmp/divcheck
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
static float bf16(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static float f16(uint16_t h) { return (float)*(_Float16*)&h; }
static int fast(float a) { a = fabsf(a); return a >= 0x1p-60f && a <= 0x1p60f; }
int main(void) {
  long long bad = 0, n = 0, nfast = 0;
  srand(7);
  for (int si = 0; si < 3000; ++si) {
    float s;
    if (si < 9) { float fixed[9] = {1.f, 0.02f, 0.03f, 3.7f, 1e-3f, 448.f, 1.f / 3.f, 0x1p-59f, 0x1p59f}; s = fixed[si]; }
    else { double e = ((double)rand() / RAND_MAX) * 118.0 - 59.0; s = (float)exp2(e); uint32_t u; memcpy(&u, &s, 4); u ^= (uint32_t)rand() & 0x7fffff; memcpy(&s, &u, 4); }
    if (!fast(s)) continue;
    volatile float one = 1.f;
    const float r = one / s;
    for (int t = 0; t < 2; ++t)
      for (uint32_t b = 0; b < 65536; ++b) {
        const float x = t ? f16((uint16_t)b) : bf16((uint16_t)b);
        if (!fast(x)) continue;
        ++nfast;
        const float q0 = x * r;
        const float q = fmaf(fmaf(-q0, s, x), r, q0);
        const float want = x / s;
        ++n;
        if (memcmp(&q, &want, 4)) { if (bad < 5) printf("x %a s %a got %a want %a\n", x, s, q, want); ++bad; }
      }
  }
  printf("checked %lld quotients, %lld differ\n", n, bad);
  return bad != 0;
}
