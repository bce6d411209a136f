"""`rise evaluate`: the paper-style evaluation of RISE and the baselines on a bundled or user-given labelled task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..evaluation import (
    METHODS,
    TASK_KS,
    TEXT_METHODS,
    ReadoutCache,
    evaluate,
    grad_sketch_dim,
    load_task,
    sweep,
)
from .options import (
    add_config_options,
    add_model_options,
    add_score_options,
    config_from_args,
    load_model_from_args,
    score_options_from_args,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate", help="evaluate RISE and baselines on a labelled task (paper metrics)",
        description="Ranks a labelled pool for every query with each method and reports auPRC/auROC at K over the "
        "K highest- and K lowest-scored candidates (macro-averaged over queries), precision@K and AP, plus index "
        "size, build time and per-query time, and how far each method's ranking agrees with RISE's (top-10 "
        "overlap, Spearman, Kendall). Writes <out>/<task>_methods.csv and .md, and <out>/<task>_agreement.csv.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--task", choices=[*TASK_KS, "all"], help="a bundled task (the demo pools, see rise_core.bundled)")
    src.add_argument("--pool", help="your labelled pool (JSONL/CSV/Parquet with label 0/1); needs --queries")
    p.add_argument("--queries", help="query file for --pool")
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated subset of {','.join(METHODS)}")
    p.add_argument("--sweep", action="store_true", help="also sweep the RISE choices (counted positions, per-token "
                   "normalisation, centring, sample normalisation, channels) from the same forward pass")
    p.add_argument("--max-pool", type=int, default=None, help="use only the first N pool rows")
    p.add_argument("--max-queries", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--out", default="results", help="directory for the CSV and Markdown tables")
    add_model_options(p)
    add_config_options(p)
    add_score_options(p)
    p.set_defaults(func=_cmd_evaluate, _parser_error=p.error)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    if args.pool and not args.queries:
        args._parser_error("--pool needs --queries")
    config = config_from_args(args)
    options = score_options_from_args(args)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    names = list(TASK_KS) if args.task == "all" else [args.task]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    needs_lm = any(m not in TEXT_METHODS for m in methods)
    lm = load_model_from_args(args) if needs_lm else None
    for name in names:
        task = (load_task(name, max_pool=args.max_pool, max_queries=args.max_queries) if args.task else
                load_task(None, args.pool, args.queries, max_pool=args.max_pool, max_queries=args.max_queries))
        print(f"[{task.name}] pool {len(task.pool)} ({int(task.labels.sum())} positive), {len(task.queries)} queries",
              file=sys.stderr, flush=True)
        cache = None
        if needs_lm:
            cache = ReadoutCache(lm, seq_len=config.seq_len, k_max=config.k_max, seed=config.seed,
                                 grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
        report = evaluate(task, lm, methods, config, options, cache=cache, batch_size=args.batch_size,
                          progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True))
        report.table.to_csv(out / f"{task.name}_methods.csv", index=False)
        if report.agreement is not None:
            report.agreement.to_csv(out / f"{task.name}_agreement.csv")
        (out / f"{task.name}_methods.md").write_text(report.markdown() + "\n")
        print(report.markdown())
        if args.sweep and cache is not None:
            table: pd.DataFrame = sweep(task, cache, config, options)
            table.to_csv(out / f"{task.name}_sweep.csv", index=False)
            print(f"\n#### RISE choices on {task.name} (sorted by unified auPRC)\n")
            print(table.round(3).to_markdown(index=False))
        print()
    return 0
