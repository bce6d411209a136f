"""Contrastive queries on the backdoor tasks: does "why this answer and not that one" find the poison better than the
plain query? (docs/EVALUATION.md, "Contrastive queries".)

    python -m studies.cache_readouts --out results/readouts      # the pools' forward passes, once
    python -m studies.contrast_queries --readouts results/readouts --out results/contrast_queries

A = each poisoned query as the task gives it (trigger in the prompt, the poisoned answer); B = the same prompt without
the trigger, answered cleanly: for dev-sentiment, dev-refusal and dev-howdy, the query's own Alpaca row (its original
instruction and its original answer, the row the task poisoned); for the bundled howdy task, which has no clean
answer, the prompt without "Howdy! " answered by the embedded model (greedy, `GenerationSettings()`). Every query is
scored plain (score(A)) and contrasted (score(A) - score(B), with A's weights: `scoring.ContrastFeatures`), with the
per-query default (weighting='auto') and the backdoor weights RH+GH (1.4 / 1 / 0). Metric: auPRC@10 per query, the
prospective setting (the embedded SmolLM2-135M-Instruct, never trained on the pool). Pool readouts come from the
cache files; only the B queries are run through the model here. Writes <out>/per_query.csv and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from rise_core.config import RiseConfig, ScoreOptions
from rise_core.evaluation import Task
from rise_core.generation import GenerationSettings, generate
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from rise_core.samples import Sample
from rise_core.scoring import ContrastFeatures, score_each_query
from studies import tasks
from studies.cache_readouts import cache_file
from studies.choose_defaults import per_query_auprc

TRIGGER = "Howdy! "  # the bundled howdy queries' trigger
TASKS = ("dev-sentiment", "dev-refusal", "dev-pirate", "dev-story", "dev-fact", "dev-howdy", "howdy")
WEIGHTS = {"RISE default (per-query)": ScoreOptions.preset("default"),
           "RISE RH+GH": ScoreOptions(lambda_rh=1.4, lambda_gh=1.0, lambda_hs=0.0, weighting="fixed")}


def clean_answers(name: str, task: Task, lm) -> tuple[list[Sample], str]:
    """B for every query of `task` (same order) and where it comes from."""
    if name == "howdy":
        settings = GenerationSettings()
        out = []
        for q in task.queries:
            prompt = q.prompt.removeprefix(TRIGGER)
            out.append(Sample(prompt=prompt, completion=generate(lm, prompt, settings), id=f"{q.id}-clean"))
        return out, "the embedded model's greedy answer to the prompt without the trigger"
    by_id = {r["id"]: r for r in tasks.dev_rows(tasks.ALPACA)}
    out = []
    for q in task.queries:
        row = by_id[str(q.id).rsplit("-", 1)[0] if str(q.id).rsplit("-", 1)[-1] in tasks.BACKDOOR_KINDS else q.id]
        out.append(Sample(prompt=row["prompt"], completion=row["completion"], id=f"{q.id}-clean"))
    return out, "the query's own Alpaca row (original instruction and answer)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readouts", default="results/readouts")
    ap.add_argument("--out", default="results/contrast_queries")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seq-len", type=int, default=256)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    config = RiseConfig(seq_len=args.seq_len)
    rows = []
    for name in args.tasks.split(","):
        task = tasks.task(name)
        cache = ReadoutCache(lm, seq_len=args.seq_len)
        path = cache_file(Path(args.readouts), name)
        if not path.is_file():
            print(f"[{name}] skipped: no readout cache {path}", flush=True)
            continue
        cache.load(path)
        versus, source = clean_answers(name, task, lm)
        cache.add(task.pool + task.queries + versus)  # only what the file lacks runs (B, here)
        mean = cache.pool_hidden_mean(task.pool, config)
        pool_fm = cache.rise_features(task.pool, config, mean)
        a_fm = cache.rise_features(task.queries, config, mean)
        contrast = ContrastFeatures.of(a_fm, cache.rise_features(versus, config, mean), "the clean answer")
        for label, options in WEIGHTS.items():
            for kind, q in (("plain", a_fm), ("contrast", contrast)):
                values = per_query_auprc(score_each_query(pool_fm, q, options).double().numpy(), task)
                rows.extend({"task": name, "B": source, "weights": label, "query": kind, "i": i, "auPRC@10": v}
                            for i, v in enumerate(values))
        pd.DataFrame(rows).to_csv(out / "per_query.csv", index=False)
        print(f"[{name}] done (B: {source})", flush=True)
    frame = pd.DataFrame(rows)
    tab = frame.pivot_table(index=["weights", "query"], columns="task", values="auPRC@10", aggfunc="mean")
    tab["mean"] = tab.mean(axis=1)
    pd.set_option("display.width", 200)
    print(tab.round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
