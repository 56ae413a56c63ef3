#!/usr/bin/env python3
"""scripts/fit_erfc.py — the erfc polynomial of runtime/cpu/fast_math.h (normal_tail_f32).

    erfc(z) ≈ t·e^{−z²}·Q(t),   t = 1/(1 + z/2),   z = |x|/√2 ∈ [0, 20/√2]

Q(t) = erfcx(z)·(1 + z/2) is smooth on t ∈ [0.124, 1] (from 1/(2√π) at z → ∞ to 1 at z = 0),
so a degree-10 polynomial fits it to 5e-9 relative (least squares in relative error on 600
Chebyshev nodes, the reference in 40-digit mpmath). Evaluated in float by Horner's rule the
error is 1.3e-7 relative, which this script also reports. Tooling, not product: run once,
paste the coefficients (highest degree first). Needs numpy and mpmath (pip).
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
T_MIN = 1.0 / (1.0 + 20.0 / np.sqrt(2.0) / 2.0)  # |x| capped at 20 in the kernel
DEGREE, NODES = 10, 600


def q_exact(t):
    z = 2 * (1 / mp.mpf(t) - 1)
    return mp.erfc(z) * mp.exp(z * z) * (1 + z / 2)


def main():
    k = np.arange(NODES)
    ts = (T_MIN + 1) / 2 + (1 - T_MIN) / 2 * np.cos(np.pi * (k + 0.5) / NODES)
    ys = np.array([float(q_exact(t)) for t in ts])
    coef, *_ = np.linalg.lstsq(np.vander(ts, DEGREE + 1) / ys[:, None], np.ones(NODES), rcond=None)
    c32 = coef.astype(np.float32)
    tt = np.linspace(T_MIN, 1, 4001).astype(np.float32)
    exact = np.array([float(q_exact(float(t))) for t in tt])
    p = np.full_like(tt, c32[0])
    for c in c32[1:]:
        p = (p * tt + c).astype(np.float32)
    print("coefficients, highest degree first:")
    print(", ".join("%.9ef" % v for v in c32))
    print("max relative error: fit %.2e, float Horner %.2e" % (
        np.max(np.abs(np.polyval(coef, tt.astype(np.float64)) / exact - 1)),
        np.max(np.abs(p.astype(np.float64) / exact - 1))))


if __name__ == "__main__":
    main()
