#!/usr/bin/env python3
"""bench/torch_profile_eval.py — where PyTorch's eval step goes, op by op (torch.profiler).

The e2e eval step of bench/torch_e2e.py (HF BertForSequenceClassification, vocab 16000, B 32,
T 256, every token real, torch.no_grad(), eval mode): a few timed steps, then 3 steps under
torch.profiler, printed by self CPU time (divide by 3 for one step). The twin of mase's step
profiler (runtime/profiler.h) in docs/performance.md's comparisons, e.g. with the CPU capped
to AVX2 on both sides:

    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
      python3 bench/torch_profile_eval.py bert-tiny 20
    python3 bench/torch_profile_eval.py bert-small 5 bf16   # under torch.autocast(bfloat16)

Not a test and not part of the build.
"""
import contextlib
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import BertConfig, BertForSequenceClassification

from torch_e2e import PRESETS


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "bert-small"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    bf16 = len(sys.argv) > 3 and sys.argv[3] == "bf16"
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext())
    torch.set_num_threads(2)
    layers, hidden, heads = PRESETS[name]
    cfg = BertConfig(vocab_size=16000, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=4 * hidden,
                     max_position_embeddings=512)
    model = BertForSequenceClassification(cfg).eval()
    ids = torch.randint(0, 16000, (32, 256))
    mask = torch.ones(32, 256, dtype=torch.long)
    with torch.no_grad(), autocast:
        for _ in range(2):
            model(input_ids=ids, attention_mask=mask)
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            model(input_ids=ids, attention_mask=mask)
            times.append(round((time.perf_counter() - t) * 1e3, 1))
        print(f"{name} eval{' bf16 autocast' if bf16 else ''}, ms per step: {times}; "
              f"attention: {model.config._attn_implementation}")
        with profile(activities=[ProfilerActivity.CPU]) as p:
            for _ in range(3):
                model(input_ids=ids, attention_mask=mask)
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=14))


if __name__ == "__main__":
    main()
