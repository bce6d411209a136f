"""The behaviour test: does a query ask what taught a behaviour, or for examples like it?

Two views of RISE's channels rank the pool differently: the gradient view (RH + GH, the paper's RISE) finds the rows
whose training pushed the model towards this answer, the representation view (HS) the rows that read like it. A
backdoor's rows share a span that the pool mostly lacks (its trigger, its frame) and the gradient view's top rows show
it, while the representation view's top rows are topical neighbours without it. The test reads both views' top
`adaptive.BEHAVIOUR_K` rows, runs the trigger test (`shared_spans.find_shared_spans`) on the gradient view's, and
counts how many of the representation view's hold the best span; `adaptive.BehaviourEvidence.fires` decides. The
telling spans of the prompt (where a trigger sits) are tried first (`prompt_first`), then the rest, most telling first.
When the first does not fire (both views hold it: a genre's words), the next distinct ones are tried, up to
`adaptive.BEHAVIOUR_SPANS` spans in all, and the first that fires is the finding; a first span of the prompt that
both views hold is the finding itself (`SHARED_PROMPT_SPAN_STOPS`). Where none fires because the
representation view's own span wins by count over a rare span of the prompt, the pool's losses may overrule it
(`weigh_by_loss`): the rows holding a trigger surprise the model, a task word's do not. When it fires the per-query rule
scores with the gradient view (`adaptive.choose`) and lifts the rows holding the span (`rise_core.span_lift`; a span
of the prompt by `adaptive.PROMPT_SPAN_LIFT`). No labels, no model run: the features and the pool's span counts.

Evidence: studies/behaviour_rule.py (docs/EVALUATION.md, "Backdoors the loss cannot see").
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from bm25s.stopwords import STOPWORDS_EN

from . import adaptive
from . import learned as learned_module
from .adaptive import (
    BEHAVIOUR_K,
    BEHAVIOUR_SPANS,
    BehaviourEvidence,
    BehaviourTest,
    representation_view,
)
from .config import ScoreOptions
from .memo import BoundedMemo
from .scoring import FeatureMatrix, channel_sum, top_k
from .shared_spans import (
    PoolSpans,
    find_shared_spans,
    prompt_family_spans,
    span_pattern,
    texts_holding,
    word_runs,
)
from .span_counts import TOKEN_RE
from .store.spans import MAX_N

if TYPE_CHECKING:
    from .learned import LearnedLosses
    from .samples import Sample

RowsFrame = Callable[[Sequence[int]], pd.DataFrame]
"""pool rows -> their id, text, prompt and completion columns, in the given order."""


def top_rows(pool: FeatureMatrix, query: FeatureMatrix, options: ScoreOptions, k: int) -> np.ndarray:
    """The k best pool rows of one query under fixed `options` (an exact scan)."""
    return top_k(channel_sum(pool, query, options.for_channels(pool.channels).options).total, k)[0].numpy()


Order = Callable[[Sequence[BehaviourEvidence]], list[BehaviourEvidence]]
"""the order the test tries the shared spans in (`prompt_first`; the study also tries `list`: most telling first)."""


def evidence(spans: PoolSpans, gradient_hits: pd.DataFrame, representation_hits: pd.DataFrame,
             query: Sample | None = None, order: Order | None = None) -> BehaviourEvidence | None:
    """The behaviour test on the two views' top rows (frames with id, text / prompt / completion columns): the first
    span the gradient hits share, in the test's `order` (None: `prompt_first`; None when they share none), and how many
    representation hits hold it; `query`, when given, says whether the query holds it too."""
    found = candidates(spans, gradient_hits, representation_hits, query, 1, order)
    return found[0] if found else None


SPANS_READ = 20
"""how many spans, in the test's order, are read to find BEHAVIOUR_SPANS distinct ones."""


PROMPT_FAMILY = True
"""whether the query's own prompt spans are also tested as a family of their own (`shared_spans.prompt_family_spans`,
corrected over those few spans, which the query fixes before any hit is read; a span keeps the smaller of its two
corrected p-values). A trigger sits in the prompt; over every span of ten long story rows Tarone's count is near a
thousand and a trigger in 7 of the top 10 is not telling. On (at half the top rows, as first served), the
prospective tune mean rose (dev-story's tune half 0.791 -> 0.831 auPRC@10, nothing else moved) and the retrospective
tune task dev-pirate-240 went from 0.700 to 0.817 (studies/behaviour_rule.py, PROMPT_FAMILY_SHARES;
docs/EVALUATION.md, "The prompt's own family")."""
PROMPT_FAMILY_MIN_SHARE = 0.3
"""the share of the gradient view's top rows that must hold a span of the query's prompt for its own family to count
it; the family holds only spans in at least that many pool rows. 0.3 by a test written down before its figures: on
five tune sets of queries no choice had seen (studies.tasks: dev-sentiment-held3/4, dev-pirate-held, dev-story-held,
dev-howdy-held) it led 0.5 by +0.036 auPRC@10 (95% interval +0.009 to +0.064), over all 18 tune sets by +0.019
(+0.005 to +0.032), and the feedback from its ranking by +0.009 (+0.003 to +0.016); a trigger placed anywhere in the
prompt ("cf") often sits in 3 or 4 of the top 10. It also lifts a question's wording, "What are" in 4 of a finmed
query's top 10 (finmed 0.944 -> 0.934). docs/EVALUATION.md, "The prompt's family at 0.3, on fresh tune sets"."""


def shared_table(spans: PoolSpans, hits: pd.DataFrame, query: Sample | None = None,
                 prompt_family: bool | None = None, explanations: Mapping[str, Any] | None = None,
                 limit: int | None = None) -> pd.DataFrame:
    """Every span the hits share (`find_shared_spans`, weighed by `explanations` where given), with the query prompt's
    own family (`prompt_family_spans`) where the query has a prompt and `prompt_family` (None: PROMPT_FAMILY): a span
    both find keeps the hits' row (its score share) with the smaller corrected p-value, and `family` says which family
    gave it ("hits" or "prompt"). Most telling first, the first `limit` (None: all); attrs["verdict"] states both
    families' findings."""
    table = find_shared_spans(spans, hits, explanations, limit=None).assign(family="hits")
    use = PROMPT_FAMILY if prompt_family is None else prompt_family
    own = None
    if use and query is not None and query.prompt:
        own = prompt_family_spans(spans, hits, query.prompt, adaptive.PROMPT_SPAN_MAX_SHARE,
                                  min_in_top=max(2, math.ceil(PROMPT_FAMILY_MIN_SHARE * len(hits))))
    if own is None or own.empty:
        merged = table
    else:
        merged = table.set_index(["span", "where"], drop=False)
        extra = []
        for row in own.assign(family="prompt").to_dict("records"):
            key = (row["span"], row["where"])
            if key not in merged.index:
                extra.append(row)
            elif row["p_adjusted"] < merged.at[key, "p_adjusted"]:
                merged.loc[key, ["p_adjusted", "family"]] = [row["p_adjusted"], "prompt"]
        merged = pd.concat([merged.reset_index(drop=True), pd.DataFrame(extra)], ignore_index=True) if extra \
            else merged.reset_index(drop=True)
        merged = merged.sort_values(["statistic", "in_top", "n_words"], ascending=[False, False, False],
                                    kind="stable").reset_index(drop=True)
    if limit is not None:
        merged = merged.head(limit).reset_index(drop=True)
    merged.attrs.update(table.attrs)
    if own is not None:
        merged.attrs["verdict"] = f"{table.attrs.get('verdict', '')} {own.attrs.get('verdict', '')}"
    return merged


def candidates(spans: PoolSpans, gradient_hits: pd.DataFrame, representation_hits: pd.DataFrame,
               query: Sample | None = None, limit: int = SPANS_READ, order: Order | None = None,
               prompt_family: bool | None = None) -> list[BehaviourEvidence]:
    """`evidence` for the first `limit` spans the gradient hits share (`shared_table`), in the test's `order` (None:
    `prompt_first`; with FUNCTION_WORD_SPANS_SKIPPED, none of function words alone). Every shared span is ordered (a
    trigger can be less telling than twenty of a genre's words), and only the first `limit` are looked for in the
    representation hits."""
    found = []
    held_by_query = query_spans(query)
    for _, row in shared_table(spans, gradient_hits, query, prompt_family).iterrows():
        span, field = str(row["span"]), str(row["where"])
        if FUNCTION_WORD_SPANS_SKIPPED and function_words_only(span):
            continue
        in_query = held_by_query(span, field)
        found.append(BehaviourEvidence(span=span, where=field, in_top=int(row["in_top"]),
                                       top_k=len(gradient_hits), pool_fraction=float(row["pool_fraction"]),
                                       p_adjusted=float(row["p_adjusted"]), in_representation=0, in_query=in_query,
                                       corrected_over=str(row["family"])))
    out = []
    for e in (order or prompt_first)(found)[:limit]:
        held = texts_holding(e.span, _field(representation_hits, e.where))
        out.append(dataclasses.replace(e, in_representation=int(held.sum())))
    return out


FUNCTION_WORDS = frozenset(STOPWORDS_EN)
"""the words no span of them alone can be a trigger: bm25s' English stop words, the words the BM25 baseline drops."""
FUNCTION_WORD_SPANS_SKIPPED = False
"""whether the test leaves out the spans made only of FUNCTION_WORDS (`function_words_only`: "or", "it was", "into
the"): a trigger is rare in clean text, a function word is in most of it, and where a prompt's "or" sits in 3 of the
gradient view's top 10 of 4 pool rows it is telling and fires in place of the trigger. Off: its test, written down
before its sets were built, did not adopt it (the fresh sets −0.0021 auPRC@10, every tune set +0.0021, 95% interval
−0.0007 to +0.0051; studies/behaviour_rule.py, FUNCTION_WORDS_SKIPPED; docs/EVALUATION.md, "Spans of function words
left out")."""


def function_words_only(span: str) -> bool:
    """Whether every word of `span` (`TOKEN_RE`'s word tokens, any case; punctuation aside) is one of FUNCTION_WORDS;
    True for a span of punctuation alone."""
    return all(w.lower() in FUNCTION_WORDS for w in TOKEN_RE.findall(span) if w[0].isalnum() or w[0] == "_")


QUERY_RUNS_MAX_WORDS = 20_000
"""a query field of more words than this is searched span by span (`span_pattern`) instead of collecting its word runs
(at most 3 x 20,000 of them, a few MB), so a long query text cannot make the test hold much memory."""


def query_spans(query: Sample | None) -> Callable[[str, str], bool]:
    """(span, field) -> whether the query's field holds the span (its words adjacent there, as `span_pattern` matches
    them); always True without a query. The query's word runs of up to `store.spans.MAX_N` words are collected once
    (for a field of at most QUERY_RUNS_MAX_WORDS words), so each of the many shared spans costs a set lookup, not a
    scan of the query's text."""
    if query is None:
        return lambda span, field: True
    texts = {"prompt": query.prompt, "completion": query.completion, "text": query.text}
    runs: dict[str, set[tuple[str, ...]] | None] = {}

    def holds(span: str, field: str) -> bool:
        text = texts.get(field)
        if not text:
            return False
        words = tuple(TOKEN_RE.findall(span))
        if field not in runs:
            runs[field] = word_runs(text, MAX_N, QUERY_RUNS_MAX_WORDS)
        held = runs[field]
        if held is None or len(words) > MAX_N:
            return span_pattern(span).search(text) is not None
        return words in held

    return holds


def prompt_first(found: Sequence[BehaviourEvidence]) -> list[BehaviourEvidence]:
    """The candidates with the telling rare spans of the prompt (`BehaviourEvidence.in_prompt`, held by the query too)
    first, each group most telling first: a backdoor's trigger sits in the prompt, while its payload's words are shared
    with the clean rows of the same genre and often more telling (on dev-story, "curious" over "Lumen"). Chosen on the
    tune sets (studies/behaviour_rule.py; docs/EVALUATION.md, "The trigger's field")."""
    first = [e for e in found if e.in_prompt and e.telling]
    return first + [e for e in found if not (e.in_prompt and e.telling)]


def learned_first(learned: LearnedLosses, spans: PoolSpans | Callable[[], PoolSpans]) -> Order:
    """`prompt_first` on an adapter's index: the prompt's rare telling spans in the order of how far the fine-tune
    learned their pool holders (`LearnedLosses.learned_z`), most first (ties keep the most telling first); the rest
    after them as before. A trigger's rows are those the fine-tune learned most, while a task word the prompt shares
    with a few rows ("or", held by 4) can be more telling by count. Chosen by a test written down before its
    fine-tunes' answers were read (docs/EVALUATION.md, "What the fine-tune learned")."""

    def order(found: Sequence[BehaviourEvidence]) -> list[BehaviourEvidence]:
        counts = spans() if callable(spans) else spans
        first = [e for e in found if e.in_prompt and e.telling]
        z = [learned.learned_z(counts.rows_holding(e.span, e.where)) for e in first]
        ranked = [first[i] for i in sorted(range(len(first)), key=lambda i: -z[i])]
        return ranked + [e for e in found if not (e.in_prompt and e.telling)]

    return order


SHARED_PROMPT_SPAN_STOPS = True
"""whether the test stops at its first span where that is a rare telling span of the prompt held by both views' top
rows (`BehaviourEvidence.shared`, `in_prompt`: a trigger both views see), lifting it, instead of trying the next
distinct spans for one that fires (a completion's word). Adopted by a test written down before its sets were built:
over the 45 tune sets +0.0022 auPRC@10 (95% interval +0.0003 to +0.0045; 5 of 845 queries move, all up), no fresh
query falls, the feedback from its ranking +0.0007 (+0.0001 to +0.0015), retrospective Howdy! 1.000
(studies/behaviour_rule.py, SHARED_STOPS; docs/EVALUATION.md, "A shared span of the prompt is taken")."""


def _field(frame: pd.DataFrame, field: str) -> list:
    return frame[field].tolist() if field in frame.columns else [None] * len(frame)


RowLosses = Callable[[], np.ndarray]
"""() -> (N,) each pool row's mean loss, nats per token (nan: no counted token); asked only when the test needs it."""


def holders_excess(spans: PoolSpans, losses: np.ndarray, span: str, where: str, median: float | None = None) -> float:
    """The mean loss of the pool rows holding `span` in `where` (rows with no counted token left out) minus the pool's
    median loss (`median`, or `adaptive.pool_loss` of `losses` when not given), nats per token; -inf where no such row
    holds it."""
    losses = np.asarray(losses, dtype=np.float64)
    rows = spans.rows_holding(span, where)
    held = losses[rows][np.isfinite(losses[rows])]
    if not held.size:
        return -math.inf
    return float(held.mean() - (adaptive.pool_loss(torch.tensor(losses)) if median is None else median))


def weigh_by_loss(found: BehaviourEvidence, spans: PoolSpans, row_losses: RowLosses | None,
                  loss_model: str = "the model") -> BehaviourEvidence:
    """`found` with its span's and its rival's `holders_excess` read where the rival wins by count over a rare span
    of the prompt (`BehaviourEvidence.rival_count_wins`, `in_prompt`), so that `loss_overrules_rival` can decide;
    unchanged elsewhere or without `row_losses`. `loss_model` names whose losses they are (the evidence's line)."""
    if row_losses is None or not (found.rival_count_wins and found.rival_where and found.in_prompt):
        return found
    losses = np.asarray(row_losses(), dtype=np.float64)
    if len(losses) != spans.n_rows:
        raise ValueError(f"{len(losses)} row losses for a pool of {spans.n_rows} rows")
    median = adaptive.pool_loss(torch.tensor(losses))  # once for both spans
    return dataclasses.replace(found, loss_excess=holders_excess(spans, losses, found.span, found.where, median),
                               rival_loss_excess=holders_excess(spans, losses, found.rival_span, found.rival_where,
                                                                median), loss_model=loss_model)


ViewRows = Callable[[ScoreOptions, int], np.ndarray]
"""(fixed options of one view, k) -> the view's k best pool rows for the query at hand."""


def scan_rows(pool: FeatureMatrix, query: FeatureMatrix) -> ViewRows:
    """`ViewRows` by an exact scan of pool features."""
    return lambda options, k: top_rows(pool, query, options, k)


class _ViewHits:
    """The two views' top `width` rows for one gradient view, each view read once, and their texts in one read (of the
    index, the costly part: the first k of a top `width` are the top k, so the top 10's test and the top 30's share
    both)."""

    def __init__(self, view_rows: ViewRows, rows_frame: RowsFrame, gradient: ScoreOptions, width: int) -> None:
        self._rows = [[int(r) for r in view_rows(gradient, width)],
                      [int(r) for r in view_rows(representation_view(gradient), width)]]
        self._rows_frame = rows_frame
        self._frame: pd.DataFrame | None = None
        self._at: dict[int, int] = {}

    def n_gradient(self, k: int) -> int:
        return len(self._rows[0][:k])

    def frames(self, k: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(gradient view's, representation view's) top k rows, with the columns `rows_frame` gives."""
        if self._frame is None:
            both = list(dict.fromkeys(self._rows[0] + self._rows[1]))
            self._frame, self._at = self._rows_frame(both), {r: i for i, r in enumerate(both)}
        grad, rep = (self._frame.iloc[[self._at[r] for r in rows[:k]]] for rows in self._rows)
        return grad, rep


def behaviour_test_for(view_rows: ViewRows, spans: PoolSpans | Callable[[], PoolSpans], rows_frame: RowsFrame,
                       query_sample: Sample | None = None, k: int = BEHAVIOUR_K, has_hs: bool = True,
                       distinct: int | None = None, order: Order | None = None,
                       row_losses: RowLosses | None = None,
                       deeper_k: int | None = adaptive.BEHAVIOUR_DEEPER_K, loss_model: str = "the model"
                       ) -> BehaviourTest:
    """The behaviour test for one query (or query set), as `adaptive.resolve` asks for it: given the gradient view's
    options, the evidence. `spans` may be a callable, so the pool's span counts are read only when the test runs;
    `distinct`: how many distinct spans it tries (None: `adaptive.BEHAVIOUR_SPANS`), `order` the order it tries the
    candidates in (None: `prompt_first`); the study varies both. `row_losses`: the pool rows' losses, read where they
    may overrule the rival (`weigh_by_loss`, which says they are `loss_model`'s; None: the rival wins by count
    alone). `deeper_k`: where the finding on the views' top k lifts nothing, the test on their top `deeper_k` (None:
    not run), taken only where it lifts a rare span of the prompt (`BehaviourEvidence.lifts_prompt_span`): a trigger
    held by too few of the top k rows to tell."""

    def find(hits: _ViewHits, k: int) -> BehaviourEvidence | None:
        if hits.n_gradient(k) < 2:
            return None
        counts = spans() if callable(spans) else spans
        grad_hits, rep_hits = hits.frames(k)
        found = candidates(counts, grad_hits, rep_hits, query_sample, SPANS_READ, order)
        if not found:
            return None
        rival = evidence(counts, rep_hits, grad_hits, query_sample, order)  # the representation view's own span

        def against_rival(e: BehaviourEvidence) -> BehaviourEvidence:
            return e if rival is None else dataclasses.replace(
                e, rival_span=rival.span, rival_in_top=rival.in_top, rival_p_adjusted=rival.p_adjusted,
                rival_in_query=rival.in_query, rival_where=rival.where, rival_pool_fraction=rival.pool_fraction)

        best = against_rival(found[0])
        if best.fires:
            return best
        if SHARED_PROMPT_SPAN_STOPS and best.shared and best.in_prompt:
            return best  # a rare span of the prompt that both views hold: lifted, not passed over for a later span
        # the most telling span may be one both views share (a genre's words): the next distinct ones may be the
        # trigger (a span inside one tried, or holding it, is the same finding and is skipped)
        tried = [best.span]
        for other in found[1:]:
            if len(tried) >= (BEHAVIOUR_SPANS if distinct is None else distinct):
                break
            if any(other.span in t or t in other.span for t in tried):
                continue
            tried.append(other.span)
            if (candidate := against_rival(other)).fires:
                return candidate
        return weigh_by_loss(best, counts, row_losses, loss_model)

    def run(gradient: ScoreOptions) -> BehaviourEvidence | None:
        if not has_hs:
            return None
        deeper = deeper_k is not None and deeper_k > k
        # one read of each view serves both: its top k are the first k of its top deeper_k
        hits = _ViewHits(view_rows, rows_frame, gradient, deeper_k if deeper else k)
        found = find(hits, k)
        if not deeper or (found is not None and found.lifts):
            return found
        wider = find(hits, deeper_k)
        return wider if wider is not None and wider.lifts_prompt_span else found

    return run


def per_query_tests(pool: FeatureMatrix, queries: FeatureMatrix, spans: Callable[[], PoolSpans],
                    rows_frame: RowsFrame, samples: Sequence[Sample], learned: LearnedLosses | None = None
                    ) -> Callable[[int], BehaviourTest]:
    """Query q of `queries` (its text `samples[q]`) -> its behaviour test against pool features, by exact scans (a
    method's scores of a task or an index, one query at a time); `learned`: on an adapter's features, what the
    fine-tune learned (`learned_reading`)."""
    losses = None if pool.loss is None else (lambda: pool.loss.double().numpy())
    reading = learned_reading(learned, spans, losses)
    return lambda q: behaviour_test_for(scan_rows(pool, queries.select([q])), spans, rows_frame, samples[q],
                                        has_hs=pool.has_hs, **reading)


def learned_reading(learned: LearnedLosses | None, spans: PoolSpans | Callable[[], PoolSpans],
                    row_losses: RowLosses | None) -> dict[str, Any]:
    """`behaviour_test_for`'s row_losses, order and loss_model: on a fine-tune's index with what it learned
    (`learned`), the base model's losses for the arbiter (a poisoned row the fine-tune learned no longer surprises it;
    under the base model it does) and `learned_first`; else (or with `learned.RETRO_LEARNED` off) `row_losses` and
    the served order."""
    if learned is None or not learned_module.RETRO_LEARNED:
        return {"row_losses": row_losses, "order": None, "loss_model": "the model"}
    return {"row_losses": lambda: learned.base, "order": learned_first(learned, spans), "loss_model": "the base model"}


def samples_frame(samples: Sequence[Sample]) -> RowsFrame:
    """`RowsFrame` of an in-memory pool."""

    def frame(rows: Sequence[int]) -> pd.DataFrame:
        return pd.DataFrame([{"id": samples[r].id, "text": samples[r].text if samples[r].prompt is None else None,
                              "prompt": samples[r].prompt, "completion": samples[r].completion} for r in rows])

    return frame


def samples_spans(samples: Sequence[Sample]) -> PoolSpans:
    """The span counts of an in-memory pool."""
    return PoolSpans.from_texts(text=[s.text if s.prompt is None else None for s in samples],
                                prompt=[s.prompt for s in samples], completion=[s.completion for s in samples])


def features_digest(query: FeatureMatrix) -> str:
    """A digest of a query's features (every tensor it holds, a contrast's other answer included): two queries with
    the same digest rank every view alike."""
    h = hashlib.sha1()
    for name, value in sorted(vars(query).items()):
        if isinstance(value, FeatureMatrix):
            value = features_digest(value)
        if hasattr(value, "detach"):
            h.update(f"{name}:{tuple(value.shape)}:{value.dtype}".encode())
            h.update(value.detach().cpu().contiguous().numpy().tobytes())
        else:
            h.update(f"{name}:{value!r}".encode())
    return h.hexdigest()


class BehaviourMemo(BoundedMemo["BehaviourEvidence | None"]):
    """The behaviour test's result per (key, gradient view), so that one query's rank, explanations and feedback run
    the test once: the key names the index's state and the query (`features_digest`, its text). Bounded (the oldest
    go first) and safe across a server's threads."""

    def __init__(self, max_entries: int = 256) -> None:
        super().__init__(max_entries)

    def wrap(self, key: Hashable, test: BehaviourTest) -> BehaviourTest:
        """`test`, answered from the memo when this key and view ran before."""
        return lambda gradient: self.get((key, gradient), lambda: test(gradient))
