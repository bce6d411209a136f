"""The HS channel of another layer (`RiseConfig.hs_depth`), against the layer's output read by a hook.

The direct path reads a decoder layer's output with a forward hook (independent of `output_hidden_states`, which the
engine uses); the tiny models are float64 end to end, so both agree to float64 rounding (FLOAT64_TOL) on any CPU.
Index values are float16 unit vectors (FP16_ULP per entry).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import CORPUS, FLOAT64_TOL, build_tokenizer
from index_helpers import pool_rows
from test_engine import PAIRS

from rise_core import methods
from rise_core.attribution import query_features, rank
from rise_core.compare import hidden_cosine_scores
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import RiseExtractor
from rise_core.errors import ConfigError
from rise_core.models import hs_layer_index, wrap_model
from rise_core.readout_cache import ReadoutCache
from rise_core.samples import Sample
from rise_core.store import RiseIndex, build_index

FP16_ULP = 2.0**-10
POOL = [Sample(text=t) for t in CORPUS] + PAIRS


def _layer_states(lm, ex: RiseExtractor, sample, layer: int) -> torch.Tensor:
    """The output of decoder layer `layer` (1-based: hidden_states[layer]) at the sample's counted positions, read
    by a forward hook, one sample alone (no padding)."""
    enc = ex.encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    seen = []
    block = lm.model.base_model.layers[layer - 1]
    handle = block.register_forward_hook(lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple) else out))
    try:
        with torch.no_grad():
            lm.model(input_ids=ids, attention_mask=torch.ones_like(ids))
    finally:
        handle.remove()
    return seen[0][0][:-1][torch.tensor(enc.counted)]  # position t predicts token t + 1


def test_layer_index_known_answers():
    assert hs_layer_index(1.0, 30) == 30  # the final hidden state
    assert hs_layer_index(0.7, 30) == 21
    assert hs_layer_index(0.5, 2) == 1
    assert hs_layer_index(0.01, 30) == 1  # never the embeddings


def _gpt2(n_layers: int = 4):
    """A tiny float64 GPT-2 (its decoder layers are `h`) with `n_layers` layers, hidden size 32."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = build_tokenizer()
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(tok), n_embd=32, n_layer=n_layers, n_head=4, n_positions=128,
                     attn_implementation="sdpa", pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return wrap_model(GPT2LMHeadModel(cfg).to(torch.float64).eval(), tok, "tiny-gpt2")


def _padded_batch(lm):
    enc = [lm.tokenizer(t)["input_ids"] for t in CORPUS[:3]]
    width = max(map(len, enc))
    ids = torch.tensor([e + [0] * (width - len(e)) for e in enc])
    attn = torch.tensor([[1] * len(e) + [0] * (width - len(e)) for e in enc])
    return ids, attn


@pytest.mark.parametrize("arch", ["llama", "gpt-neox", "gpt2"])
def test_one_layer_read_by_a_hook_equals_output_hidden_states(arch, tiny_lm_of):
    """The engine's layer (a forward hook on that decoder layer) against transformers' `output_hidden_states`, every
    layer inside the model, a right-padded batch; the final and embedding layers take `output_hidden_states`, as does
    a model whose decoder layers are not found. Both paths run the same float64 model: equal to float64 rounding."""
    lm = tiny_lm_of(arch)
    assert lm.decoder_layers() is not None
    ids, attn = _padded_batch(lm)
    with torch.no_grad():
        ref = lm.model.base_model(input_ids=ids, attention_mask=attn, use_cache=False, output_hidden_states=True)
        for layer in range(lm.n_layers + 1):
            final, states = lm.hidden_with_layer(ids, attn, layer)
            torch.testing.assert_close(final, ref.last_hidden_state, **FLOAT64_TOL)
            torch.testing.assert_close(states, ref.hidden_states[layer], **FLOAT64_TOL)
        lm.decoder_layers = lambda: None  # an architecture whose layers are not found: output_hidden_states
        try:
            torch.testing.assert_close(lm.hidden_with_layer(ids, attn, 1)[1], ref.hidden_states[1], **FLOAT64_TOL)
        finally:
            del lm.decoder_layers


@pytest.fixture(scope="module")
def tiny_lm_of():
    from conftest import make_lm

    made = {}
    return lambda arch: made.setdefault(arch, _gpt2() if arch == "gpt2" else make_lm(arch))


@pytest.mark.parametrize("counted", ["completion", "all"])
def test_hs_channel_reads_the_layer_hs_depth_names(tiny_lm, counted):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, counted_positions=counted, hs_depth=0.5)
    assert hs_layer_index(cfg.hs_depth, tiny_lm.n_layers) == 1 < tiny_lm.n_layers
    ex = RiseExtractor(tiny_lm, cfg)
    mean = ex.fit_hidden_mean(POOL)
    # the pool's mean: every counted position of every pool sample at that layer, weighted equally
    states = [_layer_states(tiny_lm, ex, s, 1) for s in POOL]
    torch.testing.assert_close(mean, torch.cat(states).mean(dim=0), **FLOAT64_TOL)
    feats = ex.extract(POOL, batch_size=3)  # padded batches
    for i in range(len(POOL)):
        torch.testing.assert_close(feats.hs[i], states[i].mean(dim=0) - mean, **FLOAT64_TOL)
    # the gradient channels still read the final hidden state: RH and GH equal the final-layer config's
    final = RiseExtractor(tiny_lm, cfg.replace(hs_depth=1.0))
    final.fit_hidden_mean(POOL)
    final_feats = final.extract(POOL, batch_size=3)
    torch.testing.assert_close(feats.rh, final_feats.rh, **FLOAT64_TOL)
    torch.testing.assert_close(feats.gh, final_feats.gh, **FLOAT64_TOL)
    assert not torch.allclose(feats.hs, final_feats.hs)
    # the explanation's per-token HS terms sum to the sample's HS
    tokens = ex.token_sketches(POOL[-1])
    torch.testing.assert_close(tokens.hs.sum(dim=0), feats.hs[-1], **FLOAT64_TOL)


def test_readout_cache_serves_the_layer_and_refuses_another(tiny_llama):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, hs_depth=0.5)
    ex = RiseExtractor(tiny_llama, cfg)
    ex.fit_hidden_mean(ex.pool_mean_subset(POOL))
    direct = ex.extract(POOL, batch_size=4)
    cache = ReadoutCache.for_config(tiny_llama, cfg)
    cache.add(POOL)
    mean = cache.pool_hidden_mean(POOL, cfg)
    torch.testing.assert_close(mean, ex.hidden_mean, **FLOAT64_TOL)
    fm = cache.rise_features(POOL, cfg, mean)
    got = fm.hs.double() * fm.hs_norm.double()[:, None]
    torch.testing.assert_close(got, direct.hs.double(), atol=1e-6, rtol=1e-6)  # stored float32 unit rows x norms
    final_cache = ReadoutCache.for_config(tiny_llama, cfg.replace(hs_depth=1.0))
    final_cache.add(POOL[:2])
    with pytest.raises(ConfigError, match="hs_depth"):
        final_cache.rise_features(POOL[:2], cfg, mean)
    assert cache.identity() != final_cache.identity()  # a saved cache of one is not loaded as the other


def test_index_with_another_layer_ranks_and_hidden_cosine_needs_the_forward_pass(tmp_path, tiny_llama):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, hs_depth=0.5)
    rows = pool_rows(12)
    build_index(tmp_path / "ix", rows, tiny_llama, cfg, batch_size=3)
    index = RiseIndex.open(tmp_path / "ix")
    assert index.config.hs_depth == 0.5 and not index.stores_final_hidden
    texts = [r["text"] for r in rows]
    ex = RiseExtractor(tiny_llama, cfg)
    ex.fit_hidden_mean(ex.pool_mean_subset(texts))  # the build's mean: the same layer, the same rows
    torch.testing.assert_close(index.hidden_mean.double(), ex.hidden_mean.double(), **FLOAT64_TOL)
    direct = ex.extract(texts, batch_size=2)
    fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
    by_id = {r["id"]: i for i, r in enumerate(rows)}
    for row, sample_id in enumerate(ids):
        unit = direct.hs[by_id[sample_id]] / direct.hs[by_id[sample_id]].norm()
        assert (fm.hs[row].double() - unit).abs().max() <= FP16_ULP
    qfm = query_features(index, tiny_llama, texts[0])
    torch.testing.assert_close(qfm.hs.double() * qfm.hs_norm.double()[:, None], direct.hs[:1].double(),
                               atol=1e-6, rtol=1e-6)  # float32 query features
    assert len(rank(index, qfm, k=3)) == 3  # the default scoring (per-query rule) runs on it
    hs_only = rank(index, qfm, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0, lambda_hs=1.0), k=3)
    assert hs_only.iloc[0]["id"] == "s0" and abs(hs_only.iloc[0]["hs"] - 1.0) <= 4 * FP16_ULP  # itself, cosine 1
    with pytest.raises(ConfigError, match="another layer"):
        hidden_cosine_scores(index, qfm)
    assert methods.needs_forward_pass([methods.HIDDEN_COSINE], index)
    # a depth that names the model's last layer (0.75 of 2 layers: layer 2) is the final hidden state: hidden cosine
    # is rebuilt from it, equal to an index of hs_depth 1's
    build_index(tmp_path / "last", rows, tiny_llama, cfg.replace(hs_depth=0.75), batch_size=3)
    build_index(tmp_path / "final", rows, tiny_llama, cfg.replace(hs_depth=1.0), batch_size=3)
    last, final = RiseIndex.open(tmp_path / "last"), RiseIndex.open(tmp_path / "final")
    assert last.stores_final_hidden and final.stores_final_hidden
    assert not methods.needs_forward_pass([methods.HIDDEN_COSINE], last)
    np.testing.assert_allclose(hidden_cosine_scores(last, query_features(last, tiny_llama, texts[0])),
                               hidden_cosine_scores(final, query_features(final, tiny_llama, texts[0])), atol=1e-6)


def test_config_checks_hs_depth_and_keeps_old_fingerprints():
    for bad in (0.0, -0.5, 1.5, True, "0.5", float("nan")):
        with pytest.raises(ConfigError, match="hs_depth"):
            RiseConfig(hs_depth=bad)
    with pytest.raises(ConfigError, match="center_hidden"):
        RiseConfig(hs_depth=0.5, center_hidden=True)
    # a manifest written before hs_depth loads at the final layer, with the same fingerprint as before
    old = {k: v for k, v in RiseConfig(hs_depth=1.0).to_dict().items() if k != "hs_depth"}
    loaded = RiseConfig.from_dict(old)
    assert loaded.hs_depth == 1.0
    assert loaded.fingerprint() == RiseConfig(hs_depth=1.0).fingerprint()
    assert RiseConfig(hs_depth=0.5).fingerprint() != RiseConfig(hs_depth=1.0).fingerprint()
    assert np.isclose(RiseConfig.from_dict(RiseConfig(hs_depth=0.7).to_dict()).hs_depth, 0.7)


def test_threads_sharing_the_model_each_get_their_own_layer(tiny_lm_of):
    """Sessions share one model: two threads read different layers of different batches at once, each gets its own
    (a hook that kept the last output it saw handed one thread the other's). Equal to each batch's reference."""
    import threading

    lm = tiny_lm_of("gpt2")
    ids, attn = _padded_batch(lm)
    jobs = {"a": (ids, attn, 1), "b": (ids[:1, :5], attn[:1, :5], 3)}
    with torch.no_grad():
        want = {k: lm.model.base_model(input_ids=i, attention_mask=m, use_cache=False,
                                       output_hidden_states=True).hidden_states[layer]
                for k, (i, m, layer) in jobs.items()}
    start, failures = threading.Barrier(len(jobs)), []

    def run(key: str) -> None:
        i, m, layer = jobs[key]
        start.wait()
        for _ in range(40):
            with torch.no_grad():
                got = lm.hidden_with_layer(i, m, layer)[1]
            if got.shape != want[key].shape or not torch.allclose(got, want[key], **FLOAT64_TOL):
                failures.append(key)

    threads = [threading.Thread(target=run, args=(k,)) for k in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
