"""Relevance feedback: an analyst marks a few hits "yes, this is it" or "not this", and the ranking finds the rest.

Each channel's scores of the pool are standardised over the pool (z units: mean 0, standard deviation 1 per query),
so channels and marked rows are on one scale. Two updates, both linear in stored features (no model run):

- Rocchio, per channel: z'_c = z_c(query) + beta * mean over relevant rows r of z_c(r) - gamma * beta * mean over
  irrelevant rows i of z_c(i), where z_c(r) is the pool's standardised similarity to the marked row r in channel c.
  For unit vectors this is the classic query update q + beta * mean(relevant) - gamma * beta * mean(irrelevant).
- Channel re-weighting: the evidence e_c of a channel is how far it already placed the relevant marks above the
  irrelevant ones, in its own z units (mean z_c over relevant minus mean over irrelevant; an empty side counts 0, the
  pool's mean). The channel's weight becomes w_c * exp(tau * e_c), e_c bounded by `max_evidence`: the channel that
  agrees with the analyst leads, but a few marks cannot hand it everything.
- The marked words (`MarkedWords`, once a row is marked yes): the query's words that the yes-marks hold, each weighted
  by the share of yes-marks holding it minus the share of no-marks holding it (kept when positive), scored over the
  pool by BM25 and added in z units at `words` times the channels' spread. A trigger word ("Lumen") held by the query
  and every yes-mark but by no clean row marked no leads it; a story's genre words, held by the no-marks too, fall
  out. The channels cannot say this: a poisoned row and a clean row with the same story look alike to all three.
- Two lifts, like the behaviour test's span lift (`rise_core.span_lift`), in spreads of the total (its standard
  deviation over the pool): the test's span lift stays after marks (`SpanLift`) unless the marks reject it (more rows
  holding the span marked no than yes); and the marked word (`lifted_word`): the rarest of the query's words that
  every yes-mark holds and no no-mark does, held by more rows than the yes-marks and by at most `MAX_WORD_SHARE` of
  the pool, lifts the rows holding it by `word_lift`. A word a yes-mark shares with the query by chance ("first" in
  two tweets) can be refused by the analyst (`MarkedWords.without`): it is neither weighted nor lifted again.
- The turn after misses (off by default: `FeedbackConfig.turn_after`): while every mark says "not this" and there
  are `turn_after` of them, the weights are the other view's (`adaptive.feedback_turn`).

Weights are in z units (lambda_c times the channel's standard deviation over the pool). No marks gives exactly the
shown ranking. With marks, the weights start from `adaptive.feedback_start`: the shown ranking's own (the gradient
view where the behaviour test chose it, else the loss gate's mix), every channel kept within the marks' reach
(studies/behaviour_rule.py; docs/EVALUATION.md, "Feedback: where the marks start"). `FeedbackConfig`'s defaults
are chosen by the simulated analyst on the tune sets only (`studies/feedback_choice.py`, `studies/behaviour_rule.py`;
docs/EVALUATION.md, "Relevance feedback" and "Feedback: the marked words").

The same Rocchio update runs on any method whose scores of the pool against a pool row can be computed
(`rocchio`): hidden-state cosine (row vectors) and BM25 (a row's text as the query), so `rise evaluate --feedback`
compares like with like.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch

from .errors import InputDataError

WIDEN_ROWS = 8192
"""rows of a half-precision channel widened to float32 at once for the marked rows' similarities (`unit_row_scores`)."""

MAX_REFUSED_WORDS = 64
"""words one query's feedback may refuse (`MarkedWords.without`): a query holds a few dozen BM25 words."""

MAX_PSEUDO_ROWS = 50
"""the most pseudo rows one ranking takes (`FeedbackConfig.pseudo_rows`): each is a pass over the pool's products,
held in memory, as a mark is."""

MAX_WORD_SHARE = 0.1
"""the marked word lifts only a word held by at most this share of the pool (a trigger is rare; a genre's or a
topic's words are not). In an exploration at word lift 1.5, shares 0.05, 0.1 and 0.2 gave the same tune figures
(docs/EVALUATION.md, "Feedback: the lifts after marks")."""

Marks = Mapping[int, bool]
"""pool row -> True (relevant: "yes, this is it") or False (irrelevant: "not this")."""

RowScores = Callable[[list[int]], np.ndarray]
"""rows -> (len(rows), N): the pool's scores against each of those pool rows taken as the query."""


@dataclass(frozen=True)
class FeedbackConfig:
    """How marks move the ranking (chosen on the tune sets by the simulated analyst: see the module docstring)."""

    beta: float = 1.0
    """weight of the marked rows' mean similarity (relevant added, irrelevant subtracted), relative to the query's
    (chosen with tau among 1, 2 x 1, 3: the best mean at 3 marks over the tune sets with fluent backdoors,
    `studies/behaviour_rule.py`, where beta 2, chosen before by `studies/feedback_choice.py`, came second; figures in
    docs/EVALUATION.md, "Backdoors the loss cannot see"). Run again with the prompt family's first rankings, seven
    (beta, gamma, tau) of the grid lead it by 0.002 to 0.003 over 1, 3 and 5 marks, none separated from it by a paired
    bootstrap over the tune queries: kept (docs/EVALUATION.md, "Feedback: each mark as heavy as the query")."""
    tau: float = 1.0
    """channel re-weighting strength: weight_c *= exp(tau * evidence_c), the evidence bounded by `max_evidence`; 0
    keeps the weights (chosen with beta: on the half-learned retrospective tune task dev-pirate-240, 3 marks reach more
    with it than with tau 0)."""
    max_evidence: float = 1.0
    """the most a channel's evidence counts either way, in its z units, so one round of marks moves a weight by at
    most exp(tau * max_evidence). The rows an analyst marks were picked by the shown ranking, so the channel it weighs
    most places them high whatever the marks say; unbounded, one "yes" could multiply that channel's weight by exp(5).
    Chosen among 0.5, 1, 2 and unbounded with the start (`adaptive.feedback_start`) and `words` 0, by the tune mean
    over 1, 3 and 5 marks: 0.983 (0.5 and 2 the same to 0.001, unbounded 0.982; after 1 mark 0.970 against 0.962; at
    3 marks alone unbounded leads by 0.002, so the tune sets barely separate them) (`studies/behaviour_rule.py`;
    docs/EVALUATION.md, "Feedback: where the marks start")."""
    gamma: float = 0.75
    """weight of the irrelevant marks relative to the relevant ones (Rocchio's gamma / beta). Chosen with `words`
    among gamma 1, 0.75, 0.5 x words 0, 0.25, 0.5: the best tune mean at 3 and at 5 marks (0.964 and 0.976, against
    0.943 and 0.966 for gamma 1, words 0; at 1 mark gamma 0.5 leads by 0.005) (`studies/behaviour_rule.py`;
    docs/EVALUATION.md, "Feedback: the marked words"): one "no" on a clean story no longer sinks the poisoned stories
    with it."""
    words: float = 0.0
    """weight of the marked words' BM25 scores (z units, times the channels' spread); 0: channels only. Applies
    where the caller gives `MarkedWords` (RISE's feedback on an index or a task). 0 since the marked word's lift
    (`word_lift`) and the bounded evidence: with them, 0.25 (chosen before either) lowers the tune mean at 3 marks
    from 0.986 to 0.976 (the tweet-quality sets, whose junk and control tweets share their words; `studies/
    behaviour_rule.py`; docs/EVALUATION.md, "Feedback: where the marks start")."""
    word_lift: float = 1.0
    """the lift of the rows holding the marked word (`lifted_word`), in spreads of the total; 0: none. Chosen with
    the span lift kept after marks, among 0, 1 and 1.5: the best tune mean at 1, 3 and 5 marks (0.919, 0.965, 0.978
    against 0.905, 0.963, 0.975 with neither) (`studies/behaviour_rule.py`; docs/EVALUATION.md, "Feedback: the
    lifts after marks")."""

    turn_after: int = 0
    """after this many marks, every one "not this", the weights turn to the other view (`adaptive.feedback_turn`:
    the gradient view where the shown ranking leaned on HS, else HS) until a mark says yes; 0: never. Never since
    2026-11-28: with a tune set of held-out tweets (`studies.tasks` dev-brainrot-held: twenty of dev-brainrot's pool
    positives as queries), turning after 3 misses costs the tune mean over 1, 3 and 5 marks 0.0058, a paired bootstrap's
    95% interval 0.0009 to 0.0115 (four of its twenty queries began with three misses, and the other view was worse:
    0.59 -> 0.00, 0.45 -> 0.09 after 3 marks), and no variant leads never by a separated margin (`studies/
    behaviour_rule.py`, `separation`; docs/EVALUATION.md, "Feedback: a tune set of held-out tweets"). Before that set,
    3 had been kept because it changed no tune query (1 and 2 turn away from views about to find one). With a second
    such set (dev-sentiment-held) the turn after 3 is -0.0040 (-0.0106 to +0.0021): no longer separated below never,
    nor above it, so never stays (docs/EVALUATION.md, "Feedback: a tune set of held-out sentiment backdoors"). With
    a second fold of each held set it is separated below never again: -0.0063 (-0.0130 to -0.0000; docs/EVALUATION.md,
    "Feedback: a second fold of each held set"). The other view stays one choice away: the Attribute page's
    "Looking for" (and the page says so after three misses)."""

    turn_unless_shown: int = 0
    """with `turn_after`: the marks turn only when none of the missed rows is among the other view's own top
    `turn_unless_shown` rows (before marks): a view that would show the same misses has nothing else to offer; 0: no
    such check. Tried as `studies.behaviour_rule` TURN_GRID's "turn unless shown" and not served: over 1, 3 and 5 marks
    on the tune queries, after 3 misses -0.0006 (95% interval -0.0017 to 0), after 1 +0.0010 (-0.0005 to +0.0027),
    neither separated from never turning; on dev-sentiment-held it kept a query from a turn that helped it
    (docs/EVALUATION.md, "Feedback: a tune set of held-out sentiment backdoors"). Put to a second fold of each held
    set, with the rule to adopt it written down first, after 1 miss it loses there: -0.0199 (-0.0453 to -0.0004) on
    the new folds, -0.0022 (-0.0063 to +0.0011) over every tune set (docs/EVALUATION.md, "Feedback: a second fold of
    each held set")."""

    each_mark: bool = False
    """False: the yes-marks' mean weighs beta times the query (classic Rocchio); True: each yes-mark does (the query
    one example among the marks), the no-marks' mean weighing gamma times theirs. Kept at False: True leads the tune
    mean over 1, 3 and 5 marks by 0.0012, inside a paired bootstrap's 95% interval (-0.0002, +0.0024), so the tune
    sets do not separate the two (`studies/behaviour_rule.py` EACH_MARK, `separation`; docs/EVALUATION.md,
    "Feedback: each mark as heavy as the query")."""

    orthogonal_no: bool = False
    """False: a "not this" row's scores are subtracted whole; True: less their least-squares part along what the query
    and the yes-marks ask, so that a "no" on the query's nearest neighbour does not cancel the query. Kept at False: it
    lifts the held-out tweet folds (dev-brainrot-held 0.801 -> 0.860 at 3 marks) and costs the sentiment backdoors as
    much, and over 1, 3 and 5 marks the tune sets separate it below False, -0.0046 (-0.0080 to -0.0014)
    (`studies/behaviour_rule.py` ORTHOGONAL_NO; docs/EVALUATION.md, "Feedback: a "not this" that does not cancel the
    query")."""

    flat_below: float = 0.0
    """a "not this" is taken as with `orthogonal_no` where the query's representation view is flat: the HS channel
    takes part (`channel_scores` holds it: `attribution.feedback_ranker` scores the channels that the shown view, the
    marks' start or the turn weigh, so not where the behaviour test chose the gradient view) and the query's
    FLAT_DEPTH-th best pool row in it stands less than `flat_below` standard deviations above the pool's mean
    (`flat_view`); 0: never. Such a query (a tweet among tweets) has no near neighbours, so a "no" on its best row
    cancels what is left of it; elsewhere the "no" moves the query off a topic, as the sentiment backdoors need. Kept at
    0: put to three fresh tweet sets (60 queries drawn from dev-brainrot's upstream files, `studies.tweet_sets`) by a
    test written down first, 1.5 led the served feedback by +0.0014 over 1, 3 and 5 marks, a paired bootstrap's 95%
    interval -0.0007 to +0.0044 (docs/EVALUATION.md, "Feedback: fresh tweet sets")."""

    pseudo_rows: int = 0
    """pseudo-relevance feedback: after the marks, the `pseudo_rows` best unmarked rows of the updated ranking count
    as yes-marks at `pseudo_weight` (`pseudo_relevance`); 0: none. Rows marked since are marks, not pseudo rows. Kept
    at 0: on the tweet tune sets 5 rows at 0.5 lead the served feedback by +0.0059 over 1, 3 and 5 marks (a paired
    bootstrap's 95% interval +0.0018 to +0.0103), but over every read tune set they give -0.0010 (-0.0033 to
    +0.0013; the story backdoors fall), and on three fresh tweet sets, by a test written down first, +0.0038 (-0.0042
    to +0.0112) (docs/EVALUATION.md, "Feedback: the best unmarked rows taken as yes")."""
    pseudo_weight: float = 0.5
    """the pseudo rows' part: their mean similarity (each channel's z units at its weight after the marks,
    re-standardised) at this many spreads of the total (0.5: the candidate of that test)."""

    def __post_init__(self) -> None:
        for name in ("beta", "tau", "max_evidence", "gamma", "words", "word_lift", "flat_below", "pseudo_weight"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputDataError(f"feedback {name} must be a finite number >= 0, got {value!r}")
        for name in ("each_mark", "orthogonal_no"):
            if not isinstance(getattr(self, name), bool):
                raise InputDataError(f"feedback {name} must be true or false, got {getattr(self, name)!r}")
        for name in ("turn_after", "turn_unless_shown", "pseudo_rows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputDataError(f"feedback {name} must be a whole number >= 0, got {value!r}")
        if self.pseudo_rows > MAX_PSEUDO_ROWS:
            raise InputDataError(f"feedback pseudo_rows is at most {MAX_PSEUDO_ROWS}, got {self.pseudo_rows}")


def split_marks(marks: Marks, n: int) -> tuple[list[int], list[int]]:
    """(relevant rows, irrelevant rows), each sorted; a row outside [0, n) is an error."""
    bad = [r for r in marks if not 0 <= int(r) < n]
    if bad:
        raise InputDataError(f"marked rows {bad[:5]} are not rows of this pool ({n} rows)")
    return (sorted(int(r) for r, v in marks.items() if v), sorted(int(r) for r, v in marks.items() if not v))


def standardise(scores: np.ndarray) -> np.ndarray:
    """Scores in z units along the last axis (a constant row stays 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    mean = scores.mean(axis=-1, keepdims=True)
    std = scores.std(axis=-1, keepdims=True)
    return (scores - mean) / np.where(std > 0, std, 1.0)


def rocchio(query_z: np.ndarray, row_scores: RowScores, marks: Marks, beta: float, gamma: float = 1.0,
            each_mark: bool = False, orthogonal_no: bool = False) -> np.ndarray:
    """One channel's Rocchio update in z units: the query's standardised scores plus beta times the mean standardised
    similarity to the relevant rows, minus gamma * beta times that to the irrelevant rows; re-standardised. With
    `each_mark`, beta counts once per relevant row (their sum, not their mean) and the irrelevant rows' mean weighs
    gamma * beta times the number of relevant rows (at least 1). With `orthogonal_no`, the irrelevant rows' mean is
    first less its least-squares part along the query's and relevant rows' sum (centred)."""
    relevant, irrelevant = split_marks(marks, len(query_z))
    out = np.asarray(query_z, dtype=np.float64).copy()
    mass = beta * max(len(relevant), 1) if each_mark else beta
    if beta and relevant:
        out += mass * standardise(row_scores(relevant)).mean(axis=0)
    if beta and gamma and irrelevant:
        no = standardise(row_scores(irrelevant)).mean(axis=0)
        asked = out - out.mean() if orthogonal_no else None
        if asked is not None and float(asked @ asked) > 0:
            no = no - float(no @ asked) / float(asked @ asked) * asked
        out -= gamma * mass * no
    return standardise(out)


class TermScorer(Protocol):
    """What the marked words read from a lexical scorer fitted on the pool (`baselines.BM25Scorer` is one)."""

    @property
    def n_pool(self) -> int: ...

    def tokenize(self, texts: list[str]) -> list[list[str]]: ...

    def term_scores(self, weights: Mapping[str, float]) -> np.ndarray: ...


@dataclass(frozen=True)
class MarkedWords:
    """What the marked-words part of feedback reads: the query's words, the words of pool rows (asked for the marked
    rows only), and the pool's BM25 scores of weighted words."""

    query: frozenset[str]
    row_words: Callable[[list[int]], list[set[str]]]
    score: Callable[[Mapping[str, float]], np.ndarray]
    refused: frozenset[str] = frozenset()
    """the query's words the analyst said not to lift (`without`): never weighted, never the marked word."""

    @classmethod
    def from_bm25(cls, scorer: TermScorer, query_text: str, row_text: Callable[[list[int]], list[str]]
                  ) -> MarkedWords:
        """From a `baselines.BM25Scorer` fitted on the pool (its tokeniser and `term_scores`), the query's text and
        a reader of pool rows' texts."""
        return cls(query=frozenset(scorer.tokenize([query_text])[0]),
                   row_words=lambda rows: [set(w) for w in scorer.tokenize(row_text(rows))] if rows else [],
                   score=scorer.term_scores)

    def without(self, words: Collection[str]) -> MarkedWords:
        """These words refused: a word a yes-mark shares with the query by chance ("first") is not lifted again.
        Words the query does not hold are ignored (they could never be chosen); more than MAX_REFUSED_WORDS is an
        error."""
        words = bounded_refusals(words)
        refused = self.refused | (words & self.query)
        return dataclasses.replace(self, query=self.query - refused, refused=refused)


def bounded_refusals(words: Collection[str], source: str = "") -> set[str]:
    """The refused words, as a set; more than MAX_REFUSED_WORDS is an error (`source`: where they came from, for it)."""
    words = {str(w) for w in words}
    if len(words) > MAX_REFUSED_WORDS:
        raise InputDataError(f"{len(words):,} words refused{source}; at most {MAX_REFUSED_WORDS}")
    return words


def word_weights(query: Collection[str], relevant: Sequence[set[str]], irrelevant: Sequence[set[str]]
                 ) -> dict[str, float]:
    """The query's words weighted by the share of `relevant` rows holding each minus the share of `irrelevant` rows
    holding it, those above 0 only, heaviest first (ties alphabetical)."""
    if not relevant:
        return {}
    out = {}
    for word in query:
        weight = (sum(word in r for r in relevant) / len(relevant)
                  - (sum(word in r for r in irrelevant) / len(irrelevant) if irrelevant else 0.0))
        if weight > 0:
            out[word] = weight
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def lifted_word(words: MarkedWords, weights: Mapping[str, float], n_relevant: int, n_pool: int
                ) -> tuple[str, np.ndarray] | None:
    """The marked word and the (N,) bool rows holding it: among the words of `weights` (`word_weights`) at 1, held by
    every yes-mark and by no no-mark, the one held by the fewest rows (ties alphabetical) of those held by more rows
    than the `n_relevant` yes-marks and by at most MAX_WORD_SHARE of the `n_pool` rows; None when there is none."""
    best = None
    for word in sorted(w for w, v in weights.items() if v >= 1.0):
        held = np.asarray(words.score({word: 1.0})) > 0
        count = int(held.sum())
        if n_relevant < count <= MAX_WORD_SHARE * n_pool and (best is None or count < best[2]):
            best = (word, held, count)
    return None if best is None else best[:2]


@dataclass(frozen=True)
class SpanLift:
    """The behaviour test's span lift carried into feedback (`span_lift.kept_after_marks`): `held(rows)` says which of
    the rows hold the span; `lift(total)` is every row's lift for the (N,) scores `total`."""

    span: str
    held: Callable[[list[int]], np.ndarray]
    lift: Callable[[np.ndarray], np.ndarray]


def span_rejected(span: SpanLift, marks: Marks) -> bool:
    """Whether the marks reject the test's span: more of the marked rows holding it are marked no than yes."""
    rows = sorted(int(r) for r in marks)
    if not rows:
        return False
    held = np.asarray(span.held(rows), dtype=bool)
    yes = sum(1 for r, h in zip(rows, held, strict=True) if h and marks[r])
    no = sum(1 for r, h in zip(rows, held, strict=True) if h and not marks[r])
    return no > yes


FLAT_DEPTH = 10
"""the row of the query's representation view that `flat_view` reads: the last of the first page of hits."""


def flat_view(channel_scores: Mapping[str, np.ndarray], below: float) -> bool:
    """Whether the query's HS scores (`channel_scores["HS"]`, raw) are flat: their FLAT_DEPTH-th best row stands less
    than `below` (> 0) standard deviations above the pool's mean. False without HS, or with fewer rows."""
    hs = channel_scores.get("HS")
    if not below or hs is None or len(hs) < FLAT_DEPTH:
        return False
    z = standardise(hs)
    return bool(np.partition(z, len(z) - FLAT_DEPTH)[len(z) - FLAT_DEPTH] < below)


def evidence(query_z: np.ndarray, marks: Marks) -> float:
    """How far a channel already ranks the relevant marks above the irrelevant ones, in its z units."""
    relevant, irrelevant = split_marks(marks, len(query_z))
    pos = float(np.mean(query_z[relevant])) if relevant else 0.0
    neg = float(np.mean(query_z[irrelevant])) if irrelevant else 0.0
    return pos - neg


@dataclass
class FeedbackResult:
    """Scores after feedback: the total and each channel's weighted part (z units), the weights and their evidence."""

    total: np.ndarray
    parts: dict[str, np.ndarray]
    weights: dict[str, float]
    evidence: dict[str, float] = field(default_factory=dict)
    words: dict[str, float] = field(default_factory=dict)
    """the marked words and their weights (`word_weights`); their part is parts["words"] when any scored."""
    span: str | None = None
    """the behaviour test's span when its lift applies (parts["span"]), else None."""
    span_rejected: str | None = None
    """the test's span when the marks rejected its lift (`span_rejected`), else None."""
    lifted_word: str | None = None
    """the marked word whose rows are lifted (`lifted_word`; part of parts["words"]), else None."""
    lifted_rows: int = 0
    """how many rows hold the marked word."""
    refused_words: tuple[str, ...] = ()
    """the query's words the analyst refused (`MarkedWords.without`), sorted."""
    turned: bool = False
    """whether the marks turned the weights to the other view (`turned`: every mark so far "not this")."""
    orthogonal_no: bool = False
    """whether the "not this" marks were taken orthogonal to what the query asks (`FeedbackConfig.orthogonal_no`, or
    its representation view is flat: `flat_below`)."""
    pseudo_rows: tuple[int, ...] = ()
    """the unmarked rows taken as yes at `FeedbackConfig.pseudo_weight` (`pseudo_relevance`; parts["pseudo"]), best
    first."""


ALL_MISSES_AFTER = 3
"""marks, none yes, after which the page and `rise query --marks` name the other view's control (`all_misses`)."""


def missed(marks: Mapping, n: int) -> bool:
    """Whether at least `n` (> 0) rows are marked and none yes."""
    return n > 0 and len(marks) >= n and not any(marks.values())


def all_misses(marks: Mapping) -> bool:
    """Whether at least ALL_MISSES_AFTER rows are marked and none yes: the shown view has missed that often, and the
    analyst is told how to look from the other one (the marks do not turn by themselves: `FeedbackConfig.turn_after`)."""
    return missed(marks, ALL_MISSES_AFTER)


def turned(marks: Marks, config: FeedbackConfig) -> bool:
    """Whether the marks turn the weights to the other view: at least `config.turn_after` (> 0) of them, none yes."""
    return missed(marks, config.turn_after)


def other_view_shows(channel_scores: Mapping[str, np.ndarray], weights: Mapping[str, float], marks: Marks,
                     depth: int) -> bool:
    """Whether any marked row is among the top `depth` rows of the view with `weights` (z units) over
    `channel_scores`, before marks (ties: the lower row first)."""
    total = sum(float(weights.get(c, 0.0)) * standardise(raw) for c, raw in channel_scores.items()
                if float(weights.get(c, 0.0)) != 0.0)
    if np.ndim(total) == 0:
        return False
    top = np.argsort(-total, kind="stable")[:depth]
    return bool(np.isin(np.fromiter((int(r) for r in marks), dtype=np.int64), top).any())


def pseudo_relevance(total: np.ndarray, row_scores: Mapping[str, RowScores], weights: Mapping[str, float],
                     marks: Marks, n_rows: int, weight: float) -> tuple[list[int], np.ndarray] | None:
    """Pseudo-relevance feedback after marks: the `n_rows` best unmarked rows of `total` (ties: the lower row first)
    and their part, `weight` spreads of the total times the standardised sum over channels of `weights[c]` (z units)
    times the pool's mean standardised similarity to them in c; None where there is no such row, or the total or that
    sum is flat."""
    marked = {int(r) for r in marks}
    rows = [int(r) for r in np.argsort(-np.asarray(total), kind="stable") if int(r) not in marked][:n_rows]
    spread = float(np.std(total))
    if not rows or not weight or spread == 0:
        return None
    like = sum(float(w) * standardise(row_scores[c](rows)).mean(axis=0) for c, w in weights.items())
    if np.ndim(like) == 0 or float(np.std(like)) == 0:
        return None
    return rows, weight * spread * standardise(like)


def apply_feedback(channel_scores: Mapping[str, np.ndarray], row_scores: Mapping[str, RowScores], marks: Marks,
                   base_weights: Mapping[str, float], config: FeedbackConfig | None = None,
                   words: MarkedWords | None = None, span: SpanLift | None = None,
                   turn_weights: Mapping[str, float] | None = None) -> FeedbackResult:
    """Combine channels after feedback. `channel_scores[c]`: the query's raw (N,) scores in channel c; `row_scores[c]`:
    the pool's scores against marked rows in c; `base_weights[c]`: the weights in z units (lambda_c * std_c);
    `words`: the marked words' reader (None: channels only); `span`: the behaviour test's span lift where it lifts
    (it fired, or both views share the span; kept unless the marks reject it); `turn_weights`: the other view's
    weights in z units, which replace `base_weights` while the marks are all misses (`turned`; None, or no weight on
    a channel scored here: never). The lifts are parts of their own: "span", and the marked word's in "words"."""
    config = config or FeedbackConfig()
    turn = turn_weights is not None and turned(marks, config) and any(
        float(turn_weights.get(c, 0.0)) != 0.0 for c in channel_scores) and not (
        config.turn_unless_shown and other_view_shows(channel_scores, turn_weights, marks, config.turn_unless_shown))
    if turn:
        base_weights = turn_weights
    orthogonal = config.orthogonal_no or flat_view(channel_scores, config.flat_below)
    parts, weights, ev = {}, {}, {}
    for c, raw in channel_scores.items():
        w = float(base_weights.get(c, 0.0))
        if w == 0.0:
            continue
        z = standardise(raw)
        ev[c] = evidence(z, marks) if marks else 0.0
        bounded = min(max(ev[c], -config.max_evidence), config.max_evidence)
        weights[c] = w * math.exp(min(config.tau * bounded, 30.0))
        parts[c] = weights[c] * (rocchio(z, row_scores[c], marks, config.beta, config.gamma, config.each_mark,
                                         orthogonal)
                                  if marks else z)
    if not parts:
        raise InputDataError("no channel has a nonzero weight to rank with")
    total = np.sum(list(parts.values()), axis=0)
    chosen: dict[str, float] = {}
    relevant, irrelevant = split_marks(marks, len(total))
    if words is not None and relevant and (config.words or config.word_lift):
        held = words.row_words(relevant + irrelevant)
        chosen = word_weights(words.query, held[:len(relevant)], held[len(relevant):])
        lexical = np.asarray(words.score(chosen), dtype=np.float64) if chosen and config.words else np.zeros(0)
        spread = float(total.std())
        if chosen and config.words and lexical.std() > 0 and spread > 0:
            parts["words"] = config.words * spread * standardise(lexical)
            total = total + parts["words"]
    kept, rejected = None, None
    if span is not None:
        if span_rejected(span, marks):
            rejected = span.span
        else:
            kept = span.span
            parts["span"] = np.asarray(span.lift(total), dtype=np.float64)
            total = total + parts["span"]
    marked = lifted_word(words, chosen, len(relevant), len(total)) if words is not None and config.word_lift else None
    if marked is not None and float(total.std()) > 0:
        lift = config.word_lift * float(total.std()) * marked[1]
        parts["words"] = parts.get("words", np.zeros(len(total))) + lift
        total = total + lift
    else:
        marked = None
    pseudo = pseudo_relevance(total, row_scores, weights, marks, config.pseudo_rows, config.pseudo_weight) if (
        marks and config.pseudo_rows) else None
    if pseudo is not None:
        parts["pseudo"] = pseudo[1]
        total = total + parts["pseudo"]
    return FeedbackResult(total=total, parts=parts, weights=weights, evidence=ev, words=chosen if config.words else {},
                          span=kept, span_rejected=rejected, lifted_word=None if marked is None else marked[0],
                          lifted_rows=0 if marked is None else int(marked[1].sum()), turned=turn,
                          refused_words=tuple(sorted(words.refused)) if words is not None else (),
                          orthogonal_no=orthogonal and any(not v for v in marks.values()),
                          pseudo_rows=() if pseudo is None else tuple(pseudo[0]))


def lift_lines(feedback: Mapping, n_pool: int) -> list[str]:
    """What moved after marks (a ranking's `feedback`) as plain lines: the turn to the other view after misses, the
    "not this" marks taken orthogonally where the query's view is flat, the behaviour test's span, kept or rejected
    by the marks, the marked word whose rows were lifted, the words the analyst refused (pool text: the page shows
    them with st.text) and the pseudo rows (`pseudo_rows`)."""
    out = []
    if feedback.get("turned"):
        out.append(f"Your {int(feedback.get('n_irrelevant', 0))} marks are all \"not this\": the ranking turned to "
                   f"the other view, {chosen_view(feedback.get('weights', {}))}, until a mark says yes")
    if feedback.get("orthogonal_no"):
        out.append("This query's nearest rows stand barely above the rest of the pool (its representation view is "
                   "flat), so each \"not this\" moves the ranking away from what that row does not share with the "
                   "query, not from the query itself")
    if feedback.get("span"):
        out.append(f"The behaviour test's span stays lifted (the span column): {feedback['span']!r}")
    if feedback.get("span_rejected"):
        out.append(f"Your marks rejected the behaviour test's span (more rows holding it marked no than yes); its "
                   f"lift is off: {feedback['span_rejected']!r}")
    if feedback.get("lifted_word"):
        rows = int(feedback.get("lifted_rows", 0))
        out.append(f"Every yes-mark holds this word of the query and no no-mark does; the {rows:,} rows holding it "
                   f"({rows / max(n_pool, 1):.1%} of the pool) are lifted (in the words column): "
                   f"{feedback['lifted_word']!r}")
    if feedback.get("refused_words"):
        out.append("Not lifted, as you asked: " + ", ".join(repr(w) for w in feedback["refused_words"]))
    n = len(feedback.get("pseudo_rows") or ())
    if n:
        out.append(f"The {n} best rows you have not marked count as a weaker yes (pseudo-relevance feedback): rows "
                   f"like them move up (the pseudo column). Mark any of them to say otherwise")
    return out


def chosen_view(weights: Mapping[str, float]) -> str:
    """Which view the marks leave in charge, from the channel weights after feedback (z units): 'the representation
    view (HS)' when HS holds at least two thirds of the weight, 'the gradient view (RH + GH)' when it holds at most one
    third, else 'both views'."""
    total = sum(abs(float(w)) for w in weights.values())
    if total == 0:
        return "no view"
    share = abs(float(weights.get("hs", 0.0))) / total
    return ("the representation view (HS)" if share >= 2 / 3 else "the gradient view (RH + GH)" if share <= 1 / 3
            else "both views")


def unit_row_scores(matrix: torch.Tensor, scale: torch.Tensor | None = None) -> RowScores:
    """RowScores of unit row vectors (a RISE channel, hidden-state cosine): cosine of every row with the marked ones,
    times the per-row `scale` the channel is scored with (None: 1)."""

    def scores(rows: list[int]) -> np.ndarray:
        marked = matrix[rows].float()
        # a float16 matrix widened a chunk of rows at a time (as `scoring.matvec`, a layer above), not copied whole
        out = torch.cat([marked @ matrix[s:s + WIDEN_ROWS].float().T for s in range(0, len(matrix), WIDEN_ROWS)],
                        dim=1) if len(matrix) else marked @ matrix.float().T
        if scale is not None:
            out = out * scale.float()[None, :] * scale.float()[rows][:, None]
        return out.double().numpy()

    return scores


def shown_order(scores: np.ndarray, marks: Marks) -> np.ndarray:
    """The rows in the order a ranking after marks shows them: the rows marked yes first, then the unmarked rows,
    then the rows marked no, each group by score (ties: the lower row first). What the analyst said is it stays in
    view; what they said is not leaves the rows still to look at."""
    scores = np.asarray(scores, dtype=np.float64)
    group = np.ones(len(scores), dtype=np.int8)
    relevant, irrelevant = split_marks(marks, len(scores))
    group[relevant], group[irrelevant] = 0, 2
    return np.lexsort((np.arange(len(scores)), -scores, group))


def shown_scores(scores: np.ndarray, marks: Marks) -> np.ndarray:
    """(N,) keys whose descending order is `shown_order(scores, marks)` up to ties: the rows marked yes raised and
    those marked no lowered by more than the scores' range, so equal scores within a group stay equal (a metric's
    own tie rule still applies to them)."""
    scores = np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scores).all():
        raise InputDataError("scores after marks must be finite")
    relevant, irrelevant = split_marks(marks, len(scores))
    keys = scores.copy()
    if len(scores):
        step = float(scores.max() - scores.min()) + 1.0
        keys[relevant] += step
        keys[irrelevant] -= step
    return keys


def simulate_analyst(rank_with: Callable[[Marks], np.ndarray], labels: np.ndarray, n_marks: Sequence[int] = (1, 3, 5)
                     ) -> dict[int, np.ndarray]:
    """A simulated analyst: mark the highest-ranked unmarked row by its true label, re-rank, repeat.

    `rank_with(marks)` returns the (N,) scores given the marks so far. Returns {m: keys of the ranking shown after m
    marks} for each m in `n_marks` (and 0: the scores, no marks): after marks, the ranking is shown as the product
    shows it (`shown_scores`: the rows marked yes first, the rows marked no last), so a metric of the top rows counts
    what the analyst sees. The marks do not depend on it: the next one is always the best unmarked row."""
    labels = np.asarray(labels)
    wanted = sorted({0, *(int(m) for m in n_marks)})
    if wanted[0] < 0:
        raise InputDataError(f"mark counts must be >= 0, got {list(n_marks)}")
    marks: dict[int, bool] = {}
    scores = np.asarray(rank_with(marks), dtype=np.float64)
    out = {0: scores}
    for m in range(1, wanted[-1] + 1):
        order = np.argsort(-scores, kind="stable")
        row = next((int(r) for r in order if int(r) not in marks), None)
        if row is None:
            break
        marks[row] = bool(labels[row])
        scores = np.asarray(rank_with(dict(marks)), dtype=np.float64)
        if m in wanted:
            out[m] = shown_scores(scores, marks)
    return out
