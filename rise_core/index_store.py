"""RISE indexes in DuckDB: manifest, pool samples, per-sample features, resumable and appendable builds.

One file per index (layout: docs/INDEX_FORMAT.md). A build is the only writer: each batch's samples, features and
stats are inserted in one transaction, so a killed build leaves whole batches only, and rerunning it skips the ids
already present. The CountSketch hashes (and the centring mean, when used) are stored in the file, so appends and
queries use exactly the operators the index was built with, and a model or config that differs is refused.

Readers open the file read-only and keep the feature matrix in memory (loaded once, extended after appends).
DuckDB allows one process to write a file, or any number to read it; within one process, a writer first releases
the connections of the readers of the same file (they reconnect, and see the new rows, on their next call).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import duckdb
import numpy as np
import pandas as pd
import torch

from .config import RiseConfig
from .engine import RiseExtractor
from .errors import ConfigError, IndexMismatchError, IndexStoreError, InputDataError, RiseError
from .ingest import FieldMap, PoolData, coerce_pool, content_hash, jsonable, read_pool
from .models import LoadedModel
from .samples import Sample
from .scoring import FeatureMatrix
from .sketch import SketchSet

logger = logging.getLogger(__name__)

FORMAT = "rise-index"
FORMAT_VERSION = 1
FEATURE_DTYPE = np.dtype("<f2")  # stored unit vectors: little-endian float16
WINDOW_BATCHES = 16  # batches per length-sorting window of a build
HIDDEN_MEAN_SAMPLES = 256  # samples the centring mean is fitted on at the first build

# columns of the `samples` view other than the label and metadata columns; metadata keys with these names are
# exposed as meta_<name> (also the names `rank` adds to its output)
BASE_COLUMNS = ("row", "id", "text", "prompt", "completion", "label", "n_counted", "loss", "mean_support",
                "n_tokens", "truncated")
RESERVED_COLUMNS = frozenset(BASE_COLUMNS) | {"rank", "score", "rh", "gh", "query", "meta"}

_SCHEMA = (
    "CREATE TABLE rise_manifest (key VARCHAR PRIMARY KEY, value JSON NOT NULL)",
    "CREATE TABLE rise_arrays (name VARCHAR PRIMARY KEY, dtype VARCHAR NOT NULL, shape JSON NOT NULL, "
    "data BLOB NOT NULL)",
    "CREATE TABLE rise_samples (row BIGINT PRIMARY KEY, id VARCHAR NOT NULL UNIQUE, text VARCHAR, prompt VARCHAR, "
    "completion VARCHAR, label JSON, meta JSON, content_sha1 VARCHAR NOT NULL, n_tokens INTEGER NOT NULL, "
    "truncated BOOLEAN NOT NULL, added_at TIMESTAMP NOT NULL)",
    "CREATE TABLE rise_features (row BIGINT PRIMARY KEY, rh BLOB NOT NULL, gh BLOB NOT NULL, rh_norm FLOAT NOT NULL, "
    "gh_norm FLOAT NOT NULL, n_counted INTEGER NOT NULL, mean_support FLOAT NOT NULL, loss FLOAT)",
    "CREATE TABLE rise_columns (name VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, key VARCHAR, "
    "sql_type VARCHAR NOT NULL, position INTEGER NOT NULL)",
)
_ARRAY_DTYPES = {"int8": np.int8, "int32": np.int32, "int64": np.int64, "float32": np.float32,
                 "float64": np.float64}


def _now() -> str:
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
    status: str  # "building" | "complete"
    n_samples: int
    has_hidden_mean: bool
    model_info: dict[str, Any] = field(default_factory=dict)  # vocab_size, hidden_size, dtype, architecture, ...
    seeds: dict[str, int] = field(default_factory=dict)  # CountSketch seeds of CS_r, CS_h, CS_g
    index_uuid: str = ""
    format_version: int = FORMAT_VERSION

    @property
    def dims(self) -> tuple[int, int, int]:
        return self.config.k_r, self.config.k_h, self.config.k_g

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["config"] = self.config.to_dict()
        return out


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

    def summary(self) -> str:
        parts = [f"{self.n_added} added", f"{self.n_already_present} already present", f"{self.n_skipped} skipped"]
        if self.n_truncated:
            parts.append(f"{self.n_truncated} truncated to seq_len")
        state = "stopped early (rerun to resume)" if self.stopped else "complete"
        return (f"{self.index_path}: {', '.join(parts)}; {self.n_total} samples in the index; {state} "
                f"in {self.seconds:.1f} s")


# ---------------------------------------------------------------------------------------------------------------
# DuckDB errors and helpers


def _map_duckdb_error(exc: Exception, path: Path, action: str) -> RiseError:
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
def _db_errors(path: Path, action: str) -> Iterator[None]:
    try:
        yield
    except RiseError:
        raise
    except duckdb.Error as exc:
        raise _map_duckdb_error(exc, path, action) from exc


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _json_pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _value_type(value: Any) -> str | None:
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


def _merge_types(a: str | None, b: str | None) -> str | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if {a, b} == {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "JSON" if "JSON" in (a, b) else "VARCHAR"


def _typed_expr(column: str, path: str, sql_type: str) -> str:
    path_sql = _sql_string(path)
    if sql_type == "JSON":
        return f"json_extract({column}, {path_sql})"
    if sql_type == "VARCHAR":
        return f"json_extract_string({column}, {path_sql})"
    return f"TRY_CAST(json_extract_string({column}, {path_sql}) AS {sql_type})"


@dataclass
class _Column:
    name: str  # column name in the `samples` view
    source: str  # "label" | "meta"
    key: str | None  # metadata key
    sql_type: str
    position: int


def _view_sql(columns: Sequence[_Column]) -> str:
    """The `samples` view: sample columns, typed label and metadata columns, stats."""
    return "CREATE OR REPLACE VIEW samples AS " + _select_sql(columns)


def _select_sql(columns: Sequence[_Column]) -> str:
    """The query behind the `samples` view. Identifiers and JSON paths come from the user's column names, quoted
    here (DDL cannot take parameters); values never enter SQL text."""
    exprs = []
    label = next((c for c in columns if c.source == "label"), None)
    exprs.append(f"{_typed_expr('s.label', '$', label.sql_type)} AS label" if label else
                 "CAST(NULL AS VARCHAR) AS label")
    for col in sorted((c for c in columns if c.source == "meta"), key=lambda c: c.position):
        exprs.append(f"{_typed_expr('s.meta', _json_pointer(col.key or ''), col.sql_type)} AS {_quote_ident(col.name)}")
    return ("SELECT s.row, s.id, s.text, s.prompt, s.completion, "
            + ", ".join(exprs)
            + ", f.n_counted, f.loss, f.mean_support, s.n_tokens, s.truncated "
            "FROM rise_samples s JOIN rise_features f ON f.row = s.row")


def _blob_array(matrix: np.ndarray) -> Any:
    """A pyarrow binary array with one row's bytes per element, built without copying per row."""
    import pyarrow as pa

    matrix = np.ascontiguousarray(matrix)
    n, width = matrix.shape[0], matrix.shape[1] * matrix.itemsize
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets),
                                                        pa.py_buffer(matrix.view(np.uint8).reshape(-1))])


def _blob_matrix(column: Any, n: int, dim: int, path: Path) -> np.ndarray:
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
# the index


_READERS: dict[str, weakref.WeakSet[RiseIndex]] = {}
_READERS_LOCK = threading.Lock()


def _path_key(path: Path) -> str:
    return str(path.resolve())


def _release_readers(path: Path) -> None:
    """Close the read-only connections of this process's open indexes on `path` (they reconnect lazily)."""
    with _READERS_LOCK:
        readers = list(_READERS.get(_path_key(path), ()))
    for reader in readers:
        reader.release()


def _check_index_file(path: Path) -> None:
    if not path.exists():
        hint = "" if path.parent.exists() else f" (directory {path.parent} does not exist)"
        raise IndexStoreError(f"no index at {path}{hint}; build one with `rise build POOL --index {path}`")
    if path.is_dir():
        raise IndexStoreError(f"{path} is a directory; give the index file (e.g. {path / 'pool.duckdb'})")


def _check_new_location(path: Path, overwrite: bool) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise IndexStoreError(f"directory {parent} does not exist; create it first (mkdir -p {parent})")
    if not parent.is_dir():
        raise IndexStoreError(f"{parent} is not a directory")
    if path.is_dir():
        raise IndexStoreError(f"{path} is a directory; give a file name for the index (e.g. {path / 'pool.duckdb'})")
    if path.exists() and not overwrite:
        raise IndexStoreError(f"{path} already exists; append to it with build_index, or overwrite it "
                              "(overwrite=True, `rise build --overwrite`)")
    try:  # os.access says yes to root on read-only mounts: try it
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise IndexStoreError(f"cannot create {path}: directory {parent} is not writable "
                              f"({exc.strerror or exc})") from None


class RiseIndex:
    """A RISE index file: manifest, samples, features. Open with `RiseIndex.open`, create with `RiseIndex.create`.

    Read-only handles may be shared between threads (each call uses its own cursor); a writable handle belongs to
    one thread (the build)."""

    def __init__(self, path: Path, read_only: bool) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self.manifest: IndexManifest | None = None
        self._sketches: SketchSet | None = None
        self._hidden_mean: torch.Tensor | None = None
        self._columns: list[_Column] = []
        self._fm: FeatureMatrix | None = None
        self._fm_uuid = ""
        self._masks: dict[str, tuple[tuple[str, int], torch.Tensor]] = {}
        self._closed = False

    # -- opening, creating, connections -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, read_only: bool = True) -> RiseIndex:
        """Open an existing index; raises IndexStoreError if it is missing, corrupted or not a RISE index."""
        path = Path(path)
        _check_index_file(path)
        index = cls(path, read_only)
        index._connect()
        if read_only:
            with _READERS_LOCK:
                _READERS.setdefault(_path_key(path), weakref.WeakSet()).add(index)
        return index

    @classmethod
    def create(cls, path: str | Path, lm: LoadedModel, config: RiseConfig, overwrite: bool = False) -> RiseIndex:
        """A new, empty, writable index for `lm` and `config` (sketches drawn from config.seed)."""
        sketches = SketchSet.from_seed(lm.vocab_size, lm.hidden_size, config.k_r, config.k_h, config.k_g,
                                       config.seed)
        info = {k: v for k, v in lm.describe().items() if k not in ("model_id", "fingerprint")}
        return cls._create_raw(path, config, lm.model_id, lm.fingerprint(), info, sketches, overwrite)

    @classmethod
    def _create_raw(cls, path: str | Path, config: RiseConfig, model_id: str, model_fingerprint: str,
                    model_info: dict[str, Any], sketches: SketchSet, overwrite: bool = False) -> RiseIndex:
        """Create an index from explicit identity and sketches (used by `create` and by synthetic benchmarks)."""
        from . import __version__

        path = Path(path)
        _check_new_location(path, overwrite)
        if path.exists():
            _release_readers(path)
            for p in (path, Path(f"{path}.wal")):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        index = cls(path, read_only=False)
        now = _now()
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "index_uuid": uuid.uuid4().hex,
            "model_id": model_id, "model_fingerprint": model_fingerprint, "model_info": model_info,
            "config": config.to_dict(), "config_fingerprint": config.fingerprint(),
            "sketch_digest": sketches.digest(),
            "seeds": {"r": config.seed, "h": config.seed + 1, "g": config.seed + 2},
            "feature_layout": {"dtype": "float16-le", "rh": [config.k_r, config.k_h], "gh": [config.k_g, config.k_h],
                               "unit_vectors": True},
            "library_version": __version__, "created_at": now, "updated_at": now, "status": "building",
            "has_hidden_mean": False,
        }
        try:
            con = index._connect(validate=False)
            with index._transaction("create"):
                for ddl in _SCHEMA:
                    con.execute(ddl)
                con.execute(_view_sql([]))
                con.executemany("INSERT INTO rise_manifest VALUES (?, ?)",
                                [(k, json.dumps(v)) for k, v in manifest.items()])
                for name, tensor in sketches.state_dict().items():
                    index._put_array(f"sketch.{name}", tensor)
            index._load_state()
        except BaseException:
            index.close()
            for p in (path, Path(f"{path}.wal")):
                with contextlib.suppress(OSError):
                    p.unlink()
            raise
        return index

    def _connect(self, validate: bool = True) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if self._closed:
                raise IndexStoreError(f"{self.path}: this index handle was closed; open it again")
            if self._con is not None:
                return self._con
            if not self.read_only:
                _release_readers(self.path)
            elif not self.path.exists():
                _check_index_file(self.path)
            with _db_errors(self.path, "open" if validate else "create"):
                self._con = duckdb.connect(str(self.path), read_only=self.read_only)
            if validate:
                try:
                    self._load_state()
                except BaseException:
                    self.release()
                    raise
            return self._con

    def release(self) -> None:
        """Close the database connection but keep the loaded features; the next call reconnects."""
        with self._lock:
            if self._con is not None:
                with contextlib.suppress(duckdb.Error):
                    self._con.close()
                self._con = None

    def close(self) -> None:
        """Release the connection and the cached features; the handle cannot be used afterwards."""
        with self._lock:
            self.release()
            self._closed = True
            self._fm = None
            self._masks.clear()
        with _READERS_LOCK:
            readers = _READERS.get(_path_key(self.path))
            if readers is not None:
                readers.discard(self)

    def __enter__(self) -> RiseIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self.manifest.n_samples if self.manifest else "?"
        return f"RiseIndex({str(self.path)!r}, n_samples={n}, read_only={self.read_only})"

    @contextlib.contextmanager
    def _cursor(self, action: str) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connect()
        with _db_errors(self.path, action):
            cur = con.cursor() if self.read_only else con
            try:
                yield cur
            finally:
                if cur is not con:
                    cur.close()

    @contextlib.contextmanager
    def _transaction(self, action: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN ... COMMIT on the writer connection; ROLLBACK on any error."""
        if self.read_only:
            raise IndexStoreError(f"{self.path} is open read-only; open it with read_only=False to write")
        con = self._connect(validate=False)
        with _db_errors(self.path, action):
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    # -- state --------------------------------------------------------------------------------------------------

    def _load_state(self) -> None:
        """Read and validate manifest, sketches and columns; drop caches that no longer match the file."""
        con = self._con
        assert con is not None
        with _db_errors(self.path, "read"):
            tables = {r[0] for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
            if "rise_manifest" not in tables:
                raise IndexStoreError(f"{self.path} is a DuckDB database but not a RISE index (no rise_manifest "
                                      "table); give another --index path")
            missing = {"rise_arrays", "rise_samples", "rise_features", "rise_columns"} - tables
            if missing:
                raise IndexStoreError(f"{self.path} is an incomplete RISE index (missing tables {sorted(missing)})")
            raw = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM rise_manifest").fetchall()}
            arrays = {name: (dtype, json.loads(shape), data) for name, dtype, shape, data in
                      con.execute("SELECT name, dtype, shape, data FROM rise_arrays").fetchall()}
            n_samples, next_row = con.execute(
                "SELECT count(*), coalesce(max(row) + 1, 0) FROM rise_samples").fetchone()
            n_features = con.execute("SELECT count(*) FROM rise_features").fetchone()[0]
            columns = [_Column(*r) for r in con.execute(
                "SELECT name, source, key, sql_type, position FROM rise_columns ORDER BY position").fetchall()]
        if raw.get("format") != FORMAT:
            raise IndexStoreError(f"{self.path} is not a RISE index (manifest format {raw.get('format')!r})")
        version = raw.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise IndexStoreError(f"{self.path} uses index format {version!r}, newer than this library reads "
                                  f"({FORMAT_VERSION}); upgrade rise-core")
        if n_samples != next_row or n_samples != n_features:
            raise IndexStoreError(f"{self.path} is corrupted: {n_samples} samples, {n_features} feature rows, rows "
                                  f"numbered up to {next_row - 1}")
        try:
            config = RiseConfig.from_dict(raw["config"])
            manifest = IndexManifest(
                model_id=raw["model_id"], model_fingerprint=raw["model_fingerprint"], config=config,
                sketch_digest=raw["sketch_digest"], library_version=raw["library_version"],
                created_at=raw["created_at"], updated_at=raw["updated_at"], status=raw["status"],
                n_samples=int(n_samples), has_hidden_mean=bool(raw["has_hidden_mean"]),
                model_info=raw.get("model_info", {}), seeds=raw.get("seeds", {}), index_uuid=raw["index_uuid"],
                format_version=version)
            state = {name[len("sketch."):]: self._tensor(*arrays[name]) for name in arrays
                     if name.startswith("sketch.")}
            sketches = SketchSet.from_state_dict(state)
        except (KeyError, TypeError, ValueError, ConfigError) as exc:
            raise IndexStoreError(f"{self.path} has a damaged manifest or sketch table ({exc!r}); rebuild it") from exc
        if sketches.digest() != manifest.sketch_digest:
            raise IndexStoreError(f"{self.path} is corrupted: the stored CountSketch hashes do not match the "
                                  "manifest's digest")
        hidden_mean = None
        if manifest.has_hidden_mean:
            if "hidden_mean" not in arrays:
                raise IndexStoreError(f"{self.path} is corrupted: the centring mean is missing")
            hidden_mean = self._tensor(*arrays["hidden_mean"])
        with self._lock:
            if self._fm is not None and (self._fm_uuid != manifest.index_uuid or len(self._fm) > manifest.n_samples):
                self._fm = None
            self._masks.clear()
            self.manifest, self._sketches, self._hidden_mean, self._columns = manifest, sketches, hidden_mean, columns

    def _tensor(self, dtype: str, shape: list[int], data: bytes) -> torch.Tensor:
        if dtype not in _ARRAY_DTYPES:
            raise IndexStoreError(f"{self.path}: unknown array dtype {dtype!r}")
        arr = np.frombuffer(data, dtype=np.dtype(_ARRAY_DTYPES[dtype]).newbyteorder("<")).astype(_ARRAY_DTYPES[dtype])
        return torch.from_numpy(arr.reshape(shape).copy())

    def _put_array(self, name: str, tensor: torch.Tensor) -> None:
        arr = tensor.detach().cpu().numpy()
        dtype = arr.dtype.name
        if dtype not in _ARRAY_DTYPES:
            raise IndexStoreError(f"cannot store an array of dtype {dtype}")
        data = arr.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
        assert self._con is not None
        self._con.execute("INSERT OR REPLACE INTO rise_arrays VALUES (?, ?, ?, ?)",
                          [name, dtype, json.dumps(list(arr.shape)), data])

    def _set_manifest(self, **values: Any) -> None:
        assert self._con is not None
        self._con.executemany("INSERT OR REPLACE INTO rise_manifest VALUES (?, ?)",
                              [(k, json.dumps(v)) for k, v in values.items()])

    def _state(self) -> IndexManifest:
        self._connect()
        assert self.manifest is not None
        return self.manifest

    @property
    def config(self) -> RiseConfig:
        return self._state().config

    @property
    def status(self) -> str:
        return self._state().status

    def __len__(self) -> int:
        return self._state().n_samples

    @property
    def columns(self) -> dict[str, str]:
        """Label and metadata columns of the `samples` view with their SQL types."""
        self._state()
        return {c.name: c.sql_type for c in sorted(self._columns, key=lambda c: c.position)}

    def size_bytes(self) -> int:
        """Bytes on disk (the file and its write-ahead log)."""
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}.wal")) if p.exists())

    # -- identity checks ------------------------------------------------------------------------------------------

    def check_model(self, lm: LoadedModel) -> None:
        """Raise IndexMismatchError unless `lm` has the weights and tokenizer the index was built with."""
        m = self._state()
        fingerprint = lm.fingerprint()
        if fingerprint == m.model_fingerprint:
            return
        detail = []
        built = m.model_info
        for key, ours in (("vocab_size", lm.vocab_size), ("hidden_size", lm.hidden_size),
                          ("dtype", str(lm.dtype).replace("torch.", ""))):
            if key in built and built[key] != ours:
                detail.append(f"{key}: index {built[key]}, model {ours}")
        hint = (f"; load it with --dtype {built['dtype']}" if "dtype" in built and
                built["dtype"] != str(lm.dtype).replace("torch.", "") else "")
        raise IndexMismatchError(
            f"{self.path} was built with model {m.model_id!r} (fingerprint {m.model_fingerprint}); the given model "
            f"{lm.model_id!r} has fingerprint {fingerprint}" + (f" ({'; '.join(detail)})" if detail else "")
            + f"{hint}. Use the index's model, or build a new index for this one.")

    def check_config(self, config: RiseConfig) -> None:
        """Raise IndexMismatchError, listing the differing fields, unless `config` is the index's config."""
        diff = self.config.diff(config)
        if diff:
            fields = "; ".join(f"{k}: index {a!r}, requested {b!r}" for k, (a, b) in diff.items())
            raise IndexMismatchError(f"{self.path} was built with another RISE config ({fields}). Drop those options "
                                     "to use the index's config, or build a new index (another --index path).")

    def extractor(self, lm: LoadedModel) -> RiseExtractor:
        """A feature extractor with this index's sketches and centring mean; refuses a different model."""
        self.check_model(lm)
        return RiseExtractor(lm, self.config, sketches=self._sketches, hidden_mean=self._hidden_mean)

    # -- reading --------------------------------------------------------------------------------------------------

    def _check_where(self, where: str, select: str = "row") -> str:
        """`SELECT <select> FROM samples WHERE (<where>)`, refused unless it is one SELECT statement."""
        sql = f"SELECT {select} FROM samples WHERE ({where})"
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            raise InputDataError(f"invalid filter {where!r}: {str(exc).splitlines()[0]}") from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            raise InputDataError(f"the filter {where!r} must be one SQL condition over the sample columns, "
                                 "e.g. \"topic = 'cooking'\"")
        return sql

    def _where_error(self, where: str, exc: duckdb.Error) -> InputDataError:
        cols = ", ".join(["id", "text", "prompt", "completion", "label", *self.columns, "n_counted", "loss",
                          "n_tokens", "truncated"])
        return InputDataError(f"filter {where!r} failed: {str(exc).splitlines()[0]}. Columns: {cols}")

    def samples(self, where: str | None = None) -> pd.DataFrame:
        """Samples with their label, metadata and stats columns, indexed by feature row (`feature_matrix()` order).

        `where` is an SQL condition over these columns (trusted input from the local user, run read-only when the
        index is open read-only), e.g. "topic = 'cooking' AND n_counted > 10"."""
        sql = self._check_where(where, select="*") if where else "SELECT * FROM samples"
        with self._cursor("read samples from") as cur:
            try:
                df = cur.execute(sql + " ORDER BY row").df()
            except (duckdb.BinderException, duckdb.ParserException, duckdb.ConversionException,
                    duckdb.InvalidInputException, duckdb.CatalogException) as exc:
                if not where:
                    raise
                raise self._where_error(where, exc) from None
        return df.set_index("row")

    def rows_frame(self, rows: Sequence[int]) -> pd.DataFrame:
        """The `samples` columns of the given feature rows, in the given order (indexed by row)."""
        rows = [int(r) for r in rows]
        if not rows:
            return self.samples(where="FALSE")
        self._state()
        # the view's query with the row filter on both tables (DuckDB does not push it through the view's join)
        sql = (_select_sql(self._columns) + " WHERE s.row IN (SELECT unnest($1::BIGINT[])) "
               "AND f.row IN (SELECT unnest($1::BIGINT[]))")
        with self._cursor("read samples from") as cur:
            df = cur.execute(sql, [rows]).df()
        return df.set_index("row").loc[rows]

    def row_mask(self, where: str) -> torch.Tensor:
        """Boolean (N,) mask of the rows matching an SQL condition (cached until the index changes)."""
        m = self._state()
        key = (m.index_uuid, m.n_samples)
        with self._lock:
            hit = self._masks.get(where)
            if hit is not None and hit[0] == key:
                return hit[1]
        sql = self._check_where(where)
        with self._cursor("filter") as cur:
            try:
                rows = cur.execute(sql).fetchnumpy()["row"]
            except (duckdb.BinderException, duckdb.ParserException, duckdb.ConversionException,
                    duckdb.InvalidInputException, duckdb.CatalogException) as exc:
                raise self._where_error(where, exc) from None
        mask = torch.zeros(m.n_samples, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(rows, dtype=np.int64))] = True
        with self._lock:
            if len(self._masks) > 32:
                self._masks.clear()
            self._masks[where] = (key, mask)
        return mask

    def sample(self, sample_id: str) -> Sample:
        """The stored sample with this id (text fields, label, metadata)."""
        with self._cursor("read a sample from") as cur:
            row = cur.execute("SELECT text, prompt, completion, id, label, meta FROM rise_samples WHERE id = ?",
                              [str(sample_id)]).fetchone()
        if row is None:
            raise InputDataError(f"no sample with id {sample_id!r} in {self.path}")
        text, prompt, completion, sid, label, meta = row
        return Sample(text=text, prompt=prompt, completion=completion, id=sid,
                      label=json.loads(label) if label is not None else None,
                      meta=json.loads(meta) if meta is not None else {})

    def row_of(self, sample_id: str) -> int:
        """Feature row of a sample id."""
        with self._cursor("read") as cur:
            row = cur.execute("SELECT row FROM rise_samples WHERE id = ?", [str(sample_id)]).fetchone()
        if row is None:
            raise InputDataError(f"no sample with id {sample_id!r} in {self.path}")
        return int(row[0])

    def id_hashes(self) -> dict[str, str]:
        """{id: content sha1} of every stored sample."""
        with self._cursor("read ids from") as cur:
            res = cur.execute("SELECT id, content_sha1 FROM rise_samples").fetchnumpy()
        return dict(zip(res["id"].tolist(), res["content_sha1"].tolist(), strict=True))

    def feature_matrix(self) -> FeatureMatrix:
        """Per-sample unit features (float16) and norms, rows in `samples()` order; loaded once, extended after an
        append."""
        m = self._state()
        with self._lock:
            have = 0 if self._fm is None else len(self._fm)
            if self._fm is not None and have == m.n_samples:
                return self._fm
            part = self._load_features(have, m.n_samples)
            self._fm = part if self._fm is None else FeatureMatrix.concat([self._fm, part])
            self._fm_uuid = m.index_uuid
            return self._fm

    def _load_features(self, start: int, stop: int) -> FeatureMatrix:
        d_rh, d_gh = self.config.feature_dims
        n = stop - start
        with self._cursor("load features from") as cur:
            table = cur.sql("SELECT row, rh, gh, rh_norm, gh_norm FROM rise_features WHERE row >= $1 AND row < $2",
                            params=[start, stop]).to_arrow_table()
        rows = table.column("row").to_numpy()
        if len(rows) != n:
            raise IndexStoreError(f"{self.path} is corrupted: {len(rows)} feature rows where {n} were expected")
        rh = _blob_matrix(table.column("rh"), n, d_rh, self.path)
        gh = _blob_matrix(table.column("gh"), n, d_gh, self.path)
        rh_norm = table.column("rh_norm").to_numpy().astype(np.float32)
        gh_norm = table.column("gh_norm").to_numpy().astype(np.float32)
        del table
        expected = np.arange(start, stop)
        if not np.array_equal(rows, expected):
            order = np.argsort(rows, kind="stable")
            if not np.array_equal(rows[order], expected):
                raise IndexStoreError(f"{self.path} is corrupted: feature rows are not numbered {start}..{stop - 1}")
            rh, gh, rh_norm, gh_norm = rh[order], gh[order], rh_norm[order], gh_norm[order]
        return FeatureMatrix(rh=torch.from_numpy(rh), gh=torch.from_numpy(gh), rh_norm=torch.from_numpy(rh_norm),
                             gh_norm=torch.from_numpy(gh_norm))

    def info(self) -> dict[str, Any]:
        """Manifest, counts and size on disk, for `rise info` and the app."""
        m = self._state()
        with self._cursor("read") as cur:
            n_labelled = cur.execute("SELECT count(*) FROM rise_samples WHERE label IS NOT NULL").fetchone()[0]
            n_truncated = cur.execute("SELECT count(*) FROM rise_samples WHERE truncated").fetchone()[0]
            tokens = cur.execute("SELECT coalesce(sum(n_tokens), 0), coalesce(sum(n_counted), 0) FROM samples"
                                 ).fetchone()
        return {
            "path": str(self.path), "status": m.status, "n_samples": m.n_samples, "n_labelled": int(n_labelled),
            "n_truncated": int(n_truncated), "n_tokens": int(tokens[0]), "n_counted_tokens": int(tokens[1]),
            "model_id": m.model_id, "model_fingerprint": m.model_fingerprint, "model_info": m.model_info,
            "config": m.config.to_dict(), "dims": list(m.dims), "feature_dims": list(m.config.feature_dims),
            "feature_bytes_per_sample": m.config.bytes_per_sample(), "columns": self.columns,
            "has_hidden_mean": m.has_hidden_mean, "sketch_digest": m.sketch_digest, "seeds": m.seeds,
            "library_version": m.library_version, "format_version": m.format_version, "index_uuid": m.index_uuid,
            "created_at": m.created_at, "updated_at": m.updated_at, "size_bytes": self.size_bytes(),
        }

    # -- writing --------------------------------------------------------------------------------------------------

    def add_samples(self, samples: Sequence[Sample], features: FeatureMatrix, n_counted: Sequence[int],
                    mean_support: Sequence[float], loss: Sequence[float], n_tokens: Sequence[int],
                    truncated: Sequence[bool]) -> None:
        """Append samples (with ids) and their features in one transaction (all or nothing)."""
        batch = self._prepare(samples, features, n_counted, mean_support, loss, n_tokens, truncated)
        with self._transaction("write to"):
            self._insert_prepared(batch)
        self._after_insert(batch)

    def _prepare(self, samples: Sequence[Sample], features: FeatureMatrix, n_counted: Sequence[int],
                 mean_support: Sequence[float], loss: Sequence[float], n_tokens: Sequence[int],
                 truncated: Sequence[bool]) -> dict[str, Any]:
        import pyarrow as pa

        m = self._state()
        n = len(samples)
        if len(features) != n:
            raise InputDataError(f"{n} samples but {len(features)} feature rows")
        d_rh, d_gh = m.config.feature_dims
        if features.rh.shape[1] != d_rh or features.gh.shape[1] != d_gh:
            raise IndexMismatchError(f"features of dims ({features.rh.shape[1]}, {features.gh.shape[1]}) do not fit "
                                     f"this index ({d_rh}, {d_gh})")
        ids = [s.id for s in samples]
        if any(i is None for i in ids):
            raise InputDataError("every sample needs an id to be stored (see ingest.coerce_pool)")
        start = m.n_samples
        rows = np.arange(start, start + n, dtype=np.int64)
        label_values = [jsonable(s.label) for s in samples]
        meta_values = [{k: v for k, v in jsonable(s.meta).items() if v is not None} for s in samples]
        labels = [None if v is None else json.dumps(v, ensure_ascii=False) for v in label_values]
        metas = [json.dumps(v, ensure_ascii=False) if v else None for v in meta_values]
        added_at = datetime.now(timezone.utc).replace(tzinfo=None)
        samples_table = pa.table({
            "row": rows, "id": pa.array([str(i) for i in ids], pa.string()),
            "text": pa.array([s.text for s in samples], pa.string()),
            "prompt": pa.array([s.prompt for s in samples], pa.string()),
            "completion": pa.array([s.completion for s in samples], pa.string()),
            "label": pa.array(labels, pa.string()), "meta": pa.array(metas, pa.string()),
            "content_sha1": pa.array([content_hash(s) for s in samples], pa.string()),
            "n_tokens": pa.array(np.asarray(n_tokens, dtype=np.int32)),
            "truncated": pa.array(np.asarray(truncated, dtype=bool)),
            "added_at": pa.array([added_at] * n, pa.timestamp("us")),
        })
        features_table = pa.table({
            "row": rows,
            "rh": _blob_array(features.rh.detach().cpu().to(torch.float16).numpy().astype(FEATURE_DTYPE)),
            "gh": _blob_array(features.gh.detach().cpu().to(torch.float16).numpy().astype(FEATURE_DTYPE)),
            "rh_norm": np.asarray(features.rh_norm.detach().cpu(), dtype=np.float32),
            "gh_norm": np.asarray(features.gh_norm.detach().cpu(), dtype=np.float32),
            "n_counted": np.asarray(n_counted, dtype=np.int32),
            "mean_support": np.asarray(mean_support, dtype=np.float32),
            "loss": pa.array([None if not math.isfinite(float(v)) else float(v) for v in loss], pa.float32()),
        })
        columns = self._merged_columns(label_values, meta_values)
        return {"samples": samples_table, "features": features_table, "columns": columns, "n": n}

    def _merged_columns(self, labels: Sequence[Any], metas: Sequence[dict[str, Any]]) -> list[_Column] | None:
        """The view's label/metadata columns after adding these samples; None when unchanged."""
        cols = {(c.source, c.key): _Column(**asdict(c)) for c in self._columns}
        changed = False
        taken = {c.name.lower() for c in cols.values()} | {n.lower() for n in RESERVED_COLUMNS}

        def add(source: str, key: str | None, value: Any) -> None:
            nonlocal changed
            typ = _value_type(value)
            if typ is None:
                return
            col = cols.get((source, key))
            if col is None:
                if source == "label":
                    name = "label"
                else:
                    base = key if key.lower() not in RESERVED_COLUMNS else f"meta_{key}"
                    name, k = base, 2
                    while name.lower() in taken:
                        name, k = f"{base}_{k}", k + 1
                    taken.add(name.lower())
                cols[(source, key)] = _Column(name, source, key, typ, len(cols))
                changed = True
            else:
                merged = _merge_types(col.sql_type, typ)
                if merged != col.sql_type:
                    col.sql_type, changed = merged, True

        for label, meta in zip(labels, metas, strict=True):
            add("label", None, label)
            for key, value in meta.items():
                add("meta", key, value)
        return sorted(cols.values(), key=lambda c: c.position) if changed else None

    def _insert_prepared(self, batch: dict[str, Any]) -> None:
        con = self._con
        assert con is not None
        con.register("rise_batch_samples", batch["samples"])
        con.register("rise_batch_features", batch["features"])
        try:
            con.execute("INSERT INTO rise_samples SELECT row, id, text, prompt, completion, label, meta, content_sha1, "
                        "n_tokens, truncated, added_at FROM rise_batch_samples")
            con.execute("INSERT INTO rise_features SELECT row, rh, gh, rh_norm, gh_norm, n_counted, mean_support, "
                        "loss FROM rise_batch_features")
        finally:
            con.unregister("rise_batch_samples")
            con.unregister("rise_batch_features")
        if batch["columns"] is not None:
            con.execute("DELETE FROM rise_columns")
            con.executemany("INSERT INTO rise_columns VALUES (?, ?, ?, ?, ?)",
                            [(c.name, c.source, c.key, c.sql_type, c.position) for c in batch["columns"]])
            con.execute(_view_sql(batch["columns"]))
        self._set_manifest(updated_at=_now())

    def _after_insert(self, batch: dict[str, Any]) -> None:
        assert self.manifest is not None
        with self._lock:
            self.manifest.n_samples += batch["n"]
            if batch["columns"] is not None:
                self._columns = batch["columns"]
            self._masks.clear()

    def set_status(self, status: str) -> None:
        if status not in ("building", "complete"):
            raise ValueError(status)
        with self._transaction("write to"):
            self._set_manifest(status=status, updated_at=_now())
        assert self.manifest is not None
        self.manifest.status = status

    def set_hidden_mean(self, mean: torch.Tensor) -> None:
        """Store the centring mean (once, before the first samples)."""
        if self._state().has_hidden_mean:
            raise IndexStoreError(f"{self.path} already has a centring mean; it is fixed at the first build")
        with self._transaction("write to"):
            self._put_array("hidden_mean", mean.detach().cpu().double())
            self._set_manifest(has_hidden_mean=True, updated_at=_now())
        self._load_state()


# ---------------------------------------------------------------------------------------------------------------
# building


def build_index(index_path: str | Path | RiseIndex,
                pool: PoolData | str | Path | IO[bytes] | pd.DataFrame | Sequence[Sample | str | dict],
                lm: LoadedModel, config: RiseConfig | None = None, fields: FieldMap | None = None,
                batch_size: int = 8, progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None, overwrite: bool = False) -> BuildReport:
    """Build an index from a pool, or append the pool's new samples to an existing index.

    Resumable: samples whose id is already in the index are skipped (a sample given without an id gets a stable
    content id), so rerunning an interrupted build finishes it. `config=None` uses the existing index's config (or
    the defaults for a new index); a config or model that differs from the index's is refused.
    `progress(done, total)` is called after each committed batch (total = samples not yet in the index);
    `should_stop()` is polled between batches."""
    start_time = time.perf_counter()
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(pool, PoolData):
        data = coerce_pool(pool)
    elif isinstance(pool, (str, Path, bytes, pd.DataFrame)) or hasattr(pool, "read"):
        data = read_pool(pool, fields)  # type: ignore[arg-type]
    else:
        data = coerce_pool(pool)
    data.require_samples()

    own = not isinstance(index_path, RiseIndex)
    if isinstance(index_path, RiseIndex):
        index = index_path
        if index.read_only:
            raise IndexStoreError(f"{index.path} is open read-only; open it with read_only=False to build")
    else:
        path = Path(index_path)
        if path.exists() and not overwrite:
            index = RiseIndex.open(path, read_only=False)
        else:
            index = RiseIndex.create(path, lm, config or RiseConfig(), overwrite=overwrite)
    try:
        return _build(index, data, lm, config, batch_size, progress, should_stop, start_time)
    finally:
        if own:
            index.close()


def _build(index: RiseIndex, data: PoolData, lm: LoadedModel, config: RiseConfig | None, batch_size: int,
           progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
           start_time: float) -> BuildReport:
    index.check_model(lm)
    if config is not None:
        index.check_config(config)
    cfg = index.config
    existing = index.id_hashes()
    new: list[tuple[int, Sample]] = []
    n_present = 0
    for sample, row in zip(data.samples, data.rows, strict=True):
        stored = existing.get(str(sample.id))
        if stored is None:
            new.append((row, sample))
        elif stored != content_hash(sample):
            raise InputDataError(f"id {sample.id!r} (row {row}) is already in {index.path} with different text; "
                                 "give it another id, or build a new index")
        else:
            n_present += 1
    skipped = list(data.skipped)
    report = BuildReport(n_added=0, n_already_present=n_present, n_skipped=0, skipped=skipped, seconds=0.0,
                         stopped=False, n_rows=data.n_rows, index_path=str(index.path))
    extractor = index.extractor(lm)
    if new and cfg.center_hidden and index._hidden_mean is None:
        if len(index) > 0:
            raise IndexStoreError(f"{index.path} is corrupted: centring is on but no centring mean is stored")
        fit_on = [s for _, s in new[:HIDDEN_MEAN_SAMPLES]]
        index.set_hidden_mean(extractor.fit_hidden_mean(fit_on, batch_size=batch_size))
        extractor = index.extractor(lm)
    if new and index.status != "building":
        index.set_status("building")

    total, done = len(new), 0
    if progress is not None:
        progress(0, total)
    window = batch_size * WINDOW_BATCHES
    for w_start in range(0, len(new), window):
        if report.stopped:
            break
        part = new[w_start:w_start + window]
        encoded = extractor.encode([s for _, s in part])
        usable = []
        for (row, sample), enc in zip(part, encoded, strict=True):
            if enc.n_counted == 0:
                skipped.append((row, "no counted token (needs two or more tokens, or a completion that fits "
                                     f"within seq_len={cfg.seq_len})"))
                done += 1
            else:
                usable.append((sample, enc))
        usable.sort(key=lambda item: len(item[1].input_ids))  # similar lengths share a batch: less padding
        for b_start in range(0, len(usable), batch_size):
            if should_stop is not None and should_stop():
                report.stopped = True
                break
            batch = usable[b_start:b_start + batch_size]
            feats = extractor.features_from_encoded([enc for _, enc in batch])
            fm = FeatureMatrix.from_features(feats, dtype=torch.float16)
            index.add_samples([s for s, _ in batch], fm, feats.n_counted.tolist(), feats.mean_support.tolist(),
                              feats.loss.tolist(), [len(e.input_ids) for _, e in batch],
                              [e.truncated for _, e in batch])
            report.n_added += len(batch)
            report.n_truncated += sum(e.truncated for _, e in batch)
            done += len(batch)
            if progress is not None:
                progress(done, total)
    if not report.stopped and index.status != "complete":
        index.set_status("complete")
    report.n_skipped = len(skipped)
    report.n_total = len(index)
    report.seconds = time.perf_counter() - start_time
    logger.info(report.summary())
    return report


def list_indexes(directory: str | Path) -> list[dict[str, Any]]:
    """The RISE indexes (*.duckdb) in a directory: path, model_id, n_samples, dims, size_bytes, status, times; an
    unreadable file is listed with an `error`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise IndexStoreError(f"{directory} is not a directory")
    out = []
    for path in sorted(directory.glob("*.duckdb")):
        try:
            with RiseIndex.open(path) as index:
                m = index._state()
                out.append({"path": str(path), "model_id": m.model_id, "n_samples": m.n_samples,
                            "dims": list(m.dims), "size_bytes": index.size_bytes(), "status": m.status,
                            "created_at": m.created_at, "updated_at": m.updated_at})
        except RiseError as exc:
            out.append({"path": str(path), "error": str(exc)})
    return out
