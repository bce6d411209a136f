"""Choose RISE's defaults on one set of queries and report them on another (README, "Choosing the defaults").

    python -m studies.cache_readouts --out results/readouts          # the forward passes, once (~15 min on CPU)
    python -m studies.choose_defaults --readouts results/readouts --out results/defaults

Protocol. Every method ranks each task's pool for each query; the metric is auPRC@10 per query, macro-averaged.
- tune: the bundled pools (howdy, finmed, brainrot; all their queries) and the first half of the queries of
  dev-finmed, dev-brainrot and dev-sentiment;
- report: the second half of those three dev tasks' queries, and dev-refusal (a backdoor no choice ever saw).
The RISE variants (feature-time: composition, dims, centring, counted positions; query-time: channel weights,
sample normalisation, fusion with BM25) are ranked by their mean auPRC@10 over the tune sets; the winner and the
baselines (Grad-Sketch at the winner's bytes per sample, hidden-state cosine, BM25, MiniLM) are then reported on both.
Per-query values go to <out>/per_query.csv, so the tables can be recomputed without rerunning anything.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rise_core.config import RiseConfig
from rise_core.evaluation import Task
from rise_core.methods import (
    BM25,
    EMBEDDING,
    GRAD_SKETCH,
    HIDDEN_COSINE,
    RISE,
    RISE_GH,
    RISE_HS,
    RISE_RH,
    TaskSource,
    get,
    rise_variant,
)
from rise_core.metrics import EvalResult
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from studies import tasks
from studies.cache_readouts import cache_file

K = 10

# feature-time variants: name -> RiseConfig changes (seq_len is the cache's)
FEATURES: dict[str, dict] = {
    "outer 16/48/16 centred": dict(),
    "outer 16/48/16": dict(center_hidden=False),
    "outer 64/24/64": dict(k_r=64, k_h=24, k_g=64, center_hidden=False),
    "outer 64/24/64 centred": dict(k_r=64, k_h=24, k_g=64),
    "outer 112/24/112": dict(k_r=112, k_h=24, k_g=112, center_hidden=False),
    "tensor 16/48/16": dict(composition="tensor", center_hidden=False),
    "tensor 64/24/64": dict(composition="tensor", k_r=64, k_h=24, k_g=64, center_hidden=False),
    "tensor 64/24/64 centred": dict(composition="tensor", k_r=64, k_h=24, k_g=64),
    "tensor 112/24/112": dict(composition="tensor", k_r=112, k_h=24, k_g=112, center_hidden=False),
    "tensor 64/24/64 completion": dict(composition="tensor", k_r=64, k_h=24, k_g=64, center_hidden=False,
                                       counted_positions="completion"),
    "paper": dict(k_r=64, k_h=12, k_g=64, token_norm=True, center_hidden=False, hidden_channel=False),
}
# query-time variants
LAMBDA_RH = (0.35, 0.7, 1.4)
LAMBDA_HS = (0.0, 0.5, 1.0, 2.0, 4.0)
SAMPLE_NORMS = ("channel", "joint")
FUSIONS = (None, ("rrf", 1.0), ("zscore", 0.5), ("zscore", 1.0))
CHANNEL_NAMES = {"rh": RISE_RH, "gh": RISE_GH, "hs": RISE_HS}


def per_query_auprc(scores: np.ndarray, task: Task) -> np.ndarray:
    res = EvalResult.from_scores(np.asarray(scores, dtype=np.float64), task.labels, (K,))
    pq = res.per_query
    return pq.loc[pq["K"] == K, "auPRC"].to_numpy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readouts", default="results/readouts")
    ap.add_argument("--out", default="results/defaults")
    ap.add_argument("--tasks", default=",".join((*tasks.BUNDLED, *tasks.TUNED, *tasks.REPORT_ONLY)))
    ap.add_argument("--features", default=",".join(FEATURES), help="feature variants to run (names, comma-separated)")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--no-embedding", action="store_true", help="skip the MiniLM baseline")
    ap.add_argument("--grad-dims", default="2112,3648,5952",
                    help="Grad-Sketch dims (values per sample) to run: RISE's sizes at 16/48/16, 64/24/64, 112/24/112 + HS")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    rows: list[dict] = []
    timing: list[dict] = []
    feature_names = [f for f in args.features.split(",") if f]
    for name in args.tasks.split(","):
        task = tasks.task(name)
        cache = ReadoutCache(lm, seq_len=args.seq_len)
        cache.load(cache_file(Path(args.readouts), name))
        cache.add(task.pool + task.queries)  # nothing to do when the readouts are saved
        part = tasks.splits(name, len(task.queries))

        def record(method: str, scores: np.ndarray, task: Task = task, part: dict = part, name: str = name,
                   **meta) -> None:
            values = per_query_auprc(scores, task)
            for split, q in part.items():
                for i in q:
                    rows.append({"task": name, "split": split, "query": int(i), "method": method, **meta,
                                 "auPRC@10": values[i]})

        # every method comes from the registry (rise_core.methods): baselines by name, RISE variants generated
        text = TaskSource(task.pool, task.queries, cache, RiseConfig(seq_len=args.seq_len, counted_positions="all"))
        record(BM25, get(BM25).score(text).scores, kind="baseline")
        record(HIDDEN_COSINE, get(HIDDEN_COSINE).score(text).scores, kind="baseline")
        if not args.no_embedding:
            record(EMBEDDING, get(EMBEDDING).score(text).scores, kind="baseline")
        for feat in feature_names:
            cfg = RiseConfig(seq_len=args.seq_len, **FEATURES[feat])
            source = TaskSource(task.pool, task.queries, cache, cfg, memo={})  # features once, BM25 fitted once
            t0 = time.perf_counter()
            source.rise_inputs(RISE, {})  # the pool's and queries' features, into the memo
            timing.append({"task": name, "features": feat, "seconds": time.perf_counter() - t0})
            for norm in SAMPLE_NORMS:
                for lam_rh in LAMBDA_RH:
                    for lam_hs in LAMBDA_HS if cfg.hidden_channel else (0.0,):
                        for fusion in FUSIONS:
                            method = rise_variant(lambdas=(lam_rh, 1.0, lam_hs), sample_norm=norm, fusion=fusion)
                            record(RISE, method.score(source).scores, kind="rise", features=feat, sample_norm=norm,
                                   lambda_rh=lam_rh, lambda_hs=lam_hs,
                                   fusion="none" if fusion is None else f"{fusion[0]}:{fusion[1]}",
                                   values=cfg.feature_values(lm.hidden_size))
                for channel in ("rh", "gh", "hs")[: 3 if cfg.hidden_channel else 2]:  # RISE's own channels alone
                    method = rise_variant(lambdas=tuple(float(c == channel) for c in ("rh", "gh", "hs")),
                                          sample_norm=norm)
                    record(CHANNEL_NAMES[channel], method.score(source).scores, kind="channel", features=feat,
                           sample_norm=norm)
            print(f"[{name}] {feat}: {timing[-1]['seconds']:.0f}s", flush=True)
        dims = [int(d) for d in args.grad_dims.split(",") if d]
        t0 = time.perf_counter()
        cache.precompute_grad_sketches(task.pool + task.queries, "all", dims)
        print(f"[{name}] Grad-Sketch {dims}: {time.perf_counter() - t0:.0f}s", flush=True)
        for dim in dims:
            cache.grad_sketch_dim = dim
            record(GRAD_SKETCH, get(GRAD_SKETCH).score(text).scores, kind="baseline", values=dim)
        pd.DataFrame(rows).to_csv(out / "per_query.csv", index=False)
    pd.DataFrame(timing).to_csv(out / "timing.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
