#!/usr/bin/env python3
"""scripts/cuda_emu/prep.py — copies CUDA sources into OUT, rewritten for the host emulation
(emu.h): CUDA headers become emu.h, `extern __shared__` arrays point at the emulated dynamic
shared memory, and each launch `k<<<grid, block, smem, stream>>>(args);` becomes
`emu::launch(grid, block, smem, [&] { k(args); });` (the configuration split at the commas outside
parentheses, so a grid such as `blocks_for(n, threads)` stays one expression).

    python3 scripts/cuda_emu/prep.py REPO OUT cuda/softmax.cu cuda/sdpa_tile.cuh ...
"""
import os
import re
import sys

HEADERS = ['<cuda_runtime.h>', '<mma.h>', '<cuda_pipeline.h>', '<cuda_bf16.h>', '"cuda/check.h"',
           '"cuda/stream.h"', '"cuda/cublas.h"']  # a check that includes a user of cublas.h
# stubs what it uses (device_scratch; convert_check.cpp: cuBLAS itself)
SHARED = re.compile(r'extern __shared__ (?:__align__\(\d+\) )?(\w+) (\w+)\[\];')
LAUNCH = re.compile(r'([\w:]+(?:<[^;{}()]*?>)?)\s*<<<(.*?)>>>\((.*?)\);', re.S)


def split_top(config):
    parts, depth, cur = [], 0, ''
    for ch in config:
        depth += (ch in '([{') - (ch in ')]}')
        if ch == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    return parts + [cur]


def launch(m):
    name, config, args = m.group(1), m.group(2), m.group(3)
    parts = [p.strip() for p in split_top(config)][:3]
    parts += ['0'] * (3 - len(parts))
    return 'emu::launch(dim3(%s), dim3(%s), %s, [&] { %s(%s); });' % (*parts, name, args)


def main():
    repo, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    for f in files:
        s = open(os.path.join(repo, f)).read()
        for h in HEADERS:
            s = s.replace('#include ' + h, '#include "emu.h"')
        s = SHARED.sub(r'\1* \2 = reinterpret_cast<\1*>(EMU_DYN_SMEM);', s)
        s = LAUNCH.sub(launch, s)
        os.makedirs(os.path.dirname(os.path.join(out, f)), exist_ok=True)
        open(os.path.join(out, f), 'w').write(s)


if __name__ == '__main__':
    main()
