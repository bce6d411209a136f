"""What the Build index page works out before a build: the index's file name, its size on disk, and the slice of
the pool to index."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rise_core.ingest import PoolData

if TYPE_CHECKING:
    import pandas as pd

    from rise_core.config import RiseConfig

# Rough DuckDB cost of one stored sample beyond its features and text (id, stats, row overhead), and of an empty
# index (file blocks, manifest, sketch hashes); measured on DuckDB 1.x indexes of 100-500 samples.
ROW_OVERHEAD_BYTES = 96
INDEX_BASE_BYTES = 3 * 1024**2


def estimate_index_bytes(config: RiseConfig, n_samples: int, mean_text_bytes: float = 0.0,
                         hidden_size: int | None = None) -> int:
    """Approximate size on disk of an index (an upper estimate: DuckDB compresses some of it): fp16 features, the
    sample text and a per-row overhead, plus the fixed cost of an empty index.

    The HS channel (`hidden_size` fp16 values per sample, when the config stores it) counts only when the model's
    hidden size is given: without it the estimate leaves HS out and is low by 2 * hidden_size bytes per sample."""
    features = config.bytes_per_sample(hidden_size or 0)
    return int(INDEX_BASE_BYTES + n_samples * (features + mean_text_bytes + ROW_OVERHEAD_BYTES))


def feature_summary(config: RiseConfig, hidden_size: int | None = None) -> str:
    """The stored fp16 values per sample, spelt out: K_h·(K_r+K_g), plus the HS channel's hidden size."""
    rhgh = f"{config.k_h}·({config.k_r}+{config.k_g})"
    if not config.hidden_channel:
        return rhgh
    return f"{rhgh} + {hidden_size} (HS)" if hidden_size else f"{rhgh} + the model's hidden size (HS, not counted)"


def model_hidden_size(model_id: str) -> int | None:
    """The hidden size of a model from its config.json, without loading it: a local checkpoint directory, or the
    embedded default once converted; None when it is not known without the model (e.g. a hub id not downloaded)."""
    from rise_core.default_model import DEFAULT_MODEL_ID, default_cache_dir

    model_id = model_id.strip()
    directory = default_cache_dir() / DEFAULT_MODEL_ID if model_id == DEFAULT_MODEL_ID else Path(model_id).expanduser()
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    config = config.get("text_config", config) if isinstance(config, dict) else {}
    size = next((config.get(key) for key in ("hidden_size", "n_embd", "d_model") if key in config), None)
    return size if isinstance(size, int) and size > 0 else None


def mean_text_bytes(df: pd.DataFrame, columns: Sequence[str | None]) -> float:
    """Mean UTF-8 size of the given text columns per row (for the index-size estimate)."""
    cols = [c for c in columns if c and c in df.columns]
    if df.empty or not cols:
        return 0.0
    total = sum(df[c].fillna("").astype(str).str.encode("utf-8").str.len().sum() for c in cols)
    return float(total) / len(df)


def slug(text: str, max_len: int = 48) -> str:
    """A file-name-safe version of `text` (letters, digits, '-', '_', '.')."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip()).strip("-.")
    return (s or "index")[:max_len]


def index_file_name(model_id: str, pool_name: str) -> str:
    """Default index file name for a model and a pool, e.g. 'howdy__smollm2-135m-instruct.duckdb'."""
    return f"{slug(pool_name)}__{slug(Path(model_id).name or model_id)}.duckdb"


def head_pool(pool: PoolData, n_rows: int) -> PoolData:
    """The samples of a pool that come from its first `n_rows` source rows (0: all of them)."""
    if not n_rows:
        return pool
    keep = [i for i, row in enumerate(pool.rows) if row <= n_rows]
    return PoolData(samples=[pool.samples[i] for i in keep], skipped=[r for r in pool.skipped if r[0] <= n_rows],
                    rows=[pool.rows[i] for i in keep], n_rows=min(pool.n_rows, n_rows), source=pool.source,
                    fields=pool.fields)


DEMO_PREFIX = "demo-"
"""Index names the Home page's demo writes (`demo.demo_index_path`); the Build page leaves them to it."""


@dataclass(frozen=True)
class IndexWrite:
    """What pressing Build would do to the index at the target name, decided before the button: `action` ('create',
    'append', 'replace'), a `question` the user must confirm first ('' when none) or a `refusal` ('' when allowed)."""

    action: str
    question: str = ""
    refusal: str = ""


def plan_index_write(name: str, *, exists: bool, owner: str, sources: Sequence[str], n_samples: int | None,
                     user: str, can_edit: bool, replace: bool, source: str, unreadable: str = "") -> IndexWrite:
    """Who may write an index, and what must be confirmed (docs/SECURITY.md, "Indexes are owned"):
    viewers build nothing; an index is written only by the user who first built it (an index that records no owner,
    built before owners were kept or by the command line, by any editor); names starting with DEMO_PREFIX are the
    demo's; replacing always asks and keeps the old index under a timestamped name; appending rows from a pool other
    than the ones it was built from asks first. A file there that does not open (`unreadable`: why) is never
    appended to; replacing it asks, and keeps it, as for any index."""
    action = "replace" if exists and replace else "append" if exists else "create"
    if not can_edit:
        return IndexWrite(action, refusal="you are a viewer here: viewers query, compare, mark and export; building "
                                          "needs an editor")
    if name.startswith(DEMO_PREFIX):
        return IndexWrite(action, refusal=f"names starting with {DEMO_PREFIX!r} are kept for the Home page's demo, "
                                          "which builds its own index. Give your index another name")
    if exists and unreadable:
        if action == "append":
            return IndexWrite(action, refusal=f"{name} cannot be read ({unreadable}), so nothing can be added to it. "
                                              "Tick 'Start from scratch' to build a new index in its place (the file "
                                              "is kept beside it under a timestamped name), or give your index "
                                              "another name")
        return IndexWrite(action, question=f"{name} cannot be read ({unreadable}), so who built it is not known. "
                                           "Replace it with a new build? The file is kept beside it under a "
                                           f"timestamped name ({Path(name).stem}.<time>.duckdb).")
    if exists and owner and owner != user:
        return IndexWrite(action, refusal=f"{name} was built by {owner}: only they may add to or replace it. Give "
                                          "your index another name")
    if action == "replace":
        size = f" ({n_samples} samples)" if n_samples is not None else ""
        return IndexWrite(action, question=f"Replace {name}{size} with a new build? The old index is kept beside it "
                                           f"under a timestamped name ({Path(name).stem}.<time>.duckdb).")
    if action == "append" and sources and source not in sources:
        return IndexWrite(action, question=f"{name} was built from {', '.join(sources)}; add the rows of {source} to "
                                           "it? (Rows whose id it already has are skipped.)")
    return IndexWrite(action)
