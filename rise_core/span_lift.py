"""The span lift: when the behaviour test fires, or both views share its span, the rows holding the span are lifted.

The behaviour test (`rise_core.behaviour`) fires when the gradient view's top rows share a span (a trigger) that the
query holds and the representation view's top rows lack; the per-query rule then scores with the gradient view. The
rows holding that span in the same field (prompt, completion or text) are the test's own evidence of what taught the
behaviour, so they are lifted by `adaptive.SPAN_LIFT` times the spread (standard deviation over the pool) of the
query's scores; a span of the prompt, where a trigger sits, by `adaptive.PROMPT_SPAN_LIFT` times it
(`BehaviourEvidence.lift_spreads`). When both views' top rows hold the telling span
(`adaptive.BehaviourEvidence.shared`), the loss gate keeps its mix and the span's rows are lifted all the same; when the
representation view's own span wins (the rival: `BehaviourEvidence.rival_wins`), the gate keeps its mix and the rival
span's rows are lifted (`BehaviourEvidence.lifted` names the span). The lift is a part of the score of its own
(`span`), shown beside RH, GH and HS.

Only rows that could reach the top k are read: a row outside the head read so far scores at most the head's last
score, so at most that plus the lift after it, and once that is below the k-th best lifted score of the rows read, no
such row can enter the top k. `lift_head` widens the head it reads until that holds, so the top k it returns is
exactly the top k of the lifted scores of every row; when the top k hold the span, a head a little past them is
enough, whatever the lift.

Evidence: studies/behaviour_rule.py (docs/EVALUATION.md, "The span lift", "The shared span", "The trigger's field"
and "The rival's span").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from .adaptive import BehaviourEvidence, BehaviourTest, ChannelChoice
from .config import ScoreOptions
from .feedback import SpanLift
from .ranking import Ranking
from .scoring import FeatureMatrix, channel_choice, channel_sum, score_each_query
from .shared_spans import texts_holding

if TYPE_CHECKING:
    import pandas as pd

SpanHolders = Callable[[BehaviourEvidence, Sequence[int]], np.ndarray]
"""(the test's evidence, pool rows) -> (len(rows),) bool: which of the rows hold its span in its field."""
RowTexts = Callable[[Sequence[int], str], Sequence[object]]
"""(pool rows, field) -> each row's text of that field (None where a row lacks it)."""

SPREAD_ROWS = 2048
"""at most this many pool rows (evenly spaced, all of a smaller pool) measure the spread of a query's scores where no
scan of every row is made (the ANN path): the estimate's relative error is about 1/sqrt(2 * 2048), under 2%."""
MAX_HEAD = 50_000
"""the head `lift_head` reads at most: beyond it the lift is applied within the head, and the ranking says so."""


def holders(texts: RowTexts) -> SpanHolders:
    """`SpanHolders` reading the rows' texts of the span's field (from an index's rows or an in-memory pool)."""

    def holds(found: BehaviourEvidence, rows: Sequence[int]) -> np.ndarray:
        rows = [int(r) for r in rows]
        if not rows:
            return np.zeros(0, dtype=bool)
        span, where = _lifted(found)
        return texts_holding(span, texts(rows, where))

    return holds


def _lifted(found: BehaviourEvidence) -> tuple[str, str]:
    """The span and field whose rows `found` lifts (its own where none is: the holders of a finding that lifts
    nothing are still its own span's)."""
    lifted = found.lifted
    return (found.span, found.where) if lifted is None else (lifted.span, lifted.where)


def frame_texts(rows_frame: Callable[[Sequence[int]], pd.DataFrame]) -> RowTexts:
    """`RowTexts` from a rows-frame reader (`RiseIndex.rows_frame`, `behaviour.samples_frame`): id, text, prompt and
    completion columns of the given rows, in order."""

    def texts(rows: Sequence[int], field: str) -> Sequence[object]:
        frame = rows_frame(list(rows))
        return frame[field].tolist() if field in frame.columns else [None] * len(rows)

    return texts


def lifting(choice_behaviour: BehaviourEvidence | None) -> BehaviourEvidence | None:
    """The evidence when a span's rows are lifted (the test fired, both views share its span, or the rival's span
    wins: `BehaviourEvidence.lifts`), else None."""
    return choice_behaviour if choice_behaviour is not None and choice_behaviour.lifts else None


def spread_rows(n: int, max_rows: int = SPREAD_ROWS) -> torch.Tensor:
    """The rows `score_spread` reads of a pool of n: every row up to `max_rows`, else `max_rows` evenly spaced."""
    return torch.arange(n) if n <= max_rows else torch.linspace(0, n - 1, max_rows).round().long()


def score_spread(pool: FeatureMatrix, query: FeatureMatrix, options: ScoreOptions, max_rows: int = SPREAD_ROWS
                 ) -> float:
    """The standard deviation (over the pool, population form) of the query's scores under fixed `options`: every
    row of a pool up to `max_rows`, else `max_rows` evenly spaced rows (an estimate, SPREAD_ROWS)."""
    n = len(pool)
    if n == 0:
        return 0.0
    part = pool if n <= max_rows else pool.select(spread_rows(n, max_rows))
    return float(channel_sum(part, query, options.for_channels(pool.channels).options).total.double().std(
        unbiased=False))


def lift_vector(total: torch.Tensor, found: BehaviourEvidence, holds: SpanHolders, head: int | None = None
                ) -> torch.Tensor:
    """(N,) the lift of each row for (N,) scores `total` (evaluation and Compare keep every row's score). Only rows
    that can reach the best `head` (None: MAX_HEAD) are read, so the top `head` of `total` plus this is exact; a pool of
    at most `head` rows is read whole."""
    n = len(total)
    head = MAX_HEAD if head is None else head
    lift = found.lift_spreads * float(total.double().std(unbiased=False))
    if n <= head:
        rows = torch.arange(n)
    else:
        threshold = float(torch.topk(total, head).values[-1]) - lift
        rows = (total >= threshold).nonzero()[:, 0]
    out = torch.zeros(n, dtype=total.dtype)
    out[rows] = torch.from_numpy(holds(found, rows.tolist())).to(total.dtype) * lift
    return out


def lifted_scores(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions,
                  behaviour: Callable[[int], BehaviourTest] | None, holds: SpanHolders) -> torch.Tensor:
    """(Q, N) scores of every pool row, one row per query (evaluation), as `scoring.score_each_query` gives them, with
    the span lift added to each query whose behaviour test (`behaviour(q)`) lifts."""
    if options.weighting != "auto" or behaviour is None:
        return score_each_query(pool, queries, options, behaviour)
    out = []
    for q in range(len(queries)):
        one = queries.select([q])
        out.append(lifted_row(pool, one, channel_choice(pool, one, options, behaviour(q)), holds))
    return torch.stack(out) if out else torch.zeros(0, len(pool))


def lifted_row(pool: FeatureMatrix, query: FeatureMatrix, choice: ChannelChoice, holds: SpanHolders) -> torch.Tensor:
    """(N,) scores of every pool row for one query under its `choice` (`scoring.channel_choice`), with the span lift
    where the choice's behaviour test lifts (it fired, or both views share its span)."""
    row = score_each_query(pool, query, choice.options)[0]
    found = lifting(choice.behaviour)
    return row if found is None else row + lift_vector(row, found, holds)


def kept_after_marks(choice_behaviour: BehaviourEvidence | None, holds: SpanHolders) -> SpanLift | None:
    """The span lift relevance feedback keeps after marks (`feedback.SpanLift`; unless the marks reject it) where the
    choice's behaviour test lifts (it fired, or both views share its span), else None."""
    found = lifting(choice_behaviour)
    if found is None:
        return None
    return SpanLift(span=_lifted(found)[0], held=lambda rows: holds(found, rows),
                    lift=lambda total: lift_vector(torch.from_numpy(np.asarray(total, dtype=np.float64)), found,
                                                   holds).numpy())


def lift_head(head: Callable[[int], Ranking], k: int, n: int, lift: float | Callable[[], float],
              found: BehaviourEvidence, holds: SpanHolders, first: int = 64) -> Ranking:
    """The top k after the lift: `head(m)` gives the m best rows before it (a Ranking of at most m rows, best first;
    fewer when fewer rows are allowed), `n` the rows there are, `lift` the amount (`found.lift_spreads` times the
    spread; a callable is asked once, after the first head: a scan's products are made by then).

    Reads heads of `first`, then 4 times more, until no row outside the head can enter the top k: every such row
    scores at most the head's last score, so at most that plus the lift after it, and the head is wide enough once
    that is below the k-th best lifted score of the rows read (or every row is read). The rows read are checked for
    the span as they come (each once). Past MAX_HEAD rows the lift is applied within the head, and
    `search["lift_head"]` says so. The result's parts gain `span` (the lift of each row), its scores the lift, and its
    search the head read."""
    m = min(n, max(first, 4 * k))
    seen: dict[int, bool] = {}
    while True:
        ranked = head(m)
        got = len(ranked)
        if got == 0:
            return ranked
        if callable(lift):
            lift = float(lift())
        rows = ranked.rows.tolist()
        new = [r for r in rows if r not in seen]
        if new:
            seen.update(zip(new, holds(found, new).tolist(), strict=True))
        held = torch.tensor([seen[r] for r in rows], dtype=torch.float32)
        total = ranked.scores.float() + held * float(lift)
        kth = float(torch.topk(total, min(k, got)).values[-1])
        done = got < m or m >= n or float(ranked.scores[-1]) + float(lift) < kth
        if done or m >= MAX_HEAD:
            break
        m = min(n, MAX_HEAD, 4 * m)
    part = held * float(lift)
    order = torch.from_numpy(np.argsort(-total.numpy(), kind="stable")[:k].copy())
    search = dict(ranked.search or {})
    search.update(lift_rows_read=got, lift_rows_held=int(held.sum()), lift_amount=float(lift),
                  **({"lift_head": f"lifted within the best {got} rows"} if not done else {}))
    return dataclasses.replace(ranked, rows=ranked.rows[order], scores=total[order],
                               parts={**{c: v[order] for c, v in ranked.parts.items()}, "span": part[order]},
                               search=search)
