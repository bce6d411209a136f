"""`rise bench` on a tiny saved model: both sides time the same batch of real-text tokens, RISE's side runs the
extractor on every position, and the reported rates and ratios come from the measured times (its figures are never
asserted as speeds)."""

from __future__ import annotations

import json

import torch
from index_helpers import save_tiny_model

import rise_core.bench as bench
from rise_core.cli import main
from rise_core.config import RiseConfig
from rise_core.engine import RiseExtractor
from rise_core.models import load_model


def test_bench_prints_ratios(tmp_path, capsys):
    model_dir = save_tiny_model(tmp_path / "model")
    assert main(["bench", "--model", str(model_dir), "--batch-size", "2", "--seq-len", "16", "--repeats", "1",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["dims"] == [64, 24, 64] and res["batch_size"] == 2 and res["seq_len"] == 16
    # the rates and the ratio are the run's own times, up to rounding (seconds to 4 decimals, rates to 1, ratio to 3)
    fwd = (res["forward_s"] - 5e-5, res["forward_s"] + 5e-5)
    rise = (res["rise_s"] - 5e-5, res["rise_s"] + 5e-5)
    assert 32 / fwd[1] - 0.05 <= res["forward_tokens_per_s"] <= 32 / fwd[0] + 0.05
    assert 32 / rise[1] - 0.05 <= res["rise_tokens_per_s"] <= 32 / rise[0] + 0.05
    assert rise[0] / fwd[1] - 5e-4 <= res["time_ratio"] <= rise[1] / fwd[0] + 5e-4


def test_both_sides_time_the_same_batch_and_the_figures_are_its(tmp_path, monkeypatch):
    lm = load_model(str(save_tiny_model(tmp_path / "model")))
    config = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=12)
    forward_ids, rise_calls = [], []
    lm.model.register_forward_pre_hook(lambda mod, args, kwargs: forward_ids.append(kwargs["input_ids"].clone()),
                                       with_kwargs=True)
    real_features = RiseExtractor.features_from_encoded

    def spy_features(self, encoded):
        out = real_features(self, encoded)
        rise_calls.append(([list(e.input_ids) for e in encoded], [list(e.counted) for e in encoded],
                           out.n_counted.tolist(), tuple(out.rh.shape)))
        return out

    monkeypatch.setattr(RiseExtractor, "features_from_encoded", spy_features)
    # known times and peaks, so every derived figure has a hand-computed value; each timed function still runs once
    monkeypatch.setattr(bench, "interleaved_times", lambda fns, device, repeats: [fn() for fn in fns] and [0.5, 2.0])
    peaks = iter([10 * 2**20, 25 * 2**20])
    monkeypatch.setattr(bench, "peak_memory", lambda fn, device: fn() or next(peaks))

    res = bench.run_bench(lm, config, batch_size=3, repeats=1)
    rows = bench.bench_token_rows(lm, 3, 12)
    assert len(rows) == 3 and all(len(r) == 12 for r in rows)
    # the bare forward: twice (memory, time), on exactly those 3 x 12 tokens
    assert len(forward_ids) == 2 and all(torch.equal(ids.cpu(), torch.tensor(rows)) for ids in forward_ids)
    # RISE: twice on the same rows, all 11 next-token positions of each counted, one 16 x 8 RH feature per row
    assert len(rise_calls) == 2
    for ids, counted, n_counted, rh_shape in rise_calls:
        assert ids == rows and counted == [[True] * 11] * 3 and n_counted == [11] * 3 and rh_shape == (3, 16 * 8)
    assert res["forward_s"] == 0.5 and res["rise_s"] == 2.0 and res["time_ratio"] == 4.0
    assert res["forward_tokens_per_s"] == 72.0 and res["rise_tokens_per_s"] == 18.0  # 36 tokens / 0.5 s, / 2 s
    assert res["forward_peak_mb"] == 10.0 and res["rise_peak_mb"] == 25.0 and res["memory_ratio"] == 2.5
    assert res["dims"] == [16, 8, 16] and res["seq_len"] == 12 and res["batch_size"] == 3
