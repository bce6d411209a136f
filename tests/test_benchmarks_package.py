"""`benchmarks/` (the product's benchmarks) and `studies/` (research studies) are packages run from the repository root
as `python -m PACKAGE.NAME`: every module imports, and answers --help, from a fresh clone with no dev pools beside it
(../shared), reading nothing there; and every `benchmarks.X` / `studies.X` command and `benchmarks/X.py` /
`studies/X.py` file the README, the docs, the tests, the scripts and the two packages name exists."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("benchmarks", "studies")
MODULES = {pkg: sorted(p.stem for p in (ROOT / pkg).glob("*.py") if p.stem != "__init__") for pkg in PACKAGES}
CLONED = ("rise_core", "explorer", "scripts", *PACKAGES)  # what importing them needs
REFERENCES = re.compile(r"\b(benchmarks|studies)(?:\.([a-z_]+)\b|/([a-z_]+)\.py\b)")
# the places that name commands and files: the docs, the tests, the scripts and the two packages themselves
REFERRING = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "tests").glob("*.py")),
             *sorted((ROOT / "scripts").iterdir()), *(p for pkg in PACKAGES for p in sorted((ROOT / pkg).glob("*.py")))]

CHECK = """
import contextlib, importlib, io, json, os, runpy, sys

shared = os.path.join(os.path.dirname(os.getcwd()), "shared")
opened = []


def watch(event, args):
    if event == "open" and isinstance(args[0], (str, os.PathLike)):
        path = os.path.abspath(os.fspath(args[0]))
        if path.startswith(shared):
            opened.append(path)


sys.addaudithook(watch)
modules = json.loads(sys.argv[1])
for name in modules:
    importlib.import_module(name)
import rise_core, studies.tasks
helps = {}
for name in modules:
    if name.endswith((".harness", ".tasks", ".st_client")):
        continue  # libraries of the others, no command
    sys.argv = [name, "--help"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    helps[name] = out.getvalue()
print(json.dumps({"rise_core": rise_core.__file__, "dev_dir": str(studies.tasks.dev_dir()), "opened": opened,
                  "helps": helps}))
"""


def test_the_packages_split_product_benchmarks_from_studies():
    assert {"harness", "vocab_pass", "query_latency", "ann_scale", "concurrent_load", "distributed_build",
            "bergson_compare"} <= set(MODULES["benchmarks"])
    assert {"tasks", "dev_eval", "cache_readouts", "choose_defaults", "report_defaults", "query_channels",
            "feedback_choice", "retro_tasks", "retrospective_choices", "trigger_rank",
            "ann_recall_real"} <= set(MODULES["studies"])
    assert not set(MODULES["benchmarks"]) & set(MODULES["studies"])
    for pkg, names in MODULES.items():
        for name in names:
            source = (ROOT / pkg / f"{name}.py").read_text()
            edits = [line for line in source.splitlines() if "sys.path.insert" in line]
            # only the tests' tiny offline environment may be reached that way (the load test serves it)
            assert all('ROOT / "tests"' in line for line in edits), f"{pkg}.{name} edits sys.path to reach its siblings"


def _fresh_clone(dest: Path) -> Path:
    """The working tree's files (tracked, and untracked but not ignored) of the packages the imports need."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *CLONED],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def test_every_module_imports_and_answers_help_from_a_fresh_clone_without_the_dev_pools(tmp_path):
    clone = _fresh_clone(tmp_path / "clone")
    modules = [f"{pkg}.{name}" for pkg in PACKAGES for name in MODULES[pkg]]
    env = {k: v for k, v in os.environ.items() if k != "RISE_DEV_DATA_DIR"}
    run = subprocess.run([sys.executable, "-c", CHECK, json.dumps(modules)], cwd=clone, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(out["rise_core"]).resolve().is_relative_to(clone.resolve())  # the clone's code, not an installed copy
    assert out["dev_dir"] == str(tmp_path / "shared" / "data" / "dev") and not (tmp_path / "shared").exists()
    assert out["opened"] == []
    commands = {m for m in modules if not m.endswith((".harness", ".tasks", ".st_client"))}  # libraries, no CLI
    assert set(out["helps"]) == commands
    for name, text in out["helps"].items():
        assert text.startswith("usage:"), (name, text[:200])


def test_every_named_benchmark_and_study_exists():
    named: dict[str, set[str]] = {}
    for path in REFERRING:
        if path.is_file():
            for pkg, dotted, slashed in REFERENCES.findall(path.read_text(encoding="utf-8")):
                named.setdefault(f"{pkg}.{dotted or slashed}", set()).add(path.relative_to(ROOT).as_posix())
    assert "benchmarks.vocab_pass" in named and "studies.choose_defaults" in named  # the scan reads what it should
    missing = {ref: sorted(where) for ref, where in named.items()
               if not (ROOT / ref.replace(".", "/")).with_suffix(".py").is_file()}
    assert missing == {}
