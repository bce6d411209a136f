"""Query-time scoring against dense math; token explanations sum to channel scores."""

from __future__ import annotations

import numpy as np
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
    ex.fit_hidden_mean(ex.pool_mean_subset(CORPUS))
    feats = ex.extract(CORPUS)
    return ex, feats


@pytest.mark.parametrize("mode", ["channel", "joint", "none"])
@pytest.mark.parametrize("lambdas", [(0.3, 1.7, 0.0), (0.3, 1.7, 0.9), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)],
                         ids=["rh+gh", "rh+gh+hs", "hs-only", "rh-only"])
def test_scores_match_dense_definition(extracted, mode, lambdas):
    """The fused score is the weighted sum of the channels' inner products, each under its sample normalisation
    (dense math on the raw features); 'joint' normalises over the RH/GH channels it weighs only."""
    _, feats = extracted
    fm = FeatureMatrix.from_features(feats, dtype=torch.float64)
    l_rh, l_gh, l_hs = lambdas
    opts = ScoreOptions(lambda_rh=l_rh, lambda_gh=l_gh, lambda_hs=l_hs, sample_norm=mode)
    rh, gh, hs = feats.rh.double(), feats.gh.double(), feats.hs.double()
    if mode == "channel":
        rh, gh = rh / rh.norm(dim=1, keepdim=True), gh / gh.norm(dim=1, keepdim=True)
    elif mode == "joint":
        joint = [x for x, lam in ((rh, l_rh), (gh, l_gh)) if lam != 0] or [rh, gh]
        n = torch.cat(joint, dim=1).norm(dim=1, keepdim=True)
        rh, gh = rh / n, gh / n
    if mode != "none":
        hs = hs / hs.norm(dim=1, keepdim=True)
    queries = [1, 4]
    parts = {c: lam * x @ x[queries].mean(0) for c, lam, x in (("rh", l_rh, rh), ("gh", l_gh, gh), ("hs", l_hs, hs))}
    expected = parts["rh"] + parts["gh"] + parts["hs"]
    got = score_pool(fm, fm.select(queries), opts)
    torch.testing.assert_close(got.total.double(), expected, rtol=1e-5, atol=1e-6)
    for c in ("rh", "gh", "hs"):
        torch.testing.assert_close(getattr(got, c).double(), parts[c], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close((got.rh + got.gh + got.hs).double(), got.total.double())
    per_query = score_each_query(fm, fm.select(queries), opts)
    torch.testing.assert_close(per_query.mean(0).double(), expected, rtol=1e-5, atol=1e-6)


def test_features_without_hs_are_scored_on_rh_and_gh(extracted):
    """lambda_hs weighs HS where the features store it; without it (an old index) the score is RH + GH."""
    _, feats = extracted
    fm = FeatureMatrix.from_features(feats).without_hs()
    weighted = score_pool(fm, fm.select([0]), ScoreOptions(lambda_hs=0.5))
    plain = score_pool(fm, fm.select([0]), ScoreOptions(lambda_hs=0.0))
    assert float(weighted.hs.abs().sum()) == 0.0
    torch.testing.assert_close(weighted.total, plain.total, rtol=0, atol=0)
    torch.testing.assert_close(score_each_query(fm, fm.select([0, 1]), ScoreOptions(lambda_hs=0.5)),
                               score_each_query(fm, fm.select([0, 1]), ScoreOptions(lambda_hs=0.0)), rtol=0, atol=0)
    with_hs = FeatureMatrix.from_features(feats)
    assert float(score_pool(with_hs, with_hs.select([0]), ScoreOptions(lambda_hs=0.5)).hs.abs().sum()) > 0


def test_top_k_and_filter():
    scores = torch.tensor([0.1, 0.9, 0.5, 0.7])
    idx, vals = top_k(scores, 2)
    assert idx.tolist() == [1, 3]
    idx, _ = top_k(scores, 3, allowed=torch.tensor([True, False, True, False]))
    assert idx.tolist() == [2, 0]


@pytest.mark.parametrize("composition", ["outer", "tensor"])
@pytest.mark.parametrize("mode", ["joint", "channel"])
def test_explanations_sum_to_channel_scores(tiny_llama, composition, mode):
    """Per-token contributions of every channel (RH, GH, HS) sum to that channel's score, on the example's side
    and on the query's, for both compositions."""
    ex = RiseExtractor(tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16, composition=composition))
    ex.fit_hidden_mean(ex.pool_mean_subset(CORPUS))
    fm = FeatureMatrix.from_features(ex.extract(CORPUS))
    query = Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket .")
    qf = FeatureMatrix.from_features(ex.extract([query]))
    opts = ScoreOptions(lambda_rh=0.7, lambda_gh=1.0, lambda_hs=0.5, sample_norm=mode)
    scores = score_pool(fm, qf, opts)
    assert all(float(getattr(scores, c).abs().sum()) > 0 for c in ("rh", "gh", "hs"))
    for i in (0, 2):
        ex_attr, q_attr = explain_hit(ex, Sample(text=CORPUS[i]), fm.select([i]), query, qf, opts)
        for attr in (ex_attr, q_attr):
            for c in ("rh", "gh", "hs"):
                assert sum(getattr(attr, c)) == pytest.approx(float(getattr(scores, c)[i]), rel=1e-4, abs=1e-6)
            assert sum(attr.total) == pytest.approx(float(scores.total[i]), rel=1e-4, abs=1e-6)
        assert ex_attr.rh[0] == ex_attr.hs[0] == 0.0  # the first token is never predicted
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
    several = torch.randn(7, 3, generator=gen)  # several vectors as columns (feedback's marked rows): (N, m)
    for chunk in (1, 4, 64):
        out = matvec(half, several, chunk=chunk)
        assert out.shape == (10, 3) and out.dtype == torch.float32
        torch.testing.assert_close(out, half.float() @ several)  # float32 dot products of 7 terms, any order



def test_marked_rows_similarities_widen_the_matrix_in_chunks(monkeypatch):
    """`feedback.unit_row_scores` (the marked rows' similarities) equals the dense product, the half-precision
    matrix widened a chunk of rows at a time (float32 dot products of 7 terms: 1e-6)."""
    from rise_core import feedback

    gen = torch.Generator().manual_seed(1)
    half = torch.randn(10, 7, generator=gen).half()
    scale = torch.rand(10, generator=gen) + 0.5
    want = (half[[2, 5]].float() @ half.float().T) * scale[None, :] * scale[[2, 5]][:, None]
    for rows in (3, 10, 64):  # chunk boundaries inside, at and beyond the matrix
        monkeypatch.setattr(feedback, "WIDEN_ROWS", rows)
        got = feedback.unit_row_scores(half, scale)([2, 5])
        np.testing.assert_allclose(got, want.double().numpy(), rtol=1e-6, atol=1e-6)
