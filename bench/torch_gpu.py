#!/usr/bin/env python3
"""bench/torch_gpu.py — PyTorch's GPU figures beside mase-bench's gpu-softmax, -sdpa, -fused.

The same shapes and the same timing rule as bench/gpu_common.h: CUDA events around each call,
the L2 cache flushed before it (a buffer twice the L2's size overwritten), fp32 throughout.
  softmax    torch.softmax forward and backward (torch._softmax_backward_data), and
             torch.compile of the naive softmax (amax, -, exp, sum, /), on Lab 4's 4096 x 4096
             and BERT's attention probabilities (B*NH*T, T), B = 32, NH = 8 / 12, T = 128..512;
             each paired with a device-to-device copy of the same bytes (x.clone()): vs_copy.
  sdpa       F.scaled_dot_product_attention with each backend (torch.nn.attention.sdpa_kernel:
             MATH, EFFICIENT_ATTENTION, FLASH_ATTENTION, CUDNN_ATTENTION — a backend that does
             not take fp32 prints "n/a"), forward and forward+backward, at B = 32, NH = 8 / 12,
             HS = 64, T = 128, 256, 512; q, k, v head-split views of (B, T, C) projections and an
             additive (B, 1, 1, T) mask of zeros, as mase-bench runs them (and, for EFFICIENT, once
             without a mask). TFLOP/s counted as mase-bench counts them (4 and 12 B*NH*T^2*HS),
             peak MB = torch.cuda.max_memory_allocated beyond what was allocated before the call.

  fused      the step's memory-bound kernels as mase-bench --suite gpu-fused times them, in
             PyTorch's eager form at the same shapes (R = B*T = 8192 rows; bert-small's and
             bert-base's widths): F.layer_norm forward and backward (dx, dweight, dbias),
             gelu(x + b) forward and backward (dx, dbias), a bias gradient dy.sum(0), the
             embedding backward (V = 2 and 16000), one AdamW step over 2^25 parameters (foreach
             and fused=True); bytes counted as mase-bench counts them, so vs_copy compares.

    python3 bench/torch_gpu.py                  # everything, ~1 minute on an H100
    python3 bench/torch_gpu.py --only softmax   # or sdpa, fused, sdpa,fused; --iters N (20)

Not a test and not part of the build: a comparison printed for docs/performance.md.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

B, HS = 32, 64


class Timer:
    """GPU time of one call with inputs evicted from L2 (gpu_common.h's rule)."""

    def __init__(self):
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
        self.flush_buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def ms(self, fn, iters):
        fn()  # warm-up (allocator, autotuning, compilation)
        times = []
        for _ in range(iters):
            self.flush_buf.zero_()
            self.start.record()
            fn()
            self.stop.record()
            self.stop.synchronize()
            times.append(self.start.elapsed_time(self.stop))
        return statistics.median(times)


def naive_softmax(x):
    m = x.amax(-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)


def softmax_rows(timer, iters):
    shapes = [((4096, 4096), "Lab 4's matrix")]
    for nh in (8, 12):
        for t in (128, 256, 512):
            shapes.append(((B * nh * t, t), f"attention B={B} NH={nh} T={t}"))
    compiled = torch.compile(naive_softmax)
    print("| softmax | shape | what | ms | GB/s | vs_copy |")
    print("|---|---|---|---|---|---|")
    for shape, what in shapes:
        x = torch.randn(shape, device="cuda") * 3
        dy = torch.rand(shape, device="cuda") * 2 - 1
        y = torch.softmax(x, -1)
        n = x.numel()
        copy_ms = timer.ms(lambda: x.clone(), iters)  # reads n floats, writes n: 8n bytes
        rows = [
            ("torch.softmax fwd", 8 * n, lambda: torch.softmax(x, -1)),
            ("torch.softmax bwd", 12 * n, lambda: torch._softmax_backward_data(dy, y, -1, x.dtype)),
            ("torch.compile(naive) fwd", 8 * n, lambda: compiled(x)),
        ]
        for name, nbytes, fn in rows:
            try:
                ms = timer.ms(fn, iters)
            except Exception as e:  # e.g. torch.compile without a working Triton
                print(f"| {name} | {shape[0]}x{shape[1]} | {what} | n/a | | "
                      f"({str(e).splitlines()[0][:60]}) |")
                continue
            bw = nbytes / ms / 1e6
            copy_bw = 8 * n / copy_ms / 1e6
            print(f"| {name} | {shape[0]}x{shape[1]} | {what} | {ms:.4f} | {bw:.0f} | "
                  f"{bw / copy_bw:.2f} |")
        del x, dy, y
        torch.cuda.empty_cache()


def fused_rows(timer, iters, device="cuda"):
    """PyTorch's eager kernels for what mase-bench --suite gpu-fused times, at its shapes."""
    print("| fused | shape | what | ms | GB/s | vs_copy |")
    print("|---|---|---|---|---|---|")

    def row(name, shape, what, nbytes, fn, copy_ms):
        try:
            ms = timer.ms(fn, iters)
        except Exception as e:  # a kernel this PyTorch lacks (fused AdamW on an old build)
            print(f"| {name} | {shape} | {what} | n/a | | ({str(e).splitlines()[0][:60]}) |")
            return
        bw = nbytes / ms / 1e6
        print(f"| {name} | {shape} | {what} | {ms:.4f} | {bw:.0f} | "
              f"{bw / (nbytes / copy_ms / 1e6):.2f} |")

    def copy_of(nbytes):  # a device-to-device copy moving nbytes (reads half, writes half)
        buf = torch.empty(max(1, nbytes // 8), device=device)
        return timer.ms(lambda: buf.clone(), iters)

    R = B * 256  # kTokens: B 32 x T 256
    for model, c, ffn in (("bert-small", 512, 2048), ("bert-base", 768, 3072)):
        x = torch.randn(R, c, device=device, requires_grad=True)
        w = torch.rand(c, device=device, requires_grad=True)
        b = torch.randn(c, device=device, requires_grad=True)
        dy = torch.randn(R, c, device=device)
        y = F.layer_norm(x, (c,), w, b, eps=1e-12)
        shape = f"{R}x{c}"
        with torch.no_grad():
            row("layer_norm fwd", shape, model, 8 * R * c,
                lambda: F.layer_norm(x, (c,), w, b, eps=1e-12), copy_of(8 * R * c))
        row("layer_norm bwd (dx, dweight, dbias)", shape, model, 12 * R * c,
            lambda: torch.autograd.grad(y, (x, w, b), dy, retain_graph=True),
            copy_of(12 * R * c))
        row("bias grad: dy.sum(0)", shape, model, 4 * R * c, lambda: dy.sum(0), copy_of(4 * R * c))
        del x, w, b, dy, y
        h = torch.randn(R, ffn, device=device, requires_grad=True)
        hb = torch.randn(ffn, device=device, requires_grad=True)
        dh = torch.randn(R, ffn, device=device)
        g = F.gelu(h + hb)
        shape = f"{R}x{ffn}"
        with torch.no_grad():
            row("gelu(x + b) fwd", shape, model, 8 * R * ffn, lambda: F.gelu(h + hb),
                copy_of(8 * R * ffn))
        row("gelu(x + b) bwd (dx, dbias)", shape, model, 12 * R * ffn,
            lambda: torch.autograd.grad(g, (h, hb), dh, retain_graph=True), copy_of(12 * R * ffn))
        row("bias grad: dy.sum(0)", shape, model, 4 * R * ffn, lambda: dh.sum(0),
            copy_of(4 * R * ffn))
        del h, hb, dh, g
        if device == "cuda":
            torch.cuda.empty_cache()
    c = 768
    for v, what in ((2, "token types"), (16000, "words")):
        ids = torch.randint(0, v, (R,), device=device)
        table = torch.randn(v, c, device=device, requires_grad=True)
        e = F.embedding(ids, table)
        de = torch.randn(R, c, device=device)
        touched = int(torch.unique(ids).numel())
        nbytes = 4 * R * c + 8 * touched * c  # mase-bench's count: dy read, touched rows r+w
        row("embedding bwd", f"{R}x{c}/V{v}", f"{what}, {touched} rows touched", nbytes,
            lambda: torch.autograd.grad(e, table, de, retain_graph=True), copy_of(nbytes))
        del ids, table, e, de
    n = 1 << 25
    for fused in (False, True):
        p = torch.nn.Parameter(torch.rand(n, device=device))
        p.grad = torch.randn(n, device=device)
        opt = torch.optim.AdamW([p], lr=1e-4, weight_decay=0.01, fused=fused)
        opt.step()  # the state (exp_avg, exp_avg_sq) exists from here on
        row(f"AdamW step ({'fused=True' if fused else 'foreach'})", f"{n}", "one tensor",
            28 * n, opt.step, copy_of(28 * n))
        del p, opt


BACKENDS = ["MATH", "EFFICIENT_ATTENTION", "FLASH_ATTENTION", "CUDNN_ATTENTION"]


def sdpa_rows(timer, iters):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    print("| sdpa backend | NH | T | mask | fwd ms | fwd TFLOP/s | fwd+bwd ms | fwd+bwd TFLOP/s | "
          "fwd+bwd peak MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for nh in (8, 12):
        for t in (128, 256, 512):
            c = nh * HS
            xs = [torch.randn(B, t, c, device="cuda", requires_grad=True) for _ in range(3)]
            mask = torch.zeros(B, 1, 1, t, device="cuda")
            dout = torch.randn(B, nh, t, HS, device="cuda")
            heads = [x.view(B, t, nh, HS).transpose(1, 2) for x in xs]
            flops = 4.0 * B * nh * t * t * HS
            variants = [(b, True) for b in BACKENDS] + [("EFFICIENT_ATTENTION", False)]
            for backend, with_mask in variants:
                m = mask if with_mask else None

                def fwd():
                    with torch.no_grad():
                        return F.scaled_dot_product_attention(*heads, attn_mask=m)

                def fwd_bwd():
                    out = F.scaled_dot_product_attention(*heads, attn_mask=m)
                    out.backward(dout)

                label = f"| {backend} | {nh} | {t} | {'(B,1,1,T)' if with_mask else 'none'} |"
                try:
                    with sdpa_kernel(getattr(SDPBackend, backend)):
                        f_ms = timer.ms(fwd, iters)
                        b_ms = timer.ms(fwd_bwd, iters)
                        torch.cuda.synchronize()
                        before = torch.cuda.memory_allocated()
                        torch.cuda.reset_peak_memory_stats()
                        fwd_bwd()
                        torch.cuda.synchronize()
                        peak = (torch.cuda.max_memory_allocated() - before) / 1e6
                except Exception as e:  # a backend that does not take fp32 (or this mask)
                    print(f"{label} n/a | | | | ({str(e).splitlines()[0][:60]}) |")
                    continue
                print(f"{label} {f_ms:.3f} | {flops / f_ms / 1e9:.1f} | {b_ms:.3f} | "
                      f"{3 * flops / b_ms / 1e9:.1f} | {peak:.0f} |")
                for x in xs:
                    x.grad = None
            del xs, heads, mask, dout
            torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="softmax,sdpa,fused",
                    help="the parts to run, comma-separated (default: all three)")
    ap.add_argument("--iters", type=int, default=20, help="timed calls per figure (median)")
    args = ap.parse_args()
    parts = args.only.split(",")
    for part in parts:
        if part not in ("softmax", "sdpa", "fused"):
            ap.error(f"--only: expected softmax, sdpa or fused, got '{part}'")
    if not torch.cuda.is_available():
        print("torch_gpu.py: no CUDA device; nothing to time")
        return
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 GEMMs, as mase's cuBLAS calls
    torch.backends.cudnn.allow_tf32 = False
    p = torch.cuda.get_device_properties(0)
    print(f"{p.name}, PyTorch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"driver-visible memory {p.total_memory / 2**30:.1f} GiB\n")
    timer = Timer()
    if "softmax" in parts:
        softmax_rows(timer, args.iters)
        print()
    if "sdpa" in parts:
        sdpa_rows(timer, args.iters)
        print()
    if "fused" in parts:
        fused_rows(timer, args.iters)


if __name__ == "__main__":
    main()
