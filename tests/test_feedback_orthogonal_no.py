"""The orthogonal "no" (`FeedbackConfig.orthogonal_no`, `feedback.rocchio`; not served): the "not this" rows' scores
less their part along what the query and the yes rows ask. Checked against the update written out in dense linear
algebra on explicit unit vectors; and the behaviour study's HS-alone variant (`studies.behaviour_rule.ORTHOGONAL_NO`)
against the served update with HS's part swapped."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from feedback_math import TOL, dense_rows, unit_rows, z

from rise_core.errors import InputDataError
from rise_core.feedback import (
    FeedbackConfig,
    apply_feedback,
    flat_view,
    lift_lines,
    rocchio,
    standardise,
    unit_row_scores,
)
from studies.behaviour_rule import orthogonal_no_ranker


@pytest.mark.parametrize("marks", [{3: False}, {3: False, 7: False}, {5: True, 3: False}, {5: True, 8: True, 3: False}])
@pytest.mark.parametrize("beta, gamma", [(1.0, 0.75), (2.0, 1.0)])
def test_orthogonal_no_matches_dense_math(marks, beta, gamma):
    rng = np.random.default_rng(0)
    pool = unit_rows(rng, 40, 6)
    query = pool[3] + 0.3 * rng.normal(size=6)  # row 3, the first "no", is the query's nearest neighbour
    query_z = z(pool @ query)
    yes = [r for r, v in marks.items() if v]
    no = [r for r, v in marks.items() if not v]
    asked = query_z + beta * np.mean([z(pool @ pool[r]) for r in yes], axis=0) if yes else query_z.copy()
    no_mean = np.mean([z(pool @ pool[r]) for r in no], axis=0)
    centred = asked - asked.mean()
    expected = z(asked - gamma * beta * (no_mean - (no_mean @ centred) / (centred @ centred) * centred))

    got = rocchio(query_z, dense_rows(pool), marks, beta, gamma, orthogonal_no=True)
    assert got == pytest.approx(expected, abs=TOL)
    # the "no" part left is orthogonal to what was asked, so where the no rows lean toward it (row 3, the query's
    # nearest neighbour, does) the result keeps closer to it than the served update, which subtracts them whole
    served = rocchio(query_z, dense_rows(pool), marks, beta, gamma)
    assert np.corrcoef(got, asked)[0, 1] >= np.corrcoef(served, asked)[0, 1] - TOL


def test_orthogonal_no_without_a_no_mark_is_the_served_update():
    with pytest.raises(InputDataError, match="orthogonal_no must be true or false"):
        FeedbackConfig(orthogonal_no="yes")
    rng = np.random.default_rng(1)
    pool = unit_rows(rng, 30, 5)
    query_z = standardise(pool @ rng.normal(size=5))
    rows = dense_rows(pool)
    for marks in ({}, {2: True}, {2: True, 9: True}):
        assert rocchio(query_z, rows, marks, 1.0, 0.75, orthogonal_no=True) == pytest.approx(
            rocchio(query_z, rows, marks, 1.0, 0.75), abs=TOL)


def test_in_hs_alone_only_the_hs_part_changes():
    rng = np.random.default_rng(2)
    features = {c: unit_rows(rng, 30, 4) for c in ("RH", "GH", "HS")}
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


def _hs_with_tenth_at(z10: float, n: int = 200, seed: int = 3) -> np.ndarray:
    """Raw HS scores (any scale and shift) whose 10th best row stands exactly `z10` standard deviations above the
    pool's mean: nine rows far above, the 10th placed by solving for it, the rest noise."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    base[:9] = 50.0  # far above: the 10th best is the row set below
    for _ in range(100):  # fixed point: the row's z moves the mean and spread a little
        base[9] += (z10 - z(base)[9]) * base.std()
    return 3.0 * base + 7.0


@pytest.mark.parametrize("z10, flat", [(1.49, True), (1.51, False), (3.0, False)])
def test_a_view_is_flat_when_its_tenth_row_stands_under_the_bound(z10, flat):
    hs = _hs_with_tenth_at(z10)
    assert np.sort(standardise(hs))[::-1][9] == pytest.approx(z10, abs=1e-9)
    assert flat_view({"HS": hs, "RH": np.zeros(len(hs))}, 1.5) is flat
    assert flat_view({"HS": hs}, 0.0) is False  # 0: never
    assert flat_view({"RH": hs, "GH": hs}, 1.5) is False  # no HS taking part: never
    assert flat_view({"HS": hs[:9]}, 1.5) is False  # fewer rows than the first page


def test_where_the_view_is_flat_the_no_is_orthogonal_in_every_channel_else_served():
    rng = np.random.default_rng(4)
    features = {c: unit_rows(rng, 200, 4) for c in ("RH", "GH")}
    raw = {c: features[c] @ rng.normal(size=4) for c in features}
    rows_fn = {c: unit_row_scores(torch.from_numpy(features[c])) for c in features}
    hs_rows = rng.normal(size=(200, 3))
    rows_fn["HS"] = lambda rows: hs_rows[rows] @ hs_rows.T
    own = {"RH": 0.4, "GH": 0.3, "HS": 1.0}
    marks = {int(np.argmax(raw["RH"])): False, 17: True}
    gated = FeedbackConfig(flat_below=1.5)
    for z10, flat in ((1.2, True), (2.5, False)):
        channels = {**raw, "HS": _hs_with_tenth_at(z10)}
        got = apply_feedback(channels, rows_fn, marks, own, gated)
        want = apply_feedback(channels, rows_fn, marks, own, FeedbackConfig(orthogonal_no=flat))
        assert got.total == pytest.approx(want.total, abs=TOL)
        assert got.orthogonal_no is flat
        said = [line for line in lift_lines(vars(got), 200) if "representation view is flat" in line]
        assert len(said) == int(flat)  # the page and `rise query --marks` say so, only where it applied
        assert not np.allclose(want.total, apply_feedback(channels, rows_fn, marks, own, FeedbackConfig(
            orthogonal_no=not flat)).total)  # the two updates differ here: the gate chose between them
    # with yes marks alone there is no "no" to take orthogonally: said so, and the update is the served one
    only_yes = apply_feedback({**raw, "HS": _hs_with_tenth_at(1.2)}, rows_fn, {17: True}, own, gated)
    assert only_yes.orthogonal_no is False
    with pytest.raises(InputDataError, match="flat_below must be a finite number >= 0"):
        FeedbackConfig(flat_below=-1.0)
