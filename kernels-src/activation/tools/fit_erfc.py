#!/usr/bin/env python3
"""fit_erfc.py: fits the polynomial behind the GPU kernels' 16-bit erf GELU (half_erfc_nonneg in
src/activation_kernels.inl) and prints its coefficients and measured error.

For z >= 0, with t = 1 / (1 + z / 2) in (0, 1]:
    erfc(z) = t * exp(-z^2 + P(t)),   P(t) = log(erfc(z) / t) + z^2,
a smooth function of t on [0, 1] (P(0) = -log(2 sqrt(pi)), from erfc's asymptote). P is fitted
by least squares on Chebyshev nodes (a Chebyshev basis in u = 2t - 1, for conditioning, turned
into powers of t with exact rational arithmetic), so the relative error of erfc is about the
absolute error of P. Then the polynomial is evaluated as the kernel does (float32 Horner with
fma, float32 arguments) on a dense grid of z against math.erfc, and the worst relative error of
0.5 erfc(z) is printed. Pure Python (the standard library only).

    python3 kernels-src/activation/tools/fit_erfc.py [degree]
"""
import math
import struct
import sys
from fractions import Fraction


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def fma32(a, b, c):
    # float32 fma: exact product and sum in double (24 x 24 bits fit in 53), one rounding.
    return f32(a * b + c)


def erfcx(z):
    """exp(z^2) erfc(z) for z >= 0: directly up to 5, else by its continued fraction (erfc itself
    underflows past z ~ 27)."""
    if z <= 5.0:
        return math.exp(z * z) * math.erfc(z)
    frac = z
    for k in range(60, 0, -1):
        frac = z + (k / 2.0) / frac
    return 1.0 / (math.sqrt(math.pi) * frac)


def target(t):
    if t == 0.0:
        return -math.log(2.0 * math.sqrt(math.pi))
    z = 2.0 * (1.0 / t - 1.0)
    return math.log(erfcx(z) / t)


def chebyshev_values(u, n):
    v = [1.0, u]
    for _ in range(2, n):
        v.append(2.0 * u * v[-1] - v[-2])
    return v[:n]


def least_squares(rows, ys):
    """Solves min |A x - y| by modified Gram-Schmidt QR (columns of A = rows transposed)."""
    n = len(rows[0])
    cols = [[r[j] for r in rows] for j in range(n)]
    q, rr = [], [[0.0] * n for _ in range(n)]
    for j in range(n):
        v = cols[j][:]
        for i in range(j):
            rr[i][j] = sum(a * b for a, b in zip(q[i], v))
            v = [a - rr[i][j] * b for a, b in zip(v, q[i])]
        rr[j][j] = math.sqrt(sum(a * a for a in v))
        q.append([a / rr[j][j] for a in v])
    qty = [sum(a * b for a, b in zip(q[i], ys)) for i in range(n)]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (qty[i] - sum(rr[i][k] * x[k] for k in range(i + 1, n))) / rr[i][i]
    return x


def chebyshev_to_powers_of_t(coef):
    """sum_k c_k T_k(2t - 1) as sum_k a_k t^k, exactly in rationals."""
    n = len(coef)
    # T_k(u) as polynomials in u, then u = 2t - 1.
    tk = [[Fraction(1)], [Fraction(0), Fraction(1)]]
    for _ in range(2, n):
        a, b = tk[-1], tk[-2]
        nxt = [Fraction(0)] + [2 * c for c in a]
        for i, c in enumerate(b):
            nxt[i] -= c
        tk.append(nxt)
    total = [Fraction(0)] * n
    for k in range(n):
        # T_k(2t - 1): expand sum_i p_i (2t - 1)^i.
        poly = [Fraction(0)] * n
        for i, p in enumerate(tk[k]):
            if p == 0:
                continue
            for j in range(i + 1):  # (2t - 1)^i = sum_j C(i, j) (2t)^j (-1)^(i - j)
                poly[j] += p * math.comb(i, j) * (2 ** j) * (-1) ** (i - j)
        for j in range(n):
            total[j] += Fraction(coef[k]) * poly[j]
    return [float(x) for x in total]


def half_erfc_f32(z, a):
    """The kernel's evaluation: float32 t, Horner with fma from the top, exp of the float32 sum."""
    t = f32(1.0 / f32(fma32(0.5, z, 1.0)))
    p = f32(a[-1])
    for c in reversed(a[:-1]):
        p = fma32(p, t, f32(c))
    e = fma32(-z, z, p)  # -z^2 + P(t)
    return f32(0.5 * t * math.exp(e))


def main():
    degree = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    n = degree + 1
    nodes = 4000
    ts = [0.5 * (1.0 + math.cos(math.pi * (k + 0.5) / nodes)) for k in range(nodes)]
    rows = [chebyshev_values(2.0 * t - 1.0, n) for t in ts]
    coef = least_squares(rows, [target(t) for t in ts])
    a = chebyshev_to_powers_of_t(coef)
    a32 = [f32(c) for c in a]
    worst, at = 0.0, 0.0
    z = 0.0
    while z < 9.0:  # 0.5 erfc(9) ~ 2e-37, near float32's smallest normal
        zf = f32(z)
        want = 0.5 * math.erfc(zf)
        got = half_erfc_f32(zf, a32)
        rel = abs(got - want) / want
        if rel > worst:
            worst, at = rel, zf
        z += 1.0 / 4096
    print(f"degree {degree}: coefficients of P(t), t^0 first (float32):")
    for k, c in enumerate(a32):
        print(f"  a{k} = {c:.9g}f")
    print(f"worst relative error of 0.5 erfc(z) on z in [0, 9), step 2^-12: {worst:.3g} (2^{math.log2(worst):.1f}) at z = {at:.4f}")


if __name__ == "__main__":
    main()
