"""Finding fluent backdoors: which label-free signal tells "what taught this behaviour" from "examples like this one".

    python -m studies.cache_readouts --out results/readouts          # the forward passes, once
    python -m studies.behaviour_rule --readouts results/readouts --out results/behaviour_rule

Part 1 (`--stage scores`) writes, per task, each RISE channel's scores of the pool (RH, GH, HS alone, fixed weights),
the per-query rule's (`weighting='auto'`), the baselines' and, for each query, the trigger test
(`rise_core.shared_spans.find_shared_spans`) on the top 10 of the gradient view (1.4 RH + GH) and of the
representation view (HS). Part 2 (`--stage rules`) scores candidate rules on them: the tune sets choose, the report
sets (second halves, dev-refusal, dev-fact) only report. Metric: auPRC@10 per query, each set weighted equally.
Among the candidates: the shipped rule (CHOSEN) with each span lift of LIFTS, the rows holding the fired test's span
(in its field) lifted by that many standard deviations (`rise_core.span_lift`); SHARED, the span both views share
lifted too; TRIGGER, the telling spans of the prompt tried first and lifted by PROMPT_SPAN_LIFT; SERVED, the served
default: TRIGGER with the representation view's own span (the rival) lifted where it wins, unless the pool rows'
losses overrule it (`behaviour.weigh_by_loss`; RIVAL_BY_COUNT without them, and the arbiters tried on it, LOSS_ARBITER
and PROMPT_ARBITER, each first on its own replanted sets), and the views' top BEHAVIOUR_DEEPER_K read where nothing
lifts (ARBITRATED without it, DEEPER_READ the test of it), each span of the query's prompt also tested in a family of
its own (`behaviour.PROMPT_FAMILY`; off and each share of PROMPT_FAMILY_SHARES).
With --feedback-rule, the simulated analyst runs every feedback variant from that rule's ranking, and `separation`
says whether the tune sets separate each from the served feedback (a paired bootstrap over the tune queries);
`--stage feedback` runs it alone (on the scores of an earlier `--stage scores`), and --served-feedback-only runs only
the served feedback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import pandas as pd
import torch

from rise_core import adaptive, behaviour
from rise_core.baselines import BM25Scorer
from rise_core.behaviour import behaviour_test_for, holders_excess, samples_frame, samples_spans
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.feedback import (
    FeedbackConfig,
    MarkedWords,
    SpanLift,
    apply_feedback,
    simulate_analyst,
    standardise,
    turned,
    unit_row_scores,
)
from rise_core.methods import (
    BM25,
    EMBEDDING,
    HIDDEN_COSINE,
    RISE,
    TaskSource,
    Unavailable,
    get,
    rise_variant,
)
from rise_core.metrics import EvalResult
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from rise_core.scoring import channel_scales, matvec, query_vectors
from rise_core.shared_spans import PoolSpans, find_shared_spans
from studies import tasks
from studies.cache_readouts import FINAL, cache_file
from studies.hs_layers import DEPTHS, hs_scores
from studies.query_channels import table as mean_table

K = 10
T = TypeVar("T")
GRADIENT = {"RH": 1.4, "GH": 1.0}  # the fixed default's gradient side


def span_signal(spans: PoolSpans, task: tasks.Task, scores: np.ndarray, other: np.ndarray, q: int) -> dict:
    """The trigger test on the top K of `scores` for query q: the best shared span, its evidence, whether the query
    itself holds it, and how many of the top K of `other` (the other view) hold it."""
    top = np.argsort(-scores, kind="stable")[:K]
    found = find_shared_spans(spans, samples_frame(task.pool)(top.tolist()), limit=5)
    if found.empty:
        return {"span": "", "where": "", "stat": 0.0, "in_top": 0, "pool_frac": np.nan, "in_query": False,
                "in_other": 0}
    best = found.iloc[0]
    query = task.queries[q]
    where = {"prompt": query.prompt, "completion": query.completion, "text": query.text}.get(best["where"]) or ""
    other_top = np.argsort(-other, kind="stable")[:K]
    return {"span": best["span"], "where": best["where"], "stat": float(-np.log10(max(best["p_adjusted"], 1e-300))),
            "in_top": int(best["in_top"]), "pool_frac": float(best["pool_fraction"]), "in_query": best["span"] in where,
            "in_other": int(spans.mask(best["span"], best["where"])[other_top].sum())}


def compute_scores(name: str, readouts: Path, out: Path, lm, seq_len: int) -> None:
    task = tasks.task(name)
    cache = ReadoutCache(lm, seq_len=seq_len, hs_depth=FINAL)  # HS of another layer: --hs-layers
    if cache_file(readouts, name).exists():
        cache.load(cache_file(readouts, name))
    cache.add(task.pool + task.queries)
    cache.save(cache_file(readouts, name))
    config = RiseConfig(seq_len=seq_len, hs_depth=FINAL)
    src = TaskSource(task.pool, task.queries, cache, config, ScoreOptions.preset("default"), memo={})
    pool_fm, query_fm, _ = src.rise_inputs(RISE, {})
    fixed = dataclasses.replace(ScoreOptions.preset("default"), weighting="fixed", lambda_rh=1.4, lambda_gh=1.0,
                                lambda_hs=1.0)
    scales = channel_scales(pool_fm, fixed)
    mats = {}
    for c in ("rh", "gh", "hs"):  # each channel's part of the fixed scores (the joint norm of RH and GH kept)
        rows = [scales[c] * matvec(getattr(pool_fm, c), query_vectors(query_fm.select([q]), fixed)[c])
                for q in range(len(query_fm))]
        mats[c.upper()] = torch.stack(rows).double().numpy()
    np.savez(out / f"{name}.pool.npz", **{c: getattr(pool_fm, c).float().numpy() for c in ("rh", "gh", "hs")},
             **{f"scale_{c}": scales[c].float().numpy() for c in ("rh", "gh", "hs")})
    mats["fixed"] = rise_variant(lambdas=(1.4, 1.0, 1.0), weighting="fixed").score(src).scores
    mats["auto"] = get(RISE).score(src).scores
    text = TaskSource(task.pool, task.queries, cache, RiseConfig(seq_len=seq_len, counted_positions="all",
                                                                 hs_depth=FINAL))
    for base in (HIDDEN_COSINE, BM25, EMBEDDING):  # Grad-Sketch needs a backward pass per row: not cached here
        try:
            mats[base] = get(base).score(text).scores
        except Unavailable as exc:
            print(f"[{name}] {base} unavailable: {exc}", flush=True)
    spans = samples_spans(task.pool)
    grad = GRADIENT["RH"] * mats["RH"] + GRADIENT["GH"] * mats["GH"]
    signals = []
    for q in range(len(task.queries)):
        g = span_signal(spans, task, grad[q], mats["HS"][q], q)
        h = span_signal(spans, task, mats["HS"][q], grad[q], q)
        signals.append({**{f"g_{k}": v for k, v in g.items()}, **{f"h_{k}": v for k, v in h.items()}})
    mats["query_loss"] = np.array([adaptive.query_loss(query_fm.select([q]).loss) for q in range(len(query_fm))])
    mats["pool_loss"] = np.array([adaptive.pool_loss(pool_fm.loss)])
    mats["row_loss"] = pool_fm.loss.double().numpy()  # each pool row's mean loss (nan: no counted token)
    np.savez(out / f"{name}.npz", labels=task.labels, **{k: np.asarray(v, dtype=np.float64) for k, v in mats.items()})
    (out / f"{name}.signals.json").write_text(json.dumps(signals))
    print(f"[{name}] scores written", flush=True)


def auprc(scores: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """auPRC@K of each query's scores (rows)."""
    res = EvalResult.from_scores(np.asarray(scores, dtype=np.float64), labels, (K,))
    return res.per_query.loc[res.per_query["K"] == K, "auPRC"].to_numpy()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readouts", default="results/readouts")
    ap.add_argument("--out", default="results/behaviour_rule")
    ap.add_argument("--tasks", default=",".join((*tasks.BUNDLED, *tasks.TUNED, *tasks.TUNE_ONLY, *tasks.REPORT_ONLY)))
    ap.add_argument("--stage", choices=("scores", "rules", "all", "depths", "feedback"), default="all",
                    help="depths: the served rule, the fixed weights and HS alone at each depth of --depths (HS from "
                    "--hs-layers), with the baselines; feedback: --feedback-rule's simulated analyst alone")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--feedback-rule", default="", help="a rule's name: run the simulated analyst from its ranking")
    ap.add_argument("--served-feedback-only", action="store_true",
                    help="with --feedback-rule: only the served feedback (SERVED_FEEDBACK), not the whole grid")
    ap.add_argument("--feedback-variants", default="",
                    help="with --feedback-rule: only the served feedback and these variants of the grid (their names, "
                    "separated by '|'; e.g. the two of ORTHOGONAL_NO)")
    ap.add_argument("--tune-only", action="store_true",
                    help="with --feedback-rule: keep the tune queries alone (a test decided before any report figure)")
    ap.add_argument("--feedback-csv", default="", help="with --feedback-rule: where the per-query figures go "
                    "(default <out>/feedback.csv; two runs over parts of the sets write apart)")
    ap.add_argument("--hs-layers", default="", help="studies.hs_layers' folder: score HS at --hs-depth from it")
    ap.add_argument("--hs-depth", type=float, default=1.0, help="with --hs-layers: the HS channel's layer "
                    "(RiseConfig.hs_depth); every rule is rescored with it (not 'auto (today)', the served scores)")
    ap.add_argument("--depths", default=",".join(f"{d:g}" for d in DEPTHS), help="with --stage depths")
    args = ap.parse_args()
    if args.feedback_csv and not Path(args.feedback_csv).parent.is_dir():  # said now, not after the whole stage
        raise SystemExit(f"--feedback-csv {args.feedback_csv}: no folder {Path(args.feedback_csv).parent}")
    layers = HsLayer(Path(args.hs_layers), args.hs_depth) if args.hs_layers else None
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.tasks.split(",")
    if args.stage in ("scores", "all"):
        lm = load_model(None)
        for name in names:
            if not (out / f"{name}.npz").exists():
                compute_scores(name, Path(args.readouts), out, lm, args.seq_len)
    if args.stage == "depths":
        frame = evaluate_depths(out, names, Path(args.hs_layers), [float(d) for d in args.depths.split(",")])
        frame.to_csv(out / "depths.csv", index=False)
        pd.set_option("display.width", 250)
        print(table(frame).round(3).to_string())
    if args.stage in ("rules", "all"):
        frame = evaluate_rules(out, names, layers)
        frame.to_csv(out / "per_query.csv", index=False)
        pd.set_option("display.width", 250)
        pd.set_option("display.max_rows", 500)
        tab = table(frame).round(3)
        keep = [r for r in tab.index if not r.startswith("span t") or " top" not in r or r.endswith("grad else auto")]
        print(tab.loc[keep].to_string())
        for rule, reference, test in ((LOSS_ARBITER, RIVAL_BY_COUNT, "loss arbiter"),
                                      (PROMPT_ARBITER, RIVAL_BY_COUNT, "prompt-span arbiter"),
                                      (DEEPER_READ, ARBITRATED, "deeper read"),
                                      (HOLDERS_ALIKE, SERVED, "holders' likeness"),
                                      (SHARED_STOPS, PASSED_OVER, "shared prompt span"),
                                      (FUNCTION_WORDS_SKIPPED, SERVED, "function words")):
            print(f"First rankings, {rule} minus {reference}: over every tune set, then its test's replanted sets "
                  "alone")
            print(first_separation(frame, rule, reference).round(4).to_string(index=False))
            replanted = tuple(n for n in names if n in tasks.REPLANTED[test])
            if replanted:
                print(first_separation(frame, rule, reference, replanted).round(4).to_string(index=False))
    if args.feedback_rule and args.stage in ("rules", "all", "feedback"):
        only = ((SERVED_FEEDBACK,) if args.served_feedback_only else
                (SERVED_FEEDBACK, *args.feedback_variants.split("|")) if args.feedback_variants else None)
        fb = evaluate_feedback(out, names, args.feedback_rule, layers, only)
        if args.tune_only:
            fb = fb[fb["split"] == "tune"]
        fb.to_csv(Path(args.feedback_csv) if args.feedback_csv else out / "feedback.csv", index=False)
        ftab = mean_table(fb, "auPRC", ["variant", "marks"])
        ftab["min"] = ftab.drop(columns=["TUNE", "REPORT"]).min(axis=1)
        print(ftab.round(3).to_string())
        if not args.served_feedback_only:
            print(f"Against the served feedback ({SERVED_FEEDBACK}), tune mean over 1, 3, 5 marks:")
            print(separation(fb).round(4).to_string(index=False))
    return 0


def table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean auPRC@K per (rule, set), with TUNE and REPORT means (each set weighted equally) and each side's worst set
    relative to its best non-RISE baseline."""
    tab = mean_table(frame, "auPRC", "rule")
    tune = [c for c in tab.columns if c.endswith(":tune")]
    report = [c for c in tab.columns if c.endswith(":report")]
    base = tab.loc[[b for b in BASELINES if b in tab.index]].max(axis=0)
    tab["TUNE worst vs best baseline"] = (tab[tune] - base[tune]).min(axis=1)
    tab["REPORT worst vs best baseline"] = (tab[report] - base[report]).min(axis=1)
    return tab.sort_values("TUNE", ascending=False)


BASELINES = (HIDDEN_COSINE, BM25, EMBEDDING)


@dataclasses.dataclass(frozen=True)
class HsLayer:
    """The HS channel of another layer (`RiseConfig.hs_depth`), from `studies.hs_layers`' per-layer sums."""

    folder: Path
    depth: float

    def apply(self, name: str, m: dict[str, np.ndarray]) -> np.ndarray:
        """Replace m's HS scores (and the fixed weights' sum, which holds them) with this layer's; returns the
        (N, d) unit pool rows for the feedback stage. The cached span signals of the representation view (`sig`) are
        not redone: the served rule (SERVED) recomputes its test from m."""
        hs, pool_rows, _ = hs_scores(dict(np.load(self.folder / f"{name}.npz")), self.depth)
        if hs.shape != m["HS"].shape:
            raise SystemExit(f"[{name}] {self.folder} holds {hs.shape} HS scores, the cache {m['HS'].shape}")
        m["fixed"] = m["fixed"] - m["HS"] + hs
        m["HS"] = hs
        return pool_rows


RULE = {"t": 2.0, "min_top": 3, "other_max": 3, "rival": True}
"""The span test's thresholds the feedback stage uses (the rules stage sweeps them), with the representation view's
rival span (`adaptive.BehaviourEvidence.rival_wins`)."""


def fires(s: dict, rule: dict) -> bool:
    """Whether the gradient view's top K share a span, held by the query, that the representation view's top K lack
    (at most `other_max` of them hold it, and at least `margin` fewer than the gradient view's); with `rival`, not when
    the representation view's own best span is as telling, held by the query and by more of its top K."""
    rival_wins = (rule.get("rival", False) and bool(s["h_span"]) and s["h_in_query"] and s["h_in_top"] > s["g_in_top"]
                  and s["h_stat"] >= rule["t"])
    return (s["g_stat"] >= rule["t"] and s["g_in_query"] and s["g_in_top"] >= rule["min_top"]
            and s["g_in_other"] <= rule["other_max"] and s["g_in_other"] <= s["g_in_top"] - rule.get("margin", 0)
            and not rival_wins)


CHOSEN = "span t2 other<=3 rival -> grad else gate mid 0.5 slope 4"
"""the per-query rule the product ships (adaptive.choose: the behaviour test with the rival veto, else the gate)."""
LIFTS = (0.5, 1.0, 1.5, 2.0)
"""the span lifts tried on CHOSEN (z units; adaptive.SPAN_LIFT)."""


SPANS = (2, 3, 5)
"""the numbers of distinct spans tried (adaptive.BEHAVIOUR_SPANS) with the chosen lift."""

SHARED = f"{CHOSEN} spans 2 lift 1.5 shared"
"""CHOSEN with the second span and the span lift, lifting a span both views share as well
(`BehaviourEvidence.shared`), its candidates tried most telling first."""

PROMPT_LIFTS = (1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 1e6)
"""the lifts of a span of the prompt tried on SHARED with the prompt's telling spans tried first
(adaptive.PROMPT_SPAN_LIFT; 1e6: its rows before every other row)."""
TRIGGER = f"{SHARED} prompt first lift {adaptive.PROMPT_SPAN_LIFT:g}"
"""SHARED with the telling spans of the prompt tried first (`behaviour.prompt_first`) and lifted by
adaptive.PROMPT_SPAN_LIFT."""
RIVAL_BY_COUNT = f"{TRIGGER} rival lift"
"""TRIGGER with the rival's span lifted where it wins by count (`BehaviourEvidence.rival_count_wins`): the served
default until the arbiter on the prompt's span (PROMPT_ARBITER) was adopted."""
ARBITRATED = f"{RIVAL_BY_COUNT}, weighed by loss"
"""RIVAL_BY_COUNT with the pool rows' losses weighing the rival (`behaviour.weigh_by_loss`): PROMPT_ARBITER, as the
product computes it; the served default until the deeper read."""
SERVED = f"{ARBITRATED}, deeper read"
"""ARBITRATED with the deeper read where nothing lifts (`adaptive.BEHAVIOUR_DEEPER_K`): the served default;
DEEPER_READ, as the product computes it."""
PROMPT_SHARES = (0.1, 0.2, 0.3, 1.0)
"""the bounds on a prompt span's pool share tried on TRIGGER (adaptive.PROMPT_SPAN_MAX_SHARE; 1: none)."""


def with_values(module: object, values: dict[str, object], run: Callable[[], T]) -> T:
    """`run()` with the module's constants set to `values` (the served test reads them at call time), then
    restored."""
    kept = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        return run()
    finally:
        for name, value in kept.items():
            setattr(module, name, value)


def with_prompt_share(share: float, run: Callable[[], T]) -> T:
    """`run()` with adaptive.PROMPT_SPAN_MAX_SHARE set to `share`, then restored."""
    return with_values(adaptive, {"PROMPT_SPAN_MAX_SHARE": share}, run)


PROMPT_FAMILY_SHARES = (None, 0.3, 0.4, 0.5, 0.6)
"""the query prompt's own span family tried on SERVED (behaviour.PROMPT_FAMILY; None: off), at each share of the
gradient view's top rows that must hold its span (behaviour.PROMPT_FAMILY_MIN_SHARE)."""


def with_prompt_family(share: float | None, run: Callable[[], T]) -> T:
    """`run()` with the query prompt's family off (`share` None) or on at that share of the top rows, then restored."""
    values = {"PROMPT_FAMILY": False} if share is None else {"PROMPT_FAMILY": True, "PROMPT_FAMILY_MIN_SHARE": share}
    return with_values(behaviour, values, run)


def family_variant(share: float | None) -> str:
    return f"{SERVED} prompt family " + ("off" if share is None else f"at {share:g} of the top")


FAMILY_VARIANTS = {family_variant(share): share for share in PROMPT_FAMILY_SHARES}
"""each prompt family variant's name -> its share (None: off); --feedback-rule takes them too."""


WORD_LIFTS = (0.0, 1.0, 1.5)
"""the marked word's lifts tried after marks (feedback.FeedbackConfig.word_lift), with the span lift kept."""
UNBOUNDED = 30.0
"""an evidence bound that never binds (apply_feedback caps tau * evidence at 30): the feedback before max_evidence."""
START_GRID = tuple((cap, floor, 0.0) for cap in (0.5, 1.0, 2.0, UNBOUNDED) for floor in (0.0, 0.1, 1.0)) + (
    (1.0, 0.25, 0.0), (1.0, 0.5, 0.0), (1.0, 0.1, 0.25), (UNBOUNDED, 1.0, 0.25))
"""(max_evidence, start floor, words) tried with beta 1, tau 1, gamma 0.75, word lift 1 and the span kept: floor 1
starts the marks from the fixed weights (as before; with UNBOUNDED and words 0.25, the feedback served before), a
floor below 1 from the shown ranking's own weights with each channel at least that share of its fixed weight
(adaptive.feedback_start, FEEDBACK_START_FLOOR)."""


def start_variant(cap: float, floor: float, words: float) -> str:
    """The name of a START_GRID variant."""
    start = "fixed" if floor >= 1 else f"shown floor {floor:g}"
    bound = "unbounded" if cap >= UNBOUNDED else f"<= {cap:g}"
    return f"start {start}, evidence {bound}, words {words:g}"


AUTO = ScoreOptions.preset("default")
"""the served scoring (weighting='auto'), whose per-query choice and feedback start the START_GRID variants take."""
STARTED = start_variant(FeedbackConfig().max_evidence, adaptive.FEEDBACK_START_FLOOR, FeedbackConfig().words)
"""the START_GRID variant with FeedbackConfig's defaults and adaptive.feedback_start (no turn after misses)."""
TURN_GRID = tuple((how, after) for how in ("turn", "turn unless shown", "interleave") for after in (1, 2, 3))
"""what happens after `after` marks, all "not this", from STARTED, until a mark says yes: "turn", the weights are
the other view's (adaptive.feedback_turn; FeedbackConfig.turn_after); "turn unless shown", the same unless a missed
row is among the other view's own top K (FeedbackConfig.turn_unless_shown: that view would show the same misses);
"interleave", the top rows of the gradient and the representation views after the marks, alternating (`interleave`,
the view the gate weighed less first), then STARTED's ranking."""


def turn_variant(how: str, after: int) -> str:
    """The name of a TURN_GRID variant."""
    return f"{STARTED}, {how} after {after} misses"


STRENGTH_GRID = tuple((b, g, t) for b in (0.5, 1.0, 2.0) for g in (0.5, 0.75, 1.0) for t in (0.5, 1.0, 2.0))
"""(beta, gamma, tau) tried again with the served start, evidence bound and turn (they were chosen before those)."""


def strength_variant(beta: float, gamma: float, tau: float) -> str:
    """The name of a STRENGTH_GRID variant."""
    return f"served start, turn {FeedbackConfig().turn_after}, beta {beta:g} gamma {gamma:g} tau {tau:g}"


EACH_MARK = (0.75, 1.0, 2.0)
"""beta tried with each yes-mark as heavy as the query (`FeedbackConfig.each_mark`), with the served rest."""


def each_mark_variant(beta: float) -> str:
    """The name of an EACH_MARK variant."""
    return f"served start, turn {FeedbackConfig().turn_after}, each mark beta {beta:g}"


ORTHOGONAL_NO = {"served, the no rows orthogonal to the query": False,
                 "served, the no rows orthogonal to the query in HS alone": True}
"""the served feedback with `FeedbackConfig.orthogonal_no`, in every channel (False) or in HS alone (True; the other
channels' parts and the lifts as served)."""


FLAT_BELOW = 1.5
"""the HS view's FLAT_DEPTH-th best row under which a query's view counts as flat (`feedback.flat_view`): read on the
tune figures before the fresh tweet sets (docs/EVALUATION.md, "Feedback: a "not this" that does not cancel the
query": 1.36 standard deviations on the tweet sets, 2.1 to 3.0 on every other kind)."""
FLAT_NO = f"served, the no rows orthogonal to the query where its HS view is flat (below {FLAT_BELOW:g})"
"""the served feedback with `FeedbackConfig.flat_below` = FLAT_BELOW: the variant the fresh tweet sets test
(docs/EVALUATION.md, "Feedback: fresh tweet sets")."""

PSEUDO_GRID = ((2, 0.5), (3, 0.25), (3, 0.5), (3, 1.0), (5, 0.5), (5, 1.0), (10, 0.5))
"""(rows, weight) of pseudo-relevance feedback (`FeedbackConfig.pseudo_rows`, `pseudo_weight`) tried on the served
feedback."""


def pseudo_variant(rows: int, weight: float) -> str:
    """The name of a PSEUDO_GRID variant."""
    return f"served, the best {rows} unmarked rows as yes at {weight:g}"


def orthogonal_no_ranker(hs_alone: bool, cfg: FeedbackConfig, raw: dict[str, np.ndarray], rows_fn: dict,
                         first: np.ndarray, own: dict[str, float], words: MarkedWords | None,
                         span: SpanLift | None) -> Callable[[dict], np.ndarray]:
    """An ORTHOGONAL_NO variant's ranker (marks -> scores), from the served start `own` at `cfg`'s strengths."""
    orthogonal_cfg = dataclasses.replace(cfg, orthogonal_no=True)

    def orthogonal(marks: dict):
        return apply_feedback(raw, rows_fn, marks, own, orthogonal_cfg, words, span)

    def ranked(marks: dict) -> np.ndarray:
        if not marks:
            return first
        if not hs_alone:
            return orthogonal(marks).total
        served = apply_feedback(raw, rows_fn, marks, own, cfg, words, span)
        if "HS" not in served.parts:
            return served.total
        return served.total - served.parts["HS"] + orthogonal(marks).parts["HS"]

    return ranked


SERVED_FEEDBACK = turn_variant("turn", FeedbackConfig().turn_after) if FeedbackConfig().turn_after else STARTED
"""the served feedback (FeedbackConfig's defaults, adaptive.feedback_start, and adaptive.feedback_turn where
FeedbackConfig.turn_after turns)."""


def separation(frame: pd.DataFrame, reference: str = SERVED_FEEDBACK, marks: tuple[int, ...] = (1, 3, 5),
               n_boot: int = 4000, seed: int = 0) -> pd.DataFrame:
    """Whether the tune sets separate each feedback variant from `reference`: per tune query, the variant's auPRC@K
    averaged over `marks` minus the reference's; their mean with each set weighted equally (`diff`), and a paired
    bootstrap of it (queries resampled within each set): the 95% interval (`lo`, `hi`) and the share of resamples at or
    below 0 (`p_le0`). Best first."""
    tune = frame[(frame["split"] == "tune") & frame["marks"].isin(marks)]
    per = tune.groupby(["variant", "task", "query"])["auPRC"].mean().unstack("variant")
    diff = per.sub(per[reference], axis=0).drop(columns=[reference])
    sets = [np.flatnonzero(per.index.get_level_values("task") == t) for t in per.index.unique("task")]
    values = diff.to_numpy()
    rng = np.random.default_rng(seed)
    boots = np.array([np.mean([values[rng.choice(rows, len(rows))].mean(axis=0) for rows in sets], axis=0)
                      for _ in range(n_boot)])
    out = pd.DataFrame({"variant": diff.columns,
                        "diff": np.mean([values[rows].mean(axis=0) for rows in sets], axis=0),
                        "lo": np.percentile(boots, 2.5, axis=0), "hi": np.percentile(boots, 97.5, axis=0),
                        "p_le0": (boots <= 0).mean(axis=0)})
    return out.sort_values("diff", ascending=False, kind="stable").reset_index(drop=True)


def span_holders(task: tasks.Task, sig: list[dict], m: dict[str, np.ndarray] | None = None, spans: int = 1,
                 shared: bool = False) -> list[np.ndarray | None]:
    """Per query: the pool rows holding the span of a behaviour test that fired (in the span's field), else None.
    With `spans` > 1 (and the channel scores `m`), the product's own test (`behaviour.behaviour_test_for`, trying
    that many distinct spans, most telling first) on the two views' top K of `m`; with `shared` too, where it lifts
    (fired, or both views share the span: `BehaviourEvidence.lifts`)."""
    return [held for _, held in _found(task, sig, m, spans, shared, list)]  # `list`: the candidates as found


Findings = list[tuple[adaptive.BehaviourEvidence | None, np.ndarray | None]]
"""per query: the behaviour test's finding and the rows holding its span where it lifts, else None."""


def served_findings(task: tasks.Task, sig: list[dict], m: dict[str, np.ndarray], rival: bool = True,
                    by_loss: bool = True, deeper: bool = True, order: behaviour.Order | None = None) -> Findings:
    """The served test per query (`behaviour.behaviour_test_for`: the prompt's telling spans first, BEHAVIOUR_SPANS
    distinct spans, the pool rows' losses weighing the rival, the deeper read where nothing lifts), with the rows
    holding the lifted span where it lifts (`BehaviourEvidence.lifted`; without `rival`, not the rival's span, and no
    losses read: TRIGGER; without `by_loss`, the rival wins by count alone: RIVAL_BY_COUNT; without `deeper`, no
    deeper read: ARBITRATED; `order`: the order the test tries the spans in, None for the served `prompt_first`)."""
    return _found(task, sig, m, adaptive.BEHAVIOUR_SPANS, True, order, rival, by_loss and rival,
                  deeper and by_loss and rival)


def deeper_read(findings: Findings, task: tasks.Task, m: dict[str, np.ndarray]) -> Findings:
    """`findings` with, where one lifts nothing, the test on the views' top BEHAVIOUR_DEEPER_K rows in its place when
    that lifts a rare span of the prompt (`BehaviourEvidence.lifts_prompt_span`): DEEPER_READ, as registered."""
    pool, frame = samples_spans(task.pool), samples_frame(task.pool)
    gradient = adaptive.gradient_view(ScoreOptions.preset("default"))
    out: Findings = []
    for q, (found, held) in enumerate(findings):
        if found is None or not found.lifts:
            deeper = behaviour_test_for(_view_rows(m, q), pool, frame, task.queries[q], adaptive.BEHAVIOUR_DEEPER_K,
                                        distinct=adaptive.BEHAVIOUR_SPANS, row_losses=lambda: m["row_loss"],
                                        deeper_k=None)(gradient)
            if deeper is not None and deeper.lifts_prompt_span:
                found, held = deeper, pool.mask(deeper.lifted.span, deeper.lifted.where)
        out.append((found, held))
    return out


LOSS_ARBITER = f"{RIVAL_BY_COUNT} rival set aside by loss"
"""RIVAL_BY_COUNT with the rival set aside where its span's holders surprise the model less than the gradient view's span's
(`loss_arbitrated`): the test registered in docs/EVALUATION.md ("The rival must be as telling"), run first on the
replanted sets."""
PROMPT_ARBITER = f"{LOSS_ARBITER} on the prompt's span"
"""LOSS_ARBITER only where the gradient view's span is a rare span of the prompt (`BehaviourEvidence.in_prompt`, a
trigger's place) whose holders surprise the model (their excess above 0): the next test (docs/EVALUATION.md, "The
arbiter on the prompt's span"), run first on the second replanted sets, and adopted: ARBITRATED."""
DEEPER_READ = f"{ARBITRATED} read deeper where nothing lifts"
"""ARBITRATED with the deeper read (`deeper_read`): the test registered in docs/EVALUATION.md ("The deeper read"),
run first on the third replanted sets."""


HOLDERS_ALIKE = f"{SERVED}, the prompt's spans by their holders' likeness"
"""SERVED with the prompt's telling spans tried in the order of how alike their pool rows are in the gradient view
(`holders_alike_order`), not most telling first: the test registered in docs/EVALUATION.md ("The prompt's spans by
their holders' likeness"), run first on the sixth and seventh replanted sets, and not adopted (−0.0016 on them, +0.0031
over every tune set, neither interval above 0)."""


SHARED_STOPS = f"{SERVED}, a shared span of the prompt taken"
"""SERVED with the test stopping at its first span where that is a rare telling span of the prompt that both views'
top rows hold (`behaviour.SHARED_PROMPT_SPAN_STOPS`): the test registered in docs/EVALUATION.md ("A shared span of
the prompt is taken"), run first on the eighth and ninth replanted sets, and adopted: SERVED now is this rule, and
PASSED_OVER the served rule before it."""
PASSED_OVER = f"{SERVED}, a shared span of the prompt passed over"
"""The served rule before SHARED_STOPS: a first span of the prompt that both views hold is passed over for a later one
that fires."""


FUNCTION_WORDS_SKIPPED = f"{SERVED}, spans of function words left out"
"""SERVED with the spans made only of function words left out of those the test tries
(`behaviour.FUNCTION_WORD_SPANS_SKIPPED`): the test registered in docs/EVALUATION.md ("Spans of function words left
out"), run first on the tenth and eleventh replanted sets, and not adopted (−0.0021 on them, +0.0021 over every
tune set, neither interval above 0)."""


FLAGGED = {SHARED_STOPS: {"SHARED_PROMPT_SPAN_STOPS": True}, PASSED_OVER: {"SHARED_PROMPT_SPAN_STOPS": False},
           FUNCTION_WORDS_SKIPPED: {"FUNCTION_WORD_SPANS_SKIPPED": True}}
"""rule -> the `behaviour` flags that make the served test that rule."""


def flagged_findings(rule: str, task: tasks.Task, sig: list[dict], m: dict[str, np.ndarray]) -> Findings:
    """The findings per query of one of FLAGGED's rules: the served test with its `behaviour` flags set so."""
    return with_values(behaviour, FLAGGED[rule], lambda: served_findings(task, sig, m))


def gradient_rows(pool: dict[str, np.ndarray]) -> np.ndarray:
    """(N, d) unit rows of the gradient view (1.4 RH + GH, as GRADIENT) from the cached pool features: each channel's
    unit row weighted by the square root of its lambda, so that a row's dot product with another is their gradient
    view similarity over the weights' sum."""
    parts = []
    for c in ("RH", "GH"):
        x = np.asarray(pool[c.lower()], dtype=np.float64)
        parts.append(np.sqrt(GRADIENT[c]) * x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12))
    return np.concatenate(parts, axis=1) / np.sqrt(sum(GRADIENT.values()))


def holders_likeness(rows: np.ndarray, held: np.ndarray) -> float:
    """The mean cosine between two distinct pool rows holding a span (`held`, a mask over `rows`, unit rows) minus
    the pool's mean cosine (self pairs included); -1 where fewer than two rows hold it."""
    x = rows[held]
    n = len(x)
    if n < 2:
        return -1.0
    return float((np.square(x.sum(0)).sum() - n) / (n * (n - 1)) - np.square(rows.mean(0)).sum())


def holders_alike_order(rows: np.ndarray, pool: PoolSpans) -> behaviour.Order:
    """A `behaviour.Order`: the prompt's telling spans first, those whose pool holders are most alike in the gradient
    view (`holders_likeness`) first (a trigger's rows are poisoned rows with one payload; a task word's start
    unrelated tasks), then the rest as found."""
    memo: dict[tuple[str, str], float] = {}

    def likeness(e: adaptive.BehaviourEvidence) -> float:
        key = (e.span, e.where)
        if key not in memo:
            memo[key] = holders_likeness(rows, pool.mask(e.span, e.where))
        return memo[key]

    def order(found):
        first = sorted((e for e in found if e.in_prompt and e.telling), key=lambda e: -likeness(e))
        return first + [e for e in found if not (e.in_prompt and e.telling)]

    return order


def holders_alike_findings(task: tasks.Task, sig: list[dict], m: dict[str, np.ndarray], pool: dict[str, np.ndarray]
                           ) -> Findings:
    """HOLDERS_ALIKE's findings per query."""
    return served_findings(task, sig, m, order=holders_alike_order(gradient_rows(pool), samples_spans(task.pool)))


def first_separation(frame: pd.DataFrame, rule: str = LOSS_ARBITER, reference: str = RIVAL_BY_COUNT,
                     sets: tuple[str, ...] | None = None) -> pd.DataFrame:
    """`separation` of first rankings: the rules stage's per-query frame, `rule` against `reference` over the tune
    queries (of `sets` alone when given)."""
    keep = frame[frame["rule"].isin((rule, reference)) & (frame["task"].isin(sets) if sets else True)]
    return separation(keep.rename(columns={"rule": "variant"}).assign(marks=0), reference, marks=(0,))


def loss_arbitrated(findings: Findings, pool: PoolSpans, row_loss: np.ndarray, prompt_only: bool = False
                    ) -> Findings:
    """`findings` with the rival set aside wherever it wins but the rows holding the gradient view's span have the
    larger loss excess (`holders_excess`): a poisoned completion is not what its prompt asks for, so its holders
    surprise the model, while a task word's do not. With `prompt_only`, only where that span is a rare span of the
    prompt (`BehaviourEvidence.in_prompt`) whose excess is above 0 (PROMPT_ARBITER). The finding then stands as the
    gradient view's own (it fires or not by its own test), and its holders are the lifted span's."""
    out: Findings = []
    for found, held in findings:
        if found is None or not (found.rival_wins and found.rival_where) or (prompt_only and not found.in_prompt):
            out.append((found, held))
            continue
        mine = holders_excess(pool, row_loss, found.span, found.where)
        if (mine > 0 or not prompt_only) and mine > holders_excess(pool, row_loss, found.rival_span,
                                                                   found.rival_where):
            found = dataclasses.replace(found, rival_span="")
            lifted = found.lifted
            held = pool.mask(lifted.span, lifted.where) if lifted is not None else None
        out.append((found, held))
    return out


def trigger_lifts(findings: Findings, prompt_lift: float | None = None) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """Whether the test fired per query, and where it lifts, each pool row's lift in standard deviations (its span's
    `lift_spreads`, or `prompt_lift` for a span of the prompt), else None."""
    fired, lifts = [], []
    for found, held in findings:
        fired.append(found is not None and found.fires)
        if found is None or held is None or found.lifted is None:
            lifts.append(None)
            continue
        lifted = found.lifted
        spreads = prompt_lift if lifted.where == "prompt" and prompt_lift is not None else lifted.spreads
        lifts.append(held * spreads)
    return np.array(fired, dtype=bool), lifts


def _view_rows(m: dict[str, np.ndarray], q: int) -> Callable[[ScoreOptions, int], np.ndarray]:
    """`behaviour.ViewRows` of query q from the channel scores: the gradient view (GRADIENT) or HS."""
    grad = GRADIENT["RH"] * m["RH"][q] + GRADIENT["GH"] * m["GH"][q]
    return lambda options, k: np.argsort(-(grad if options.lambda_hs == 0 else m["HS"][q]), kind="stable")[:k]


def _found(task: tasks.Task, sig: list[dict], m: dict[str, np.ndarray] | None, spans: int, shared: bool, order,
           rival: bool = False, by_loss: bool = False, deeper: bool = False) -> Findings:
    """Per query: the behaviour test's finding and the rows holding its lifted span where it lifts (fired; with
    `shared`, or both views share it; with `rival` too, the rival's span where it wins), else (finding, None); with
    `by_loss`, the pool rows' losses (`row_loss`) may overrule the rival, as served (`behaviour.weigh_by_loss`); with
    `deeper`, the served deeper read (`adaptive.BEHAVIOUR_DEEPER_K`)."""
    pool = samples_spans(task.pool)
    if spans == 1 or m is None:
        for s in sig:
            if "g_where" not in s:
                raise SystemExit("the cached signals predate the span's field: rerun --stage scores")
        return [(None, pool.mask(s["g_span"], s["g_where"])) if fires(s, RULE) else (None, None) for s in sig]
    gradient = adaptive.gradient_view(ScoreOptions.preset("default"))
    out = []
    for q in range(len(sig)):
        found = behaviour_test_for(_view_rows(m, q), pool, samples_frame(task.pool), task.queries[q], K,
                                   distinct=spans, order=order,
                                   row_losses=(lambda: m["row_loss"]) if by_loss else None,
                                   deeper_k=adaptive.BEHAVIOUR_DEEPER_K if deeper else None)(gradient)
        lifts = found is not None and (found.lifts if shared and rival else
                                       (found.fires or found.shared) if shared else found.fires)
        lifted = found.lifted if lifts else None
        out.append((found, pool.mask(lifted.span, lifted.where) if lifted is not None else None))
    return out


def lifted_rule(m: dict[str, np.ndarray], findings: Findings, prompt_lift: float | None = None) -> np.ndarray:
    """(Q, N) scores of the served rule from per-query findings: the gradient view where the test fired, else the
    loss gate's, each standardised, plus the lifted span's lift (its own, in standard deviations; `prompt_lift` for a
    span of the prompt when given)."""
    fired, lifts = trigger_lifts(findings, prompt_lift)
    grad, gate = standardise(GRADIENT["RH"] * m["RH"] + GRADIENT["GH"] * m["GH"]), standardise(gate_scores(m))
    return np.stack([(grad[q] if fired[q] else gate[q]) + (0.0 if up is None else up) for q, up in enumerate(lifts)])


def gate_weight(m: dict[str, np.ndarray], q: int | slice = slice(None), mid: float = adaptive.MIDPOINT,
                slope: float = adaptive.SLOPE) -> np.ndarray:
    """The loss gate's gradient-side weight g = sigmoid(slope (surprise - mid)) of query q (default: every query):
    `adaptive.gate` of each query's surprise."""
    surprise = np.atleast_1d(m["query_loss"][q] - m["pool_loss"][0])
    g = np.array([adaptive.gate(x, slope, mid) for x in surprise])
    return g if isinstance(q, slice) else g[0]


def gate_scores(m: dict[str, np.ndarray], mid: float = adaptive.MIDPOINT, slope: float = adaptive.SLOPE
                ) -> np.ndarray:
    """(Q, N) the loss gate's scores: g = sigmoid(slope (surprise - mid)) per query, 1.4 g RH + g GH + (1 - g) HS."""
    g = gate_weight(m, mid=mid, slope=slope)[:, None]
    return 1.4 * g * m["RH"] + g * m["GH"] + (1 - g) * m["HS"]


def candidate_rules(m: dict[str, np.ndarray], sig: list[dict], holders: list[np.ndarray | None] | None = None,
                    more_spans: dict[int, list[np.ndarray | None]] | None = None,
                    shared: tuple[np.ndarray, list[np.ndarray | None]] | None = None,
                    findings: Findings | None = None) -> dict[str, np.ndarray]:
    """Every candidate rule's (Q, N) scores from one task's channel scores `m` and per-query span signals `sig`; with
    `holders` (`span_holders`), CHOSEN with each span lift of LIFTS too, with `more_spans` ({spans: holders}),
    CHOSEN trying that many distinct spans, at lift 1.5, with `shared` ((fired per query, holders where the
    span lifts), at BEHAVIOUR_SPANS), the shared span lifted too (SHARED), and with `findings` (`served_findings`), the
    prompt's spans first at each lift of PROMPT_LIFTS (TRIGGER at adaptive.PROMPT_SPAN_LIFT)."""
    grad = GRADIENT["RH"] * m["RH"] + GRADIENT["GH"] * m["GH"]
    zg, zh = standardise(grad), standardise(m["HS"])
    out = {"fixed": m["fixed"], "auto (today)": m["auto"], "gradient (RH+GH)": grad, "HS": m["HS"]}
    out.update({b: m[b] for b in BASELINES if b in m})
    za = standardise(m["auto"])
    for mid in (0.5, 1.0, 1.5, 2.0, 3.0):
        for slope in (2.0, 4.0):
            gated = gate_scores(m, mid, slope)
            out[f"gate mid {mid:g} slope {slope:g}"] = gated
            for t, other_max, margin in ((2.0, 3, 0), (3.0, 3, 0), (2.0, 10, 0), (2.0, 10, 3), (2.0, 10, 4),
                                         (2.0, 10, 5), (2.0, 5, 3), (2.0, 4, 0), (2.0, 2, 0)):
                for rival in (False, True):
                    rule = {"t": t, "min_top": 3, "other_max": other_max, "margin": margin, "rival": rival}
                    fire = np.array([fires(s, rule) for s in sig])[:, None]
                    name = (f"span t{t:g} other<={other_max}" + (f" margin {margin}" if margin else "")
                            + (" rival" if rival else ""))
                    out[f"{name} -> grad else gate mid {mid:g} slope {slope:g}"] = np.where(fire, zg,
                                                                                            standardise(gated))
    gate = standardise(out["gate mid 0.5 slope 4"])
    lifted = {f"{CHOSEN} lift {lift:g}": (holders, lift) for lift in LIFTS} if holders is not None else {}
    lifted.update({f"{CHOSEN} spans {n} lift 1.5": (held, 1.5) for n, held in (more_spans or {}).items()})
    for name, (held_rows, lift) in lifted.items():  # lift: z units over the pool (SPAN_LIFT times the spread)
        out[name] = np.stack([gate[q] if held is None else zg[q] + lift * held
                              for q, held in enumerate(held_rows)])
    if shared is not None:  # fired: the gradient view, lifted; a span both views share: the gate, lifted
        fired, held_rows = shared
        out[SHARED] = np.stack([(zg[q] if fired[q] else gate[q]) + (0.0 if held is None else 1.5 * held)
                                for q, held in enumerate(held_rows)])
    for lift in PROMPT_LIFTS if findings is not None else ():
        out[f"{SHARED} prompt first lift {lift:g}"] = lifted_rule(m, findings, lift)
    for a in (0.3, 0.5, 0.7):
        out[f"zfuse {a:g}"] = a * zg + (1 - a) * zh
    for t in (1.0, 2.0, 3.0, 5.0):
        for min_top in (3, 5):
            for other_max in (1, 3, 10):
                fire = np.array([fires(s, {"t": t, "min_top": min_top, "other_max": other_max})
                                 for s in sig])[:, None]
                key = f"span t{t:g} top{min_top} other<={other_max}"
                out[f"{key} -> grad else auto"] = np.where(fire, zg, za)
                out[f"{key} -> grad else zfuse .5"] = np.where(fire, zg, 0.5 * zg + 0.5 * zh)
                out[f"{key} -> grad else fixed"] = np.where(fire, zg, standardise(m["fixed"]))
    return out


def interleave(first: np.ndarray, second: np.ndarray, rest: np.ndarray, depth: int = K) -> np.ndarray:
    """Scores that put the top `depth` rows of `first` and of `second` first, alternating (first's best, second's best,
    ...; a row already placed is skipped), then every other row by `rest`."""
    order, seen = [], set()
    for a, b in zip(np.argsort(-first, kind="stable")[:depth], np.argsort(-second, kind="stable")[:depth], strict=True):
        for r in (int(a), int(b)):
            if r not in seen:
                seen.add(r)
                order.append(r)
    out = standardise(rest) - 1e6
    out[order] = np.arange(len(order), 0, -1, dtype=np.float64)
    return out


def feedback_variants(m: dict[str, np.ndarray], pool: dict[str, np.ndarray], shown: np.ndarray, fire: np.ndarray,
                      labels: np.ndarray, task: tasks.Task, marks: tuple[int, ...] = (1, 3, 5),
                      held: list[np.ndarray | None] | None = None, only: Sequence[str] | None = None
                      ) -> list[dict]:
    """The simulated analyst (`rise_core.feedback.simulate_analyst`) on each feedback variant, per query: the marks
    start from the view the test chose (else the fixed weights), beta 1, tau 1, and the grid of gamma (the irrelevant
    marks' weight) x words (the marked words' weight, `feedback.MarkedWords` over BM25 of the pool's texts), with no
    lift after marks; then, at gamma 0.75 and words 0.25, the lifts after marks: the test's span lift kept (`held`:
    per query, each pool row's lift in standard deviations, 0 where a row lacks the span, None where the shown ranking
    lifts none) unless the marks reject it, and the marked word's lift (`FeedbackConfig.word_lift`); then the later
    grids (the start, the turns, the strengths, each mark, the orthogonal "no"). `only`: those variants alone."""
    rows_fn = {c: unit_row_scores(torch.from_numpy(pool[c.lower()]), torch.from_numpy(pool[f"scale_{c.lower()}"]))
               for c in ("RH", "GH", "HS")}
    lambdas = {"fixed": {"RH": 1.4, "GH": 1.0, "HS": 1.0}, "grad": {"RH": 1.4, "GH": 1.0, "HS": 0.0}}
    bm25 = BM25Scorer()
    bm25.fit(task.pool)
    out = []
    for q in range(len(shown)):
        raw = {c: m[c][q] for c in ("RH", "GH", "HS")}
        words = MarkedWords.from_bm25(bm25, task.queries[q].full_text,
                                      lambda rows: [task.pool[i].full_text for i in rows])
        start = "grad" if fire[q] else "fixed"
        base = {c: lam * float(raw[c].std()) for c, lam in lambdas[start].items()}

        rows = held[q] if held is not None else None
        span = None if rows is None else SpanLift(
            span="(cached)", held=lambda r, rows=rows: rows[r] > 0,
            lift=lambda total, rows=rows: float(np.std(total)) * rows)

        def ranker(cfg: FeedbackConfig, first: np.ndarray = shown[q], raw=raw, base=base, words=words, kept=None):
            # base: the start's weights in z units (default: the test's view where it fired, else the fixed weights)
            return lambda marks: first if not marks else apply_feedback(raw, rows_fn, marks, base, cfg, words,
                                                                        kept).total

        variants = {f"gamma {g:g} words {w:g}": ranker(FeedbackConfig(beta=1.0, tau=1.0, gamma=g, words=w,
                                                                      word_lift=0.0, max_evidence=UNBOUNDED))
                    for g in (1.0, 0.75, 0.5) for w in (0.0, 0.25, 0.5)}
        for lift in WORD_LIFTS:  # the lifts after marks (the served default: span kept, word lift 1)
            variants[f"gamma 0.75 words 0.25 span kept word lift {lift:g}"] = ranker(
                FeedbackConfig(beta=1.0, tau=1.0, gamma=0.75, words=0.25, word_lift=lift, max_evidence=UNBOUNDED),
                kept=span)
        # where the marks start (the start's fixed weights, or the shown ranking's own floored at a share of them),
        # with the evidence bounded and the marked words' weight: the served feedback's choice
        gated = adaptive.choose(AUTO, float(m["query_loss"][q]), float(m["pool_loss"][0]))
        for cap, floor, w in START_GRID:
            variants[start_variant(cap, floor, w)] = ranker(
                FeedbackConfig(beta=1.0, tau=1.0, gamma=0.75, words=w, word_lift=1.0, max_evidence=cap), kept=span,
                base=_start_weights(fire[q], gated, raw, floor))
        # after misses, from the served start: the weights turn to the other view, or the views' top rows interleave
        own = _start_weights(fire[q], gated, raw)
        other = None if fire[q] else adaptive.feedback_turn(AUTO, gated)
        for how, after in TURN_GRID:
            variants[turn_variant(how, after)] = _turned_ranker(
                how, FeedbackConfig(beta=1.0, tau=1.0, gamma=0.75, words=0.0, word_lift=1.0, turn_after=after,
                                    turn_unless_shown=K if how == "turn unless shown" else 0),
                raw, rows_fn, shown[q], own, other, words, span)
        for beta, gamma, tau in STRENGTH_GRID:
            variants[strength_variant(beta, gamma, tau)] = _turned_ranker(
                "turn", FeedbackConfig(beta=beta, gamma=gamma, tau=tau), raw, rows_fn, shown[q], own, other, words,
                span)
        for beta in EACH_MARK:
            variants[each_mark_variant(beta)] = _turned_ranker(
                "turn", FeedbackConfig(beta=beta, each_mark=True), raw, rows_fn, shown[q], own, other, words, span)
        for name, hs_alone in ORTHOGONAL_NO.items():
            variants[name] = orthogonal_no_ranker(hs_alone, FeedbackConfig(), raw, rows_fn, shown[q], own, words, span)
        # as the product: the HS channel takes part (and can be flat) only where the test did not choose the gradient
        # view (attribution.feedback_ranker scores the channels the shown view, the start or the turn weigh)
        taking_part = raw if not fire[q] else {c: v for c, v in raw.items() if c != "HS"}
        variants[FLAT_NO] = _turned_ranker("turn", FeedbackConfig(flat_below=FLAT_BELOW), taking_part, rows_fn,
                                           shown[q], own, other, words, span)
        for n_rows, weight in PSEUDO_GRID:
            variants[pseudo_variant(n_rows, weight)] = _turned_ranker(
                "turn", FeedbackConfig(pseudo_rows=n_rows, pseudo_weight=weight), rows_fn=rows_fn, raw=raw,
                first=shown[q], own=own, other=other, words=words, span=span)
        # the two views' top rows interleaved until the marks decide (tried before the marked words; it did no better)
        first = shown[q] if fire[q] else interleave(GRADIENT["RH"] * m["RH"][q] + GRADIENT["GH"] * m["GH"][q],
                                                    m["HS"][q], shown[q])
        variants["interleaved unless span, gamma 1 words 0"] = lambda marks, first=first, raw=raw: (
            first if not marks else apply_feedback(raw, rows_fn, marks, {c: lam * float(raw[c].std()) for c, lam in
                                                                         lambdas["fixed"].items()},
                                                   FeedbackConfig(beta=1.0, tau=1.0, gamma=1.0, words=0.0,
                                                                  max_evidence=UNBOUNDED)).total)
        if only is not None:
            unknown = [n for n in only if n not in variants]
            if unknown:
                raise SystemExit(f"no feedback variant named {unknown}")
            variants = {n: variants[n] for n in dict.fromkeys(only)}
        for name, rank_with in variants.items():
            for n, scores in simulate_analyst(rank_with, labels, marks).items():
                out.append({"variant": name, "marks": n, "query": q, "auPRC": float(auprc(scores[None, :], labels)[0])})
    return out


def _z_weights(options: ScoreOptions, raw: dict[str, np.ndarray]) -> dict[str, float]:
    """`options`' channel weights in z units (lambda_c times the channel's spread over the pool), as feedback takes
    them."""
    return {c: getattr(options, f"lambda_{c.lower()}") * float(raw[c].std()) for c in ("RH", "GH", "HS")}


def _start_weights(fired: bool, gated: adaptive.ChannelChoice, raw: dict[str, np.ndarray],
                   floor: float = adaptive.FEEDBACK_START_FLOOR) -> dict[str, float]:
    """The served start (adaptive.feedback_start) in z units: the gradient view where the test fired, else the
    gate's mix floored at `floor` of the fixed weights."""
    return _z_weights(adaptive.gradient_view(AUTO) if fired else adaptive.feedback_start(AUTO, gated, floor), raw)


def _turned_ranker(how: str, cfg: FeedbackConfig, raw: dict[str, np.ndarray], rows_fn: dict, first: np.ndarray,
                   own: dict[str, float], other: ScoreOptions | None, words: MarkedWords, span: SpanLift | None
                   ) -> Callable[[dict], np.ndarray]:
    """A TURN_GRID variant's ranker (marks -> scores). `other`: the view the marks turn to (None: the test fired, no
    turn)."""
    turn = None if other is None else _z_weights(other, raw)
    if how in ("turn", "turn unless shown"):
        return lambda marks: first if not marks else apply_feedback(raw, rows_fn, marks, own, cfg, words, span,
                                                                    turn).total

    def ranked(marks: dict) -> np.ndarray:
        if not marks:
            return first
        total = apply_feedback(raw, rows_fn, marks, own, cfg, words, span).total
        if turn is None or not turned(marks, cfg):
            return total
        views = (apply_feedback(raw, rows_fn, marks, _z_weights(adaptive.gradient_view(AUTO), raw), cfg, words,
                                span).total,
                 apply_feedback(raw, rows_fn, marks, _z_weights(adaptive.representation_view(AUTO), raw), cfg, words,
                                span).total)
        return interleave(*(views if other.lambda_hs == 0 else views[::-1]), total)

    return ranked


def evaluate_feedback(out: Path, names: list[str], rule: str, layers: HsLayer | None = None,
                      only: Sequence[str] | None = None) -> pd.DataFrame:
    """Per query, the simulated analyst's auPRC@K after 1, 3 and 5 marks on each feedback variant (`only`: those),
    from `rule`'s ranking (a rule of the rules stage, SERVED, RIVAL_BY_COUNT, LOSS_ARBITER, PROMPT_ARBITER, ARBITRATED,
    DEEPER_READ, HOLDERS_ALIKE, SHARED_STOPS, FUNCTION_WORDS_SKIPPED, or one of FAMILY_VARIANTS)."""
    rows = []
    for name in names:
        data = np.load(out / f"{name}.npz")
        pool = dict(np.load(out / f"{name}.pool.npz"))
        m = {k: data[k] for k in data.files if k != "labels"}
        if layers is not None:
            pool["hs"] = layers.apply(name, m).astype(np.float32)
        sig = json.loads((out / f"{name}.signals.json").read_text())
        task = tasks.task(name)
        more = {n: span_holders(task, sig, m, n) for n in SPANS}
        fired = more[adaptive.BEHAVIOUR_SPANS]  # the served test's finding per query (None: it did not fire)
        fire = np.array([h is not None for h in fired])
        lifted = span_holders(task, sig, m, adaptive.BEHAVIOUR_SPANS, shared=True)
        findings = served_findings(task, sig, m, rival=False)
        rules = candidate_rules(m, sig, span_holders(task, sig), more, (fire, lifted), findings)
        served = served_findings(task, sig, m)
        rules[SERVED] = lifted_rule(m, served)
        if rule in FAMILY_VARIANTS:  # the served rule with the prompt's family at another share (or off)
            served = with_prompt_family(FAMILY_VARIANTS[rule],
                                        lambda task=task, sig=sig, m=m: served_findings(task, sig, m))
            rules[rule] = lifted_rule(m, served)
        if rule in (RIVAL_BY_COUNT, LOSS_ARBITER, PROMPT_ARBITER):  # the rival by count, and the arbiters tried on it
            served = served_findings(task, sig, m, by_loss=False)
            if rule != RIVAL_BY_COUNT:
                served = loss_arbitrated(served, samples_spans(task.pool), m["row_loss"], rule == PROMPT_ARBITER)
            rules[rule] = lifted_rule(m, served)
        if rule == HOLDERS_ALIKE or rule in FLAGGED:  # the served test in another order, or with a flag set
            served = (holders_alike_findings(task, sig, m, pool) if rule == HOLDERS_ALIKE
                      else flagged_findings(rule, task, sig, m))
            rules[rule] = lifted_rule(m, served)
        if rule in (ARBITRATED, DEEPER_READ):  # the served rule before the deeper read, and the deeper read tried on it
            served = served_findings(task, sig, m, deeper=False)
            if rule == DEEPER_READ:
                served = deeper_read(served, task, m)
            rules[rule] = lifted_rule(m, served)
        shown = rules[rule]
        # the span lift kept after marks, in standard deviations per row: where the shown ranking lifts
        if rule in (TRIGGER, SERVED, RIVAL_BY_COUNT, LOSS_ARBITER, PROMPT_ARBITER, ARBITRATED, DEEPER_READ,
                    HOLDERS_ALIKE, *FLAGGED, *FAMILY_VARIANTS):
            fire, held = trigger_lifts(findings if rule == TRIGGER else served)
        else:
            held = [None if h is None else adaptive.SPAN_LIFT * h for h in (lifted if rule == SHARED else fired)]
        part = tasks.splits(name, len(sig))
        split_of = {int(i): split for split, qs in part.items() for i in qs}
        if not np.array_equal(np.asarray(task.labels), data["labels"]):
            raise SystemExit(f"[{name}] the task's labels differ from the cached scores': rerun --stage scores")
        for r in feedback_variants(m, pool, shown, fire, data["labels"], task, held=held, only=only):
            rows.append({"task": name, "split": split_of[r["query"]], **r})
        print(f"[{name}] feedback done", flush=True)
    return pd.DataFrame(rows)


def evaluate_depths(out: Path, names: list[str], folder: Path, depths: list[float]) -> pd.DataFrame:
    """Per query, auPRC@K of the served rule (SERVED), the fixed weights and HS alone with the HS channel at each
    depth (`HsLayer`), and of the baselines (which do not depend on it)."""
    rows = []
    for name in names:
        data = np.load(out / f"{name}.npz")
        sig = json.loads((out / f"{name}.signals.json").read_text())
        task, part = tasks.task(name), tasks.splits(name, len(sig))
        base = {k: data[k] for k in data.files if k != "labels"}
        scored = {b: base[b] for b in BASELINES if b in base}
        for depth in depths:
            m = dict(base)
            HsLayer(folder, depth).apply(name, m)
            scored.update({f"{rule} @ {depth:g}": scores for rule, scores in (
                ("RISE default (served rule)", lifted_rule(m, served_findings(task, sig, m))),
                ("RISE fixed 1.4/1/1", m["fixed"]), ("RISE HS", m["HS"]))})
        for rule, scores in scored.items():
            values = auprc(scores, data["labels"])
            rows.extend({"task": name, "split": split, "query": int(i), "rule": rule, "auPRC": values[i]}
                        for split, qs in part.items() for i in qs)
        print(f"[{name}] depths done", flush=True)
    return pd.DataFrame(rows)


def evaluate_rules(out: Path, names: list[str], layers: HsLayer | None = None) -> pd.DataFrame:
    rows = []
    for name in names:
        data = np.load(out / f"{name}.npz")
        m = {k: data[k] for k in data.files if k != "labels"}
        if layers is not None:
            layers.apply(name, m)
        sig = json.loads((out / f"{name}.signals.json").read_text())
        part = tasks.splits(name, len(sig))
        mine = gate_scores(m)
        agree = (np.argsort(-mine, axis=1)[:, :K] == np.argsort(-m["auto"], axis=1)[:, :K]).mean()
        print(f"[{name}] today's rule rebuilt from the channel parts: top-{K} agreement {agree:.3f}", flush=True)
        task = tasks.task(name)
        more = {n: span_holders(task, sig, m, n) for n in SPANS}
        fire = np.array([h is not None for h in more[adaptive.BEHAVIOUR_SPANS]])
        lifted = span_holders(task, sig, m, adaptive.BEHAVIOUR_SPANS, shared=True)
        rules = candidate_rules(m, sig, span_holders(task, sig), more, (fire, lifted),
                                served_findings(task, sig, m, rival=False))
        for share in PROMPT_SHARES:  # the prompt span's pool share bound, each at the served lift, no rival lift
            rules[f"{TRIGGER} share {share:g}"] = with_prompt_share(
                share, lambda task=task, sig=sig, m=m: lifted_rule(m, served_findings(task, sig, m, rival=False)))
        rules[SERVED] = lifted_rule(m, served_findings(task, sig, m))
        by_count = served_findings(task, sig, m, by_loss=False)
        rules[RIVAL_BY_COUNT] = lifted_rule(m, by_count)
        spans = samples_spans(task.pool)  # the pool's span counts, for both arbiters
        rules[LOSS_ARBITER] = lifted_rule(m, loss_arbitrated(by_count, spans, m["row_loss"]))
        rules[PROMPT_ARBITER] = lifted_rule(m, loss_arbitrated(by_count, spans, m["row_loss"], True))
        arbitrated = served_findings(task, sig, m, deeper=False)
        rules[ARBITRATED] = lifted_rule(m, arbitrated)
        rules[DEEPER_READ] = lifted_rule(m, deeper_read(arbitrated, task, m))
        for flagged in FLAGGED:
            rules[flagged] = lifted_rule(m, flagged_findings(flagged, task, sig, m))
        for tested, served_as in ((PROMPT_ARBITER, ARBITRATED), (DEEPER_READ, SERVED), (SHARED_STOPS, SERVED)):
            if not np.array_equal(rules[tested], rules[served_as]):  # the product computes what was tested
                raise SystemExit(f"[{name}] {served_as}'s scores differ from {tested}'s")
        pool_features = dict(np.load(out / f"{name}.pool.npz"))
        rules[HOLDERS_ALIKE] = lifted_rule(m, holders_alike_findings(task, sig, m, pool_features))
        for share in PROMPT_FAMILY_SHARES:
            rules[family_variant(share)] = with_prompt_family(
                share, lambda task=task, sig=sig, m=m: lifted_rule(m, served_findings(task, sig, m)))
        for rule, scores in rules.items():
            values = auprc(scores, data["labels"])
            rows.extend({"task": name, "split": split, "query": int(i), "rule": rule, "auPRC": values[i]}
                        for split, qs in part.items() for i in qs)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    sys.exit(main())
