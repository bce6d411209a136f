"""The HS channel, the TensorSketch composition and the mean-fit rules, against direct computation.

The tiny models are float64 end to end, so the direct and the engine's paths agree to float64 rounding
(FLOAT64_TOL) on any CPU; index values are stored as float16 unit vectors (FP16_ULP per entry).
"""

from __future__ import annotations

import json

import duckdb
import pytest
import torch
from conftest import CORPUS, FLOAT64_TOL
from index_helpers import pool_rows
from test_engine import EXACT_SAMPLES, PAIRS, autograd_head_gradient

import rise_core.config as config_module
import rise_core.engine as engine_module
import rise_core.store.batches as batches_module
from rise_core.attribution import query_features, rank
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import RiseExtractor
from rise_core.samples import Sample
from rise_core.sketch import CountSketch, SketchSet, tensor_product
from rise_core.store import RiseIndex, build_index

FP16_ULP = 2.0**-10


def _direct_mean_hidden(lm, ex: RiseExtractor, sample) -> torch.Tensor:
    """Mean final hidden state of one sample over its counted positions, from the model alone (no padding)."""
    enc = ex.encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        hidden = lm.final_hidden(ids, torch.ones_like(ids))[0]
    return hidden[:-1][torch.tensor(enc.counted)].mean(dim=0)  # position t predicts token t + 1


@pytest.mark.parametrize("counted", ["completion", "all"])
def test_hs_channel_is_the_centred_mean_hidden_state(tiny_lm, counted):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, counted_positions=counted, center_hidden=False, hidden_channel=True,
                     hs_depth=1.0)  # the final hidden state (another layer: test_hs_depth.py)
    ex = RiseExtractor(tiny_lm, cfg)
    pool = [Sample(text=t) for t in CORPUS] + PAIRS
    mean = ex.fit_hidden_mean(pool)
    # the pool mean: every counted position of every pool sample, weighted equally
    states = []
    for s in pool:
        enc = ex.encode([s])[0]
        ids = torch.tensor([enc.input_ids])
        with torch.no_grad():
            states.append(tiny_lm.final_hidden(ids, torch.ones_like(ids))[0][:-1][torch.tensor(enc.counted)])
    torch.testing.assert_close(mean, torch.cat(states).mean(dim=0), **FLOAT64_TOL)
    feats = ex.extract(pool, batch_size=3)  # padded batches
    for i, s in enumerate(pool):
        torch.testing.assert_close(feats.hs[i], _direct_mean_hidden(tiny_lm, ex, s) - mean, **FLOAT64_TOL)
    # centring the sketched factors does not change HS, only RH/GH
    centred = RiseExtractor(tiny_lm, cfg.replace(center_hidden=True), hidden_mean=mean).extract(pool, batch_size=3)
    torch.testing.assert_close(centred.hs, feats.hs, **FLOAT64_TOL)
    assert not torch.allclose(centred.rh, feats.rh)


def test_tensor_product_is_countsketch_of_the_outer_product():
    """TS(x, y) = CS_1(x) (circular convolution) CS_2(y) is the CountSketch of vec(x y^T) with bucket
    (eta_1(i) + eta_2(j)) mod D and sign s_1(i) s_2(j), computed here entry by entry."""
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(3, 50, generator=gen, dtype=torch.float64), torch.randn(3, 12, generator=gen,
                                                                               dtype=torch.float64)
    d = 20
    cs1, cs2 = CountSketch.from_seed(50, d, 1), CountSketch.from_seed(12, d, 2)
    got = tensor_product(cs1.apply_dense(x), cs2.apply_dense(y))
    buckets = (cs1.buckets[:, None] + cs2.buckets[None, :]) % d
    signs = cs1.signs[:, None].double() * cs2.signs[None, :].double()
    for row in range(3):
        outer = x[row][:, None] * y[row][None, :]
        expected = torch.zeros(d, dtype=torch.float64).index_add_(0, buckets.reshape(-1), (outer * signs).reshape(-1))
        torch.testing.assert_close(got[row], expected, **FLOAT64_TOL)


def test_tensor_sketch_inner_products_are_unbiased_over_seeds():
    """E<TS(a, b), TS(c, e)> = <a c^T... > = (a.c)(b.e) over the hash draws: the mean of 2000 independent sketches
    lies within 4 standard errors of the exact value (a fixed set of seeds, so the test is deterministic)."""
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(60, generator=gen, dtype=torch.float64), torch.randn(10, generator=gen, dtype=torch.float64)
    c, e = 0.5 * a + torch.randn(60, generator=gen, dtype=torch.float64), b + 0.3 * torch.randn(
        10, generator=gen, dtype=torch.float64)
    exact = float((a @ c) * (b @ e))
    estimates = []
    for s in range(2000):
        s1, s2 = CountSketch.from_seed(60, 16, 2 * s), CountSketch.from_seed(10, 16, 2 * s + 1)
        estimates.append(float(tensor_product(s1.apply_dense(a), s2.apply_dense(b))
                               @ tensor_product(s1.apply_dense(c), s2.apply_dense(e))))
    estimates = torch.tensor(estimates)
    stderr = float(estimates.std() / len(estimates) ** 0.5)
    assert abs(float(estimates.mean()) - exact) < 4 * stderr
    assert estimates.std() > 0


@pytest.mark.parametrize("counted", ["completion", "all"])
def test_tensor_rh_is_a_countsketch_of_the_autograd_head_gradient(tiny_lm, counted):
    """With the full support (rho_cum = 1, every token a candidate) and no centring, the tensor composition's
    phi_RH = sum_t TS(r_t, h_t) is the CountSketch of the exact LM-head gradient sum_t r_t h_t^T under the hash
    pair (CS_r, CS_h); phi_GH that of W^T grad under (CS_g, CS_h_g)."""
    v = tiny_lm.vocab_size
    cfg = RiseConfig(k_r=8, k_h=4, k_g=6, k_max=v, rho_cum=1.0, min_top_l=1, center_hidden=False,
                     hidden_channel=False, counted_positions=counted, composition="tensor", seed=11)
    ex = RiseExtractor(tiny_lm, cfg)
    feats = ex.extract(EXACT_SAMPLES, batch_size=3)
    sk, w = ex.sketches, tiny_lm.readout_weight.detach()

    def countsketch_of(matrix: torch.Tensor, left: CountSketch, right: CountSketch) -> torch.Tensor:
        dim = left.sketch_dim
        buckets = (left.buckets[:, None] + right.buckets[None, :]) % dim
        signs = left.signs[:, None].double() * right.signs[None, :].double()
        return torch.zeros(dim, dtype=torch.float64).index_add_(0, buckets.reshape(-1), (matrix * signs).reshape(-1))

    for i, sample in enumerate(EXACT_SAMPLES):
        grad = autograd_head_gradient(tiny_lm, sample, counted)  # (V, d)
        torch.testing.assert_close(feats.rh[i], countsketch_of(grad, sk.r, sk.h), **FLOAT64_TOL)
        torch.testing.assert_close(feats.gh[i], countsketch_of(w.T @ grad, sk.g, sk.h_g), **FLOAT64_TOL)


def test_tensor_composition_keeps_its_hashes_and_dims(tiny_llama):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=6, composition="tensor")
    sk = SketchSet.for_config(tiny_llama.vocab_size, tiny_llama.hidden_size, cfg)
    assert sk.composition == "tensor" and (sk.r.sketch_dim, sk.g.sketch_dim) == cfg.feature_dims
    assert sk.h_g is not None and sk.h_g.digest() != sk.h.digest()
    outer = SketchSet.for_config(tiny_llama.vocab_size, tiny_llama.hidden_size, cfg.replace(composition="outer"))
    with pytest.raises(Exception, match="composition"):
        RiseExtractor(tiny_llama, cfg, sketches=outer)


def test_first_build_fits_the_mean_on_a_seeded_subset_in_one_forward_pass(tmp_path, tiny_llama, monkeypatch):
    """The mean comes from a seeded random subset (not the file's first rows), and that subset's forward passes give
    its features too: every pool sample goes through the model exactly once."""
    monkeypatch.setattr(config_module, "HIDDEN_MEAN_SAMPLES", 6)
    seen: list[int] = []
    real = engine_module.readout_forward

    def counting(lm, encoded, config):
        seen.append(len(encoded))
        return real(lm, encoded, config)

    monkeypatch.setattr(engine_module, "readout_forward", counting)
    monkeypatch.setattr(batches_module, "readout_forward", counting)
    rows = pool_rows(16)
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, center_hidden=True, hidden_channel=True, seed=5, hs_depth=1.0)
    path = tmp_path / "pool.duckdb"
    build_index(path, rows, tiny_llama, cfg, batch_size=4)
    assert sum(seen) == len(rows)
    fit_rows = config_module.mean_fit_rows(len(rows), cfg.seed)
    assert len(fit_rows) == 6 and fit_rows != list(range(6))
    expected = RiseExtractor(tiny_llama, cfg).fit_hidden_mean([rows[i]["text"] for i in fit_rows])
    with RiseIndex.open(path) as index:
        torch.testing.assert_close(index._hidden_mean.double(), expected.double(), **FLOAT64_TOL)
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
    # the reused readouts give the same features as extracting afresh with the fitted mean
    direct = RiseExtractor(tiny_llama, cfg, hidden_mean=expected).extract([r["text"] for r in rows])
    by_id = {r["id"]: i for i, r in enumerate(rows)}
    for row, sample_id in enumerate(ids):
        i = by_id[sample_id]
        for name in ("rh", "gh", "hs"):
            unit = getattr(direct, name)[i] / getattr(direct, name)[i].norm()
            assert (getattr(fm, name)[row].double() - unit).abs().max() <= FP16_ULP


def _make_legacy(path) -> None:
    """Rewrite an index built with hidden_channel off into the version-1 layout: no hs columns, no
    composition/hidden_channel in its config, format_version 1."""
    con = duckdb.connect(str(path))
    try:
        con.execute("ALTER TABLE rise_features DROP COLUMN hs")
        con.execute("ALTER TABLE rise_features DROP COLUMN hs_norm")
        raw = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM rise_manifest").fetchall()}
        cfg = {k: v for k, v in raw["config"].items() if k not in ("composition", "hidden_channel")}
        layout = {k: v for k, v in raw["feature_layout"].items() if k not in ("composition", "hs")}
        for key, value in (("config", cfg), ("feature_layout", layout), ("format_version", 1)):
            con.execute("UPDATE rise_manifest SET value = ? WHERE key = ?", [json.dumps(value), key])
    finally:
        con.close()


def test_a_version_1_index_reads_ranks_and_appends(tmp_path, tiny_llama):
    # what a version-1 index can hold: the outer composition and no HS channel (LEGACY_FIELDS)
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, center_hidden=False, hidden_channel=False, composition="outer")
    path, fresh = tmp_path / "v1.duckdb", tmp_path / "v2.duckdb"
    rows = pool_rows(12)
    build_index(path, rows[:8], tiny_llama, cfg, batch_size=4)
    _make_legacy(path)
    with RiseIndex.open(path) as index:
        assert index.manifest.format_version == 1 and index.config == cfg
        assert not index.feature_matrix().has_hs
        query = Sample(prompt="what did the cat do ?", completion="the cat sat .")
        qf = query_features(index, tiny_llama, query)
        assert not qf.has_hs
        ranked = rank(index, qf, ScoreOptions(lambda_hs=0.0), k=3)
        assert len(ranked) == 3 and (ranked["hs"] == 0).all()
        # no HS stored: lambda_hs has nothing to weigh, the ranking is RH + GH's
        weighted = rank(index, qf, ScoreOptions(lambda_hs=1.0), k=3)
        assert weighted["id"].tolist() == ranked["id"].tolist() and (weighted["hs"] == 0).all()
    build_index(path, rows[8:], tiny_llama, batch_size=4)  # an append to the old layout
    build_index(fresh, rows, tiny_llama, cfg, batch_size=4)
    with RiseIndex.open(path) as old, RiseIndex.open(fresh) as new:
        assert len(old) == len(new) == 12
        old_rh = dict(zip(old.samples()["id"], old.feature_matrix().rh.float(), strict=True))
        new_rh = dict(zip(new.samples()["id"], new.feature_matrix().rh.float(), strict=True))
        assert old_rh.keys() == new_rh.keys()
        for key, value in old_rh.items():  # the same float16 values: the same features, rounded the same way
            assert torch.equal(value, new_rh[key])
