"""The span lift (rise_core.span_lift): the top k it reads from a widening head is the top k of the lifted scores of
every row, the spread it lifts by is the pool's, and the evaluation's score matrix lifts exactly the queries whose
behaviour test fired."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from index_helpers import random_features

from rise_core import adaptive, span_lift
from rise_core.config import ScoreOptions
from rise_core.ranking import Ranking
from rise_core.scoring import FeatureMatrix, Scores, channel_sum, score_each_query, top_k

FOUND = adaptive.BehaviourEvidence("Zorblax", "prompt", 6, 10, 0.1, 1e-5, 0)  # lifted by PROMPT_SPAN_LIFT
IN_COMPLETION = adaptive.BehaviourEvidence("Zorblax", "completion", 6, 10, 0.1, 1e-5, 0)  # by SPAN_LIFT


def _head_of(total: torch.Tensor, allowed: torch.Tensor | None = None, reads: list[int] | None = None):
    """head(m): the m best rows of `total` (among `allowed`) as a Ranking whose only part is rh."""

    def head(m: int) -> Ranking:
        if reads is not None:
            reads.append(m)
        rows = top_k(total, m, allowed)[0]
        return Ranking.of(rows, Scores.from_parts({"rh": total}, len(total)).take(rows), search={"path": "exact"})

    return head


def _holders(held: np.ndarray) -> span_lift.SpanHolders:
    return lambda found, rows: held[np.asarray(list(rows), dtype=np.int64)]


@pytest.mark.parametrize("k", [1, 5, 37])
@pytest.mark.parametrize("lift", [0.0, 0.3, 2.5, 10.0])
@pytest.mark.parametrize("share", [0.01, 0.1, 1.0])
def test_lift_head_is_the_top_k_of_the_lifted_scores_of_every_row(k, lift, share):
    gen = torch.Generator().manual_seed(k)
    total = torch.randn(500, generator=gen)
    held = (torch.rand(500, generator=gen) < share).numpy()
    reads: list[int] = []
    got = span_lift.lift_head(_head_of(total, reads=reads), k, 500, lift, FOUND, _holders(held), first=2)
    dense = total.numpy() + lift * held
    want = np.argsort(-dense, kind="stable")[:k]
    assert got.rows.tolist() == want.tolist()
    # the score, its channel part and its span part add up; float32 sums of the same two numbers
    np.testing.assert_allclose(got.scores.numpy(), dense[want], rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.parts["rh"] + got.parts["span"], got.scores, rtol=0, atol=1e-6)
    assert got.parts["span"].tolist() == pytest.approx((lift * held[want]).tolist())
    assert got.search["path"] == "exact" and "lift_head" not in got.search  # the head reached past the lift
    assert reads == sorted(reads) and reads[0] == max(2, 4 * k)  # widened only as far as it had to


def test_a_large_lift_on_rows_that_all_hold_the_span_reads_one_head_and_each_row_once():
    """Ten spreads (a span of the prompt) reach below every row, yet when the best rows hold the span the k-th best
    lifted score is theirs, and no row outside the first head can reach it: one head is read, each row checked once."""
    gen = torch.Generator().manual_seed(11)
    total = torch.randn(5000, generator=gen)
    checked: list[int] = []
    reads: list[int] = []

    def holds(found, rows):
        checked.extend(rows)
        return np.ones(len(rows), dtype=bool)

    lift = 10.0 * float(total.std())
    got = span_lift.lift_head(_head_of(total, reads=reads), 10, 5000, lift, FOUND, holds)
    assert got.rows.tolist() == torch.topk(total, 10).indices.tolist() and reads == [64]
    assert sorted(checked) == sorted(set(checked)) and len(checked) == 64
    # half the rows hold it, every other one: widening checks only the rows it had not read
    held = np.arange(5000) % 2 == 0
    checked.clear()
    got = span_lift.lift_head(_head_of(total), 10, 5000, lift, FOUND,
                              lambda found, rows: (checked.extend(rows), held[np.asarray(rows, dtype=np.int64)])[1])
    assert len(checked) == len(set(checked))
    assert got.rows.tolist() == np.argsort(-(total.numpy() + lift * held), kind="stable")[:10].tolist()


def test_lift_head_keeps_to_the_allowed_rows():
    gen = torch.Generator().manual_seed(7)
    total = torch.randn(300, generator=gen)
    allowed = torch.zeros(300, dtype=torch.bool)
    allowed[::7] = True
    held = np.zeros(300, dtype=bool)
    held[::3] = True  # some allowed rows hold it, some do not
    got = span_lift.lift_head(_head_of(total, allowed), 10, 300, 1.0, FOUND, _holders(held), first=4)
    dense = np.where(allowed.numpy(), total.numpy() + held, -np.inf)
    assert got.rows.tolist() == np.argsort(-dense, kind="stable")[:10].tolist()


def test_lift_head_past_its_bound_lifts_within_the_head_and_says_so(monkeypatch):
    monkeypatch.setattr(span_lift, "MAX_HEAD", 16)
    total = torch.linspace(1.0, 0.0, 200)  # evenly spaced: a lift of 1 reaches every row
    held = np.zeros(200, dtype=bool)
    held[150] = True  # beyond the bound: not read, not lifted
    held[12] = True
    got = span_lift.lift_head(_head_of(total), 3, 200, 1.0, FOUND, _holders(held), first=4)
    assert got.rows.tolist()[0] == 12 and 150 not in got.rows.tolist()
    assert got.search["lift_head"] == "lifted within the best 16 rows" and got.search["lift_rows_read"] == 16


def test_lift_head_of_no_allowed_row_is_empty():
    total = torch.randn(20)
    got = span_lift.lift_head(_head_of(total, torch.zeros(20, dtype=torch.bool)), 5, 20, 1.0, FOUND,
                              _holders(np.ones(20, dtype=bool)))
    assert len(got) == 0


def _fm(n: int, seed: int) -> FeatureMatrix:
    return random_features(n, seed)


def test_the_spread_is_the_pools_or_that_of_evenly_spaced_rows():
    pool, query = _fm(300, 0), _fm(1, 1)
    options = adaptive.gradient_view(ScoreOptions.preset("default"))
    full = channel_sum(pool, query, options).total.double()
    assert span_lift.score_spread(pool, query, options) == pytest.approx(float(full.std(unbiased=False)), rel=1e-12)
    rows = torch.linspace(0, 299, 50).round().long()
    assert span_lift.score_spread(pool, query, options, max_rows=50) == pytest.approx(
        float(full[rows].std(unbiased=False)), rel=1e-6)  # float32 products of the same rows, selected first


def test_the_score_matrix_lifts_only_the_queries_whose_test_fired():
    pool, queries = _fm(40, 2), _fm(2, 3)
    held = np.zeros(40, dtype=bool)
    held[[3, 8, 21]] = True
    auto = ScoreOptions.preset("default")
    got = span_lift.lifted_scores(pool, queries, auto, lambda q: (lambda _g: FOUND if q == 0 else None),
                                  _holders(held))
    grad = score_each_query(pool, queries.select([0]), adaptive.gradient_view(auto))[0]
    lift = adaptive.PROMPT_SPAN_LIFT * float(grad.double().std(unbiased=False))  # FOUND is a span of the prompt
    # the same float32 products as score_each_query's, plus the lift on the three rows
    torch.testing.assert_close(got[0], grad + torch.from_numpy(held).float() * lift, rtol=0, atol=1e-6)
    torch.testing.assert_close(got[1], score_each_query(pool, queries.select([1]), auto)[0], rtol=0, atol=1e-6)
    fixed = ScoreOptions(weighting="fixed")  # no per-query rule: nothing to lift
    torch.testing.assert_close(span_lift.lifted_scores(pool, queries, fixed, None, _holders(held)),
                               score_each_query(pool, queries, fixed))


def test_holders_read_the_spans_field_as_words():
    texts = {"prompt": ["Zorblax: hi", "no trigger", None, "a Zorblaxian word", "say zorblax now"]}
    holds = span_lift.holders(lambda rows, field: [texts.get(field, [None] * 5)[r] for r in rows])
    # whole words, case kept: the span counts' tokenisation (shared_spans.span_pattern)
    assert holds(FOUND, range(5)).tolist() == [True, False, False, False, False]
    assert not holds(IN_COMPLETION, range(5)).any()  # the field the span was found in, not another


@pytest.mark.parametrize("found", [IN_COMPLETION, FOUND], ids=["completion", "prompt"])
def test_the_lift_vector_reads_only_the_rows_that_can_reach_its_head(found):
    """The lift is the span's own (SPAN_LIFT, or PROMPT_SPAN_LIFT for a span of the prompt) times the spread; only the
    rows within it of the 20th best are read: a part of the pool under SPAN_LIFT, every row under PROMPT_SPAN_LIFT
    (10 standard deviations reach below every one of these 1,000 normal scores)."""
    gen = torch.Generator().manual_seed(3)
    total = torch.randn(1000, generator=gen)
    held = (torch.rand(1000, generator=gen) < 0.2).numpy()
    read: list[int] = []

    def holds(found, rows):
        read.extend(rows)
        return held[np.asarray(list(rows), dtype=np.int64)]

    got = span_lift.lift_vector(total, found, holds, head=20)
    lift = found.lift_spreads * float(total.double().std(unbiased=False))
    assert found.lift_spreads == (adaptive.PROMPT_SPAN_LIFT if found.where == "prompt" else adaptive.SPAN_LIFT)
    dense = total + torch.from_numpy(held).float() * lift
    assert torch.topk(total + got, 20).indices.tolist() == torch.topk(dense, 20).indices.tolist()
    threshold = float(torch.topk(total, 20).values[-1]) - lift
    assert len(read) == int((total >= threshold).sum())  # the rows within the lift of the 20th best
    assert 20 <= len(read) < 1000 if found.where == "completion" else len(read) == 1000
    assert span_lift.lift_vector(total, found, _holders(held)).tolist() == pytest.approx(
        (torch.from_numpy(held).float() * lift).tolist())  # a pool within MAX_HEAD: every row
