"""The turn after misses (rise_core.feedback.turned, adaptive.feedback_turn): while every mark says "not this" and
there are `turn_after` of them, feedback ranks with the other view's weights; against dense math and known answers,
and on a built index (the matrix path here; the streamed ANN path in test_ann.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rise_core import adaptive
from rise_core.config import ScoreOptions
from rise_core.errors import InputDataError
from rise_core.feedback import (
    FeedbackConfig,
    apply_feedback,
    chosen_view,
    lift_lines,
    other_view_shows,
    turned,
    unit_row_scores,
)

TURN3 = FeedbackConfig(turn_after=3)  # the turn is off by default (FeedbackConfig.turn_after 0); these test it on


def test_the_marks_turn_after_that_many_misses_and_none_yes():
    assert FeedbackConfig().turn_after == 0 and not turned({1: False, 2: False, 3: False}, FeedbackConfig())
    cfg = TURN3
    assert not turned({}, cfg)
    assert not turned({1: False, 2: False}, cfg)
    assert turned({1: False, 2: False, 3: False}, cfg)
    assert turned({1: False, 2: False, 3: False, 4: False}, cfg)
    assert not turned({1: False, 2: False, 3: False, 4: True}, cfg)  # a yes: the marks found the view
    assert turned({1: False}, FeedbackConfig(turn_after=1))
    assert not turned({i: False for i in range(20)}, FeedbackConfig(turn_after=0))  # 0: never


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3", None])
def test_feedback_config_refuses_a_bad_turn_after(bad):
    with pytest.raises(InputDataError, match="turn_after"):
        FeedbackConfig(turn_after=bad)
    with pytest.raises(InputDataError, match="turn_unless_shown"):
        FeedbackConfig(turn_unless_shown=bad)


def _channels(n: int = 40, seed: int = 0):
    """Three channels of unit row vectors: the query's raw scores and the marked rows' similarities."""
    gen = torch.Generator().manual_seed(seed)
    raw, rows_fn = {}, {}
    for c in ("RH", "GH", "HS"):
        m = torch.nn.functional.normalize(torch.randn(n, 6, generator=gen, dtype=torch.float64), dim=1)
        q = torch.nn.functional.normalize(torch.randn(6, generator=gen, dtype=torch.float64), dim=0)
        raw[c] = (m @ q).numpy()
        rows_fn[c] = unit_row_scores(m)
    return raw, rows_fn


def test_after_the_misses_the_feedback_is_the_other_views_exactly():
    """Turned: the same result as feedback started from the other view's weights (same Rocchio, evidence, lifts);
    before the turn, or once a mark says yes, the same as without turn weights at all."""
    raw, rows_fn = _channels()
    base = {"RH": 0.14, "GH": 0.1, "HS": 0.9}
    other = {"RH": 1.4, "GH": 1.0, "HS": 0.0}
    order = np.argsort(-(0.14 * raw["RH"] + 0.1 * raw["GH"] + 0.9 * raw["HS"]), kind="stable")
    misses = {int(r): False for r in order[:3]}
    got = apply_feedback(raw, rows_fn, misses, base, TURN3, turn_weights=other)
    want = apply_feedback(raw, rows_fn, misses, other)
    assert got.turned and not want.turned
    np.testing.assert_array_equal(got.total, want.total)
    assert got.weights == want.weights and set(got.weights) == {"RH", "GH"}
    for marks in (dict(list(misses.items())[:2]), {**misses, int(order[5]): True}):
        got = apply_feedback(raw, rows_fn, marks, base, TURN3, turn_weights=other)
        want = apply_feedback(raw, rows_fn, marks, base)
        assert not got.turned
        np.testing.assert_array_equal(got.total, want.total)
    # turn weights on no channel scored here (an index without HS asked to turn to it): no turn
    kept = apply_feedback({c: raw[c] for c in ("RH", "GH")}, rows_fn, misses, base, TURN3, turn_weights={"HS": 1.0})
    assert not kept.turned and set(kept.weights) == {"RH", "GH"}


def test_three_misses_in_the_leaning_view_bring_up_the_other_views_answers():
    """A known answer: HS ranks the rows in order and the answers (rows 20-22) low; RH + GH rank the answers first and
    every other row level. Starting almost all on HS, three no-marks on HS's top rows leave HS's next rows on top
    without the turn; with it, the top 3 are the answers."""
    n = 30
    answers = [20, 21, 22]
    hs = np.linspace(1.0, 0.0, n)
    grad = np.zeros(n)
    grad[answers] = 1.0
    raw = {"RH": grad.copy(), "GH": grad.copy(), "HS": hs}
    eye = np.eye(n)
    rows_fn = {c: (lambda rows: eye[rows]) for c in raw}  # each row similar to itself only
    base = {"RH": 0.014, "GH": 0.01, "HS": 0.9}
    other = {"RH": 1.4, "GH": 1.0, "HS": 0.0}
    misses = {0: False, 1: False, 2: False}
    stayed = apply_feedback(raw, rows_fn, misses, base, FeedbackConfig(turn_after=0), turn_weights=other)
    assert np.argsort(-stayed.total, kind="stable")[:3].tolist() == [3, 4, 5]
    moved = apply_feedback(raw, rows_fn, misses, base, TURN3, turn_weights=other)
    assert sorted(np.argsort(-moved.total, kind="stable")[:3].tolist()) == answers
    assert chosen_view(moved.weights) == "the gradient view (RH + GH)"


def _gated(query_loss: float, reference: float = 3.0) -> adaptive.ChannelChoice:
    return adaptive.choose(ScoreOptions.preset("default"), query_loss, reference)


def test_the_marks_turn_to_the_view_the_gate_weighed_less():
    auto = ScoreOptions.preset("default")
    assert _gated(2.0).gate < 0.5 and adaptive.feedback_turn(auto, _gated(2.0)) == adaptive.gradient_view(auto)
    assert _gated(9.0).gate > 0.5 and adaptive.feedback_turn(auto, _gated(9.0)) == adaptive.representation_view(auto)
    fired = adaptive.choose(auto, 1.0, 3.0, behaviour=adaptive.BehaviourEvidence("Zorblax", "prompt", 6, 10, 0.1,
                                                                                 1e-5, 0))
    assert adaptive.feedback_turn(auto, fired) is None  # the test, not the gate, chose the gradient view
    assert adaptive.feedback_turn(auto, adaptive.choose(auto, float("nan"), 3.0)) is None  # no loss, no gate
    hand = ScoreOptions(lambda_rh=0.3, lambda_gh=2.0, lambda_hs=0.5)
    assert adaptive.feedback_turn(hand, adaptive.choose(hand, 1.0, 3.0)) is None  # fixed weights: no other view
    no_hs = adaptive.choose(auto, 9.0, 3.0, has_hs=False)
    assert no_hs.gate == 1.0 and adaptive.feedback_turn(auto, no_hs) is None


def test_the_turn_line_names_the_view_and_the_misses():
    lines = lift_lines({"turned": True, "n_irrelevant": 3, "weights": {"rh": 1.4, "gh": 1.0}}, 100)
    assert lines == ['Your 3 marks are all "not this": the ranking turned to the other view, the gradient view '
                     '(RH + GH), until a mark says yes']
    assert lift_lines({"turned": False, "n_irrelevant": 3}, 100) == []



def test_the_other_view_shows_a_missed_row_by_its_own_top_rows():
    """Against dense math: the view's total is the weighted sum of standardised channels; a mark among its top
    `depth` rows (ties: the lower row first) is shown, one below is not; channels without weight do not count."""
    raw = {"RH": np.array([0.0, 3.0, 1.0, 2.0, 2.0]), "GH": np.array([5.0, 0.0, 0.0, 0.0, 0.0]),
           "HS": np.array([9.0, 8.0, 7.0, 6.0, 5.0])}
    grad = {"RH": 1.0, "GH": 0.0, "HS": 0.0}  # RH alone ranks 1, 3, 4, 2, 0
    assert other_view_shows(raw, grad, {1: False}, 1) and not other_view_shows(raw, grad, {3: False}, 1)
    assert other_view_shows(raw, grad, {3: False, 0: False}, 2) and not other_view_shows(raw, grad, {4: False}, 2)
    assert other_view_shows(raw, grad, {4: False}, 3)  # 3 and 4 tie: 3 first
    assert not other_view_shows(raw, {"HS": 0.0}, {0: False}, 5)  # no weight: no view, nothing shown
    mixed = {"RH": 1.0, "GH": 2.0}
    want = np.argsort(-sum(w * (raw[c] - raw[c].mean()) / raw[c].std() for c, w in mixed.items()), kind="stable")
    assert all(other_view_shows(raw, mixed, {int(r): False}, 1) == (i == 0) for i, r in enumerate(want))


def test_the_turn_waits_where_the_other_view_would_show_the_same_misses():
    """`turn_unless_shown`: with a missed row among the other view's own top rows the marks do not turn (that view
    has nothing else to offer); with none there, they turn as `turn_after` alone does."""
    n = 30
    hs = np.linspace(1.0, 0.0, n)
    grad = np.linspace(0.0, 0.5, n)  # HS's top rows are the gradient view's last ...
    grad[[20, 21, 22]] = 1.0  # ... and its first are the answers
    eye = np.eye(n)
    rows_fn = {c: (lambda rows: eye[rows]) for c in ("RH", "GH", "HS")}
    base = {"RH": 0.014, "GH": 0.01, "HS": 0.9}
    other = {"RH": 1.4, "GH": 1.0, "HS": 0.0}
    gate = FeedbackConfig(turn_after=3, turn_unless_shown=10)
    raw = {"RH": grad.copy(), "GH": grad.copy(), "HS": hs}
    misses = {0: False, 1: False, 2: False}
    moved = apply_feedback(raw, rows_fn, misses, base, gate, turn_weights=other)
    assert moved.turned and sorted(np.argsort(-moved.total, kind="stable")[:3].tolist()) == [20, 21, 22]
    np.testing.assert_array_equal(moved.total, apply_feedback(raw, rows_fn, misses, base, TURN3,
                                                              turn_weights=other).total)
    shown = {**raw, "RH": grad + np.eye(n)[1] * 2.0}  # the gradient view now ranks row 1 (a miss) first
    kept = apply_feedback(shown, rows_fn, misses, base, gate, turn_weights=other)
    assert not kept.turned
    np.testing.assert_array_equal(kept.total, apply_feedback(shown, rows_fn, misses, base, turn_weights=other).total)
    assert apply_feedback(shown, rows_fn, misses, base, TURN3, turn_weights=other).turned  # no check: it turns
