"""Every registered method's (Q, N) scores of a tiny task and a tiny index, against values recorded before the
methods were rewritten to score through one path (issue #33): a rewrite that changes any method's numbers fails here.

Recorded with the conftest tiny llama (float64, seed 0) by running this file with RISE_RECORD_METHOD_SCORES=1.
Tolerance: 1e-5 absolute and relative. The scorers return float32 (unit roundoff 6e-8), and their sums run over up to
a few hundred terms whose order depends on the CPU's kernels (ATEN_CPU_CAPABILITY default / avx2 / avx512) and the
thread count: a few hundred roundoffs, about 1e-5 at worst (Grad-Sketch moved by 1.6e-6 between kernels here). A
changed method moves scores by far more."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from index_helpers import pool_rows

from rise_core import methods
from rise_core.attribution import query_features
from rise_core.compare import fit_bm25, fit_embeddings, forward_vectors
from rise_core.config import RiseConfig
from rise_core.methods import IndexSource, TaskSource
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from rise_core.samples import Sample
from rise_core.store import RiseIndex, build_index

RECORDED = Path(__file__).parent / "data" / "method_scores.npz"
RECORD = bool(os.environ.get("RISE_RECORD_METHOD_SCORES"))
CFG = RiseConfig(k_r=16, k_h=8, k_g=16, hidden_channel=True, hs_depth=1.0)  # the HS layer the values were recorded with
QUERIES = [Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket ."),
           Sample(text="the bank lost money and the stock market crashed .")]
N_POOL = 10


@pytest.fixture(scope="module")
def task_scores(tiny_llama) -> dict[str, np.ndarray]:
    pool = [Sample.coerce(r) for r in pool_rows(N_POOL)]
    cache = ReadoutCache.for_config(tiny_llama, CFG, grad_sketch_dim=grad_sketch_dim(CFG, tiny_llama.hidden_size))
    cache.add(pool + QUERIES)
    source = TaskSource(pool, QUERIES, cache, CFG)
    return {f"task/{m.name}": m.score(source).scores for m in methods.REGISTRY.values()}


@pytest.fixture(scope="module")
def index_scores(tiny_llama, tmp_path_factory) -> dict[str, np.ndarray]:
    path = tmp_path_factory.mktemp("recorded") / "hs.duckdb"
    build_index(path, pool_rows(N_POOL), tiny_llama, CFG, batch_size=4)
    with RiseIndex.open(path) as index:
        source = IndexSource(index, QUERIES, query_features(index, tiny_llama, QUERIES), bm25=fit_bm25(index),
                             embeddings=lambda: fit_embeddings(index),
                             forward=forward_vectors(tiny_llama, index.sample_list(), index.config), lm=tiny_llama)
        out = {}
        for m in methods.REGISTRY.values():
            run = m.score(source)
            out[f"index/{m.name}"] = run.scores if run.available else np.array([])
        return out


def test_every_method_scores_as_recorded(task_scores, index_scores):
    got = {**task_scores, **index_scores}
    if RECORD:
        np.savez(RECORDED, **got)
    recorded = np.load(RECORDED)
    assert sorted(recorded.files) == sorted(got), "a method was added or removed: record again"
    bad = {}
    for key in recorded.files:
        if got[key].shape != recorded[key].shape or not np.allclose(got[key], recorded[key], rtol=1e-5, atol=1e-5):
            bad[key] = float(np.abs(got[key] - recorded[key]).max()) if got[key].shape == recorded[key].shape else -1
    assert not bad, bad
    # the index side ran every method (an empty record would compare nothing)
    assert all(recorded[k].shape == (len(QUERIES), N_POOL) for k in recorded.files), \
        {k: recorded[k].shape for k in recorded.files}
