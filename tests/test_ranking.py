"""The one ranking type and the one weight rule: every library ranking path returns a `Ranking` whose rows and scores
are those of the plain channel sum (`scoring.score_pool` + `top_k`) under the weights `adaptive.resolve` chose, and
`Ranking.to_frame` is the table `attribution.rank` & co. return."""

from __future__ import annotations

import math

import pytest
import torch
from index_helpers import patch_finding, pool_rows

from rise_core import adaptive, attribution
from rise_core.config import PRESET_SCORING, RiseConfig, ScoreOptions
from rise_core.ranking import Ranking, frame_each
from rise_core.scoring import score_pool, top_k
from rise_core.store import RiseIndex, build_index

SMALL = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64)
QUERIES = ["the cat sat on the mat money", "a dragon story moon tax"]


@pytest.fixture(scope="module")
def backdoor_index(tiny_llama, tmp_path_factory):
    path = tmp_path_factory.mktemp("ranking") / "pool.duckdb"
    build_index(path, pool_rows(30), tiny_llama, SMALL, batch_size=8, preset="backdoor")
    return path


def _expected(fm, query_fm, options, k, allowed=None):
    """Rows and scores by the plain float32 channel sum over every row (the reference every path must equal)."""
    scores = score_pool(fm, query_fm, options)
    rows = top_k(scores.total, k, allowed)[0]
    return rows, scores.take(rows)


@pytest.mark.parametrize("options", [None, PRESET_SCORING["default"], PRESET_SCORING["paper"],
                                     ScoreOptions(lambda_rh=0.3, sample_norm="none")], ids=repr)
def test_every_path_returns_the_channel_sum_of_the_resolved_weights(backdoor_index, tiny_llama, options, monkeypatch):
    """The channel sum of every path; the behaviour test is held off (its span lift, a part of its own, is checked
    against dense lifted scores in test_behaviour.py)."""

    patch_finding(monkeypatch, lambda *a, **k: None)
    attribution.BEHAVIOUR_MEMO.clear()
    with RiseIndex.open(backdoor_index) as index:
        qfm = attribution.query_features(index, tiny_llama, QUERIES)
        fm = index.feature_matrix()
        for query_fm in (qfm, qfm.select([1])):
            resolved = attribution.index_weighting(index, query_fm, options)
            # without options the index's build preset (backdoor: HS left out) chose them, and says so
            assert (resolved.preset_note != "") == (options is None)
            if options is None:
                assert resolved.options == PRESET_SCORING["backdoor"] and "'backdoor'" in resolved.preset_note
            rows, scores = _expected(fm, query_fm, resolved.options, 6)
            # fp16 fast path: exact up to float32 summation order of the rescored rows (1e-5 of unit-scale scores)
            ranking = attribution.top(index, query_fm, options, k=6, search="exact")
            assert isinstance(ranking, Ranking) and ranking.rows.tolist() == rows.tolist()
            assert torch.allclose(ranking.scores, scores.total, atol=1e-5)
            assert torch.allclose(ranking.parts["rh"] + ranking.parts["gh"] + ranking.parts["hs"], ranking.scores)
            valued = attribution.valuation(index, query_fm, options, top_n=6)  # float32 scan: bit for bit
            assert valued.rows.tolist() == rows.tolist() and torch.equal(valued.scores, scores.total)
            assert valued.weighting.options == resolved.options and valued.search is None
            no_marks = attribution.top_with_feedback(index, query_fm, {}, options, k=6)
            assert no_marks.rows.tolist() == rows.tolist() and no_marks.marks == {}


def test_to_frame_is_the_table_of_rank_select_and_feedback(backdoor_index, tiny_llama):
    with RiseIndex.open(backdoor_index) as index:
        qfm = attribution.query_features(index, tiny_llama, QUERIES)
        ranking = attribution.top(index, qfm, None, k=5)
        df = attribution.rank(index, qfm, None, k=5)
        again = ranking.to_frame(index)
        assert df.equals(again) and df.attrs["search"] == again.attrs["search"]
        assert df.attrs["weighting"]["reason"] == again.attrs["weighting"]["reason"]  # (the nan surprise is != itself)
        assert list(df.columns[:6]) == ["rank", "id", "score", "rh", "gh", "hs"]
        assert df["id"].tolist() == ranking.ids(index) and df["score"].tolist() == ranking.scores.tolist()
        assert set(df.attrs) == {"search", "notes", "weighting", "preset_note"} and df.attrs["search"]["path"] == "exact"
        assert (df["hs"] == 0).all()  # the backdoor preset leaves HS out
        each = attribution.rank_each(index, qfm, None, k=3)
        assert each["query"].tolist() == [1, 1, 1, 2, 2, 2]
        assert each.equals(frame_each(attribution.top_each(index, qfm, None, k=3), index))
        top_id = ranking.ids(index)[0]
        marked = attribution.rank_with_feedback(index, qfm, {top_id: False}, None, k=5)
        assert marked.columns[1] == "mark" and marked.attrs["feedback"]["n_irrelevant"] == 1
        assert dict(zip(marked["id"], marked["mark"], strict=True)).get(top_id, "no") == "no"


def test_resolve_asks_for_the_pool_median_only_under_the_per_query_rule():
    asked = []

    def reference() -> float:
        asked.append(1)
        return 2.0

    losses = torch.tensor([3.0, 2.0])  # query mean 2.5: surprise 0.5, the gate's midpoint
    fixed = adaptive.resolve(ScoreOptions(), ("rh", "gh", "hs"), losses, reference)
    assert not asked and fixed.options == ScoreOptions() and math.isnan(fixed.choice.surprise)
    auto = adaptive.resolve(ScoreOptions(weighting="auto"), ("rh", "gh", "hs"), losses, reference)
    assert asked == [1] and auto.choice.gate == 0.5 and auto.options.weighting == "fixed"
    assert (auto.options.lambda_rh, auto.options.lambda_gh, auto.options.lambda_hs) == (0.7, 0.5, 0.5)
    no_hs = adaptive.resolve(ScoreOptions(), ("rh", "gh"), losses, reference)  # HS's weight dropped, with a note
    assert no_hs.options.lambda_hs == 0.0 and len(no_hs.notes) == 1 and "lambda_hs=1" in no_hs.notes[0]
    preset = adaptive.resolve(None, ("rh", "gh", "hs"), losses, reference, build_preset="paper", change="--preset")
    assert preset.applied.options == PRESET_SCORING["paper"] and "'paper'" in preset.preset_note
    unknown = adaptive.resolve(None, ("rh", "gh", "hs"), losses, reference, build_preset="future")
    assert unknown.applied.options == PRESET_SCORING["default"] and not unknown.preset_note  # the library's start too


def test_resolve_applies_overrides_on_the_starting_scoring_as_the_cli_does():
    """`overrides` (flags, sliders) replace the starting scoring's fields; hand-set weights are used as given."""
    never = lambda: pytest.fail("the pool median is asked for only under the per-query rule")  # noqa: E731
    flags = adaptive.resolve(None, ("rh", "gh"), None, never, build_preset="backdoor", change="--preset",
                             overrides={"lambda_rh": 2.0, "lambda_gh": None, "sample_norm": None})
    assert flags.applied.options == PRESET_SCORING["backdoor"].with_overrides(lambda_rh=2.0)
    assert flags.applied.options.weighting == "fixed" and flags.preset_note.startswith("scored with the index's")
    given = adaptive.resolve(PRESET_SCORING["paper"], ("rh", "gh", "hs"), None, lambda: math.nan,
                             build_preset="backdoor", overrides={"sample_norm": "none"})
    assert given.applied.options == PRESET_SCORING["paper"].with_overrides(sample_norm="none")
    assert given.preset_note == ""  # options given: the index's preset is not used


def test_a_methods_scores_give_its_ranking_per_query_and_for_the_set():
    """MethodScores.ranking: one query's k best columns, best first (equal scores keep pool order), or the query
    set's by the mean; a bad query number or k is refused."""
    import numpy as np

    from rise_core.errors import InputDataError
    from rise_core.method_types import MethodScores

    run = MethodScores("m", np.array([[0.1, 0.9, 0.5, 0.9], [0.7, 0.0, 0.2, 0.1]]), ids=("a", "b", "c", "d"))
    first = run.ranking(3, query=0)
    assert first.rows.tolist() == [1, 3, 2] and first.scores.tolist() == [0.9, 0.9, 0.5] and first.query == 0
    assert first.parts == {}
    assert run.ranking(2, query=1).rows.tolist() == [0, 2]
    whole = run.ranking(4)  # means 0.4, 0.45, 0.35, 0.5
    assert whole.rows.tolist() == [3, 1, 0, 2] and whole.query is None
    np.testing.assert_allclose(whole.scores.numpy(), [0.5, 0.45, 0.4, 0.35])
    with pytest.raises(InputDataError, match="not one of the 2"):
        run.ranking(2, query=2)
    with pytest.raises(InputDataError, match="k must be"):
        run.ranking(0)
    with pytest.raises(InputDataError, match="no scores"):
        MethodScores("x", missing="not asked for").ranking(2)


def test_head_keeps_the_best_k_rows_with_their_scores_parts_and_weighting():
    parts = {"rh": torch.tensor([3.0, 2.0, 1.0]), "gh": torch.tensor([0.5, 0.25, 0.0]), "hs": torch.zeros(3)}
    r = Ranking(rows=torch.tensor([7, 2, 5]), scores=torch.tensor([3.5, 2.25, 1.0]), parts=parts, query=1)
    top = r.head(2)
    assert top.rows.tolist() == [7, 2] and top.scores.tolist() == [3.5, 2.25] and top.query == 1
    assert {c: v.tolist() for c, v in top.parts.items()} == {"rh": [3.0, 2.0], "gh": [0.5, 0.25], "hs": [0.0, 0.0]}
    assert len(r.head(10)) == 3 and len(r) == 3  # all of it; the original is unchanged
