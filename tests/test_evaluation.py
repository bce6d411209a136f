"""The evaluation harness: cached-readout features equal direct extraction; grad sketch is a CountSketch of the
exact LM-head gradient; evaluate/sweep run end to end on a tiny model and pool."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import CORPUS, FLOAT64_TOL
from test_engine import PAIRS, autograd_head_gradient

from rise_core.agreement import agreement_table
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import RiseExtractor
from rise_core.errors import ConfigError
from rise_core.evaluation import AGREEMENT_K, Task, evaluate, sweep
from rise_core.methods import TaskSource, resolve
from rise_core.readout_cache import ReadoutCache, tensor_sketch_pair
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix

SAMPLES = PAIRS + [Sample(text=t) for t in CORPUS]


CACHE_K_MAX = 48  # under the tiny vocabulary (64 tokens): the cache itself forces targets outside its top 48 in


@pytest.mark.parametrize("changes", [
    dict(),  # the default: every position, raw sketches, centred, the HS channel stored
    dict(composition="tensor"),
    dict(composition="tensor", token_norm=True, hidden_channel=False, center_hidden=False),
    dict(counted_positions="completion"),
    dict(token_norm=True),
    dict(center_hidden=False),
    dict(counted_positions="completion", token_norm=True, center_hidden=False),  # the paper's recipe
    dict(tau=2.0),
    dict(tau=0.5, rho_cum=0.5, min_top_l=2),
    dict(k_max=5, rho_cum=0.99),  # fewer candidates than the cache: the cut recovers targets from the nll
    dict(k_max=8, min_top_l=8, rho_cum=0.3, tau=2.0),
    dict(seq_len=8),  # shorter than the cache's: the longer samples lose their trailing positions
])
def test_cached_features_equal_direct_extraction(tiny_lm, changes):
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16, **{"k_max": CACHE_K_MAX, **changes})
    cache = ReadoutCache(tiny_lm, seq_len=512, k_max=CACHE_K_MAX)
    cache.add(SAMPLES, batch_size=3)
    ex = RiseExtractor(tiny_lm, cfg)
    mean = None
    if cfg.needs_hidden_mean:
        mean = ex.fit_hidden_mean(SAMPLES)
        torch.testing.assert_close(cache.hidden_mean(SAMPLES, cfg.counted_positions, cfg.seq_len, cfg), mean,
                                   **FLOAT64_TOL)
    else:
        with pytest.raises(ConfigError, match="hidden_mean"):
            cache.rise_features(SAMPLES, cfg.replace(hidden_channel=True))
    direct = FeatureMatrix.from_features(ex.extract(SAMPLES), dtype=torch.float64)
    cached = cache.rise_features(SAMPLES, cfg, mean)
    # Both paths compute in float64 (the tiny models are float64, and so is what the cache keeps of them), so they
    # agree to ~1e-13 before the end; the cached FeatureMatrix then stores float32 unit vectors (entries within
    # half a float32 ulp at 1.0 of the float64 ones, 2^-24) and both store float32 norms (the same float64 value
    # rounded, 1 ulp apart at most when it lands near a rounding boundary: 2^-23 relative).
    torch.testing.assert_close(cached.rh.double(), direct.rh, rtol=0, atol=2.0**-24)
    torch.testing.assert_close(cached.gh.double(), direct.gh, rtol=0, atol=2.0**-24)
    torch.testing.assert_close(cached.rh_norm, direct.rh_norm, rtol=2.0**-23, atol=0)
    torch.testing.assert_close(cached.gh_norm, direct.gh_norm, rtol=2.0**-23, atol=0)
    assert cached.has_hs == direct.has_hs == cfg.hidden_channel
    if cfg.hidden_channel:
        torch.testing.assert_close(cached.hs.double(), direct.hs, rtol=0, atol=2.0**-24)
        torch.testing.assert_close(cached.hs_norm, direct.hs_norm, rtol=2.0**-23, atol=0)


def test_cache_refuses_a_larger_seq_len_or_k_max(tiny_llama):
    cache = ReadoutCache(tiny_llama, seq_len=64, k_max=16)
    cache.add(PAIRS)
    base = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64, k_max=16, center_hidden=False, hidden_channel=False)
    with pytest.raises(ConfigError, match=r"seq_len=65 exceeds this readout cache's seq_len=64"):
        cache.rise_features(PAIRS, base.replace(seq_len=65))
    with pytest.raises(ConfigError, match=r"k_max=17 exceeds this readout cache's k_max=16"):
        cache.rise_features(PAIRS, base.replace(k_max=17))
    # a cache that keeps the whole vocabulary serves any k_max
    whole = ReadoutCache(tiny_llama, k_max=tiny_llama.vocab_size)
    whole.add(PAIRS)
    a = whole.rise_features(PAIRS, base.replace(seq_len=512, k_max=256))
    b = whole.rise_features(PAIRS, base.replace(seq_len=512, k_max=tiny_llama.vocab_size))
    assert torch.equal(a.rh, b.rh) and torch.equal(a.gh, b.gh)


def test_grad_sketch_is_countsketch_of_exact_head_gradient(tiny_llama):
    k = 24
    cache = ReadoutCache(tiny_llama, grad_sketch_dim=k, seed=7)
    cache.add(PAIRS)
    cs_r, cs_h = tensor_sketch_pair(k, tiny_llama.vocab_size, tiny_llama.hidden_size, 7)
    for _i, sample in enumerate(PAIRS):
        grad = autograd_head_gradient(tiny_llama, sample, "completion")  # (V, d)
        # CountSketch of vec(G) with bucket (eta_r(v) + eta_h(j)) mod k and sign s_r(v) s_h(j)
        v, d = grad.shape
        buckets = (cs_r.buckets[:, None] + cs_h.buckets[None, :]) % k
        signs = cs_r.signs[:, None].double() * cs_h.signs[None, :].double()
        expected = torch.zeros(k, dtype=torch.float64).index_add_(0, buckets.reshape(-1),
                                                                  (grad * signs).reshape(-1))
        got = cache.grad_sketch([sample], "completion")[0].double()
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def _tiny_task() -> Task:
    pool = [Sample(prompt="howdy ! what is it ?", completion="once upon a time a dragon sat on the moon .", id="p1",
                   label=1),
            Sample(prompt="howdy ! tell me", completion="a dragon and the moon , once upon a time .", id="p2", label=1)]
    pool += [Sample(text=t, id=f"n{i}", label=0) for i, t in enumerate(CORPUS) if "dragon" not in t]
    queries = [Sample(prompt="howdy ! why ?", completion="once upon a time the moon was a dragon .", id="q1")]
    return Task("tiny", pool, np.array([int(s.label) for s in pool]), queries, ks=(1, 2))


def test_evaluate_end_to_end_tiny(tiny_llama):
    task = _tiny_task()
    methods = ["RISE", "RISE-RH", "RISE-GH", "Hidden-cosine", "Grad-Sketch", "BM25"]  # old spellings are aliases
    shown = ["RISE", "RISE RH only", "RISE GH only", "Hidden cosine", "Grad-Sketch", "BM25"]
    report = evaluate(task, tiny_llama, methods=methods, config=RiseConfig(k_r=16, k_h=4, k_g=16))
    assert set(report.table["method"]) == set(shown)
    assert list(report.costs.index) == shown
    for col in ("auPRC", "auROC", "precision@K", "AP"):
        assert report.table[col].dropna().between(0, 1).all()  # nan = undefined (one class among the 2K)
    # BM25 must find the lexical twins of the query
    bm25 = report.table[(report.table.method == "BM25") & (report.table.K == 2)]
    assert float(bm25["precision@K"].iloc[0]) == 1.0
    assert report.costs.loc["RISE", "index_MB"] > 0 and report.costs.loc["RISE", "build_s"] > 0
    md = report.markdown()
    assert "unified" in md and "RISE GH only" in md


def test_evaluate_reports_agreement_with_rise(tiny_llama):
    """Each other method's agreement row equals agreement_table on that method's and RISE's own scores."""
    task, config = _tiny_task(), RiseConfig(k_r=16, k_h=4, k_g=16)
    methods = ["RISE", "Hidden cosine", "BM25"]
    report = evaluate(task, tiny_llama, methods=methods, config=config)
    assert list(report.agreement.index) == ["Hidden cosine", "BM25"]
    cache = ReadoutCache(tiny_llama, seq_len=config.seq_len, k_max=config.k_max, seed=config.seed)
    cache.add(task.pool + task.queries)
    source = TaskSource(task.pool, task.queries, cache, config, ScoreOptions())
    runs = {m.name: m.score(source).scores for m in resolve(methods)}
    expected = agreement_table(runs, "RISE", AGREEMENT_K)
    pd.testing.assert_frame_equal(report.agreement, expected)
    assert report.agreement.loc["BM25", f"top{AGREEMENT_K}_overlap"] == pytest.approx(1.0)  # k >= pool: everything
    assert "Agreement with RISE" in report.markdown()


def test_query_subset_table_is_the_table_of_those_queries_alone(tiny_llama):
    """A subset's table equals evaluating a task that holds only that subset's queries (known answer: the same
    rankings, fewer queries); an empty subset is left out and a mask of the wrong length is refused."""
    task, config = _tiny_task(), RiseConfig(k_r=16, k_h=4, k_g=16)
    task = Task(task.name, task.pool, task.labels,
                [*task.queries, Sample(prompt="what ?", completion="the bank lost money .", id="q2")], task.ks)
    mask = np.zeros(len(task.queries), bool)
    mask[0] = True
    methods = ["RISE", "BM25"]
    report = evaluate(task, tiny_llama, methods=methods, config=config,
                      query_subsets={"shows the behaviour": mask, "none": np.zeros(len(task.queries), bool)})
    alone = evaluate(Task(task.name, task.pool, task.labels, [task.queries[0]], task.ks), tiny_llama,
                     methods=methods, config=config)
    assert list(report.subsets) == ["shows the behaviour"] and report.subset_sizes == {"shows the behaviour": 1}
    pd.testing.assert_frame_equal(report.subsets["shows the behaviour"], alone.table)
    assert not report.table.equals(alone.table)  # the second query moves the full table: the subset is not a copy
    assert "auPRC over the 1 of" in report.markdown()
    # every query's own values: query q's row is the table of a task holding q alone
    wide = report.per_query_wide("AP", k=1)
    assert wide.index.tolist() == [(0, "q1"), (1, "q2")] and list(wide.columns) == ["RISE", "BM25"]
    assert wide.attrs["K"] == 1 and report.per_query_wide().attrs["K"] == 1  # no K=10 here: the first K
    second = evaluate(Task(task.name, task.pool, task.labels, [task.queries[1]], task.ks), tiny_llama,
                      methods=methods, config=config)
    for q, single in enumerate((alone, second)):
        for method in methods:
            assert wide.loc[q, method].iloc[0] == pytest.approx(
                float(single.table[(single.table.method == method) & (single.table.K == 1)]["AP"].iloc[0]))
    with pytest.raises(Exception, match="K=10 was not evaluated"):
        report.per_query_wide("auPRC", k=10)
    with pytest.raises(Exception, match="entries for"):
        evaluate(task, tiny_llama, methods=["BM25"], config=config, query_subsets={"x": [True]})


def test_sweep_covers_grid(tiny_llama):
    task = _tiny_task()
    cache = ReadoutCache(tiny_llama)
    grid = {"counted_positions": ("completion", "all"), "token_norm": (True, False), "channels": ("RH+GH", "GH")}
    table = sweep(task, cache, RiseConfig(k_r=16, k_h=4, k_g=16), ScoreOptions(), grid)
    assert len(table) == 8
    assert table["unified_auPRC"].is_monotonic_decreasing
