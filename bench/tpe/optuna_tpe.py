#!/usr/bin/env python3
# bench/tpe/optuna_tpe.py — Optuna's figures for bench/tpe/tpe_vs_optuna.cpp (mase-tpe-bench).
#
# Runs Optuna's default sampler, optuna.samplers.TPESampler(seed=s) (Optuna 5.0: multivariate,
# constant liar, 10 random start-up trials, 24 EI candidates), and for reference its independent
# TPE (multivariate=False), on the synthetic objectives below for seeds 0..S-1, and writes the
# summary the C++ benchmark prints beside its own: for N in CHECKPOINTS, the mean, standard error
# and median over seeds of the best value after N trials, and in how many seeds it is within
# `tol` of the optimum. Also a few (point, value) pairs so that the C++ side can check it computes
# the same objectives. Run once; the output (optuna_tpe.json) is committed:
#   python -m venv /tmp/v && /tmp/v/bin/pip install optuna==5.0.0
#   /tmp/v/bin/python bench/tpe/optuna_tpe.py --seeds 200      (about 10 minutes on 1 core)
# The objectives must stay the same as in tpe_vs_optuna.cpp (kObjectives).
import argparse
import json
import math
import os
import time

import numpy as np
import optuna

CHECKPOINTS = (10, 20, 30)


# --- the objectives (all maximized; the same formulas as tpe_vs_optuna.cpp) ---

def lab2(v):
    # The Lab 2 space (search/objectives.cpp lab2_space) with a made-up "accuracy" that rewards
    # 64-wide heads, a 4x MLP, 4 layers and hidden 256 — interactions between parameters, as in
    # real architectures. Unique optimum 0 at (4, 4, 256, 1024); 300 points.
    L, H, D, I = (float(v[k]) for k in ("num_layers", "num_heads", "hidden_size",
                                        "intermediate_size"))
    return -(0.5 * (math.log2(D / H) - 6) ** 2 + (math.log2(I / D) - 2) ** 2
             + 0.7 * (math.log2(L) - 2) ** 2 + 0.3 * (math.log2(D) - 8) ** 2)


def branin(v):
    # Branin-Hoo, negated: maximum -0.397887 at three points.
    x1, x2 = v["x1"], v["x2"]
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return -(a * (x2 - b * x1 ** 2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s)


def hparams(v):
    # A mixed hyper-parameter space: the best learning rate depends on the depth (a diagonal
    # ridge in (log lr, layers)), gelu is best, dropout 0.1. Maximum 0.3 at layers 6,
    # lr 10^-3.5, act gelu, dropout 0.1.
    lr, layers, act, drop = v["lr"], v["layers"], v["act"], v["dropout"]
    return (-(math.log10(lr) + 3 + 0.25 * (layers - 4)) ** 2 - 0.05 * (layers - 6) ** 2
            + (0.3 if act == "gelu" else 0.0) - 2 * (drop - 0.1) ** 2)


LAB2 = {"num_layers": ["2", "4", "8"], "num_heads": ["2", "4", "8", "16"],
        "hidden_size": ["128", "192", "256", "384", "512"],
        "intermediate_size": ["512", "768", "1024", "1536", "2048"]}


def suggest(trial, name):
    if name == "lab2":
        return {k: trial.suggest_categorical(k, c) for k, c in LAB2.items()}
    if name == "branin":
        return {"x1": trial.suggest_float("x1", -5, 10), "x2": trial.suggest_float("x2", 0, 15)}
    return {"lr": trial.suggest_float("lr", 1e-5, 1e-1, log=True),
            "layers": trial.suggest_int("layers", 1, 8),
            "act": trial.suggest_categorical("act", ["relu", "gelu", "tanh"]),
            "dropout": trial.suggest_float("dropout", 0.0, 0.5)}


OBJECTIVES = {  # name: (function, optimum, tolerance for "found it")
    "lab2": (lab2, 0.0, 1e-9),
    "branin": (branin, -0.397887357729738, 0.01),
    "hparams": (hparams, 0.3, 0.01),
}
CHECK_POINTS = {
    "lab2": [{"num_layers": "4", "num_heads": "4", "hidden_size": "256",
              "intermediate_size": "1024"},
             {"num_layers": "8", "num_heads": "2", "hidden_size": "512",
              "intermediate_size": "768"}],
    "branin": [{"x1": math.pi, "x2": 2.275}, {"x1": -5.0, "x2": 0.0}, {"x1": 1.5, "x2": 7.25}],
    "hparams": [{"lr": 10 ** -3.5, "layers": 6, "act": "gelu", "dropout": 0.1},
                {"lr": 1e-5, "layers": 1, "act": "relu", "dropout": 0.5}],
}


def run(name, sampler, n_trials):
    f = OBJECTIVES[name][0]
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(lambda t: f(suggest(t, name)), n_trials=n_trials)
    values = [t.value for t in study.trials]
    return [max(values[:n]) for n in CHECKPOINTS]


def summary(bests, optimum, tol):
    out = {}
    for i, n in enumerate(CHECKPOINTS):
        b = np.array([s[i] for s in bests])
        out[str(n)] = {"mean": float(b.mean()), "stderr": float(b.std(ddof=1) / math.sqrt(len(b))),
                       "median": float(np.median(b)), "hits": int((b >= optimum - tol).sum())}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "optuna_tpe.json"))
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    samplers = {
        "optuna-default": lambda s: optuna.samplers.TPESampler(seed=s),
        "optuna-independent": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=False),
    }
    result = {"optuna_version": optuna.__version__, "seeds": args.seeds,
              "checkpoints": list(CHECKPOINTS), "objectives": {}}
    for name, (f, optimum, tol) in OBJECTIVES.items():
        entry = {"optimum": optimum, "tolerance": tol,
                 "checks": [[p, f(p)] for p in CHECK_POINTS[name]], "samplers": {}}
        for label, make in samplers.items():
            start = time.time()
            bests = [run(name, make(s), max(CHECKPOINTS)) for s in range(args.seeds)]
            entry["samplers"][label] = summary(bests, optimum, tol)
            print(f"{name:8s} {label:19s} best-after-30 mean {entry['samplers'][label]['30']['mean']:.4f}"
                  f" hits {entry['samplers'][label]['30']['hits']}/{args.seeds}"
                  f" ({time.time() - start:.0f} s)", flush=True)
        result["objectives"][name] = entry
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)
        fh.write("\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
