"""One ranking for every kind of question: the per-query channel rule and relevance feedback, chosen on the tune sets
and reported on sets no choice saw (docs/EVALUATION.md, "One ranking for every kind of question").

    python -m studies.cache_readouts --out results/readouts          # the forward passes, once
    python -m studies.query_channels --readouts results/readouts --out results/query_channels

Same protocol as `studies.choose_defaults`: tune = the bundled pools and the first half of dev-finmed,
dev-brainrot and dev-sentiment's queries; report = the second halves and dev-refusal. Metric: auPRC@10 per query.
Part 1 scores every task with the fixed default weights, RISE's channels alone and in pairs, the per-query rule
(`rise_core.adaptive`, weighting='auto') and a grid of its gate (slope x midpoint) to show what the choice rests on,
and the baselines. Part 2 runs the simulated analyst (`rise_core.feedback_eval`) for RISE, hidden-state cosine and
BM25 over a grid of feedback strengths, each method's strength chosen on the tune sets, and reports all.
Writes <out>/per_query.csv, <out>/feedback.csv and prints the tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

from rise_core import adaptive
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.feedback import FeedbackConfig
from rise_core.feedback_eval import feedback_curves
from rise_core.methods import BM25, HIDDEN_COSINE, RISE, TaskSource, get, rise_variant
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from studies import tasks
from studies.cache_readouts import cache_file
from studies.choose_defaults import per_query_auprc

SLOPES = (1.0, 2.0, 4.0, 100.0)
MIDPOINTS = (-0.5, -0.25, 0.0, 0.25, 0.5, 1.0)
BETAS = (0.5, 1.0, 2.0)
TAUS = (0.0, 1.0, 3.0)
FIXED = {"fixed default (1.4/1/1)": (1.4, 1.0, 1.0), "RH+GH (backdoor)": (1.4, 1.0, 0.0), "RH": (1.0, 0.0, 0.0),
         "GH": (0.0, 1.0, 0.0), "HS": (0.0, 0.0, 1.0)}
for lam_rh in (0.35, 0.7, 1.4):  # the fixed weightings choose_defaults swept
    for lam_hs in (0.0, 0.5, 1.0, 2.0, 4.0):
        FIXED.setdefault(f"fixed {lam_rh:g}/1/{lam_hs:g}", (lam_rh, 1.0, lam_hs))


def table(frame: pd.DataFrame, value: str, index: str | list[str]) -> pd.DataFrame:
    """Mean `value` per (index, set), with TUNE and REPORT means over the sets (each set weighted equally)."""
    tab = frame.assign(set=frame["task"] + ":" + frame["split"]).pivot_table(
        index=index, columns="set", values=value, aggfunc="mean")
    tab["TUNE"] = tab[[c for c in tab.columns if c.endswith(":tune")]].mean(axis=1)
    tab["REPORT"] = tab[[c for c in tab.columns if c.endswith(":report")]].mean(axis=1)
    return tab


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readouts", default="results/readouts")
    ap.add_argument("--out", default="results/query_channels")
    ap.add_argument("--tasks", default=",".join((*tasks.BUNDLED, *tasks.TUNED, *tasks.REPORT_ONLY)))
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--no-feedback", action="store_true", help="part 1 only")
    ap.add_argument("--feedback-only", action="store_true", help="part 2 only")
    ap.add_argument("--betas", default=",".join(map(str, BETAS)), help="feedback strengths beta to try")
    ap.add_argument("--taus", default=",".join(map(str, TAUS)), help="channel re-weighting strengths tau to try")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    rows, fb_rows = [], []
    for name in args.tasks.split(","):
        task = tasks.task(name)
        cache = ReadoutCache(lm, seq_len=args.seq_len)
        cache.load(cache_file(Path(args.readouts), name))
        cache.add(task.pool + task.queries)
        part = tasks.splits(name, len(task.queries))
        config = RiseConfig(seq_len=args.seq_len)
        src = TaskSource(task.pool, task.queries, cache, config, ScoreOptions.preset("default"), memo={})

        def record(method: str, scores: np.ndarray, rows: list = rows, task=task, part=part, name=name) -> None:
            values = per_query_auprc(scores, task)
            rows.extend({"task": name, "split": split, "query": int(i), "method": method, "auPRC@10": values[i]}
                        for split, q in part.items() for i in q)

        for label in () if args.feedback_only else ("RISE per-query (default)",):
            record(label, get(RISE).score(src).scores)
        for label, lambdas in {} if args.feedback_only else FIXED.items():
            record(f"RISE {label}", rise_variant(lambdas=lambdas).score(src).scores)
        for slope in () if args.feedback_only else SLOPES:
            for mid in MIDPOINTS:
                with mock.patch.object(adaptive, "SLOPE", slope), mock.patch.object(adaptive, "MIDPOINT", mid):
                    record(f"gate slope {slope:g} midpoint {mid:+g}", get(RISE).score(src).scores)
        text = TaskSource(task.pool, task.queries, cache, RiseConfig(seq_len=args.seq_len, counted_positions="all"))
        for baseline in () if args.feedback_only else (HIDDEN_COSINE, BM25):
            record(baseline, get(baseline).score(text).scores)
        if not args.feedback_only:
            pd.DataFrame(rows).to_csv(out / "per_query.csv", index=False)
        print(f"[{name}] part 1 done", flush=True)
        if args.no_feedback:
            continue
        taus = [float(t) for t in args.taus.split(",")]
        for beta in (float(b) for b in args.betas.split(",")):
            for tau in taus:
                methods = (RISE, HIDDEN_COSINE, BM25) if tau == taus[0] else (RISE,)  # tau moves RISE's channels only
                curves = feedback_curves(task, cache, config, ScoreOptions.preset("default"), (1, 3, 5), methods,
                                         FeedbackConfig(beta=beta, tau=tau))
                for _, r in curves.iterrows():
                    split = next(s for s, q in part.items() if r["query"] in q)
                    fb_rows.append({"task": name, "split": split, "beta": beta,
                                    "tau": tau if r["method"] == RISE else float("nan"), **r.to_dict()})
        pd.DataFrame(fb_rows).to_csv(out / "feedback.csv", index=False)
        print(f"[{name}] feedback done", flush=True)
    pd.set_option("display.width", 250)
    if rows:
        tab = table(pd.DataFrame(rows), "auPRC@10", "method").round(3).sort_values("TUNE", ascending=False)
        print(tab.to_string())
    if fb_rows:
        fb = pd.DataFrame(fb_rows).fillna({"tau": -1})
        ftab = table(fb, "auPRC@10", ["method", "beta", "tau", "marks"]).round(3)
        print(ftab.sort_values("TUNE", ascending=False).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
