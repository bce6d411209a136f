"""The relevance-feedback strengths, chosen on every tune set: the prospective ones of `studies.query_channels`
and the retrospective tune tasks of `studies.retrospective_choices` (Howdy! retrospective, dev-pirate-240 in
both settings), reported on the sets no choice saw (the report halves, dev-refusal, dev-refusal-200 in both settings).

    python -m studies.query_channels --readouts results/readouts --out results/query_channels_fb \
        --feedback-only --betas 0.5,1,2 --taus 0,1                     # the prospective grid (feedback.csv)
    python -m studies.retrospective_choices --out results/retro_choices   # the retrospective readouts
    python -m studies.feedback_choice --prospective results/query_channels_fb/feedback.csv \
        --retro results/retro_choices --out results/feedback_choice

The prospective tune sets were saturated (every one near the top with 3 marks under every strength; docs/EVALUATION.md,
"Relevance feedback"), so they could not choose; dev-pirate-240 retrospective, half learned, is not. Metric: auPRC@10 after 3 marks of the simulated
analyst (`rise_core.feedback_eval`), mean over queries, then over sets. Each method gets its own strength (beta, and
tau for RISE's channel re-weighting), the best tune mean over the grid both runs share.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd

from rise_core.config import RiseConfig, ScoreOptions
from rise_core.evaluation import Task
from rise_core.feedback import FeedbackConfig
from rise_core.feedback_eval import feedback_curves
from rise_core.methods import BM25, HIDDEN_COSINE, RISE
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from studies import tasks
from studies.retrospective_choices import ADAPTERS, GRAD_DIM, SEQ_LEN, queries_for

RETRO_SETS = {("howdy", "retrospective"): "tune", ("dev-pirate-240", "retrospective"): "tune",
              ("dev-pirate-240", "prospective"): "tune", ("dev-refusal-200", "retrospective"): "report",
              ("dev-refusal-200", "prospective"): "report"}
BETAS, TAUS = (0.5, 1.0, 2.0), (0.0, 1.0, 2.0)
MARKS = 3
COL = "auPRC@10"


def retro_curves(retro: Path) -> pd.DataFrame:
    """The simulated analyst on the retrospective_choices readouts: RISE over BETAS x TAUS, the baselines over BETAS
    (tau re-weights channels, and they have one)."""
    frames = []
    for (name, setting), split in RETRO_SETS.items():
        task = tasks.task(name)
        t = Task(task.name, task.pool, task.labels, queries_for(task, None, setting, retro), task.ks)
        cache = ReadoutCache(load_model(ADAPTERS[name] if setting == "retrospective" else None), seq_len=SEQ_LEN,
                             grad_sketch_dim=GRAD_DIM)
        cache.load(retro / f"{name}-{setting}.pt")
        for beta, tau in itertools.product(BETAS, TAUS):
            methods = (RISE, HIDDEN_COSINE, BM25) if tau == TAUS[0] else (RISE,)
            curves = feedback_curves(t, cache, RiseConfig(seq_len=SEQ_LEN), ScoreOptions.preset("default"),
                                     (1, MARKS, 5), methods, FeedbackConfig(beta=beta, tau=tau))
            curves["tau"] = [tau if m == RISE else float("nan") for m in curves["method"]]
            curves["task"], curves["split"], curves["beta"] = f"{name} {setting}", split, beta
            frames.append(curves)
        print(f"[{name} {setting}] done", flush=True)
    return pd.concat(frames, ignore_index=True)


def choose(curves: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per method and strength: tune mean and every set at MARKS marks; the chosen strength per method)."""
    at = curves[curves["marks"] == MARKS].copy()
    at["tau"] = at["tau"].fillna(0.0)
    per_set = at.groupby(["method", "beta", "tau", "split", "task"])[COL].mean()
    # only the strengths every set was run with: the grid both runs share
    counts = per_set.groupby(["method", "beta", "tau"]).size()
    full = counts[counts == counts.groupby("method").transform("max")].index
    table = per_set.unstack(["split", "task"]).loc[full].sort_index(axis=1)
    table.columns = [f"{split}: {task}" for split, task in table.columns]
    for i, split in enumerate(("tune", "report")):
        table.insert(i, f"{split} mean", table[[c for c in table.columns if c.startswith(f"{split}: ")]].mean(axis=1))
    chosen = table.loc[table.groupby("method")["tune mean"].idxmax()]
    return table, chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prospective", default="results/query_channels_fb/feedback.csv")
    ap.add_argument("--retro", default="results/retro_choices")
    ap.add_argument("--out", default="results/feedback_choice")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    retro_csv = out / "feedback_retro.csv"
    if not retro_csv.exists():
        retro_curves(Path(args.retro)).to_csv(retro_csv, index=False)
    curves = pd.concat([pd.read_csv(args.prospective), pd.read_csv(retro_csv)], ignore_index=True)
    table, chosen = choose(curves)
    text = (f"auPRC@10 after {MARKS} marks; each method's strength is the best tune mean\n\nChosen:\n\n"
            f"{chosen.round(3).to_markdown()}\n\nEvery strength:\n\n{table.round(3).to_markdown()}\n")
    (out / "summary.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
