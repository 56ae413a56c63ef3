#!/usr/bin/env python3
"""bench/torch_infer.py — PyTorch's side of `mase-graph compile --mode eval [--freeze]`.

The same inference step as graph/compile_report.cpp's eval mode: HF BertForSequenceClassification
(vocab 30522, random weights), a (B, T) batch with every token real, a forward under
torch.no_grad() in eval mode, logits only. Per shape, three ways PyTorch users run it:
  eager                 the model as it is
  compile               torch.compile(model) (Inductor, default mode)
  compile+freezing      the same with torch._inductor.config.freezing = True: the weights become
                        constants and Inductor prepacks them for its CPU GEMMs (oneDNN / MKL) —
                        what `mase-graph compile --freeze` does with graph/passes/freeze_weights.h
Each line: the first call (compiling included) and the median of the steady calls, in ms.
--bf16 runs every variant under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's side of
`mase-graph compile --precision bf16 [--freeze]`.

    python3 bench/torch_infer.py --threads 2 --shapes bert-small:8:128 bert-base:1:128 --steps 15
    python3 bench/torch_infer.py --threads 2 --shapes bert-small:1:128 --bf16

Not a test and not part of the build: a comparison printed for docs/lab4.md.
"""
import argparse
import contextlib
import time

import torch
from transformers import BertConfig, BertForSequenceClassification

from torch_e2e import PRESETS  # (layers, hidden, heads) per model, as mase's presets


def model_of(name):
    layers, hidden, heads = PRESETS[name]
    cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=4 * hidden)
    torch.manual_seed(0)
    return BertForSequenceClassification(cfg).eval()


def timed(fn, steps):
    """(first call ms, median of `steps` later calls ms)"""
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1e3
    fn()  # one more warm-up
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return first, times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", nargs="+", default=["bert-small:8:128", "bert-base:1:128"],
                    help="model:batch:seq")
    ap.add_argument("--steps", type=int, default=15, help="timed calls per figure")
    ap.add_argument("--no-compile", action="store_true", help="eager only (compiling takes minutes)")
    ap.add_argument("--bf16", action="store_true", help="under torch.autocast(bfloat16)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    precision = "bf16 autocast" if args.bf16 else "fp32"
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, CPU, {precision}")
    for shape in args.shapes:
        name, b, t = shape.split(":")
        b, t = int(b), int(t)
        ids = torch.randint(0, 30522, (b, t))
        mask = torch.ones(b, t, dtype=torch.long)
        variants = [("eager", False)] + ([] if args.no_compile else
                                         [("compile", False), ("compile+freezing", True)])
        for label, freezing in variants:
            torch._dynamo.reset()
            torch._inductor.config.freezing = freezing
            model = model_of(name)
            run = model if label == "eager" else torch.compile(model)
            autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16
                        else contextlib.nullcontext())
            with torch.no_grad(), autocast:
                first, steady = timed(lambda: run(input_ids=ids, attention_mask=mask).logits, args.steps)
            print(f"{name} {b}x{t} eval  {label:17s} first call {first:9.1f} ms  steady {steady:8.2f} ms")


if __name__ == "__main__":
    main()
