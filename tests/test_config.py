"""Config validation, stable hashing, presets."""

from __future__ import annotations

import pytest

from rise_core.config import PRESETS, RiseConfig, ScoreOptions, preset
from rise_core.errors import ConfigError


def test_defaults_are_the_papers():
    cfg = preset("paper")
    assert (cfg.tau, cfg.rho_cum, cfg.min_top_l, cfg.k_max, cfg.seq_len, cfg.seed) == (1.0, 0.92, 4, 256, 512, 42)
    assert cfg.counted_positions == "all" and cfg.token_norm and not cfg.center_hidden
    assert (cfg.k_r, cfg.k_h, cfg.k_g) == (64, 12, 64)
    assert cfg.bytes_per_sample() == 2 * 12 * 128  # the paper's 1536 fp16 values per sample


def test_default_is_the_variant_chosen_on_the_tune_sets():
    """docs/EVALUATION.md, "Real held-out data": TensorSketch 64/24/64 + HS (576 values for SmolLM2), no centring, all tokens,
    scored per channel with lambda 1.4 / 1.0 / 1.0: 3648 values per sample for a 576-wide model."""
    cfg = preset("default")
    assert cfg == RiseConfig()
    assert (cfg.k_r, cfg.k_h, cfg.k_g, cfg.composition) == (64, 24, 64, "tensor")
    assert cfg.counted_positions == "all" and not cfg.token_norm and not cfg.center_hidden and cfg.hidden_channel
    assert cfg.bytes_per_sample(576) == 2 * (2 * 64 * 24 + 576) == 2 * 3648
    opts = ScoreOptions()
    assert (opts.lambda_rh, opts.lambda_gh, opts.lambda_hs, opts.sample_norm) == (1.4, 1.0, 1.0, "channel")


@pytest.mark.parametrize("bad", [dict(k_r=0), dict(k_h=-1), dict(tau=0.0), dict(rho_cum=0.0), dict(rho_cum=1.5),
                                 dict(min_top_l=300, k_max=256), dict(counted_positions="prompt"), dict(seq_len=1),
                                 dict(k_g=2.5), dict(seed=-3)])
def test_impossible_values_rejected(bad):
    with pytest.raises(ConfigError):
        RiseConfig(**bad)


def test_fingerprint_is_stable_and_sensitive():
    a, b = RiseConfig(), RiseConfig()
    assert a.fingerprint() == b.fingerprint()
    # known value: changing it means every stored index looks foreign
    assert len(a.fingerprint()) == 16
    assert a.fingerprint() != a.replace(token_norm=not a.token_norm).fingerprint()
    assert a.differences(a.replace(k_r=32, seed=1)) == ["k_r", "seed"]
    assert RiseConfig.from_dict(a.to_dict()) == a


def test_unknown_fields_and_presets_listed():
    with pytest.raises(ConfigError, match="valid fields"):
        RiseConfig.from_dict({"k_r": 8, "bogus": 1})
    with pytest.raises(ConfigError, match="paper"):
        preset("nope")
    assert set(PRESETS) >= {"paper", "default"}
    with pytest.raises(ConfigError):
        ScoreOptions(sample_norm="l1")
