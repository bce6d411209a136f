"""Query-time scoring against dense math; token explanations sum to channel scores."""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS

from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import RiseExtractor
from rise_core.explain import explain_hit
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix, score_each_query, score_pool, top_k


@pytest.fixture(scope="module")
def extracted(tiny_llama):
    ex = RiseExtractor(tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16))
    feats = ex.extract(CORPUS)
    return ex, feats


@pytest.mark.parametrize("mode", ["channel", "joint", "none"])
def test_scores_match_dense_definition(extracted, mode):
    _, feats = extracted
    fm = FeatureMatrix.from_features(feats, dtype=torch.float64)
    opts = ScoreOptions(lambda_rh=0.3, lambda_gh=1.7, sample_norm=mode)
    rh, gh = feats.rh.double(), feats.gh.double()
    if mode == "channel":
        rh, gh = rh / rh.norm(dim=1, keepdim=True), gh / gh.norm(dim=1, keepdim=True)
    elif mode == "joint":
        n = torch.cat([rh, gh], dim=1).norm(dim=1, keepdim=True)
        rh, gh = rh / n, gh / n
    queries = [1, 4]
    q_rh, q_gh = rh[queries].mean(0), gh[queries].mean(0)
    expected = 0.3 * rh @ q_rh + 1.7 * gh @ q_gh
    got = score_pool(fm, fm.select(queries), opts)
    torch.testing.assert_close(got.total.double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close((got.rh + got.gh).double(), got.total.double())
    per_query = score_each_query(fm, fm.select(queries), opts)
    torch.testing.assert_close(per_query.mean(0).double(), expected, rtol=1e-5, atol=1e-6)


def test_top_k_and_filter():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.7])
    idx, vals = top_k(scores, 2)
    assert idx.tolist() == [1, 3]
    idx, _ = top_k(scores, 3, allowed=torch.tensor([True, False, True, False]))
    assert idx.tolist() == [2, 0]


def test_explanations_sum_to_channel_scores(extracted):
    ex, feats = extracted
    fm = FeatureMatrix.from_features(feats)
    query = Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket .")
    qf = FeatureMatrix.from_features(ex.extract([query]))
    opts = ScoreOptions(sample_norm="joint")
    scores = score_pool(fm, qf, opts)
    for i in (0, 2):
        ex_attr, q_attr = explain_hit(ex, Sample(text=CORPUS[i]), fm.select([i]), query, qf, opts)
        assert sum(ex_attr.rh) == pytest.approx(float(scores.rh[i]), rel=1e-4, abs=1e-6)
        assert sum(ex_attr.gh) == pytest.approx(float(scores.gh[i]), rel=1e-4, abs=1e-6)
        assert sum(q_attr.total) == pytest.approx(float(scores.total[i]), rel=1e-4, abs=1e-6)
        assert ex_attr.rh[0] == 0.0  # the first token is never predicted
        assert len(q_attr.tokens) > len(query.completion.split())


def test_matvec_widens_half_rows_chunk_by_chunk():
    from rise_core.scoring import matvec

    gen = torch.Generator().manual_seed(0)
    half = torch.randn(10, 7, generator=gen).half()
    vec = torch.randn(7, generator=gen)
    expected = half.float() @ vec
    for chunk in (1, 3, 10, 64):  # chunk boundaries inside, at and beyond the matrix
        out = matvec(half, vec, chunk=chunk)
        assert out.dtype == torch.float32
        torch.testing.assert_close(out, expected)
