"""Pseudo-relevance feedback (`FeedbackConfig.pseudo_rows`, `feedback.pseudo_relevance`): after the marks, the best
unmarked rows count as yes-marks at a weight of their own. Checked against the update written out in dense linear
algebra on explicit unit vectors, on a pool where the pseudo rows' own neighbours are the rows still to find, and on
the study variant (`studies.behaviour_rule.PSEUDO_GRID`)."""

from __future__ import annotations

import numpy as np
import pytest
from feedback_math import TOL, dense_rows, unit_rows, z

from rise_core.errors import InputDataError
from rise_core.feedback import (
    MAX_PSEUDO_ROWS,
    FeedbackConfig,
    apply_feedback,
    lift_lines,
    pseudo_relevance,
    standardise,
)


def _channels(seed: int, n: int = 40, d: int = 6):
    rng = np.random.default_rng(seed)
    pools = {c: unit_rows(rng, n, d) for c in ("RH", "GH", "HS")}
    raw = {c: pools[c] @ rng.normal(size=d) for c in pools}
    return pools, raw


@pytest.mark.parametrize("marks", [{4: True}, {4: True, 9: False}, {9: False}, {4: True, 11: True, 9: False}])
@pytest.mark.parametrize("n_rows, weight", [(1, 0.5), (3, 0.5), (5, 1.0)])
def test_pseudo_rows_match_dense_math(marks, n_rows, weight):
    pools, raw = _channels(0)
    rows = {c: dense_rows(p) for c, p in pools.items()}
    base = {"RH": 1.4 * raw["RH"].std(), "GH": raw["GH"].std(), "HS": 0.5 * raw["HS"].std()}
    plain = apply_feedback(raw, rows, marks, base, FeedbackConfig())
    got = apply_feedback(raw, rows, marks, base, FeedbackConfig(pseudo_rows=n_rows, pseudo_weight=weight))

    # the pseudo rows: the plain update's best unmarked rows
    unmarked = [int(r) for r in np.argsort(-plain.total, kind="stable") if int(r) not in marks]
    assert list(got.pseudo_rows) == unmarked[:n_rows]
    # their part: each channel's weight after the marks times the mean z-similarity to them, re-standardised
    like = sum(plain.weights[c] * np.mean([z(pools[c] @ pools[c][r]) for r in unmarked[:n_rows]], axis=0)
               for c in pools)
    expected = weight * plain.total.std() * z(like)
    assert got.parts["pseudo"] == pytest.approx(expected, abs=TOL)
    assert got.total == pytest.approx(plain.total + expected, abs=TOL)
    assert got.total == pytest.approx(np.sum(list(got.parts.values()), axis=0), abs=TOL)
    assert got.weights == plain.weights  # the pseudo rows move no channel weight
    assert not set(got.pseudo_rows) & set(marks)


def test_off_without_marks_or_rows():
    pools, raw = _channels(1)
    rows = {c: dense_rows(p) for c, p in pools.items()}
    base = {c: float(v.std()) for c, v in raw.items()}
    on = FeedbackConfig(pseudo_rows=3)
    unmarked = apply_feedback(raw, rows, {}, base, on)  # no marks: the shown ranking, nothing taken as yes
    assert unmarked.pseudo_rows == () and "pseudo" not in unmarked.parts
    assert unmarked.total == pytest.approx(apply_feedback(raw, rows, {}, base).total, abs=TOL)
    off = apply_feedback(raw, rows, {2: True}, base, FeedbackConfig(pseudo_rows=0))
    assert off.pseudo_rows == () and "pseudo" not in off.parts
    # a flat total has no best rows to follow: no part (and `apply_feedback` then names none)
    assert pseudo_relevance(np.ones(40), rows, base, {2: True}, 3, 0.5) is None
    assert pseudo_relevance(raw["RH"], rows, base, {2: True}, 3, 0.0) is None


def test_the_pseudo_rows_find_their_neighbours():
    """Six relevant rows in two tight groups (A: 0-2, B: 3-5) among 40 others: the query sits between group A and
    the distractors, and a yes-mark on row 0 lifts A. The pseudo rows are A's other two rows; taken as yes, they pull
    group B (alike to A, not to the query) above every distractor, which the plain update leaves among them."""
    rng = np.random.default_rng(3)
    d = 8
    a, b = np.eye(d)[0], (1.5 * np.eye(d)[0] + np.eye(d)[1]) / np.sqrt(3.25)  # B leans toward A (cos 0.83)
    group_a = [a + 0.05 * rng.normal(size=d) for _ in range(3)]
    group_b = [b + 0.05 * rng.normal(size=d) for _ in range(3)]
    distractors = [np.eye(d)[2] * 0.9 + 0.6 * rng.normal(size=d) for _ in range(40)]
    pool = np.array(group_a + group_b + distractors)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    query = np.eye(d)[0] * 0.5 + np.eye(d)[2] * 0.6
    raw = {"HS": pool @ query}
    rows = {"HS": dense_rows(pool)}
    marks = {0: True}
    plain = apply_feedback(raw, rows, marks, {"HS": 1.0}, FeedbackConfig())
    got = apply_feedback(raw, rows, marks, {"HS": 1.0}, FeedbackConfig(pseudo_rows=2, pseudo_weight=1.0))
    assert set(got.pseudo_rows) == {1, 2}  # group A's other rows

    def rank_of_b(total):
        order = [int(r) for r in np.argsort(-total, kind="stable") if int(r) not in marks]
        return max(order.index(r) for r in (3, 4, 5))

    assert rank_of_b(plain.total) == 7  # distractors 10, 16 and 25 among B's rows
    assert rank_of_b(got.total) == 4  # all six relevant rows first (row 0 marked, then five unmarked)


def test_config_and_lines():
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(InputDataError, match="pseudo_rows must be a whole number"):
            FeedbackConfig(pseudo_rows=bad)
    with pytest.raises(InputDataError, match=f"pseudo_rows is at most {MAX_PSEUDO_ROWS}, got {MAX_PSEUDO_ROWS + 1}"):
        FeedbackConfig(pseudo_rows=MAX_PSEUDO_ROWS + 1)
    assert FeedbackConfig(pseudo_rows=MAX_PSEUDO_ROWS).pseudo_rows == MAX_PSEUDO_ROWS
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(InputDataError, match="pseudo_weight must be a finite number"):
            FeedbackConfig(pseudo_weight=bad)
    pools, raw = _channels(4)
    rows = {c: dense_rows(p) for c, p in pools.items()}
    got = apply_feedback(raw, rows, {7: True}, {c: float(v.std()) for c, v in raw.items()},
                         FeedbackConfig(pseudo_rows=4))
    lines = [line for line in lift_lines(vars(got), 40) if "pseudo" in line]
    assert len(lines) == 1 and "The 4 best rows you have not marked" in lines[0]
    assert lift_lines({"pseudo_rows": list(got.pseudo_rows)}, 40) == lines  # a ranking's feedback holds a list
    assert not [line for line in lift_lines({"pseudo_rows": []}, 40) if "pseudo" in line]


def test_the_study_variant_is_the_served_feedback_with_pseudo_rows():
    from studies.behaviour_rule import PSEUDO_GRID, pseudo_variant

    assert len({pseudo_variant(n, w) for n, w in PSEUDO_GRID}) == len(PSEUDO_GRID)
    pools, raw = _channels(5)
    rows = {c: dense_rows(p) for c, p in pools.items()}
    base = {c: float(v.std()) for c, v in raw.items()}
    for n, w in PSEUDO_GRID:
        got = apply_feedback(raw, rows, {3: True, 8: False}, base, FeedbackConfig(pseudo_rows=n, pseudo_weight=w))
        assert len(got.pseudo_rows) == n
        assert standardise(got.total).std() == pytest.approx(1.0)
