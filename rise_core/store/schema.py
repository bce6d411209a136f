"""The on-disk side of a RISE index: DuckDB schema, manifest and build report, SQL helpers and the array codec.

Layout: docs/INDEX_FORMAT.md. Everything here is stateless; `RiseIndex` (store.index) holds the connection.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import torch

from ..config import RiseConfig
from ..errors import IndexStoreError, RiseError

FORMAT = "rise-index"
FORMAT_VERSION = 2  # 2: rise_features gains the HS channel (hs, hs_norm); version-1 files read as before
FEATURE_DTYPE = np.dtype("<f2")  # stored unit vectors: little-endian float16
WINDOW_BATCHES = 16  # batches per length-sorting window of a build
BUILD_STATUSES = ("building", "complete")

# columns of the `samples` view other than the label and metadata columns; metadata keys with these names are
# exposed as meta_<name> (also the names `rank` adds to its output)
BASE_COLUMNS = ("row", "id", "text", "prompt", "completion", "label", "n_counted", "loss", "mean_support",
                "n_tokens", "truncated")
RESERVED_COLUMNS = frozenset(BASE_COLUMNS) | {"rank", "score", "rh", "gh", "hs", "query", "meta"}

SCHEMA = (
    "CREATE TABLE rise_manifest (key VARCHAR PRIMARY KEY, value JSON NOT NULL)",
    "CREATE TABLE rise_arrays (name VARCHAR PRIMARY KEY, dtype VARCHAR NOT NULL, shape JSON NOT NULL, "
    "data BLOB NOT NULL)",
    "CREATE TABLE rise_samples (row BIGINT PRIMARY KEY, id VARCHAR NOT NULL UNIQUE, text VARCHAR, prompt VARCHAR, "
    "completion VARCHAR, label JSON, meta JSON, content_sha1 VARCHAR NOT NULL, n_tokens INTEGER NOT NULL, "
    "truncated BOOLEAN NOT NULL, added_at TIMESTAMP NOT NULL)",
    "CREATE TABLE rise_features (row BIGINT PRIMARY KEY, rh BLOB NOT NULL, gh BLOB NOT NULL, rh_norm FLOAT NOT NULL, "
    "gh_norm FLOAT NOT NULL, n_counted INTEGER NOT NULL, mean_support FLOAT NOT NULL, loss FLOAT, hs BLOB, "
    "hs_norm FLOAT)",
    "CREATE TABLE rise_columns (name VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, key VARCHAR, "
    "sql_type VARCHAR NOT NULL, position INTEGER NOT NULL)",
)
BASE_LOSSES_TABLE = "rise_base_losses"
"""each row's mean loss under the base model of the index model's adapter (`learned.base_model_losses`): only in the
index of a fine-tune, created when they are first stored"""
BASE_LOSSES_SCHEMA = f"CREATE TABLE IF NOT EXISTS {BASE_LOSSES_TABLE} (row BIGINT PRIMARY KEY, loss FLOAT)"
ARRAY_DTYPES = {"int8": np.int8, "int32": np.int32, "int64": np.int64, "float32": np.float32,
                 "float64": np.float64}


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------------------------
# manifest and report


@dataclass
class IndexManifest:
    """What an index was built with and where its build stands."""

    model_id: str
    model_fingerprint: str
    config: RiseConfig
    sketch_digest: str
    library_version: str
    created_at: str
    updated_at: str
    status: str  # one of BUILD_STATUSES
    n_samples: int
    has_hidden_mean: bool
    model_info: dict[str, Any] = field(default_factory=dict)  # vocab_size, hidden_size, dtype, architecture, ...
    seeds: dict[str, int] = field(default_factory=dict)  # CountSketch seeds of CS_r, CS_h, CS_g
    index_uuid: str = ""
    format_version: int = FORMAT_VERSION
    # the preset it was built for (`rise build --preset`, or the one preset with its config); queries score with that
    # preset's weights unless told otherwise. None: an index written before the field, or built with a config no
    # single preset has (scored as before: the caller's default)
    build_preset: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)  # {"owner": who built it first, "builds": [...]}
    # the builds started and not finished, [{"pool": key, "source": name}]: the index is complete only without them
    unfinished: list[dict[str, str]] = field(default_factory=list)

    @property
    def unfinished_sources(self) -> list[str]:
        """The pools whose builds of the index are not finished, as their builds named them (else their keys)."""
        return [str(b.get("source") or b.get("pool")) for b in self.unfinished]

    @property
    def owner(self) -> str:
        """Who built the index first ('' for an index built before owners were recorded, or outside the app)."""
        return str(self.provenance.get("owner") or "")

    @property
    def sources(self) -> list[str]:
        """The pools the index was built and appended from, in order (as their builders named them)."""
        return list(dict.fromkeys(str(b.get("source") or "") for b in self.provenance.get("builds", [])
                                  if b.get("source")))

    @property
    def dims(self) -> tuple[int, int, int]:
        return self.config.k_r, self.config.k_h, self.config.k_g

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["config"] = self.config.to_dict()
        return out


RELABELLED_SHOWN = 20  # ids a build report keeps of the samples whose label or metadata the pool changes


@dataclass
class BuildReport:
    """Outcome of one `build_index` run."""

    n_added: int
    n_already_present: int
    n_skipped: int
    skipped: list[tuple[int, str]]  # (source row number, reason)
    seconds: float
    stopped: bool  # should_stop() ended the build early; rerun to finish
    n_truncated: int = 0  # added samples cut to seq_len tokens
    n_rows: int = 0  # rows in the source
    n_total: int = 0  # samples in the index afterwards
    index_path: str = ""
    n_base_losses: int = 0  # rows whose loss under the adapter's base model was stored (`store_base_losses`)
    unfinished: list[str] = field(default_factory=list)  # the other pools whose builds of the index are not finished
    replaced: str = ""  # an overwrite that stopped early: where the index it was to replace is kept (`build.replacing`)
    n_relabelled: int = 0  # samples already present whose label or metadata differ in the pool (the index keeps its own)
    relabelled: list[str] = field(default_factory=list)  # the first RELABELLED_SHOWN of their ids

    @property
    def relabelled_note(self) -> str:
        """What the build kept of the samples whose label or metadata the pool changes ("" when none did)."""
        n, ids = self.n_relabelled, ", ".join(map(repr, self.relabelled[:3]))
        if not n:
            return ""
        return (f"{n} sample{'s' if n != 1 else ''} already in the index (e.g. {ids}) {'have' if n != 1 else 'has'} "
                "another label or metadata in the pool: the index keeps what it stored (build a new index, or "
                "overwrite this one, to take the pool's)")

    def note_relabelled(self, ids: Sequence[str]) -> None:
        """Count samples already present whose label or metadata the pool changes (`build.relabelled`)."""
        self.n_relabelled += len(ids)
        self.relabelled.extend(ids[:max(0, RELABELLED_SHOWN - len(self.relabelled))])

    def summary(self) -> str:
        parts = [f"{self.n_added} added", f"{self.n_already_present} already present", f"{self.n_skipped} skipped"]
        if self.n_truncated:
            parts.append(f"{self.n_truncated} truncated to seq_len")
        if self.n_base_losses:
            parts.append(f"{self.n_base_losses} losses under the base model")
        state = ("stopped early (rerun to resume)" if self.stopped else
                 f"not complete: the build of {', '.join(self.unfinished)} was not finished (run it again to finish "
                 "it)" if self.unfinished else "complete")
        notes = f"; the index it was to replace is kept at {self.replaced}" if self.replaced else ""
        if self.n_relabelled:
            notes += f"; {self.relabelled_note}"
        return (f"{self.index_path}: {', '.join(parts)}; {self.n_total} samples in the index; {state} "
                f"in {self.seconds:.1f} s{notes}")


# ---------------------------------------------------------------------------------------------------------------


# DuckDB errors and helpers


def map_duckdb_error(exc: Exception, path: Path, action: str) -> RiseError:
    msg = str(exc)
    low = msg.lower()
    if "not a valid duckdb database file" in low:
        return IndexStoreError(f"{path} is not a RISE index: it is not a DuckDB database file (or its header is "
                               "corrupted)")
    if "could not set lock" in low or "conflicting lock" in low:
        return IndexStoreError(f"{path} is in use by another process (a build writes it, or a reader such as the "
                               f"app has it open while writing was asked); close it there or wait. ({msg})")
    if "different configuration" in low:
        return IndexStoreError(f"{path} is being written in this process (a build is running); try again when it "
                               "finishes")
    if "permission denied" in low or "read-only file system" in low:
        return IndexStoreError(f"cannot {action} {path}: permission denied (read-only file or directory?)")
    if "no such file" in low:
        return IndexStoreError(f"cannot {action} {path}: no such file or directory")
    if "could not read enough bytes" in low:
        return IndexStoreError(f"{path} is truncated or corrupted ({msg.splitlines()[0]}); rebuild it with "
                               "`rise build`")
    if "corrupt" in low or "checksum" in low or isinstance(exc, (duckdb.InternalException, duckdb.FatalException,
                                                                   duckdb.SerializationException)):
        return IndexStoreError(f"{path} is corrupted ({msg.splitlines()[0]}); rebuild it with `rise build`")
    return IndexStoreError(f"{path}: database error while trying to {action}: {msg.splitlines()[0] if msg else exc}")


@contextlib.contextmanager
def db_errors(path: Path, action: str) -> Iterator[None]:
    """DuckDB's errors as the library's (`map_duckdb_error`); a statement that Ctrl-C interrupted as the
    KeyboardInterrupt it was (DuckDB turns the signal into its InterruptException, or a RuntimeError 'Query
    interrupted' when it lands between statements), so the command line says "interrupted" and exits 130."""
    try:
        yield
    except RiseError:
        raise
    except duckdb.InterruptException:
        raise KeyboardInterrupt from None
    except duckdb.Error as exc:
        raise map_duckdb_error(exc, path, action) from exc
    except RuntimeError as exc:
        if str(exc).strip().lower() == "query interrupted":
            raise KeyboardInterrupt from None
        raise


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def json_pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def value_type(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, str):
        return "VARCHAR"
    return "JSON"


def merge_types(a: str | None, b: str | None) -> str | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} == {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "JSON" if "JSON" in (a, b) else "VARCHAR"


def typed_expr(column: str, path: str, sql_type: str) -> str:
    path_sql = sql_string(path)
    if sql_type == "JSON":
        return f"json_extract({column}, {path_sql})"
    if sql_type == "VARCHAR":
        return f"json_extract_string({column}, {path_sql})"
    return f"TRY_CAST(json_extract_string({column}, {path_sql}) AS {sql_type})"


@dataclass
class Column:
    name: str  # column name in the `samples` view
    source: str  # "label" | "meta"
    key: str | None  # metadata key
    sql_type: str
    position: int


def view_sql(columns: Sequence[Column]) -> str:
    """The `samples` view: sample columns, typed label and metadata columns, stats."""
    return "CREATE OR REPLACE VIEW samples AS " + select_sql(columns)


def select_sql(columns: Sequence[Column]) -> str:
    """The query behind the `samples` view. Identifiers and JSON paths come from the user's column names, quoted
    here (DDL cannot take parameters); values never enter SQL text."""
    exprs = []
    label = next((c for c in columns if c.source == "label"), None)
    exprs.append(f"{typed_expr('s.label', '$', label.sql_type)} AS label" if label else
                 "CAST(NULL AS VARCHAR) AS label")
    for col in sorted((c for c in columns if c.source == "meta"), key=lambda c: c.position):
        exprs.append(f"{typed_expr('s.meta', json_pointer(col.key or ''), col.sql_type)} AS {quote_ident(col.name)}")
    return ("SELECT s.row, s.id, s.text, s.prompt, s.completion, "
            + ", ".join(exprs)
            + ", f.n_counted, f.loss, f.mean_support, s.n_tokens, s.truncated "
            "FROM rise_samples s JOIN rise_features f ON f.row = s.row")


def blob_array(matrix: np.ndarray) -> Any:
    """A pyarrow binary array with one row's bytes per element, built without copying per row."""
    import pyarrow as pa

    matrix = np.ascontiguousarray(matrix)
    n, width = matrix.shape[0], matrix.shape[1] * matrix.itemsize
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                        pa.py_buffer(matrix.view(np.uint8).reshape(-1))])


def blob_matrix(column: Any, n: int, dim: int, path: Path) -> np.ndarray:
    """(n, dim) float16 matrix from a pyarrow column of equal-length float16 blobs (one copy)."""
    import pyarrow as pa

    width = dim * FEATURE_DTYPE.itemsize
    out = np.empty((n, dim), dtype=FEATURE_DTYPE)
    flat = out.view(np.uint8).reshape(-1)
    pos = 0
    for chunk in column.chunks:
        m = len(chunk)
        if m == 0:
            continue
        if chunk.null_count:
            raise IndexStoreError(f"{path} is corrupted: missing feature rows")
        off_type = np.int64 if pa.types.is_large_binary(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=off_type)[chunk.offset:chunk.offset + m + 1]
        if not np.all(np.diff(offsets) == width):
            raise IndexStoreError(f"{path} is corrupted: feature rows of the wrong length (expected {width} bytes)")
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        flat[pos:pos + data.size] = data
        pos += data.size
    if pos != flat.size:
        raise IndexStoreError(f"{path} is corrupted: {pos // width} feature rows where {n} were expected")
    return out


# ---------------------------------------------------------------------------------------------------------------
# arrays (sketch hashes, centring mean) as little-endian blobs


def encode_array(tensor: torch.Tensor) -> tuple[str, list[int], bytes]:
    """(dtype name, shape, little-endian bytes) of a tensor, for the rise_arrays table."""
    arr = tensor.detach().cpu().numpy()
    dtype = arr.dtype.name
    if dtype not in ARRAY_DTYPES:
        raise IndexStoreError(f"cannot store an array of dtype {dtype}")
    return dtype, list(arr.shape), arr.astype(np.dtype(dtype).newbyteorder("<")).tobytes()


def decode_array(dtype: str, shape: list[int], data: bytes, path: Path) -> torch.Tensor:
    """The tensor `encode_array` stored; IndexStoreError naming `path` for an unknown dtype."""
    if dtype not in ARRAY_DTYPES:
        raise IndexStoreError(f"{path}: unknown array dtype {dtype!r}")
    arr = np.frombuffer(data, dtype=np.dtype(ARRAY_DTYPES[dtype]).newbyteorder("<")).astype(ARRAY_DTYPES[dtype])
    return torch.from_numpy(arr.reshape(shape).copy())
