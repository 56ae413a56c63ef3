#!/usr/bin/env python3
"""bench/torch_e2e.py — PyTorch's figures for mase-bench's e2e suite, in the same conditions.

The same step as bench/bench_e2e.cpp: HF BertForSequenceClassification (bert-tiny / mini /
small, vocab 16000, dropout on), batch 32, seq 256, every token real; a training step is
forward with labels, backward, clip_grad_norm_(1.0), AdamW step, zero_grad; an eval step is a
forward under torch.no_grad() in eval mode. Model FLOPs are counted as mase-bench does
(6·N·tokens + 12·L·T·H per token, N = encoder-layer parameters; a third for eval), and each
step is paired with a torch sgemm 4096³ (torch.mm, MKL) timed right after it.

    python3 bench/torch_e2e.py --threads 2 --models bert-small --steps 5
    python3 bench/torch_e2e.py --precision bf16      # torch.autocast("cpu", torch.bfloat16)
    python3 bench/torch_e2e.py --compile             # torch.compile(model); first call timed apart
    python3 bench/torch_e2e.py --device cuda --precision tf32 --train-only   # mase-bench gpu-step's twin

Not a test and not part of the build: a comparison printed for docs/performance.md.
"""
import argparse
import contextlib
import math
import time

import torch
from transformers import BertConfig, BertForSequenceClassification

PRESETS = {  # (layers, hidden, heads), intermediate = 4·hidden
    "bert-tiny": (2, 128, 2),
    "bert-mini": (4, 256, 4),
    "bert-small": (4, 512, 8),
    "bert-base": (12, 768, 12),
}
B, T, V, N_SGEMM = 32, 256, 16000, 4096


def model_flops(model, cfg, training):
    n = sum(p.numel() for name, p in model.named_parameters() if name.startswith("bert.encoder."))
    per_token = 6 * n + 12 * cfg.num_hidden_layers * T * cfg.hidden_size
    return per_token * B * T / (1 if training else 3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", nargs="+", default=["bert-tiny", "bert-mini", "bert-small"],
                    choices=list(PRESETS))
    ap.add_argument("--steps", type=int, default=5, help="timed steps per figure (after 2 warm-up)")
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16"], default="fp32",
                    help="bf16: the steps run under torch.autocast(device, dtype=torch.bfloat16); "
                         "tf32: fp32 with TF32 tensor-core matmuls (torch.backends.cuda.matmul."
                         "allow_tf32), mase-bench gpu-step's tf32 variant")
    ap.add_argument("--train-only", action="store_true", help="skip the eval steps")
    ap.add_argument("--eval-only", action="store_true", help="skip the training steps")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (default mode)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (the GPU's steps and cuBLAS sgemm)")
    ap.add_argument("--attn", choices=["sdpa", "eager"], default="sdpa",
                    help="HF's attention implementation (sdpa is transformers' default)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # fp32 means fp32: PyTorch's default for matmuls (allow_tf32 False), said explicitly
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.manual_seed(0)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    a = torch.rand(N_SGEMM, N_SGEMM, device=dev)
    b = torch.rand(N_SGEMM, N_SGEMM, device=dev)

    def sgemm_seconds():
        sync()
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync()
        return time.perf_counter() - t0

    print(f"torch {torch.__version__}, {args.device}, {torch.get_num_threads()} threads, B={B} T={T} V={V}, "
          f"{args.precision}, attention {args.attn}{', torch.compile' if args.compile else ''}")
    print(f"{'step':<18}{'ms':>9}{'tokens/s':>11}{'GFLOP/s':>9}{'sgemm GF/s':>12}{'vs_sgemm':>10}")
    for name in args.models:
        layers, hidden, heads = PRESETS[name]
        cfg = BertConfig(vocab_size=V, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         attn_implementation=args.attn)
        model = BertForSequenceClassification(cfg).to(dev)
        run = torch.compile(model) if args.compile else model
        autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) \
            if args.precision == "bf16" else contextlib.nullcontext
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        ids = torch.randint(1, V, (B, T), device=dev)
        mask = torch.ones(B, T, dtype=torch.long, device=dev)
        labels = torch.randint(0, 2, (B,), device=dev)

        def train_step():
            model.train()
            with autocast():
                loss = run(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()

        def eval_step():
            model.eval()
            with torch.no_grad(), autocast():
                run(input_ids=ids, attention_mask=mask)

        kinds = (("train", train_step),) if args.train_only else (("train", train_step), ("eval", eval_step))
        if args.eval_only:
            kinds = (("eval", eval_step),)
        for kind, step in kinds:
            t0 = time.perf_counter()
            step()
            first = time.perf_counter() - t0
            if args.compile:
                print(f"{name + '/' + kind:<18} first call {first:.1f} s (compilation included)")
            step()
            step_s = sgemm_s = 0.0
            for _ in range(args.steps):
                sync()
                t0 = time.perf_counter()
                step()
                sync()
                step_s += time.perf_counter() - t0
                sgemm_s += sgemm_seconds()
            step_s /= args.steps
            sgemm_rate = 2 * N_SGEMM ** 3 / (sgemm_s / args.steps)
            rate = model_flops(model, cfg, kind == "train") / step_s
            print(f"{name + '/' + kind:<18}{step_s * 1e3:9.2f}{B * T / step_s:11.0f}"
                  f"{rate / 1e9:9.1f}{sgemm_rate / 1e9:12.1f}{rate / sgemm_rate:10.3f}")


if __name__ == "__main__":
    main()
