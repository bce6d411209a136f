"""The orthogonal "no" (`FeedbackConfig.orthogonal_no`, `feedback.rocchio`; not served): the "not this" rows' scores
less their part along what the query and the yes rows ask. Checked against the update written out in dense linear
algebra on explicit unit vectors; and the behaviour study's HS-alone variant (`studies.behaviour_rule.ORTHOGONAL_NO`)
against the served update with HS's part swapped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rise_core.errors import InputDataError
from rise_core.feedback import FeedbackConfig, apply_feedback, rocchio, standardise, unit_row_scores
from studies.behaviour_rule import orthogonal_no_ranker

# float64 throughout: the only error is summation order, far below 1e-10 at these sizes
TOL = 1e-10


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _z(v: np.ndarray) -> np.ndarray:
    return (v - v.mean()) / v.std()


def _dense_rows(pool: np.ndarray):
    """RowScores in float64 (`unit_row_scores` works in float32, whose rounding would set the tolerance)."""
    return lambda rows: pool[rows] @ pool.T


@pytest.mark.parametrize("marks", [{3: False}, {3: False, 7: False}, {5: True, 3: False}, {5: True, 8: True, 3: False}])
@pytest.mark.parametrize("beta, gamma", [(1.0, 0.75), (2.0, 1.0)])
def test_orthogonal_no_matches_dense_math(marks, beta, gamma):
    rng = np.random.default_rng(0)
    pool = _unit(rng, 40, 6)
    query = pool[3] + 0.3 * rng.normal(size=6)  # row 3, the first "no", is the query's nearest neighbour
    query_z = _z(pool @ query)
    yes = [r for r, v in marks.items() if v]
    no = [r for r, v in marks.items() if not v]
    asked = query_z + beta * np.mean([_z(pool @ pool[r]) for r in yes], axis=0) if yes else query_z.copy()
    no_mean = np.mean([_z(pool @ pool[r]) for r in no], axis=0)
    centred = asked - asked.mean()
    expected = _z(asked - gamma * beta * (no_mean - (no_mean @ centred) / (centred @ centred) * centred))

    got = rocchio(query_z, _dense_rows(pool), marks, beta, gamma, orthogonal_no=True)
    assert got == pytest.approx(expected, abs=TOL)
    # the "no" part left is orthogonal to what was asked, so where the no rows lean toward it (row 3, the query's
    # nearest neighbour, does) the result keeps closer to it than the served update, which subtracts them whole
    served = rocchio(query_z, _dense_rows(pool), marks, beta, gamma)
    assert np.corrcoef(got, asked)[0, 1] >= np.corrcoef(served, asked)[0, 1] - TOL


def test_orthogonal_no_without_a_no_mark_is_the_served_update():
    with pytest.raises(InputDataError, match="orthogonal_no must be true or false"):
        FeedbackConfig(orthogonal_no="yes")
    rng = np.random.default_rng(1)
    pool = _unit(rng, 30, 5)
    query_z = standardise(pool @ rng.normal(size=5))
    rows = _dense_rows(pool)
    for marks in ({}, {2: True}, {2: True, 9: True}):
        assert rocchio(query_z, rows, marks, 1.0, 0.75, orthogonal_no=True) == pytest.approx(
            rocchio(query_z, rows, marks, 1.0, 0.75), abs=TOL)


def test_in_hs_alone_only_the_hs_part_changes():
    rng = np.random.default_rng(2)
    features = {c: _unit(rng, 30, 4) for c in ("RH", "GH", "HS")}
    query = {c: rng.normal(size=4) for c in features}
    raw = {c: features[c] @ query[c] for c in features}
    rows_fn = {c: unit_row_scores(torch.from_numpy(features[c])) for c in features}
    own = {"RH": 0.4, "GH": 0.3, "HS": 1.2}
    marks = {int(np.argmax(raw["HS"])): False, 5: True}
    cfg = FeedbackConfig()
    served = apply_feedback(raw, rows_fn, marks, own, cfg)
    hs_z = standardise(raw["HS"])
    expected = (served.total - served.parts["HS"]
                + served.weights["HS"] * rocchio(hs_z, rows_fn["HS"], marks, cfg.beta, cfg.gamma, orthogonal_no=True))
    first = np.zeros(30)
    ranker = orthogonal_no_ranker(True, cfg, raw, rows_fn, first, own, None, None)
    assert ranker(marks) == pytest.approx(expected, abs=TOL)
    assert ranker({}) is first  # before any mark, the shown ranking
    everywhere = orthogonal_no_ranker(False, cfg, raw, rows_fn, first, own, None, None)(marks)
    assert not np.allclose(everywhere, ranker(marks))  # the gradient channels' "no" changes too
    assert apply_feedback(raw, rows_fn, marks, own, cfg).total == pytest.approx(served.total, abs=0)  # unchanged
