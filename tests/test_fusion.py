"""Rank and score fusion against hand-computed answers, and the fused method inside the evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from rise_core.baselines import Scorer
from rise_core.errors import ConfigError
from rise_core.fusion import FusionScorer, fuse, ranks, reciprocal_rank_fusion, zscore_fusion


def test_ranks_are_one_based_best_first_with_average_ties():
    np.testing.assert_array_equal(ranks(np.array([[0.1, 0.9, 0.5, 0.5]])), [[4.0, 1.0, 2.5, 2.5]])


def test_reciprocal_rank_fusion_known_answer():
    a = np.array([[3.0, 1.0, 2.0]])  # order 0, 2, 1
    b = np.array([[10.0, 30.0, 20.0]])  # order 1, 2, 0: another scale, only the order counts
    fused = reciprocal_rank_fusion([a, b], k=60)
    expected = [1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 2 / 62]
    np.testing.assert_allclose(fused[0], expected, rtol=1e-6)  # float32 output: 2^-24 relative rounding
    assert fused[0, 2] < fused[0, 0]  # agreeing on second place loses to first and last: RRF rewards a top rank
    # weights: b alone decides when a weighs nothing
    assert np.argmax(reciprocal_rank_fusion([a, b], weights=[0.0, 1.0])[0]) == 1


def test_zscore_fusion_known_answer_and_constant_rows():
    a = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    b = np.array([[30.0, 20.0, 10.0], [0.0, 1.0, 2.0]])
    z = np.sqrt(1.5)  # (s - mean) / std of (1, 2, 3) is (-1, 0, 1) * sqrt(3/2)
    fused = zscore_fusion([a, b], weights=[2.0, 1.0])
    np.testing.assert_allclose(fused[0], [-z, 0.0, z], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fused[1], [-z, 0.0, z], rtol=1e-6, atol=1e-6)  # the constant row adds nothing


def test_fusion_refuses_bad_input():
    with pytest.raises(ConfigError, match="one shape"):
        fuse([np.zeros((1, 3)), np.zeros((1, 4))])
    with pytest.raises(ConfigError, match="2 weights for 1"):
        fuse([np.zeros((1, 3))], weights=[1.0, 2.0])
    with pytest.raises(ConfigError, match="unknown fusion rule 'max'"):
        fuse([np.zeros((1, 3))], rule="max")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="nothing to fuse"):
        fuse([])


class _Fixed(Scorer):
    def __init__(self, name: str, scores: np.ndarray) -> None:
        self.name, self.scores, self.fitted = name, scores, False

    def fit(self, pool):
        self.fitted = True

    def score(self, queries):
        return self.scores


def test_fusion_scorer_fits_every_part_and_fuses_their_scores():
    a, b = _Fixed("A", np.array([[3.0, 1.0, 2.0]])), _Fixed("B", np.array([[1.0, 3.0, 2.0]]))
    scorer = FusionScorer([a, b], "rrf")
    scorer.fit(["x", "y", "z"])
    assert a.fitted and b.fitted and scorer.name == "A+B"
    np.testing.assert_array_equal(scorer.score(["q"]), reciprocal_rank_fusion([a.scores, b.scores]))


def test_evaluation_runs_rise_fused_with_bm25(tiny_lm):
    from conftest import CORPUS

    from rise_core.config import RiseConfig
    from rise_core.evaluation import Task, evaluate
    from rise_core.samples import Sample

    pool = [Sample(text=t, id=str(i), label=int(i % 3 == 0)) for i, t in enumerate(CORPUS)]
    queries = [Sample(text=CORPUS[0]), Sample(text=CORPUS[3])]
    task = Task("tiny", pool, np.array([s.label for s in pool]), queries, (1, 2))
    report = evaluate(task, tiny_lm, ["RISE", "BM25", "RISE+BM25"], RiseConfig(k_r=8, k_h=8, k_g=8))
    assert set(report.table["method"]) == {"RISE", "BM25", "RISE+BM25 RRF"}  # "RISE+BM25": the old name, an alias
    costs = report.costs
    assert costs.loc["RISE+BM25 RRF", "index_MB"] == costs.loc["RISE", "index_MB"]  # BM25 adds no vectors



def test_a_fused_method_is_charged_the_forward_pass_of_its_lm_part(tiny_lm):
    """The forward pass ran before (another method paid for it): the fused method is still charged its pool's share
    as building, as RISE alone is; BM25 alone (no model) is not."""
    from conftest import CORPUS

    from rise_core.config import RiseConfig
    from rise_core.methods import RISE_BM25, TaskSource, cache_time, get
    from rise_core.readout_cache import ReadoutCache
    from rise_core.samples import Sample

    pool = [Sample(text=t, id=str(i)) for i, t in enumerate(CORPUS)]
    queries = [Sample(text=CORPUS[0])]
    cache = ReadoutCache(tiny_lm)
    cache.add(pool + queries)
    source = TaskSource(pool, queries, cache, RiseConfig(k_r=8, k_h=8, k_g=8))
    assert cache.forward_seconds > 0
    assert get(RISE_BM25).score(source).build_seconds >= cache_time(cache, pool)
