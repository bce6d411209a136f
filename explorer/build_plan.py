"""What the Build index page works out before a build: the index's file name, its size on disk, and the slice of
the pool to index."""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def estimate_index_bytes(config: RiseConfig, n_samples: int, mean_text_bytes: float = 0.0) -> int:
    """Approximate size on disk of an index (an upper estimate: DuckDB compresses some of it): fp16 features, the
    sample text and a per-row overhead, plus the fixed cost of an empty index."""
    return int(INDEX_BASE_BYTES + n_samples * (config.bytes_per_sample() + mean_text_bytes + ROW_OVERHEAD_BYTES))


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
