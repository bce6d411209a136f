"""`RiseIndex`: one DuckDB file holding an index's manifest, pool samples and per-sample features.

A build is the only writer: each batch's samples, features and stats are inserted in one transaction, so a killed
build leaves whole batches only. The CountSketch hashes (and the centring mean, when used) are stored in the file,
so appends and queries use exactly the operators the index was built with, and a model or config that differs is
refused.

Readers open the file read-only and keep the feature matrix in memory (loaded once, extended after appends).
DuckDB allows one process to write a file, or any number to read it; within one process, a writer first releases
the connections of the readers of the same file (they reconnect, and see the new rows, on their next call).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import uuid
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import torch

from ..config import RiseConfig
from ..engine import RiseExtractor
from ..errors import ConfigError, IndexMismatchError, IndexStoreError, InputDataError, RiseError
from ..models import LoadedModel
from ..samples import Sample
from ..scoring import FeatureMatrix
from ..sketch import SketchSet
from .files import (
    READERS,
    READERS_LOCK,
    WRITERS,
    check_index_file,
    check_new_location,
    path_key,
    path_lock,
    release_readers,
)
from .filters import FILTER_ERRORS, LOCKED_CONFIG, check_filter
from .rows import CONVERSATION_KEY, features_table, merge_columns, sample_from_row, samples_table
from .schema import (
    BUILD_STATUSES,
    FORMAT,
    FORMAT_VERSION,
    SCHEMA,
    Column,
    IndexManifest,
    blob_matrix,
    db_errors,
    decode_array,
    encode_array,
    select_sql,
    utc_now,
    view_sql,
)

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _snapshot(con: duckdb.DuckDBPyConnection, cursor: bool) -> Iterator[None]:
    """The reads inside see one snapshot of the file: a transaction on a reader's own `cursor` (closed after); a
    writer's connection reads as it is."""
    if not cursor:
        yield
        return
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):
            con.execute("COMMIT")
        con.close()


class RiseIndex:
    """A RISE index file: manifest, samples, features. Open with `RiseIndex.open`, create with `RiseIndex.create`.

    Read-only handles may be shared between threads (each call uses its own cursor); a writable handle belongs to
    one thread (the build)."""

    def __init__(self, path: Path, read_only: bool) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)  # notified when a connection's last read in flight ends
        self._con: duckdb.DuckDBPyConnection | None = None
        self._borrowed = False  # self._con is the in-process writer's connection (read through cursors, never closed)
        self._in_flight: dict[int, int] = {}  # id(connection) -> cursors open on it
        self._manifest: IndexManifest | None = None
        self._sketches: SketchSet | None = None
        self._hidden_mean: torch.Tensor | None = None
        self._columns: list[Column] = []
        self._fm: FeatureMatrix | None = None
        self._fm_uuid = ""
        self._masks: dict[str, tuple[tuple[str, int], torch.Tensor]] = {}
        self._reference_loss: tuple[tuple[str, int] | None, float] = (None, float("nan"))  # ((uuid, n), median)
        self._closed = False

    # -- opening, creating, connections -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, read_only: bool = True) -> RiseIndex:
        """Open an existing index; raises IndexStoreError if it is missing, corrupted or not a RISE index."""
        path = Path(path)
        check_index_file(path)
        index = cls(path, read_only)
        if read_only:  # registered before it connects, so a writer connecting meanwhile releases it too
            with READERS_LOCK:
                READERS.setdefault(path_key(path), weakref.WeakSet()).add(index)
        try:
            index._connect()
        except BaseException:
            index.close()
            raise
        return index

    @classmethod
    def create(cls, path: str | Path, lm: LoadedModel, config: RiseConfig, overwrite: bool = False) -> RiseIndex:
        """A new, empty, writable index for `lm` and `config` (sketches drawn from config.seed)."""
        sketches = SketchSet.for_config(lm.vocab_size, lm.hidden_size, config)
        info = {k: v for k, v in lm.describe().items() if k not in ("model_id", "fingerprint")}
        return cls._create_raw(path, config, lm.model_id, lm.fingerprint(), info, sketches, overwrite)

    @classmethod
    def _create_raw(cls, path: str | Path, config: RiseConfig, model_id: str, model_fingerprint: str,
                    model_info: dict[str, Any], sketches: SketchSet, overwrite: bool = False) -> RiseIndex:
        """Create an index from explicit identity and sketches (used by `create` and by synthetic benchmarks)."""
        from .. import __version__

        path = Path(path)
        check_new_location(path, overwrite)
        if path.exists():
            release_readers(path)
            for p in (path, Path(f"{path}.wal")):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        index = cls(path, read_only=False)
        now = utc_now()
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "index_uuid": uuid.uuid4().hex,
            "model_id": model_id, "model_fingerprint": model_fingerprint, "model_info": model_info,
            "config": config.to_dict(), "config_fingerprint": config.fingerprint(),
            "sketch_digest": sketches.digest(),
            "seeds": {"r": config.seed, "h": config.seed + 1, "g": config.seed + 2,
                      **({"h_g": config.seed + 3} if config.composition == "tensor" else {})},
            "feature_layout": {"dtype": "float16-le", "composition": config.composition,
                               "rh": [config.k_r, config.k_h], "gh": [config.k_g, config.k_h],
                               "hs": [model_info.get("hidden_size")] if config.hidden_channel else None,
                               "unit_vectors": True},
            "library_version": __version__, "created_at": now, "updated_at": now, "status": "building",
            "has_hidden_mean": False,
        }
        try:
            con = index._connect(validate=False)
            with index._transaction("create"):
                for ddl in SCHEMA:
                    con.execute(ddl)
                con.execute(view_sql([]))
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
        with path_lock(self.path), self._lock:
            if self._closed:
                raise IndexStoreError(f"{self.path}: this index handle was closed; open it again")
            if self._con is not None:
                return self._con
            if not self.read_only:
                release_readers(self.path)
            elif not self.path.exists():
                check_index_file(self.path)
            writer = WRITERS.get(path_key(self.path)) if self.read_only else None
            if writer is not None:  # a build in this process holds the file: read through its cursors
                self._con, self._borrowed = writer, True
            else:
                with db_errors(self.path, "open" if validate else "create"):
                    # locked down: filters are user text, and this connection must reach nothing but this file
                    self._con = duckdb.connect(str(self.path), read_only=self.read_only, config=LOCKED_CONFIG)
                self._borrowed = False
                if not self.read_only:
                    WRITERS[path_key(self.path)] = self._con
            if validate:
                try:
                    self._load_state()
                except BaseException:
                    self.release()
                    raise
            return self._con

    def release(self) -> None:
        """Close the database connection (after the reads in flight on it) but keep the loaded features; the next
        call reconnects. A writer first hands its readers back to read-only connections of their own."""
        with path_lock(self.path) if not self.read_only else contextlib.nullcontext():
            with self._lock:
                con, borrowed = self._con, self._borrowed
                self._con, self._borrowed = None, False
                if con is None:
                    return
                while self._in_flight.get(id(con)):
                    self._idle.wait()
            if not self.read_only and WRITERS.get(path_key(self.path)) is con:
                del WRITERS[path_key(self.path)]
                release_readers(self.path)  # they read through `con`: let them finish and drop it first
            if not borrowed:
                with contextlib.suppress(duckdb.Error):
                    con.close()

    def close(self) -> None:
        """Release the connection and the cached features; the handle cannot be used afterwards."""
        self.release()
        with self._lock:
            self._closed = True
            self._fm = None
            self._masks.clear()
        with READERS_LOCK:
            readers = READERS.get(path_key(self.path))
            if readers is not None:
                readers.discard(self)

    def __enter__(self) -> RiseIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        n = self._manifest.n_samples if self._manifest else "?"
        return f"RiseIndex({str(self.path)!r}, n_samples={n}, read_only={self.read_only})"

    @contextlib.contextmanager
    def _cursor(self, action: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """A cursor of this handle's connection (the writer's own connection on a writable handle), counted as a
        read in flight so that `release` waits for it."""
        while True:
            con = self._connect()
            with self._lock:
                if self._con is con:  # not released between connecting and counting
                    self._in_flight[id(con)] = self._in_flight.get(id(con), 0) + 1
                    break
        try:
            with db_errors(self.path, action):
                cur = con.cursor() if self.read_only else con
                try:
                    yield cur
                finally:
                    if cur is not con:
                        cur.close()
        finally:
            with self._lock:
                left = self._in_flight.pop(id(con)) - 1
                if left:
                    self._in_flight[id(con)] = left
                else:
                    self._idle.notify_all()

    @contextlib.contextmanager
    def _transaction(self, action: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """BEGIN ... COMMIT on the writer connection; ROLLBACK on any error."""
        if self.read_only:
            raise IndexStoreError(f"{self.path} is open read-only; open it with read_only=False to write")
        con = self._connect(validate=False)
        with db_errors(self.path, action):
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
        assert self._con is not None
        # one snapshot on a cursor of its own: a reader may share the connection of a build committing batches
        con = self._con.cursor() if self.read_only else self._con
        with db_errors(self.path, "read"), _snapshot(con, cursor=self.read_only):
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
            columns = [Column(*r) for r in con.execute(
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
            self._manifest, self._sketches, self._hidden_mean, self._columns = manifest, sketches, hidden_mean, columns

    def _tensor(self, dtype: str, shape: list[int], data: bytes) -> torch.Tensor:
        return decode_array(dtype, shape, data, self.path)

    def _put_array(self, name: str, tensor: torch.Tensor) -> None:
        dtype, shape, data = encode_array(tensor)
        assert self._con is not None
        self._con.execute("INSERT OR REPLACE INTO rise_arrays VALUES (?, ?, ?, ?)",
                          [name, dtype, json.dumps(shape), data])

    def _set_manifest(self, **values: Any) -> None:
        assert self._con is not None
        self._con.executemany("INSERT OR REPLACE INTO rise_manifest VALUES (?, ?)",
                              [(k, json.dumps(v)) for k, v in values.items()])

    def _state(self) -> IndexManifest:
        self._connect()
        assert self._manifest is not None
        return self._manifest

    @property
    def manifest(self) -> IndexManifest:
        """What the index was built with (model, config, sketch digest, counts, status, times), read on first use."""
        return self._state()

    @property
    def config(self) -> RiseConfig:
        return self._state().config

    @property
    def hidden_mean(self) -> torch.Tensor | None:
        """The centring mean fixed at the first build (None when the config does not centre)."""
        self._state()
        return self._hidden_mean

    @property
    def sketches(self) -> SketchSet:
        """The CountSketch operators the index was built with."""
        self._state()
        assert self._sketches is not None
        return self._sketches

    def identity(self) -> dict[str, Any]:
        """What makes results computed from this index valid: its file, model, config, sketches and size (cache keys
        of diagnostics and of the explorer)."""
        m = self._state()
        return {"path": str(self.path.resolve()), "model_fingerprint": m.model_fingerprint,
                "config": m.config.fingerprint(), "sketch_digest": m.sketch_digest, "n_samples": m.n_samples,
                "updated_at": m.updated_at, "index_uuid": m.index_uuid}

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
        ours_adapter, built_adapter = (lm.adapter or {}).get("path"), (built.get("adapter") or {}).get("path")
        if ours_adapter != built_adapter or (lm.adapter or {}).get("digest") != (built.get("adapter") or {}).get("digest"):
            def name(a: dict | None) -> str:
                return f"{a['path']} (digest {a['digest']})" if a else "none"
            detail.append(f"adapter: index {name(built.get('adapter'))}, model {name(lm.adapter)}")
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

    def filter_columns(self) -> list[str]:
        """The columns a filter (`where`) may name: the `samples` view's, in order."""
        return ["row", "id", "text", "prompt", "completion", "label",
                *[c for c in self.columns if c != "label"], "n_counted", "loss", "mean_support", "n_tokens",
                "truncated"]

    def _check_where(self, where: str, select: str = "row") -> str:
        """`SELECT <select> FROM samples WHERE (<where>)`, refused unless `where` is a plain condition over the
        pool's columns (see `store.filters`)."""
        return check_filter(where, self.filter_columns(), select)

    def _where_error(self, where: str, exc: duckdb.Error) -> InputDataError:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return InputDataError(f"filter {where!r} failed: {message}. Columns: {', '.join(self.filter_columns())}")

    def samples(self, where: str | None = None) -> pd.DataFrame:
        """Samples with their label, metadata and stats columns, indexed by feature row (`feature_matrix()` order).

        `where` is a condition over these columns, e.g. "topic = 'cooking' AND n_counted > 10"; anything but a plain
        condition (subqueries, table functions, files, settings) is refused (`store.filters`)."""
        sql = self._check_where(where, select="*") if where else "SELECT * FROM samples"
        with self._cursor("read samples from") as cur:
            try:
                df = cur.execute(sql + " ORDER BY row").df()
            except FILTER_ERRORS as exc:
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
        sql = (select_sql(self._columns) + " WHERE s.row IN (SELECT unnest($1::BIGINT[])) "
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
            except FILTER_ERRORS as exc:
                raise self._where_error(where, exc) from None
        rows = np.asarray(rows, dtype=np.int64)
        mask = torch.zeros(m.n_samples, dtype=torch.bool)
        mask[torch.from_numpy(rows[rows < m.n_samples])] = True  # rows a concurrent append added come next time
        with self._lock:
            if len(self._masks) > 32:
                self._masks.clear()
            self._masks[where] = (key, mask)
        return mask

    def sample_list(self, where: str | None = None, limit: int | None = None) -> list[Sample]:
        """The stored samples (those matching `where`, the first `limit`) as `Sample`s, in row order."""
        df = self.samples(where)
        return [sample_from_row(r) for r in (df if limit is None else df.head(limit)).to_dict("records")]

    def sample(self, sample_id: str) -> Sample:
        """The stored sample with this id (text fields, label, metadata)."""
        with self._cursor("read a sample from") as cur:
            row = cur.execute("SELECT text, prompt, completion, id, label, meta FROM rise_samples WHERE id = ?",
                              [str(sample_id)]).fetchone()
        if row is None:
            raise InputDataError(f"no sample with id {sample_id!r} in {self.path}")
        text, prompt, completion, sid, label, meta = row
        meta = json.loads(meta) if meta is not None else {}
        messages = meta.pop(CONVERSATION_KEY, None) if text is None and completion is None else None
        return Sample(text=text, prompt=prompt, completion=completion, id=sid,
                      label=json.loads(label) if label is not None else None, meta=meta, messages=messages)

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

    def reference_loss(self) -> float:
        """The pool's median per-sample mean loss (nats per token; samples with no counted token skipped): what the
        per-query channel rule (`rise_core.adaptive`) measures a query's surprise against. nan for an empty pool."""
        m = self._state()
        key = (m.index_uuid, m.n_samples)
        if self._reference_loss[0] != key:
            with self._cursor("read the pool's losses from") as cur:
                (value,) = cur.execute("SELECT median(loss) FROM rise_features WHERE row < $1 AND loss IS NOT NULL "
                                       "AND isfinite(loss)", [m.n_samples]).fetchone()
            self._reference_loss = (key, float("nan") if value is None else float(value))
        return self._reference_loss[1]

    def _feature_columns(self) -> tuple[str, ...]:
        """The feature columns this index stores (HS only when built with the channel)."""
        return ("rh", "gh", "rh_norm", "gh_norm") + (("hs", "hs_norm") if self.config.hidden_channel else ())

    def _load_features(self, start: int, stop: int) -> FeatureMatrix:
        d_rh, d_gh = self.config.feature_dims
        n = stop - start
        names = self._feature_columns()
        with self._cursor("load features from") as cur:
            table = cur.sql(f"SELECT row, {', '.join(names)}, loss FROM rise_features WHERE row >= $1 AND row < $2",
                            params=[start, stop]).to_arrow_table()
        rows = table.column("row").to_numpy()
        if len(rows) != n:
            raise IndexStoreError(f"{self.path} is corrupted: {len(rows)} feature rows where {n} were expected")
        dims = {"rh": d_rh, "gh": d_gh, "hs": int(self._hidden_mean.numel()) if self._hidden_mean is not None else 0}
        parts = {}
        for name in names:
            if name.endswith("_norm"):
                if table.column(name).null_count:
                    raise IndexStoreError(f"{self.path} is corrupted: rows without their {name}")
                parts[name] = table.column(name).to_numpy().astype(np.float32)
            else:
                parts[name] = blob_matrix(table.column(name), n, dims[name], self.path)
        # each sample's mean loss, for the per-query channel rule (rise_core.adaptive); NULL reads as nan
        parts["loss"] = table.column("loss").to_numpy(zero_copy_only=False).astype(np.float32)
        del table
        expected = np.arange(start, stop)
        if not np.array_equal(rows, expected):
            order = np.argsort(rows, kind="stable")
            if not np.array_equal(rows[order], expected):
                raise IndexStoreError(f"{self.path} is corrupted: feature rows are not numbered {start}..{stop - 1}")
            parts = {k: v[order] for k, v in parts.items()}
        return FeatureMatrix(**{k: torch.from_numpy(v) for k, v in parts.items()})

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
            "feature_bytes_per_sample": m.config.bytes_per_sample(int(m.model_info.get("hidden_size") or 0)),
            "columns": self.columns,
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
        m = self._state()
        n = len(samples)
        if len(features) != n:
            raise InputDataError(f"{n} samples but {len(features)} feature rows")
        d_rh, d_gh = m.config.feature_dims
        if features.rh.shape[1] != d_rh or features.gh.shape[1] != d_gh:
            raise IndexMismatchError(f"features of dims ({features.rh.shape[1]}, {features.gh.shape[1]}) do not fit "
                                     f"this index ({d_rh}, {d_gh})")
        if features.has_hs != m.config.hidden_channel:
            raise IndexMismatchError(f"features {'with' if features.has_hs else 'without'} the HS channel do not fit "
                                     f"this index (hidden_channel={m.config.hidden_channel})")
        if any(s.id is None for s in samples):
            raise InputDataError("every sample needs an id to be stored (see ingest.coerce_pool)")
        table, label_values, meta_values = samples_table(samples, m.n_samples, n_tokens, truncated)
        return {"samples": table, "features": features_table(features, m.n_samples, n_counted, mean_support, loss),
                "columns": merge_columns(self._columns, label_values, meta_values), "n": n}

    def _insert_prepared(self, batch: dict[str, Any]) -> None:
        con = self._con
        assert con is not None
        con.register("rise_batch_samples", batch["samples"])
        con.register("rise_batch_features", batch["features"])
        try:
            con.execute("INSERT INTO rise_samples SELECT row, id, text, prompt, completion, label, meta, content_sha1, "
                        "n_tokens, truncated, added_at FROM rise_batch_samples")
            names = ", ".join(("row", *self._feature_columns(), "n_counted", "mean_support", "loss"))
            con.execute(f"INSERT INTO rise_features ({names}) SELECT {names} FROM rise_batch_features")
        finally:
            con.unregister("rise_batch_samples")
            con.unregister("rise_batch_features")
        if batch["columns"] is not None:
            con.execute("DELETE FROM rise_columns")
            con.executemany("INSERT INTO rise_columns VALUES (?, ?, ?, ?, ?)",
                            [(c.name, c.source, c.key, c.sql_type, c.position) for c in batch["columns"]])
            con.execute(view_sql(batch["columns"]))
        self._set_manifest(updated_at=utc_now())

    def _after_insert(self, batch: dict[str, Any]) -> None:
        assert self.manifest is not None
        with self._lock:
            self.manifest.n_samples += batch["n"]
            if batch["columns"] is not None:
                self._columns = batch["columns"]
            self._masks.clear()

    def set_status(self, status: str) -> None:
        if status not in BUILD_STATUSES:
            raise IndexStoreError(f"unknown index status {status!r}; valid statuses: {', '.join(BUILD_STATUSES)}")
        with self._transaction("write to"):
            self._set_manifest(status=status, updated_at=utc_now())
        assert self._manifest is not None
        self._manifest.status = status

    def set_hidden_mean(self, mean: torch.Tensor) -> None:
        """Store the centring mean (once, before the first samples)."""
        if self._state().has_hidden_mean:
            raise IndexStoreError(f"{self.path} already has a centring mean; it is fixed at the first build")
        with self._transaction("write to"):
            self._put_array("hidden_mean", mean.detach().cpu().double())
            self._set_manifest(has_hidden_mean=True, updated_at=utc_now())
        self._load_state()



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
                m = index.manifest
                out.append({"path": str(path), "model_id": m.model_id, "n_samples": m.n_samples,
                            "dims": list(m.dims), "size_bytes": index.size_bytes(), "status": m.status,
                            "created_at": m.created_at, "updated_at": m.updated_at})
        except RiseError as exc:
            out.append({"path": str(path), "error": str(exc)})
    return out
