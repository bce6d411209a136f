"""The per-query channel rule (rise_core.adaptive) and relevance feedback (rise_core.feedback), against dense math."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from index_helpers import random_features

from rise_core import adaptive
from rise_core.config import ScoreOptions, preset_scoring
from rise_core.errors import InputDataError
from rise_core.feedback import (
    FeedbackConfig,
    apply_feedback,
    evidence,
    rocchio,
    shown_order,
    shown_scores,
    simulate_analyst,
    standardise,
    unit_row_scores,
)
from rise_core.scoring import FeatureMatrix, channel_choice, score_each_query, score_pool


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True)


def _fm(n: int, seed: int, loss: torch.Tensor | None) -> FeatureMatrix:
    return random_features(n, seed, loss)


def test_gate_is_the_logistic_of_the_surprise():
    assert adaptive.gate(adaptive.MIDPOINT) == pytest.approx(0.5)
    s = 1.3
    assert adaptive.gate(s) == pytest.approx(1 / (1 + math.exp(-adaptive.SLOPE * (s - adaptive.MIDPOINT))))
    assert adaptive.gate(-1e6) == 0.0 and adaptive.gate(1e6) == 1.0
    assert adaptive.gate(s, slope=2.0, midpoint=1.0) == pytest.approx(1 / (1 + math.exp(-2.0 * (s - 1.0))))


def test_the_study_gate_is_the_product_gate_per_query():
    from studies.behaviour_rule import gate_weight

    m = {"query_loss": np.array([0.2, 1.1, 3.0, -800.0]), "pool_loss": np.array([0.4])}
    for mid, slope in ((adaptive.MIDPOINT, adaptive.SLOPE), (1.0, 2.0)):
        want = [adaptive.gate(x - 0.4, slope, mid) for x in m["query_loss"]]
        assert gate_weight(m, mid=mid, slope=slope).tolist() == pytest.approx(want, abs=0)
        assert gate_weight(m, 1, mid=mid, slope=slope) == pytest.approx(want[1], abs=0)


def test_auto_scores_equal_fixed_weights_from_the_gate_by_hand():
    pool = _fm(30, 0, torch.linspace(1.0, 3.0, 30))  # median 2.0
    query = _fm(1, 1, torch.tensor([2.9]))
    auto = score_pool(pool, query, ScoreOptions(weighting="auto"))
    g = 1 / (1 + math.exp(-adaptive.SLOPE * (2.9 - 2.0 - adaptive.MIDPOINT)))
    fixed = ScoreOptions(lambda_rh=1.4 * g, lambda_gh=g, lambda_hs=1 - g)
    by_hand = sum(lam * (pool.rh if c == "rh" else pool.gh if c == "gh" else pool.hs) @ getattr(query, c)[0]
                  for c, lam in (("rh", 1.4 * g), ("gh", g), ("hs", 1 - g)))
    torch.testing.assert_close(auto.total, by_hand, rtol=1e-5, atol=1e-6)  # float32 products
    torch.testing.assert_close(auto.total, score_pool(pool, query, fixed).total)
    choice = channel_choice(pool, query, ScoreOptions(weighting="auto"))
    assert choice.surprise == pytest.approx(0.9, abs=1e-6) and choice.leaning == "gradient (RH + GH)"
    assert "surprises the model" in choice.reason


def test_an_ordinary_query_leans_on_hs_and_each_query_gets_its_own_weights():
    pool = _fm(40, 2, torch.full((40,), 3.0))
    queries = _fm(2, 3, torch.tensor([2.0, 5.0]))  # surprise -1 (HS) and +2 (RH + GH)
    each = score_each_query(pool, queries, ScoreOptions(weighting="auto"))
    for q in range(2):
        one = queries.select([q])
        torch.testing.assert_close(each[q], score_pool(pool, one, ScoreOptions(weighting="auto")).total,
                                   rtol=1e-5, atol=1e-6)
    choice = channel_choice(pool, queries.select([0]), ScoreOptions(weighting="auto"))
    assert choice.leaning == "representation (HS)"
    g = adaptive.gate(-1.0)  # small, not zero: the reason gives each weight to 3 significant digits, not as 0.00
    assert f"weights RH {1.4 * g:.3g}, GH {g:.3g}, HS {1 - g:.3g}" in choice.reason and "RH 0.00," not in choice.reason


def test_unknown_loss_falls_back_to_the_fixed_weights():
    pool, query = _fm(20, 4, None), _fm(1, 5, None)
    torch.testing.assert_close(score_pool(pool, query, ScoreOptions(weighting="auto")).total,
                               score_pool(pool, query, ScoreOptions()).total)
    assert "could not run" in channel_choice(pool, query, ScoreOptions(weighting="auto")).reason


def test_no_hs_channel_means_the_gradient_side_only():
    pool = _fm(20, 6, torch.full((20,), 3.0)).without_hs()
    query = _fm(1, 7, torch.tensor([1.0])).without_hs()
    choice = channel_choice(pool, query, ScoreOptions(weighting="auto"))
    assert choice.options.lambda_hs == 0 and choice.options.lambda_rh == pytest.approx(1.4)


def test_the_default_preset_is_per_query_and_hand_weights_are_kept():
    assert preset_scoring("default").weighting == "auto"
    assert preset_scoring("fixed") == ScoreOptions()
    assert preset_scoring("default", lambda_hs=0.3).weighting == "fixed"  # a slider moved: used as given
    with pytest.raises(Exception, match="weighting"):
        ScoreOptions(weighting="sometimes")


def test_rocchio_on_unit_vectors_is_the_classic_query_update():
    g = torch.Generator().manual_seed(8)
    pool = _unit(torch.randn(50, 10, generator=g, dtype=torch.float64))
    q = pool[3] + 0.1 * torch.randn(10, generator=g, dtype=torch.float64)
    rows = unit_row_scores(pool)
    marks = {3: True, 7: True, 20: False}
    got = rocchio(standardise((pool @ q).numpy()), rows, marks, beta=1.0)
    # dense: standardise each score vector, add the relevant rows' mean, subtract the irrelevant rows', standardise
    s = lambda v: (v - v.mean()) / v.std()  # noqa: E731
    dense = s((s(pool @ q) + (s(pool @ pool[3]) + s(pool @ pool[7])) / 2 - s(pool @ pool[20])).numpy())
    np.testing.assert_allclose(got, dense, atol=1e-5)  # unit_row_scores multiplies in float32 (~1e-7 relative)


def test_evidence_moves_weight_to_the_channel_that_agrees_with_the_marks():
    n = 40
    agree = np.zeros(n)
    agree[:5] = 5.0  # rows 0-4 stand out in channel a only
    other = np.random.default_rng(0).normal(size=n)
    rows = {"a": lambda r: np.tile(agree, (len(r), 1)), "b": lambda r: np.tile(other, (len(r), 1))}
    marks = {0: True, 1: True, 30: False}
    res = apply_feedback({"a": agree, "b": other}, rows, marks, {"a": 1.0, "b": 1.0},
                         FeedbackConfig(tau=1.0, max_evidence=30.0))  # a bound that does not bind here
    assert res.evidence["a"] == pytest.approx(evidence(standardise(agree), marks))
    assert res.weights["a"] > res.weights["b"]
    assert res.weights["a"] == pytest.approx(math.exp(res.evidence["a"]))
    no_marks = apply_feedback({"a": agree, "b": other}, rows, {}, {"a": 2.0, "b": 0.5})
    np.testing.assert_allclose(no_marks.total, 2.0 * standardise(agree) + 0.5 * standardise(other))


def test_a_channels_evidence_counts_up_to_max_evidence_either_way():
    n = 40
    agree = np.zeros(n)
    agree[:5] = 5.0  # the marked rows stand out in channel a: evidence about 2.6 z units
    against = -agree  # and sink in channel b: evidence about -2.6
    rows = {"a": lambda r: np.tile(agree, (len(r), 1)), "b": lambda r: np.tile(against, (len(r), 1))}
    marks = {0: True, 1: True}
    for bound in (0.5, 1.0, 2.0):
        res = apply_feedback({"a": agree, "b": against}, rows, marks, {"a": 2.0, "b": 3.0},
                             FeedbackConfig(tau=1.5, max_evidence=bound))
        assert res.evidence["a"] == pytest.approx(evidence(standardise(agree), marks)) and res.evidence["a"] > bound
        assert res.weights["a"] == pytest.approx(2.0 * math.exp(1.5 * bound), rel=1e-12)
        assert res.weights["b"] == pytest.approx(3.0 * math.exp(-1.5 * bound), rel=1e-12)
    small = {0: True, 39: False}  # evidence inside the bound is used as it is
    res = apply_feedback({"a": agree, "b": against}, rows, small, {"a": 1.0, "b": 1.0},
                         FeedbackConfig(tau=1.0, max_evidence=100.0))
    assert res.weights["a"] == pytest.approx(math.exp(evidence(standardise(agree), small)), rel=1e-12)
    with pytest.raises(InputDataError, match="max_evidence"):
        FeedbackConfig(max_evidence=-1.0)


def test_simulated_analyst_marks_the_top_unmarked_row_by_its_label():
    labels = np.array([0, 1, 1, 0, 1])
    seen = []

    def rank_with(marks):
        seen.append(dict(marks))
        base = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
        return base + np.array([10.0 if marks.get(i) else -10.0 if marks.get(i) is False else 0.0 for i in range(5)])

    out = simulate_analyst(rank_with, labels, (1, 3))
    assert sorted(out) == [0, 1, 3]
    assert seen[1] == {0: False} and seen[3] == {0: False, 1: True, 2: True}
    with pytest.raises(InputDataError):
        rocchio(np.zeros(3), lambda r: np.zeros((len(r), 3)), {9: True}, 1.0)


def test_a_ranking_after_marks_is_shown_yes_first_and_no_last():
    """`shown_order`: the rows marked yes, the unmarked rows, the rows marked no, each by score (ties: the lower row
    first); `shown_scores` keys sort the same way and keep equal scores equal within a group."""
    scores = np.array([0.5, 2.0, 1.0, 3.0, 1.0, -4.0])
    marks = {3: False, 0: True, 5: True}
    assert shown_order(scores, marks).tolist() == [0, 5, 1, 2, 4, 3]
    keys = shown_scores(scores, marks)
    assert np.argsort(-keys, kind="stable").tolist() == [0, 5, 1, 2, 4, 3]
    assert keys[2] == keys[4]  # a tie stays a tie: the metric's own tie rule reads it
    np.testing.assert_array_equal(keys[[1, 2, 4]], scores[[1, 2, 4]])  # unmarked rows keep their scores
    assert shown_order(scores, {}).tolist() == [3, 1, 2, 4, 0, 5]
    with pytest.raises(InputDataError, match="finite"):
        shown_scores(np.array([1.0, np.inf]), {0: True})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=12).flatmap(
    lambda xs: st.tuples(st.just(xs), st.dictionaries(st.integers(0, len(xs) - 1), st.booleans()))))
def test_shown_order_is_a_permutation_grouped_and_sorted(case):
    """For any scores (small integers: many ties) and marks: every row once, the yes rows, then the unmarked, then
    the no rows, each group by score with the lower row first on ties; the keys rank the same way up to ties."""
    values, marks = case
    scores = np.array(values, dtype=np.float64)
    order = shown_order(scores, marks).tolist()
    assert sorted(order) == list(range(len(scores)))
    group = [0 if marks.get(r) is True else 2 if marks.get(r) is False else 1 for r in order]
    assert group == sorted(group)
    for (a, ga), (b, gb) in pairwise(zip(order, group, strict=True)):
        if ga == gb:
            assert (scores[a], -a) > (scores[b], -b)
    keys = shown_scores(scores, marks)
    assert all(keys[a] >= keys[b] for a, b in pairwise(order))


def test_the_simulated_analyst_scores_the_ranking_as_it_is_shown():
    """The marks do not depend on the shown order (the next is the best unmarked row either way); the keys returned
    after m marks rank the rows marked yes first and those marked no last, even where the scores after marks do not."""
    labels = np.array([1, 0, 1, 1, 0, 0])

    def rank_with(marks):  # the marks pull a yes row down and leave a no row on top: the shown order still pins them
        base = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
        return base - np.array([10.0 if marks.get(i) else 0.0 for i in range(6)])

    out = simulate_analyst(rank_with, labels, (1, 2, 3))
    np.testing.assert_array_equal(out[0], rank_with({}))
    assert np.argsort(-out[1], kind="stable").tolist() == [0, 1, 2, 3, 4, 5]  # row 0 marked yes: first
    assert np.argsort(-out[2], kind="stable").tolist() == [0, 2, 3, 4, 5, 1]  # row 1 marked no: last
    assert np.argsort(-out[3], kind="stable").tolist() == [0, 2, 3, 4, 5, 1]  # row 2 marked yes: after row 0
    raw = rank_with({0: True, 1: False, 2: True})
    assert np.argsort(-raw, kind="stable").tolist()[:2] == [1, 3]  # what the scores alone would have shown


# --- on a built index -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hs_index(tiny_llama, tmp_path_factory):
    from index_helpers import pool_rows

    from rise_core.config import RiseConfig
    from rise_core.store import build_index

    path = tmp_path_factory.mktemp("qc") / "pool.duckdb"
    build_index(path, pool_rows(24), tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64), batch_size=8)
    return path


def test_index_rank_uses_the_rule_against_the_stored_losses(hs_index, tiny_llama):
    from rise_core import attribution
    from rise_core.store import RiseIndex

    with RiseIndex.open(hs_index) as index:
        losses = index.samples()["loss"].to_numpy(dtype=float)
        assert index.reference_loss() == float(np.median(losses[np.isfinite(losses)]))  # float64 median of float32
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions(weighting="auto")
        hits = attribution.rank(index, qf, auto, k=24)
        w = hits.attrs["weighting"]
        assert w["surprise"] == pytest.approx(float(qf.loss[0]) - index.reference_loss(), rel=1e-5)
        fixed = ScoreOptions(lambda_rh=w["lambda_rh"], lambda_gh=w["lambda_gh"], lambda_hs=w["lambda_hs"])
        same = attribution.rank(index, qf, fixed, k=24)
        assert list(hits["id"]) == list(same["id"])
        np.testing.assert_allclose(hits["score"], same["score"], rtol=1e-6)


def test_the_index_and_in_memory_paths_take_the_same_pool_loss_to_the_bit(hs_index, tiny_llama):
    """One definition (`adaptive.pool_loss`) on both paths: the index's stored float32 losses and the same losses in
    memory give the same reference, so the same per-query weights (24 rows: the mean of the middle two, where DuckDB's
    own median of the FLOAT column rounded to float32)."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    with RiseIndex.open(hs_index) as index:
        fm = index.feature_matrix()
        assert len(fm) == 24 and fm.loss.dtype == torch.float32
        assert index.reference_loss() == adaptive.pool_loss(fm.loss)
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions(weighting="auto")
        on_index = attribution.index_weighting(index, qf, auto).choice
        assert on_index == channel_choice(fm, qf, auto)
        assert on_index.pool_loss == index.reference_loss() and math.isfinite(on_index.surprise)


def test_index_feedback_without_marks_keeps_the_ranking_and_marks_move_it(hs_index, tiny_llama):
    from rise_core import attribution
    from rise_core.store import RiseIndex

    with RiseIndex.open(hs_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        base = attribution.rank(index, qf, ScoreOptions(), k=24)
        none = attribution.rank_with_feedback(index, qf, {}, ScoreOptions(), k=24)
        assert list(none["id"]) == list(base["id"])  # z units with lambda * std: the same order
        last = base["id"].iloc[-1]
        marked = attribution.rank_with_feedback(index, qf, {last: True}, ScoreOptions(), k=24)
        assert marked.set_index("id").loc[last, "mark"] == "yes"
        assert int(marked.set_index("id").loc[last, "rank"]) < 24  # a confirmed hit moves up
        assert marked.attrs["feedback"]["n_relevant"] == 1
        with pytest.raises(InputDataError, match="not in"):
            attribution.rank_with_feedback(index, qf, {"nope": True}, ScoreOptions())


def test_index_feedback_shows_the_yes_rows_then_k_unmarked_rows_then_the_no_rows(hs_index, tiny_llama):
    """`top_with_feedback` returns the rows as the page shows them: the rows marked yes (by score), the k best
    unmarked rows, the rows marked no; under a filter, marked rows outside it are left out. Scores are the feedback
    ranker's, row by row."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    with RiseIndex.open(hs_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        base = attribution.rank(index, qf, ScoreOptions(), k=24)["id"].tolist()
        marks = {base[-1]: True, base[5]: True, base[0]: False, base[10]: False}
        got = attribution.rank_with_feedback(index, qf, marks, ScoreOptions(), k=4)
        assert got["mark"].tolist() == ["yes", "yes", "", "", "", "", "no", "no"]
        assert set(got["id"][:2]) == {base[-1], base[5]} and set(got["id"][-2:]) == {base[0], base[10]}
        for part in (got[:2], got[2:6], got[6:]):
            assert part["score"].is_monotonic_decreasing
        everything = attribution.rank_with_feedback(index, qf, marks, ScoreOptions(), k=24)
        unmarked = everything[everything["mark"] == ""]
        assert len(everything) == 24 and got["id"][2:6].tolist() == unmarked["id"][:4].tolist()
        assert unmarked["score"].is_monotonic_decreasing and unmarked["score"].iloc[0] >= got["score"].iloc[5]
        even = attribution.rank_with_feedback(index, qf, marks, ScoreOptions(), k=4, where="label = 0")
        labels = index.samples().set_index("id")["label"]
        assert (labels[even["id"]] == 0).all()
        assert [m for i, m in zip(even["id"], even["mark"], strict=True) if m] == [
            "yes" if marks[i] else "no" for i in got["id"] if i in marks and labels[i] == 0]


def test_three_misses_on_an_index_turn_the_ranking(hs_index, tiny_llama, monkeypatch):
    """On a built index under the default (auto) weighting, with the behaviour test silent and the turn on
    (`FeedbackConfig(turn_after=3)`; off by default, where three misses keep the view): three no-marks on the shown
    top rows rank with the view the gate weighed less (`adaptive.feedback_turn`), and equal the feedback ranker
    started from that view; a yes-mark turns back."""
    from index_helpers import patch_finding

    from rise_core import adaptive, attribution
    from rise_core.feedback import FeedbackConfig, lift_lines
    from rise_core.store import RiseIndex

    turn = FeedbackConfig(turn_after=3)

    patch_finding(monkeypatch, lambda *a, **k: None)
    auto = ScoreOptions.preset("default")
    with RiseIndex.open(hs_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        resolved = attribution.index_weighting(index, qf, auto)
        other = adaptive.feedback_turn(auto, resolved.choice)
        assert other is not None and math.isfinite(resolved.choice.gate)
        shown = attribution.top(index, qf, auto, k=24)
        ids = index.rows_frame(shown.rows[:4].tolist())["id"].tolist()
        misses = {i: False for i in ids[:3]}
        assert not attribution.top_with_feedback(index, qf, misses, auto, k=24).feedback["turned"]  # the default
        got = attribution.top_with_feedback(index, qf, misses, auto, k=24, config=turn)
        assert got.feedback["turned"]
        fm = index.feature_matrix()
        want = attribution.feedback_ranker(fm, qf, resolved.options, turn, start=other)(
            {index.row_of(i): False for i in ids[:3]})
        # the same scores, in order (float32 on the page's path: 1e-6 relative; ties may break either way)
        assert sorted(got.rows.tolist()) == list(range(24))
        np.testing.assert_allclose(got.scores.numpy(), want.total[got.rows.numpy()], rtol=1e-6, atol=1e-6)
        missed = {index.row_of(i) for i in misses}
        assert set(got.rows[-3:].tolist()) == missed  # the rows marked no are shown last
        for part in (got.scores[:-3], got.scores[-3:]):  # each group by its score
            assert bool((part[:-1] >= part[1:]).all())
        assert got.feedback["weights"] == pytest.approx(want.weights, rel=1e-12)
        assert any("turned to the other view" in line for line in lift_lines(got.feedback, len(index)))
        back = attribution.top_with_feedback(index, qf, {**misses, ids[3]: True}, auto, k=24, config=turn)
        assert not back.feedback["turned"]


def test_feedback_curves_give_each_method_its_own_strength():
    """With no FeedbackConfig given, each method runs at its chosen strength (METHOD_FEEDBACK): BM25's curve equals
    the one run at beta 2 explicitly, and a given config applies to every method."""
    from rise_core.evaluation import Task
    from rise_core.feedback_eval import METHOD_FEEDBACK, feedback_curves
    from rise_core.methods import BM25
    from rise_core.samples import Sample

    words = "cat dog bank money moon star tree river".split()
    rng = np.random.default_rng(0)
    pool = [Sample(text=" ".join(rng.choice(words, 6)), id=f"r{i}", label=int(i % 3 == 0)) for i in range(30)]
    queries = [Sample(text="cat moon river", id="q0"), Sample(text="bank money dog", id="q1")]
    task = Task("t", pool, np.array([s.label for s in pool]), queries, (10,))
    assert METHOD_FEEDBACK[BM25].beta == 2.0
    default = feedback_curves(task, None, methods=(BM25,), n_marks=(1, 3, 5))
    explicit = feedback_curves(task, None, methods=(BM25,), n_marks=(1, 3, 5),
                               feedback=FeedbackConfig(beta=2.0, gamma=1.0))
    assert default.equals(explicit)
    weak = feedback_curves(task, None, methods=(BM25,), n_marks=(1, 3, 5), feedback=FeedbackConfig(beta=0.01))
    assert not default.equals(weak)  # the strength is what moved it
