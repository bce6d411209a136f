"""`benchmarks/` is a package run as `python -m benchmarks.NAME`: every module imports as `benchmarks.NAME` from the
repository root, and none edits sys.path to reach its siblings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py") if p.stem != "__init__")


def test_benchmarks_import_as_a_package():
    assert {"dev_tasks", "choose_defaults", "concurrent_load", "trigger_rank"} <= set(MODULES)
    for name in MODULES:
        source = (ROOT / "benchmarks" / f"{name}.py").read_text()
        assert "Path(__file__).resolve().parent))" not in source, f"{name} reaches its siblings through sys.path"
    code = f"import importlib; [importlib.import_module('benchmarks.' + m) for m in {MODULES!r}]"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_benchmark_runs_with_dash_m():
    out = subprocess.run([sys.executable, "-m", "benchmarks.choose_defaults", "--help"], check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert "usage" in out
