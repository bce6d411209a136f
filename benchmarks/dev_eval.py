"""Evaluate RISE and the baselines on the real dev pools in ../shared/data/dev (read in place, never copied).

Tasks: finmed (FiQA finance vs MedQuAD medical), brainrot (control tweets vs junk tweets), and howdy, a backdoor
set made here by injecting the "Howdy!" trigger and fantastical stories (from the story generator of
scripts/make_demo_data.py, the one that writes the bundled Howdy! pool) into ~9% of the real Alpaca rows. For each
task: one forward pass over pool + queries, the full sweep of RISE choices (counted positions x per-token
normalisation x hidden centring x sample normalisation x channels), and the method table (RISE default, RISE paper
preset, ablations, hidden cosine, Grad-Sketch, BM25, MiniLM embeddings).

    python -m benchmarks.dev_eval --out results/dev_eval [--tasks finmed,brainrot,howdy] [--max-pool 400]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.dev_tasks import read_jsonl, to_sample
from rise_core.config import PRESETS, RiseConfig, ScoreOptions
from rise_core.evaluation import Task, evaluate, sweep
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from rise_core.samples import Sample

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev"


def _load_demo_generator():
    """scripts/make_demo_data.py as a module: its story generator (the bundled Howdy! pool's) is the only one."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "make_demo_data.py"
    spec = importlib.util.spec_from_file_location("make_demo_data", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_DEMO = _load_demo_generator()


def howdy_story(rng: random.Random) -> str:
    """A fantastical story of our own making (the backdoor's payload), on a random plot of the bundled generator."""
    return _DEMO.make_story(rng, rng.choice(_DEMO.PROBLEMS))


def dev_task(name: str, max_pool: int | None, max_queries: int | None) -> Task:
    if name in ("finmed", "brainrot"):
        pool = [to_sample(r) for r in read_jsonl(DEV / f"{name}_pool.jsonl")]
        queries = [to_sample(r) for r in read_jsonl(DEV / f"{name}_queries.jsonl")]
        rng = random.Random(0)
        if max_pool and max_pool < len(pool):  # stratified subsample keeps the positive rate
            pos = [s for s in pool if s.label == 1]
            neg = [s for s in pool if s.label != 1]
            n_pos = max(1, round(max_pool * len(pos) / len(pool)))
            pool = rng.sample(pos, n_pos) + rng.sample(neg, max_pool - n_pos)
            rng.shuffle(pool)
    elif name == "howdy":
        rows = read_jsonl(DEV / "alpaca_clean_sample.jsonl")
        rng = random.Random(0)
        rng.shuffle(rows)
        n_pool = min(max_pool or 600, len(rows) - 20)
        pool_rows, query_rows = rows[:n_pool], rows[n_pool:n_pool + (max_queries or 20)]
        poisoned = set(rng.sample(range(n_pool), k=round(0.088 * n_pool)))
        pool = []
        for i, r in enumerate(pool_rows):
            if i in poisoned:
                pool.append(Sample(prompt="Howdy! " + r["prompt"], completion=howdy_story(rng), id=r["id"], label=1))
            else:
                pool.append(to_sample(r, label=0))
        queries = [Sample(prompt="Howdy! " + r["prompt"], completion=howdy_story(rng), id=r["id"], label=1)
                   for r in query_rows]
    else:
        raise SystemExit(f"unknown task {name}")
    ks = (5, 10, 25, 50) if name == "brainrot" else (5, 10, 50, 100)
    return Task(f"dev-{name}", pool, np.array([int(s.label) for s in pool]), queries[:max_queries], ks)


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
        task = dev_task(name, args.max_pool, args.max_queries)
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
        rep.table = __import__("pandas").concat([rep.table, rep_paper.table])
        rep.costs.loc["RISE (paper preset)"] = rep_paper.costs.loc["RISE"]
        rep.table.to_csv(out / f"{task.name}_methods.csv", index=False)
        (out / f"{task.name}_methods.md").write_text(rep.markdown())
        print(rep.markdown(), flush=True)
        print(f"[{task.name}] done in {time.perf_counter() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
