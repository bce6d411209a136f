"""`rise counterfactual`: does removing the training rows a ranking names remove the behaviour? Leave-k-out retraining
of an index's fine-tuned model (`rise_core.counterfactual`); also `rise evaluate --counterfactual` on a labelled task."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..bundled import data_dir, queries_for_pool
from ..counterfactual import (
    AGGREGATES,
    RANDOM,
    CounterfactualConfig,
    CounterfactualProgress,
    CounterfactualResult,
    original_model,
    prepare_check,
    prepare_task_check,
    run_counterfactual,
    training_pool,
)
from ..errors import ConfigError, InputDataError
from ..evaluation import TASK_KS
from ..generation import GenerationSettings
from ..ingest import read_pool
from ..methods import BM25, RISE
from ..retrospective import TRIGGER, TRIGGER_POSITIONS, read_prompts
from ..saved_config import parse_list
from ..units import format_seconds
from .options import (
    add_model_options,
    add_score_options,
    load_model_from_args,
    resolve_trigger,
    score_options_from_args,
)

DEFAULT_KS = "10,25"
DEFAULT_METHODS = f"{RISE},{BM25}"
SHOWN = ["arm", "method", "k", "seed", "n_removed", "n_positive_removed", "n_train", "triggered_rate",
         "clean_behaviour_rate", "train_s", "reproduces_original"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "counterfactual", help="retrain without each ranking's top-k rows and measure the behaviour (leave-k-out)",
        description="The counterfactual test of an attribution: for an index built with a `rise finetune` adapter, "
        "rank the pool for the queries (the behaviour to explain) with each method, re-run the adapter's recipe on "
        "the pool minus each method's top k rows (and minus k random rows, the control), answer held-out prompts "
        "with and without the trigger with every retrained model, and measure the behaviour rate as `rise evaluate "
        "--retrospective` does. Writes OUT/plan.json, OUT/results.csv, OUT/results.json, OUT/curve.html and "
        "OUT/arms/*/generations.jsonl. Every retrain checkpoints: run the same command again to resume.")
    p.add_argument("--index", required=True, help="index built with the fine-tuned model (rise build --model ADAPTER)")
    p.add_argument("--pool", default=None, help="the pool the adapter was fine-tuned on, in its order (default: the "
                   "adapter manifest's pool_source, as a path or by name in the bundled data folder)")
    p.add_argument("--queries", default=None, help="the behaviour to explain: JSONL/CSV/Parquet of prompt + "
                   "completion (default: <name>_queries.jsonl beside a <name>_pool.jsonl pool)")
    p.add_argument("--regenerate", action="store_true", help="replace each query's completion with the model's own "
                   "answer to its prompt first (the retrospective setting)")
    p.add_argument("--max-queries", type=int, default=None, help="use only the first N queries")
    p.add_argument("--out", required=True, help="run directory (new, or a check to resume)")
    p.add_argument("--drop-adapters", action="store_true",
                   help="delete each retrained adapter once its answers are written (keeps its manifest)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_check_options(p)
    add_model_options(p, default_help="default: the model the index was built with")
    add_score_options(p, preset_flag=True)
    p.set_defaults(func=_cmd_counterfactual, _parser_error=p.error)


def add_check_options(p: argparse.ArgumentParser, evaluate: bool = False) -> Any:
    """The options of a check: what to remove, the controls, the held-out prompts and the trigger (on `rise
    evaluate`, only those it does not have already)."""
    g = p.add_argument_group("leave-k-out check")
    g.add_argument("--ks", default=DEFAULT_KS, help="comma-separated numbers of top-ranked rows to remove, one retrain "
                   f"per method and k (default {DEFAULT_KS}; 0 adds a retrain on the whole pool, which must reproduce "
                   "the original adapter)")
    g.add_argument("--random-seeds", type=int, default=3, help="random arms per k (the control; default 3, 0: none)")
    g.add_argument("--random-seed", type=int, default=0, help="the first random seed (then +1, +2, ...)")
    g.add_argument("--aggregate", choices=AGGREGATES, default="best_rank", help="how several queries' rankings "
                   "become one: each row by its best rank over the queries (ties: mean rank), or by mean score")
    if evaluate:
        return g
    g.add_argument("--methods", default=DEFAULT_METHODS, help=f"comma-separated ranking methods (default "
                   f"{DEFAULT_METHODS}); the first is the one checked, the others and 'random' (which stands for "
                   "--random-seeds) are its controls")
    g.add_argument("--control-ks", default=None, help="comma-separated ks (some of --ks) at which the controls are "
                   "retrained; default: every k. E.g. --ks 25,50 --control-ks 50: the first method at both, its "
                   "controls only where the headline compares them")
    g.add_argument("--where", default=None, help="rank only the rows matching this condition (random draws stay over "
                   "the whole pool)")
    g.add_argument("--heldout-prompts", default=None, metavar="FILE", help="JSONL prompts not in the pool (default: "
                   "<name>_heldout_prompts.jsonl beside a <name>_pool.jsonl pool)")
    g.add_argument("--trigger", default=None, help=f"text that triggers the behaviour (default {TRIGGER!r})")
    g.add_argument("--trigger-position", choices=TRIGGER_POSITIONS, default=None)
    g.add_argument("--trigger-template", default=None, metavar="TEMPLATE",
                   help="the triggered prompt with {prompt}, e.g. '{prompt} BadMagic' (instead of --trigger)")
    g.add_argument("--max-new-tokens", type=int, default=96, help="length of each held-out answer")
    return g


def _methods(args: argparse.Namespace) -> tuple[tuple[str, ...], int]:
    names = parse_list(args.methods, what="--methods")
    seeds = args.random_seeds
    if any(m.lower() == "random" for m in names) and seeds == 0:
        args._parser_error("--methods names 'random' but --random-seeds is 0")
    return tuple(m for m in names if m.lower() != "random"), seeds


def _heldout_default(pool_source: str) -> Path | None:
    path = Path(pool_source)
    if not path.name.endswith("_pool.jsonl"):
        return None
    name = path.name.removesuffix("_pool.jsonl") + "_heldout_prompts.jsonl"
    return next((p for p in (path.with_name(name), data_dir() / name) if p.is_file()), None)


class _Bars:
    """One tqdm bar per arm and stage, with the check's ETA."""

    def __init__(self, quiet: bool) -> None:
        self.quiet, self.bar, self.key = quiet, None, None

    def __call__(self, p: CounterfactualProgress) -> None:
        if self.quiet or p.stage == "done":
            return
        from tqdm.auto import tqdm

        if self.key != (p.arm_id, p.stage):
            self.close()
            self.key = (p.arm_id, p.stage)
            what = "retrain" if p.stage == "train" else "answers"
            self.bar = tqdm(total=p.total, initial=max(0, p.step - 1), desc=f"[{p.arm_index}/{p.n_arms}] "
                            f"{p.arm_id} {what}", unit="step" if p.stage == "train" else "answer", file=sys.stderr)
            if p.resumed_from:
                self.bar.write(f"{p.arm_id}: resumed from the checkpoint at step {p.resumed_from}")
        assert self.bar is not None
        self.bar.update(p.step - self.bar.n)
        self.bar.set_postfix_str(f"check ETA {format_seconds(p.eta_s)}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def report(result: CounterfactualResult, behaviour: str = "behaviour") -> str:
    """The leave-k-out curve (behaviour rate on triggered prompts, method x k), every arm, the headline, the files."""
    curve = result.curve
    parts = []
    if len(curve):
        wide = curve.pivot(index="method", columns="k", values="triggered_rate")
        wide.columns = [f"k={k}" for k in wide.columns]
        times = curve[curve["k"] > 0].groupby("method")["train_s"].mean().rename("train_s per retrain")
        wide = wide.join(times).loc[list(dict.fromkeys(curve["method"]))]
        parts += ["#### Behaviour rate on triggered held-out prompts after retraining without the top k", "",
                  wide.round(3).to_markdown(), ""]
        if (curve["method"] == RANDOM).any():
            parts += [f"({RANDOM}: mean over {int(curve.loc[curve['method'] == RANDOM, 'n_arms'].max())} seeds; "
                      "k=0 is the original model.)", ""]
    arms = result.arms[SHOWN].copy()
    arms["seed"] = ["" if pd.isna(v) else int(v) for v in arms["seed"]]
    parts += ["#### Every arm", "", arms.round(3).to_markdown(index=False), ""]
    line = result.headline(behaviour=behaviour)
    if line:
        parts += [line, ""]
    state = "complete" if result.complete else f"stopped: {len(result.arms)} of {len(result.plan.arms)} arms done " \
        "(run the same command again to resume)"
    parts.append(f"Check {state}. Files in {result.out_dir}: plan.json, results.csv, results.json, curve.html, "
                 "arms/*/generations.jsonl")
    return "\n".join(parts)


def _cmd_counterfactual(args: argparse.Namespace) -> int:
    from ..store import RiseIndex

    resolve_trigger(args)
    methods, seeds = _methods(args)
    ks = parse_list(args.ks, int, "--ks")
    index = RiseIndex.open(args.index, read_only=True)
    lm = load_model_from_args(args, name=args.model or index.manifest.model_id)
    options = score_options_from_args(args, index.config)
    _, pool_source = training_pool(original_model(lm), args.pool)
    queries_path = args.queries or queries_for_pool(pool_source)
    if queries_path is None:
        raise InputDataError("give the queries (--queries FILE): the behaviour the ranking explains")
    queries = read_pool(queries_path).samples[:args.max_queries]
    heldout_path = args.heldout_prompts or _heldout_default(pool_source)
    if heldout_path is None:
        raise InputDataError("give held-out prompts (--heldout-prompts FILE, JSONL with a 'prompt' per line): prompts "
                             "not in the pool, answered with and without the trigger by every retrained model")
    control_ks = parse_list(args.control_ks, int, "--control-ks") if args.control_ks else None
    config = CounterfactualConfig(
        ks=ks, control_ks=control_ks, methods=methods, n_random_seeds=seeds, random_seed=args.random_seed, aggregate=args.aggregate,
        heldout_prompts=tuple(read_prompts(heldout_path)), template=args.trigger_template,
        generation=GenerationSettings(max_new_tokens=args.max_new_tokens), options=options, where=args.where,
        regenerate_queries=args.regenerate)
    print(f"check: {lm.model_id} on {index.path.name} ({len(index)} rows; pool {pool_source}), {len(queries)} queries "
          f"from {queries_path}, {len(config.heldout_prompts)} held-out prompts from {heldout_path}", file=sys.stderr,
          flush=True)
    pool, plan = prepare_check(index, lm, queries, config, args.out, pool=pool_source)
    index.close()
    n_retrains = sum(a.retrains for a in plan.arms)
    per = plan.original.get("train_s")
    print(f"{len(plan.arms)} arms, {n_retrains} retrains" + (f" (the original fine-tune took {format_seconds(per)})"
                                                             if per else "") + f" -> {args.out}",
          file=sys.stderr, flush=True)
    return _run(lm, pool, plan, args)


def _run(lm: Any, pool: list, plan: Any, args: argparse.Namespace, behaviour: str = "behaviour") -> int:
    bars = _Bars(args.no_progress)
    try:
        result = run_counterfactual(lm, pool, plan, args.out, progress=bars,
                                    keep_adapters=not getattr(args, "drop_adapters", False))
    except KeyboardInterrupt:
        bars.close()
        print(f"interrupted: run the same command again to resume the check in {args.out}", file=sys.stderr)
        return 130
    finally:
        bars.close()
    print(report(result, behaviour))
    return 0


# --- rise evaluate --counterfactual ---------------------------------------------------------------------------------


def add_evaluate_options(p: argparse.ArgumentParser) -> None:
    """`--counterfactual` and its options on `rise evaluate`."""
    g = add_check_options(p, evaluate=True)
    g.add_argument("--counterfactual", action="store_true",
                   help="also the leave-k-out check of every --methods ranking (implies --retrospective): re-run the "
                   "adapter's recipe without each method's top-k rows and k random rows, and measure the behaviour "
                   "on the held-out prompts; writes <out>/<task>_counterfactual/ and <out>/<task>_counterfactual.md")


def evaluate_counterfactual(task: Any, lm: Any, args: argparse.Namespace, out: Path, methods: list[str],
                            rise_config: Any, options: Any, cache: Any = None) -> CounterfactualResult | None:
    """The leave-k-out table of `methods` on a task whose queries `rise evaluate --retrospective` regenerated."""
    heldout_path = args.heldout_prompts
    if heldout_path is None and task.name in TASK_KS:
        default = data_dir() / f"{task.name}_heldout_prompts.jsonl"
        heldout_path = default if default.is_file() else None
    if heldout_path is None:
        raise ConfigError("--counterfactual needs held-out prompts: give --heldout-prompts FILE")
    config = CounterfactualConfig(
        ks=parse_list(args.ks, int, "--ks"), methods=tuple(methods), n_random_seeds=args.random_seeds,
        random_seed=args.random_seed, aggregate=args.aggregate, heldout_prompts=tuple(read_prompts(heldout_path)),
        template=args.trigger_template, generation=GenerationSettings(max_new_tokens=args.max_new_tokens),
        options=options, regenerate_queries=True)
    run_dir = out / f"{task.name}_counterfactual"
    pool, plan = prepare_task_check(task.pool, task.queries, lm, config, run_dir, rise_config=rise_config, cache=cache)
    print(f"  counterfactual: {sum(a.retrains for a in plan.arms)} retrains -> {run_dir}", file=sys.stderr,
          flush=True)
    bars = _Bars(getattr(args, "no_progress", False))
    try:
        result = run_counterfactual(lm, pool, plan, run_dir, progress=bars)
    finally:
        bars.close()
    text = report(result)
    (out / f"{task.name}_counterfactual.md").write_text(text + "\n")
    print(text)
    return result
