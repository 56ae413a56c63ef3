#!/usr/bin/env python3
"""bench/torch_gpu_quant.py — PyTorch's figures beside mase-bench's gpu-quant suite, same GPU, same shapes.

What PyTorch has for the same jobs, timed as bench/gpu_common.h times ours (CUDA events, L2
flushed before every call, the median of --reps calls), each memory-bound figure paired with a
device-to-device copy of the same bytes (vs_copy = copy time / kernel time; 1.0 = copy speed):

  fake/integer        torch.fake_quantize_per_tensor_affine(x, 2^-4, 0, -128, 127): the values of
                      mase's integer(width=8, frac_width=4) (except that -0 may stay -0)
  fake/mxint8         MXINT8 fake quantization composed of torch ops (block amax, frexp for the
                      exponent, round, clamp, scale back), eager and under torch.compile: PyTorch
                      has no MX kernel of its own
  linear/<M>x<N>x<K>  F.linear in fp32 (cuBLAS) and in TF32 on the dequantized weight, the
                      baselines of gpu-quant/mxint8_linear

Shapes: the bert-base activation 8192 x 768 and FFN activation 8192 x 3072; M = 8192 tokens.

    python3 bench/torch_gpu_quant.py              # on a machine with a GPU
    python3 bench/torch_gpu_quant.py --reps 50

Not a test and not part of the build: a comparison printed for docs/performance.md.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

SHAPES = [(8192, 768), (8192, 3072)]
LINEARS = [(8192, 768, 768), (8192, 3072, 768), (8192, 768, 3072)]  # (M, N, K): y (M, N)


def l2_bytes():
    props = torch.cuda.get_device_properties(0)
    return int(getattr(props, "L2_cache_size", 50 << 20))


class Timer:
    """GPU milliseconds of fn(), median over reps, each call after an L2 flush."""

    def __init__(self, reps):
        self.reps = reps
        self.flush = torch.empty(2 * l2_bytes(), dtype=torch.uint8, device="cuda")

    def __call__(self, fn):
        fn()  # warm-up (and torch.compile's first call)
        times = []
        for _ in range(self.reps):
            self.flush.zero_()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return statistics.median(times)


def copy_ms(timer, nbytes):
    """A device-to-device copy whose reads + writes are nbytes."""
    src = torch.full((nbytes // 2,), 7, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return timer(lambda: dst.copy_(src))


def mxint8_fake(x):
    """OCP MXINT8 with blocks of 32 along the last dim (K % 32 == 0), in torch ops."""
    b = x.reshape(-1, 32)
    amax = b.abs().amax(dim=1, keepdim=True)
    _, e = torch.frexp(amax)  # amax = m·2^e, m in [0.5, 1): floor(log2 amax) = e − 1
    scale = torch.exp2((e - 1).clamp(-127, 127).to(x.dtype))
    q = torch.clamp(torch.round(b * 64 / scale), -127, 127)
    return (q * scale / 64).reshape(x.shape)


def row(name, ms, nbytes=None, copy=None, flops=None, extra=""):
    s = f"{name:<42} {ms * 1e3:10.1f} us"
    if nbytes:
        s += f" {nbytes / ms / 1e6:9.1f} GB/s"
    if copy:
        s += f"  vs_copy {copy / ms:5.2f}"
    if flops:
        s += f" {flops / ms / 1e9:9.2f} TFLOP/s"
    print(s + ("  " + extra if extra else ""), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (it takes ~1 min)")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "torch_gpu_quant.py needs a GPU"
    print(f"# PyTorch {torch.__version__}, {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}")
    timer = Timer(args.reps)
    gen = torch.Generator(device="cuda").manual_seed(1)
    for rows, cols in SHAPES:
        x = torch.randn(rows, cols, device="cuda", generator=gen)
        n = x.numel()
        copy = copy_ms(timer, 8 * n)
        row(f"copy/{rows}x{cols}", copy, 8 * n)
        ms = timer(lambda: torch.fake_quantize_per_tensor_affine(x, 2.0**-4, 0, -128, 127))
        row(f"fake/integer/{rows}x{cols}", ms, 8 * n, copy)
        ms = timer(lambda: mxint8_fake(x))
        row(f"fake/mxint8/eager/{rows}x{cols}", ms, 8 * n, copy)
        if not args.no_compile:
            compiled = torch.compile(mxint8_fake)
            ms = timer(lambda: compiled(x))
            row(f"fake/mxint8/compile/{rows}x{cols}", ms, 8 * n, copy)
    for m, n, k in LINEARS:
        x = torch.rand(m, k, device="cuda", generator=gen) * 2 - 1
        w = mxint8_fake((torch.rand(n, k, device="cuda", generator=gen) - 0.5) * 0.1)
        b = torch.rand(n, device="cuda", generator=gen) * 2 - 1
        flops = 2 * m * n * k
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            ms = timer(lambda: F.linear(x, w, b))
            row(f"linear/{'tf32' if tf32 else 'fp32'}/{m}x{n}x{k}", ms, flops=flops)
        torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
