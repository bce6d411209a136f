"""The package as users install it: bundled data found the same way everywhere, presets, and a real wheel install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from index_helpers import save_tiny_model

from rise_core import bundled
from rise_core.cli import main
from rise_core.config import PRESETS, ScoreOptions, preset, preset_scoring
from rise_core.errors import ConfigError, InputDataError

REPO = Path(__file__).resolve().parent.parent


def test_data_dir_is_the_checkout_data_folder_unless_overridden(tmp_path, monkeypatch):
    monkeypatch.delenv(bundled.DATA_ENV, raising=False)
    assert bundled.data_dir() == REPO / "data"
    assert set(bundled.pool_paths()) == {"howdy", "finmed", "brainrot"}
    pool, queries = bundled.task_files("howdy")
    assert pool.name == "howdy_pool.jsonl" and queries.is_file()
    monkeypatch.setenv(bundled.DATA_ENV, str(tmp_path))
    assert bundled.data_dir() == tmp_path and bundled.pool_paths() == {}
    with pytest.raises(InputDataError, match=f"howdy_pool.jsonl, howdy_queries.jsonl not found in {tmp_path}"):
        bundled.task_files("howdy")


def test_bench_refuses_rather_than_time_random_tokens(tmp_path, monkeypatch, capsys):
    model_dir = save_tiny_model(tmp_path / "model")
    monkeypatch.setenv(bundled.DATA_ENV, str(tmp_path / "empty"))
    code = main(["bench", "--model", str(model_dir), "--batch-size", "2", "--seq-len", "16", "--repeats", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "needs 32 tokens of the bundled pools" in err and "RISE_DATA_DIR" in err


def test_paper_preset_carries_joint_sample_normalisation(tmp_path, monkeypatch):
    assert preset_scoring("paper").sample_norm == "joint"
    assert preset_scoring("default") == ScoreOptions(weighting="auto")  # channels chosen per query
    assert preset_scoring("fixed") == ScoreOptions()
    assert preset_scoring("paper", sample_norm="none", lambda_gh=None).sample_norm == "none"
    assert set(PRESETS) == {"default", "paper", "backdoor", "fixed", "retrospective", "compact"}
    assert preset("backdoor") == preset("default") and preset_scoring("backdoor").lambda_hs == 0.0
    with pytest.raises(ConfigError, match="unknown preset"):
        preset_scoring("nope")
    # `rise evaluate --preset paper` scores with it without a second flag
    seen = {}

    def fake_evaluate(task, lm, methods, config, options, **kwargs):
        seen["config"], seen["options"] = config, options
        raise InputDataError("stop here")

    import rise_core.cli.evaluate as cli_eval

    monkeypatch.setattr(cli_eval, "evaluate", fake_evaluate)
    assert main(["evaluate", "--task", "howdy", "--preset", "paper", "--methods", "BM25", "--max-pool", "20",
                 "--out", str(tmp_path)]) == 1
    assert seen["config"] == PRESETS["paper"] and seen["options"].sample_norm == "joint"


def _build_wheel(out: Path) -> Path:
    # build from a copy: an in-tree build/ folder would keep files deleted since the last build and ship them
    src = out.parent / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                              "indexes", "results", ".rise_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                    str(src)], check=True, capture_output=True)
    (wheel,) = out.glob("rise_core-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel_install(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The wheel installed into its own folder, with an environment that imports it (not the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(root / "dist")
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RISE_DATA_DIR", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    return target, env


def test_wheel_ships_the_bundled_pools(tmp_path):
    names = zipfile.ZipFile(_build_wheel(tmp_path)).namelist()
    for task in ("howdy", "finmed", "brainrot"):
        assert f"rise_core/demo_data/{task}_pool.jsonl" in names
        assert f"rise_core/demo_data/{task}_queries.jsonl" in names
    assert "rise_core/demo_data/howdy_heldout_prompts.jsonl" in names
    for f in ("adapter_config.json", "adapter_model.safetensors", "rise_adapter.json", "README.md"):
        assert f"rise_core/demo_data/adapters/howdy_backdoor/{f}" in names  # the backdoored demo model
    assert "rise_core/demo_data/demo_index/demo-howdy-all-retrospective.duckdb" in names  # the demo's shipped index


def test_installed_wheel_finds_its_data_and_runs_evaluate(wheel_install, tmp_path):
    target, env = wheel_install
    # run from a folder with no data/ near it: everything must come from the installed package
    where = subprocess.run([sys.executable, "-c", "import rise_core, rise_core.bundled as b; "
                            "print(rise_core.__file__); print(b.data_dir())"], cwd=tmp_path, env=env, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    assert where[0].startswith(str(target)) and where[1] == str(target / "rise_core" / "demo_data")
    model_dir = save_tiny_model(tmp_path / "model")
    rise = [str(target / "bin" / "rise")]  # the console script pip wrote, as a user runs it
    run = subprocess.run([*rise, "evaluate", "--task", "howdy", "--max-pool", "60", "--max-queries", "3",
                          "--model", str(model_dir), "--methods", "RISE,Hidden-cosine,BM25", "--out", "res"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "pool 60" in run.stderr and (tmp_path / "res" / "howdy_methods.csv").is_file()
    bench = subprocess.run([*rise, "bench", "--model", str(model_dir), "--batch-size", "2", "--seq-len", "16",
                            "--repeats", "1", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bench.returncode == 0, bench.stderr
    assert json.loads(bench.stdout)["seq_len"] == 16


@pytest.mark.slow
def test_installed_wheel_runs_on_the_embedded_model(wheel_install, tmp_path):
    """The issue's acceptance commands, verbatim, on the embedded default model from an installed wheel."""
    target, env = wheel_install
    rise = [str(target / "bin" / "rise")]  # the console script pip wrote, as a user runs it
    run = subprocess.run([*rise, "evaluate", "--task", "howdy", "--max-pool", "60", "--max-queries", "3"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "| RISE" in run.stdout
    bench = subprocess.run([*rise, "bench", "--batch-size", "2", "--seq-len", "64", "--repeats", "1", "--json"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bench.returncode == 0, bench.stderr
    assert json.loads(bench.stdout)["time_ratio"] > 0
