"""The connection an index handle owns: opening the file, validating its manifest, cursors counted as reads in
flight, transactions, and the switch between a writer and the readers of the same file in this process.

DuckDB allows one process to write a file, or any number to read it; within one process, a writer first releases
the connections of the readers of the same file (they reconnect, and see the new rows, on their next call). While a
build writes, read-only handles read through cursors of its connection (`store.files.WRITERS`).
"""

from __future__ import annotations

import contextlib
import json
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import duckdb
import numpy as np
import torch

from ..config import RiseConfig
from ..errors import ConfigError, IndexStoreError
from ..learned import LearnedLosses
from ..scoring import FeatureMatrix
from ..sketch import SketchSet
from .files import READERS, READERS_LOCK, WRITERS, check_index_file, path_key, path_lock, release_readers
from .filters import FilterLimits, connection_config
from .schema import FORMAT, FORMAT_VERSION, Column, IndexManifest, db_errors, decode_array

C = TypeVar("C", bound="IndexConnection")


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


class IndexConnection:
    """An index file's connection and validated state (manifest, sketches, columns), shared by `RiseIndex`'s readers
    and writers. Read-only handles may be shared between threads (each call uses its own cursor)."""

    def __init__(self, path: Path, read_only: bool) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)  # notified when a connection's last read in flight ends
        self._con: duckdb.DuckDBPyConnection | None = None
        self._borrowed = False  # self._con is the in-process writer's connection (read through cursors, never closed)
        self._limits = FilterLimits()  # what a filter may use on self._con (read from the environment on connecting)
        self._in_flight: dict[int, int] = {}  # id(connection) -> cursors open on it
        self._manifest: IndexManifest | None = None
        self._sketches: SketchSet | None = None
        self._hidden_mean: torch.Tensor | None = None
        self._columns: list[Column] = []
        self._fm: FeatureMatrix | None = None
        self._fm_uuid = ""
        self._masks: dict[str, tuple[tuple[str, int], torch.Tensor]] = {}
        # ((uuid, n), each row's loss, their median): IndexReader.row_losses and reference_loss
        self._row_losses: tuple[tuple[str, int] | None, np.ndarray, float] = (None, np.zeros(0), float("nan"))
        # ((uuid, n, updated_at), each row's loss under the adapter's base model and the fine-tune's, or None):
        # IndexReader.learned_losses
        self._base_losses: tuple[tuple[str, int, str] | None, LearnedLosses | None] = (None, None)
        self._closed = False

    # -- opening, connections --------------------------------------------------------------------------------------

    @classmethod
    def open(cls: type[C], path: str | Path, read_only: bool = True) -> C:
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
            self._limits = FilterLimits.from_env()
            if writer is not None:  # a build in this process holds the file: read through its cursors
                self._con, self._borrowed = writer, True
            else:
                with db_errors(self.path, "open" if validate else "create"):
                    # locked down: filters are user text, and this connection must reach nothing but this file,
                    # within the memory and threads a filter may use
                    self._con = duckdb.connect(str(self.path), read_only=self.read_only,
                                               config=connection_config(self._limits))
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

    @property
    def closed(self) -> bool:
        """Whether `close` was called on this handle (it then refuses every read)."""
        return self._closed

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

    def __enter__(self: C) -> C:
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

    # -- state -----------------------------------------------------------------------------------------------------

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
                format_version=version, build_preset=raw.get("build_preset"),
                provenance=dict(raw.get("provenance") or {}), unfinished=list(raw.get("unfinished") or []))
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

    def _state(self) -> IndexManifest:
        self._connect()
        assert self._manifest is not None
        return self._manifest
