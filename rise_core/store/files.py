"""Index files on disk: checking a location before a build or an open, and this process's handles per file.

DuckDB lets one process hold a file read-write, or any number of processes hold it read-only. Within this process a
writer (a build) first releases the read-only connections of the file; while it writes, read-only handles read
through cursors of the writer's connection (they see committed batches only), and when it closes they reconnect
read-only. `path_lock` serialises those switches."""

from __future__ import annotations

import shutil
import tempfile
import threading
import weakref
from pathlib import Path
from typing import Protocol

import duckdb

from ..errors import IndexStoreError


class Releasable(Protocol):
    """What this process's registry holds of an open index handle (`RiseIndex`): it can release its connection."""

    def release(self) -> None: ...


READERS: dict[str, weakref.WeakSet[Releasable]] = {}
READERS_LOCK = threading.Lock()
# The connection of the handle writing each file in this process (a build): read-only handles of the same file read
# through cursors of it while it is open (DuckDB lets a process hold a file either read-write or read-only).
WRITERS: dict[str, duckdb.DuckDBPyConnection] = {}
_PATH_LOCKS: dict[str, threading.RLock] = {}


def path_lock(path: Path) -> threading.RLock:
    """The lock that serialises connecting to and disconnecting from `path` in this process. Taken before any
    handle's own lock, never after it."""
    with READERS_LOCK:
        return _PATH_LOCKS.setdefault(path_key(path), threading.RLock())


def path_key(path: Path) -> str:
    """The key of `path` in READERS (its resolved form)."""
    return str(path.resolve())


def release_readers(path: Path) -> None:
    """Close the read-only connections of this process's open indexes on `path`, each after its reads in flight
    (they reconnect lazily). Called with `path_lock(path)` held."""
    with READERS_LOCK:
        readers = list(READERS.get(path_key(path), ()))
    for reader in readers:
        reader.release()


DUCKDB_MAGIC = b"DUCK"  # bytes 8 to 12 of every DuckDB database file


def check_index_file(path: Path) -> None:
    """Raise IndexStoreError, with what to do, unless `path` is an existing file."""
    if not path.exists():
        hint = "" if path.parent.exists() else f" (directory {path.parent} does not exist)"
        raise IndexStoreError(f"no index at {path}{hint}; build one with `rise build POOL --index {path}`")
    if path.is_dir():
        raise IndexStoreError(f"{path} is a directory; give the index file (e.g. {path / 'pool.duckdb'})")
    try:
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError as exc:
        raise IndexStoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(head) == 12 and head[8:12] != DUCKDB_MAGIC:  # DuckDB's own error would speak of an in-memory database
        raise IndexStoreError(f"{path} is not a RISE index: it is not a DuckDB database file (or its header is "
                              "corrupted); give the .duckdb file `rise build` wrote")


def check_new_location(path: Path, overwrite: bool) -> None:
    """Raise IndexStoreError, with what to do, unless a new index can be written at `path`."""
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


def companion_files(path: Path) -> list[Path]:
    """The files and folders beside the index at `path` that belong to it: `<name>.<suffix>` (its `.wal`, the ANN
    files `.ann.*`, span counts, diagnostics, a peer's Hessian). Not another index whose name merely starts with
    `<name>.` (`a.duckdb.b.duckdb`, a name the Build page allows) nor that index's own files: a suffix that names a
    `.duckdb` file is never a companion."""
    path = Path(path)
    prefix = path.name + "."
    kind = path.suffix.lstrip(".")
    return sorted(p for p in path.parent.iterdir()
                  if p.name.startswith(prefix) and not (kind and kind in p.name[len(prefix):].split(".")))


def remove_index(path: Path) -> None:
    """Delete the index file at `path` and its own files (`companion_files`): for an index this process has just
    created and stored nothing in (`build_index` failing before its first sample); the caller has closed it."""
    path = Path(path)
    with path_lock(path):
        release_readers(path)
        for p in [*companion_files(path), path]:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def set_aside(path: Path) -> Path:
    """Move the index at `path`, with its own files beside it (`companion_files`: `<name>.wal`, the ANN files
    `<name>.ann.*`, ...), to `<stem>.<UTC time>.duckdb` in the same folder, so a rebuild never destroys it; returns
    the new index path. The caller has closed this process's handles on it (readers reconnect to the new file at
    `path` later). A file there that is not an index, or does not open, is moved aside too: replacing it loses it
    no more than replacing an index does."""
    path = Path(path)
    if not path.is_file():
        check_index_file(path)  # says what is there instead: nothing, or a directory
    return move_index(path, aside_path(path))


def aside_path(path: Path) -> Path:
    """Where `set_aside` moves the index at `path`: `<stem>.<UTC time><suffix>` beside it."""
    from datetime import datetime, timezone

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return path.with_name(f"{path.stem}.{stamp}{path.suffix}")


def move_index(path: Path, target: Path) -> Path:
    """Rename the file at `path` and its own files (`companion_files`) to `target` and `target`'s; returns `target`."""
    with path_lock(path):
        release_readers(path)
        companions = companion_files(path)
        path.rename(target)
        for companion in companions:
            companion.rename(target.with_name(target.name + companion.name[len(path.name):]))
    return target


def compact_copy(source: Path, target: Path) -> None:
    """Write a fresh copy of the index file `source` (closed) to `target` (absent) holding its live data only: no
    free blocks and no old versions of rewritten rows (a manifest value as it was before an update), so the copy
    carries nothing the index no longer says."""
    source, target = Path(source), Path(target)
    check_index_file(source)
    if target.exists():
        raise IndexStoreError(f"{target} already exists; give a new file for the copy")
    con = duckdb.connect()
    try:
        con.execute("ATTACH ? AS rise_source (READ_ONLY)", [str(source)])
        con.execute("ATTACH ? AS rise_target", [str(target)])
        con.execute("COPY FROM DATABASE rise_source TO rise_target")
    except duckdb.Error as exc:
        raise IndexStoreError(f"could not copy {source} to {target}: {exc}") from None
    finally:
        con.close()
