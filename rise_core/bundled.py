"""The bundled demo pools: one rule for where they live, shared by the library, the CLI, the benchmark and the app.

In a source checkout they are the repository's `data/` folder; an installed wheel carries the same files as
`rise_core/demo_data` (pyproject maps that package to `data/`). `RISE_DATA_DIR` overrides both.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from .errors import InputDataError

DATA_ENV = "RISE_DATA_DIR"
POOL_SUFFIX = "_pool.jsonl"
QUERIES_SUFFIX = "_queries.jsonl"


def data_dir() -> Path:
    """The folder of bundled pools: $RISE_DATA_DIR, else the installed package data, else the checkout's data/."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    installed = Path(str(resources.files("rise_core"))) / "demo_data"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "data"


def pool_paths(folder: str | Path | None = None) -> dict[str, Path]:
    """{name: path} of the `<name>_pool.jsonl` files in `folder` (default: `data_dir()`), sorted by name."""
    d = Path(folder) if folder is not None else data_dir()
    if not d.is_dir():
        return {}
    return {p.name[: -len(POOL_SUFFIX)]: p for p in sorted(d.glob(f"*{POOL_SUFFIX}"))}


def task_files(name: str, folder: str | Path | None = None) -> tuple[Path, Path]:
    """(pool, queries) paths of a bundled task; InputDataError naming the folder when either is missing."""
    d = Path(folder) if folder is not None else data_dir()
    pool, queries = d / f"{name}{POOL_SUFFIX}", d / f"{name}{QUERIES_SUFFIX}"
    missing = [p.name for p in (pool, queries) if not p.is_file()]
    if missing:
        raise InputDataError(f"bundled task {name!r}: {', '.join(missing)} not found in {d}; set {DATA_ENV} to the "
                             "folder holding the demo pools (the repository's data/)")
    return pool, queries


def queries_for_pool(pool_path: str | Path) -> Path | None:
    """The query file that goes with a bundled pool (howdy_pool.jsonl -> howdy_queries.jsonl), if present."""
    p = Path(pool_path)
    if not p.name.endswith(POOL_SUFFIX):
        return None
    q = p.with_name(p.name[: -len(POOL_SUFFIX)] + QUERIES_SUFFIX)
    return q if q.is_file() else None
