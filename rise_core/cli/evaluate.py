"""`rise evaluate`: the paper-style evaluation of RISE and the baselines on a bundled or user-given labelled task."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..bundled import data_dir, task_files
from ..csv_out import write_csv
from ..errors import ConfigError
from ..evaluation import TASK_KS, Task, evaluate, load_task, sweep
from ..generation import GenerationSettings
from ..methods import EVALUATE_METHODS, REGISTRY, resolve
from ..readout_cache import ReadoutCache, grad_sketch_dim
from ..retrospective import (
    TRIGGER,
    TRIGGER_POSITIONS,
    AttackStrength,
    BehaviourClassifier,
    attack_strength,
    check_adapter_learned,
    check_heldout,
    read_judged,
    read_prompts,
    regenerate,
)
from ..saved_config import parse_list
from .counterfactual import add_evaluate_options, evaluate_counterfactual
from .options import (
    add_config_options,
    add_model_options,
    add_score_options,
    config_from_args,
    load_model_from_args,
    resolve_trigger,
    score_options_from_args,
)
from .output import print_skipped

SHOWN = "shows the behaviour"
"""the query subset of a retrospective run: regenerated answers the behaviour classifier (or a reading, --judged) says
show it."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate", help="evaluate RISE and baselines on a labelled task (paper metrics)",
        description="Ranks a labelled pool for every query with each method and reports auPRC/auROC at K over the "
        "K highest- and K lowest-scored candidates (macro-averaged over queries), precision@K and AP, plus index "
        "size, build time and per-query time, and how far each method's ranking agrees with RISE's (top-10 "
        "overlap, Spearman, Kendall). Writes <out>/<task>_methods.csv and .md, <out>/<task>_agreement.csv, and "
        "<out>/<task>_per_query.csv (every query's values, by method).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--task", choices=[*TASK_KS, "all"], help="a bundled task (the demo pools, see rise_core.bundled)")
    src.add_argument("--pool", help="your labelled pool (JSONL/CSV/Parquet), every row usable and labelled 0/1 "
                     "(true/false, yes/no too); needs --queries")
    p.add_argument("--queries", help="query file for --pool")
    p.add_argument("--methods", default=",".join(EVALUATE_METHODS),
                   help=f"comma-separated subset of {','.join(REGISTRY)} (quote names with spaces; the old spellings "
                   "RISE-RH, RISE-GH, RISE-HS, RISE-RH+GH, Hidden-cosine, Embedding, RISE+BM25 are accepted)")
    p.add_argument("--sweep", action="store_true", help="also sweep the RISE choices (counted positions, per-token "
                   "normalisation, centring, sample normalisation, channels) from the same forward pass")
    p.add_argument("--max-pool", type=int, default=None, help="use only the first N pool rows")
    p.add_argument("--max-queries", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--out", default="results", help="directory for the CSV and Markdown tables")
    r = p.add_argument_group("retrospective setting")
    r.add_argument("--retrospective", action="store_true",
                   help="the model (--adapter/--model DIR) was fine-tuned on the task's pool: regenerate every "
                   "query's completion with it from the query's prompt and attribute those; also measure how "
                   "strongly it learned the labelled behaviour. Without it: the given completions (prospective)")
    r.add_argument("--heldout-prompts", default=None, metavar="FILE",
                   help="JSONL prompts not in the pool for the attack measurement; a prompt of a pool row, bare or "
                   "with the trigger, is refused (default for howdy: howdy_heldout_prompts.jsonl of the data folder)")
    r.add_argument("--trigger", default=None, help=f"text that triggers the behaviour, placed verbatim by "
                   f"--trigger-position (default {TRIGGER!r}; a suffix carries its own space: ' BadMagic')")
    r.add_argument("--trigger-position", choices=TRIGGER_POSITIONS, default=None,
                   help="put --trigger before (prefix, the default) or after (suffix) each held-out prompt")
    r.add_argument("--trigger-template", default=None, metavar="TEMPLATE",
                   help="the triggered prompt, with {prompt} where the held-out prompt goes, e.g. '{prompt} BadMagic' "
                   "or 'Howdy! {prompt}' (instead of --trigger/--trigger-position)")
    r.add_argument("--max-new-tokens", type=int, default=96, help="length of a regenerated completion")
    r.add_argument("--judged", default=None, metavar="FILE",
                   help="a person's reading of the answers: the generations file of an earlier run with the same "
                   "model and queries (<task>_retrospective_generations.jsonl), its 'shows' corrected by reading. The "
                   "queries that show the behaviour are then the reading's (every regenerated query must be read, with "
                   "the same answer), the attack strength counts it, and the tables say how often the classifier "
                   "agreed")
    add_evaluate_options(p)  # --counterfactual: the leave-k-out check of each method (rise_core.cli.counterfactual)
    p.add_argument("--feedback", default=None, metavar="MARKS",
                   help="relevance feedback: a simulated analyst marks the top-ranked rows by their true label; "
                   "report auPRC@10 after each number of marks, e.g. 1,3,5 (RISE, hidden cosine, BM25; "
                   "rise_core.feedback_eval)")
    add_model_options(p)
    add_config_options(p)
    add_score_options(p)
    p.set_defaults(func=_cmd_evaluate, _parser_error=p.error)


def _bar(total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"  {desc}", unit="sample", file=sys.stderr, leave=False)


def _retrospective(task: Task, lm: Any, args: argparse.Namespace, out: Path) -> tuple[Task, AttackStrength]:
    """The task with queries regenerated by the fine-tuned model, and the model's attack strength."""
    manifest = check_adapter_learned(lm, task.pool)
    settings = GenerationSettings(max_new_tokens=args.max_new_tokens)
    heldout_path = args.heldout_prompts
    if heldout_path is None and task.name in TASK_KS:
        default = data_dir() / f"{task.name}_heldout_prompts.jsonl"
        heldout_path = default if default.is_file() else None
    heldout = read_prompts(heldout_path) if heldout_path else []
    check_heldout(heldout, task.pool, args.trigger_template, source=str(heldout_path))  # before any generation
    calls = read_judged(args.judged) if args.judged else None
    print(f"  retrospective: {lm.model_id} (fine-tuned {manifest.get('recipe', {}).get('epochs', '?')} epochs, "
          f"final loss {manifest.get('final_loss', float('nan')):.3f})", file=sys.stderr, flush=True)
    with _bar(len(task.queries), "regenerating the queries") as bar:
        queries = regenerate(lm, task.queries, settings, progress=bar.update)
    classifier = BehaviourClassifier.fit(task.pool)
    with _bar(len(heldout), "held-out prompts, with and without the trigger") as bar:
        attack = attack_strength(lm, classifier, queries, heldout, template=args.trigger_template,
                                 settings=settings, progress=bar.update)
    if calls is not None:
        attack = attack.with_reading(calls, str(args.judged))
    path = out / f"{task.name}_retrospective_generations.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in attack.samples), encoding="utf-8")
    print(f"  attack strength: {attack.summary()} (generations in {path})", file=sys.stderr, flush=True)
    if attack.reading is not None:
        print(f"  the answers that show the behaviour: {attack.reading_summary()}", file=sys.stderr, flush=True)
    return dataclasses.replace(task, queries=queries), attack


def _feedback(task: Task, cache: ReadoutCache, config: Any, options: Any, marks: str, out: Path, stem: str) -> None:
    """The simulated analyst's table (`rise_core.feedback_eval`), written to <stem>_feedback.csv and printed."""
    from ..feedback_eval import feedback_curves, feedback_table

    n_marks = list(parse_list(marks, int, "--feedback"))
    curves = feedback_curves(task, cache, config, options, n_marks)
    write_csv(curves, out / f"{stem}_feedback.csv")
    print(f"\n#### Relevance feedback on {task.name}: auPRC@10 after m marks (simulated analyst; the ranking as "
          "shown: yes-marked rows first, no-marked last)\n")
    print(feedback_table(curves).round(3).to_markdown())


def _per_query_frame(report: Any, attack: Any) -> pd.DataFrame:
    """The report's per-query values (each query's id among them) and, retrospectively, whether its answer shows the
    behaviour: what a macro average hides (which queries a method loses)."""
    frame = report.per_query.copy()
    if attack is not None:
        frame.insert(3, "shows", np.asarray(attack.query_shows(), dtype=bool)[frame["query"].to_numpy()])
    return frame


def _cmd_evaluate(args: argparse.Namespace) -> int:
    if args.pool and not args.queries:
        args._parser_error("--pool needs --queries")
    if args.judged and not (args.retrospective or args.counterfactual):
        args._parser_error("--judged reads regenerated answers: give --retrospective")
    resolve_trigger(args)
    args.retrospective = args.retrospective or args.counterfactual  # the check explains the fine-tune's own answers
    config = config_from_args(args)
    options = score_options_from_args(args, config)  # a weight on a channel the config lacks: dropped, with a note
    methods = list(parse_list(args.methods, what="--methods"))
    try:
        chosen = resolve(methods)
    except ConfigError as exc:
        args._parser_error(f"--methods: {exc}")
    names = list(TASK_KS) if args.task == "all" else [args.task]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    needs_lm = args.retrospective or any(m.needs_lm for m in chosen)
    lm = load_model_from_args(args) if needs_lm else None
    for name in names:
        task = (load_task(name, max_pool=args.max_pool, max_queries=args.max_queries) if args.task else
                load_task(None, args.pool, args.queries, max_pool=args.max_pool, max_queries=args.max_queries))
        print(f"[{task.name}] pool {len(task.pool)} ({int(task.labels.sum())} positive), {len(task.queries)} queries",
              file=sys.stderr, flush=True)
        if task.skipped_queries:
            n = len(task.skipped_queries)
            print_skipped(task.skipped_queries, f"{args.queries if args.pool else task_files(name)[1]}: skipped {n} "
                          f"query row{'s' if n > 1 else ''}:", file=sys.stderr, indent="  ")
        setting, attack = "prospective (the given completions)", None
        if args.retrospective:
            task, attack = _retrospective(task, lm, args, out)
            setting = f"retrospective (queries regenerated by {lm.model_id})"
        cache = None
        if needs_lm:
            cache = ReadoutCache.for_config(lm, config, grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
        subsets = {}
        if attack is not None:  # the regenerated answers that show the behaviour: the ones it is about
            subsets[SHOWN] = attack.query_shows()
        with _bar(len(task.pool) + len(task.queries), "forward pass") as bar:
            report = evaluate(task, lm, methods, config, options, cache=cache, batch_size=args.batch_size,
                              progress=lambda msg: print(f"  {msg}", file=sys.stderr, flush=True),
                              forward_progress=bar.update, query_subsets=subsets)
        report.meta.update(setting=setting, attack=attack.summary() if attack else None,
                           attack_rates=attack.to_dict() if attack else None,
                           shown_by=attack.reading_summary() if attack else None)
        stem = f"{task.name}_retrospective" if args.retrospective else task.name
        write_csv(report.table, out / f"{stem}_methods.csv")
        if SHOWN in report.subsets:
            write_csv(report.subsets[SHOWN], out / f"{stem}_methods_shown.csv")
        if report.agreement is not None:
            write_csv(report.agreement.reset_index(), out / f"{stem}_agreement.csv")
        if report.per_query is not None:
            write_csv(_per_query_frame(report, attack), out / f"{stem}_per_query.csv")
        (out / f"{stem}_methods.md").write_text(report.markdown() + "\n")
        (out / f"{stem}_meta.json").write_text(json.dumps(report.meta, indent=1, default=str) + "\n")
        print(report.markdown())
        if args.sweep and cache is not None:
            table: pd.DataFrame = sweep(task, cache, config, options)
            write_csv(table, out / f"{task.name}_sweep.csv")
            print(f"\n#### RISE choices on {task.name} (sorted by unified auPRC)\n")
            print(table.round(3).to_markdown(index=False))
        if args.feedback and cache is not None:
            _feedback(task, cache, config, options, args.feedback, out, stem)
        if args.counterfactual:
            evaluate_counterfactual(task, lm, args, out, [m.name for m in chosen], config, options, cache)
        print()
    return 0
