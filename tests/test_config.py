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
    # our default spends the same 1536 values per sample on the hidden factor (see README)
    assert preset("default").bytes_per_sample() == cfg.bytes_per_sample() == 2 * 12 * 128
    opts = ScoreOptions()
    assert (opts.lambda_rh, opts.lambda_gh) == (0.7, 1.0)


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
    assert a.diff(a.replace(k_r=32, seed=1)) == {"k_r": (a.k_r, 32), "seed": (42, 1)}
    assert RiseConfig.from_dict(a.to_dict()) == a


def test_unknown_fields_and_presets_listed():
    with pytest.raises(ConfigError, match="valid fields"):
        RiseConfig.from_dict({"k_r": 8, "bogus": 1})
    with pytest.raises(ConfigError, match="paper"):
        preset("nope")
    assert set(PRESETS) >= {"paper", "default"}
    with pytest.raises(ConfigError):
        ScoreOptions(sample_norm="l1")
