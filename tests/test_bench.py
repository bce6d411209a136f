"""`rise bench` runs end to end on a tiny saved model (its figures are printed, never asserted)."""

from __future__ import annotations

import json

from index_helpers import save_tiny_model

from rise_core.cli import main


def test_bench_prints_ratios(tmp_path, capsys):
    model_dir = save_tiny_model(tmp_path / "model")
    assert main(["bench", "--model", str(model_dir), "--batch-size", "2", "--seq-len", "16", "--repeats", "1",
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["dims"] == [64, 24, 64] and res["batch_size"] == 2 and res["seq_len"] == 16
    assert res["forward_s"] > 0 and res["rise_s"] > 0 and res["time_ratio"] > 0
