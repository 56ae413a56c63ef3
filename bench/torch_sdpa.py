#!/usr/bin/env python3
"""bench/torch_sdpa.py — PyTorch's side of `mase-bench --suite sdpa` (bench/bench_sdpa.cpp).

The same problems: heads of 64, NH 8, T = 128 / 256 / 512 with B = 4096 / T, a (B, 1, 1, T)
additive padding mask of zeros, fp32, on the CPU. Each is torch.nn.functional.
scaled_dot_product_attention as HF's BERT calls it (attn_implementation="sdpa"):
  fwd                 under torch.no_grad()
  fwd_bwd             forward, then backward of a ones gradient into q, k, v
  fwd_bwd_dropout     the same with dropout_p = 0.1 (T = 256 only, as mase-bench)
q, k, v are (B, NH, T, HS) contiguous tensors (mase's are head-split views of (B, T, C):
the layout BERT hands each). Prints the median of --steps calls in ms.

    python3 bench/torch_sdpa.py --threads 2 --steps 20

Not a test and not part of the build: a comparison printed for docs/performance.md.
"""
import argparse
import time

import torch
import torch.nn.functional as F


def median_ms(f, steps):
    for _ in range(3):
        f()
    ts = []
    for _ in range(steps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    ts.sort()
    return 1e3 * ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    nh, hs = 8, 64
    for t in (128, 256, 512):
        b = 4096 // t
        q, k, v = (torch.randn(b, nh, t, hs, requires_grad=True) for _ in range(3))
        mask = torch.zeros(b, 1, 1, t)

        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        def fwd_bwd(p=0.0):
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
            out.backward(torch.ones_like(out))

        print(f"sdpa/fwd/T{t} {median_ms(fwd, args.steps):.2f} ms")
        print(f"sdpa/fwd_bwd/T{t} {median_ms(fwd_bwd, args.steps):.2f} ms")
        if t == 256:
            print(f"sdpa/fwd_bwd_dropout/T{t} {median_ms(lambda: fwd_bwd(0.1), args.steps):.2f} ms")


if __name__ == "__main__":
    main()
