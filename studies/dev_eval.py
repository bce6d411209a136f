"""Evaluate RISE and the baselines on the real dev pools in ../shared/data/dev (read in place, never copied).

Tasks (`studies.tasks`, named here without their dev- prefix): finmed (FiQA finance vs MedQuAD medical), brainrot
(control tweets vs junk tweets), and howdy, the "Howdy!" trigger and fantastical stories planted in real Alpaca rows
(a pool cut by --max-pool keeps its positive share; dev-howdy is built at that size). For each
task: one forward pass over pool + queries, the full sweep of RISE choices (counted positions x per-token
normalisation x hidden centring x sample normalisation x channels), and the method table (RISE default, RISE paper
preset, ablations, hidden cosine, Grad-Sketch, BM25, MiniLM embeddings).

    python -m studies.dev_eval --out results/dev_eval [--tasks finmed,brainrot,howdy] [--max-pool 400]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from rise_core.config import PRESETS, RiseConfig, ScoreOptions
from rise_core.evaluation import evaluate, sweep
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from studies import tasks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default="brainrot,howdy,finmed")
    ap.add_argument("--out", default="results/dev_eval")
    ap.add_argument("--max-pool", type=int, default=None)
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(args.model)
    for name in args.tasks.split(","):
        task = tasks.task(name if name.startswith("dev-") else f"dev-{name}", args.max_pool, args.max_queries)
        t0 = time.perf_counter()
        base = RiseConfig(seq_len=args.seq_len)
        cache = ReadoutCache(lm, seq_len=args.seq_len, k_max=base.k_max, seed=base.seed,
                             grad_sketch_dim=grad_sketch_dim(base, lm.hidden_size))
        cache.add(task.pool + task.queries, batch_size=args.batch_size)
        print(f"[{task.name}] pool {len(task.pool)} ({int(task.labels.sum())} positive), {len(task.queries)} queries, "
              f"forward {cache.forward_seconds:.0f}s", flush=True)
        table = sweep(task, cache, base, ScoreOptions())
        table.to_csv(out / f"{task.name}_sweep.csv", index=False)
        print(table.head(12).round(3).to_string(), flush=True)
        paper = PRESETS["paper"].replace(seq_len=args.seq_len)
        rep = evaluate(task, methods=["RISE", "RISE-RH", "RISE-GH", "Hidden-cosine", "Grad-Sketch", "BM25",
                                      "Embedding"], config=base, cache=cache)
        rep_paper = evaluate(task, methods=["RISE"], config=paper, options=ScoreOptions(sample_norm="joint"),
                             cache=cache)
        rep_paper.table["method"] = "RISE (paper preset)"
        rep.table = pd.concat([rep.table, rep_paper.table])
        rep.costs.loc["RISE (paper preset)"] = rep_paper.costs.loc["RISE"]
        rep.table.to_csv(out / f"{task.name}_methods.csv", index=False)
        (out / f"{task.name}_methods.md").write_text(rep.markdown())
        print(rep.markdown(), flush=True)
        print(f"[{task.name}] done in {time.perf_counter() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
