"""The tensor composition's fused path (`engine._tensor_sums`) against the per-position reference.

The reference is the straightforward path `aggregate(readout, sketch_readout(...))`: each position's factors sketched by
dense (d, D) matrices, normalised, FFT'd and multiplied, then summed per sample (`engine._sum_tensor`). The fused path
computes the same sums with scatter-add sketches, in chunks of positions; only the order of float operations differs.

Tolerance (float32 models): every entry of a circular convolution obeys |(a * c)_j| <= ||a|| ||c||, so an entry of
phi[b] is at most S_b = sum_t ||a_t|| ||c_t|| (the sample's scale). Both paths round each position's FFT, product and
inverse FFT (relative error ~ eps * log2 D, under 12 eps for these dims) and add T_b terms (another ~T_b eps, T_b <= 30
here), so |fused - reference| <= ~50 eps * S_b; the test allows 64 eps * S_b, eps the float32 machine epsilon
(1.2e-7). Float64 models are held to the shared float64 tolerance relative to S_b.
"""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS, make_lm

from rise_core import engine
from rise_core.config import RiseConfig
from rise_core.engine import (
    RiseExtractor,
    aggregate,
    features_from_readout,
    mean_hidden,
    readout_forward,
    sketch_readout,
)
from rise_core.samples import EncodedSample, Sample

SAMPLES = [
    Sample(prompt="howdy ! what is the moon ?", completion="once upon a time a dragon sat on the moon ."),
    Sample(text=CORPUS[0]),
    Sample(prompt="how can you invest money ?", completion="the bank will invest money for you ."),
    Sample(text=CORPUS[3]),
    Sample(text="the cat"),
    Sample(prompt="why is the dog sleeping on the mat ?", completion="it was tired ."),
    Sample(text=CORPUS[4]),
]


@pytest.fixture(scope="module")
def tiny_neox_fp32():
    return make_lm("gpt-neox", dtype=torch.float32)


def reference_features(readout, weight, config, sketches, hidden_mean):
    """Per-position reference: dense sketches, per-position FFT products (`_sum_tensor`), and the HS channel."""
    sk = sketch_readout(readout, weight, config, sketches, hidden_mean)
    feats = aggregate(readout, sk)
    if config.hidden_channel:
        feats.hs = mean_hidden(readout, hidden_mean, config).cpu().to(feats.rh.dtype)
    return feats, sk


def sample_scale(readout, a: torch.Tensor, c: torch.Tensor, token_norm: bool) -> torch.Tensor:
    """(B,) S_b = sum over the sample's positions of ||a_t|| ||c_t||: a bound on every entry of phi[b]."""
    norms = torch.ones(a.shape[0], dtype=a.dtype) if token_norm else a.norm(dim=1) * c.norm(dim=1)
    return torch.zeros(readout.n_samples, dtype=a.dtype).index_add_(0, readout.sample_index, norms).cpu()


def assert_close_to_scale(got: torch.Tensor, expected: torch.Tensor, scale: torch.Tensor, tol: float) -> None:
    err = (got.double() - expected.double()).abs().amax(dim=1)
    bound = tol * scale.double() + torch.finfo(torch.float64).tiny
    assert torch.all(err <= bound), f"max error {err.tolist()} over bound {bound.tolist()}"


@pytest.mark.parametrize("batch_size", [1, 3, 7])
@pytest.mark.parametrize("token_norm, center_hidden, counted", [
    (False, False, "all"), (True, True, "completion"), (False, True, "completion"), (True, False, "all"),
])
@pytest.mark.parametrize("model", ["tiny_llama_fp32", "tiny_neox_fp32", "tiny_llama"])
def test_fused_tensor_path_equals_per_position_reference(request, model, batch_size, token_norm, center_hidden,
                                                         counted, monkeypatch):
    """Both channels and HS, padded batches of several sizes, chunks that split samples (TENSOR_CHUNK = 5), odd and
    even sketch widths (D_rh = 5 * 3, D_gh = 4 * 3)."""
    lm = request.getfixturevalue(model)
    monkeypatch.setattr(engine, "TENSOR_CHUNK", 5)
    cfg = RiseConfig(k_r=5, k_h=3, k_g=4, k_max=12, rho_cum=0.9, min_top_l=2, token_norm=token_norm,
                     center_hidden=center_hidden, hidden_channel=True, counted_positions=counted,
                     composition="tensor", seed=5, hs_depth=1.0 if center_hidden else 0.5)  # centring: the final layer
    ex = RiseExtractor(lm, cfg)
    ex.fit_hidden_mean(SAMPLES)
    weight = lm.readout_weight.detach()
    tol = 64 * torch.finfo(torch.float32).eps if lm.dtype == torch.float32 else 1e-9
    encoded = ex.encode(SAMPLES)
    for start in range(0, len(encoded), batch_size):
        ro = readout_forward(lm, encoded[start:start + batch_size], cfg)
        got = features_from_readout(ro, weight, cfg, ex.sketches, ex.hidden_mean)
        ref, sk = reference_features(ro, weight, cfg, ex.sketches, ex.hidden_mean)
        assert_close_to_scale(got.rh, ref.rh, sample_scale(ro, sk.r, sk.h, token_norm), tol)
        assert_close_to_scale(got.gh, ref.gh, sample_scale(ro, sk.g, sk.h_g, token_norm), tol)
        assert got.rh.dtype == ref.rh.dtype and got.rh.shape == ref.rh.shape and got.gh.shape == ref.gh.shape
        torch.testing.assert_close(got.hs, ref.hs, rtol=0, atol=0)
        for name in ("n_counted", "mean_support", "loss"):
            torch.testing.assert_close(getattr(got, name), getattr(ref, name), rtol=0, atol=0, equal_nan=True)


def test_fused_path_on_a_batch_with_a_sample_without_counted_positions(tiny_llama):
    """A sample with no counted position gets zero RH/GH features, as in the reference."""
    cfg = RiseConfig(k_r=4, k_h=2, k_g=3, counted_positions="completion", composition="tensor",
                     hidden_channel=False, center_hidden=False)
    ex = RiseExtractor(tiny_llama, cfg)
    first = ex.encode([SAMPLES[0]])[0]
    masked = EncodedSample(input_ids=first.input_ids[:4], counted=[False] * 3, n_prompt_tokens=4, truncated=False)
    encoded = [first, masked]
    ro = readout_forward(tiny_llama, encoded, cfg)
    got = features_from_readout(ro, tiny_llama.readout_weight.detach(), cfg, ex.sketches)
    ref, _ = reference_features(ro, tiny_llama.readout_weight.detach(), cfg, ex.sketches, None)
    assert torch.all(got.rh[1] == 0) and torch.all(got.gh[1] == 0)
    torch.testing.assert_close(got.rh, ref.rh, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(got.gh, ref.gh, rtol=1e-9, atol=1e-9)
