"""Writing the ANN files safely: temporary names beside them, removed when a write fails or is interrupted; the
faiss file moved into place and then its sidecar, each by a rename; the sidecar's nprobe changed alone."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexStoreError, InputDataError, RiseError
from .sidecar import FAISS_SUFFIX, AnnMeta, ann_paths, ann_status, import_faiss

if TYPE_CHECKING:
    from ..store import RiseIndex


def write_ann(ivf: Any, meta: AnnMeta, faiss_path: Path, meta_path: Path) -> AnnMeta:
    """Write an ANN index held in memory (`faiss.write_index`) and then its sidecar (`commit_ann`). The builds stream
    instead (`write_ivf`); this serves small indexes made by hand, e.g. in tests and benchmarks."""
    faiss = import_faiss()
    tmp, _ = tmp_paths(faiss_path)
    with writing(faiss_path, tmp):
        faiss.write_index(ivf, str(tmp))
    return commit_ann(tmp, meta, faiss_path, meta_path)


def tmp_paths(faiss_path: Path) -> tuple[Path, Path]:
    """(temporary faiss file, shard scratch file) of a build writing `faiss_path`: <index>.ann.faiss.tmp-<pid> and
    <index>.ann.shards.tmp-<pid>."""
    name, pid = faiss_path.name, os.getpid()
    stem = name[:-len(FAISS_SUFFIX)] + ".ann" if name.endswith(FAISS_SUFFIX) else name
    return faiss_path.with_name(f"{name}.tmp-{pid}"), faiss_path.with_name(f"{stem}.shards.tmp-{pid}")


@contextlib.contextmanager
def writing(faiss_path: Path, *tmps: Path) -> Iterator[None]:
    """Remove the temporary files when the block fails or is interrupted (Ctrl-C included), so no half-written file
    is left; OS and faiss write errors become IndexStoreError."""
    try:
        yield
    except BaseException as exc:
        for tmp in tmps:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, RiseError):
            raise
        if isinstance(exc, OSError):
            raise IndexStoreError(f"cannot write {faiss_path}: {exc.strerror or exc}") from exc
        if isinstance(exc, RuntimeError):  # faiss I/O errors
            raise IndexStoreError(f"cannot write {faiss_path}: {str(exc).splitlines()[-1]}") from exc
        raise


def commit_ann(tmp: Path, meta: AnnMeta, faiss_path: Path, meta_path: Path) -> AnnMeta:
    """Move a finished faiss file into place, then write its sidecar, each by a rename; the old sidecar is removed
    first, so a reader never pairs a new faiss file with an old sidecar."""
    with writing(faiss_path, tmp):
        meta.faiss_bytes = tmp.stat().st_size
        meta_path.unlink(missing_ok=True)
        os.replace(tmp, faiss_path)
    tmp_meta = meta_path.with_name(f"{meta_path.name}.tmp-{os.getpid()}")
    tmp_meta.write_text(meta.to_json(), encoding="utf-8")
    os.replace(tmp_meta, meta_path)
    return meta



def set_nprobe(index: RiseIndex, nprobe: int) -> AnnMeta:
    """Change the default nprobe of an index's ANN (sidecar only; no rebuild)."""
    status = ann_status(index)
    if not status.valid:
        raise status.error(status.reason)
    meta = status.meta
    assert meta is not None
    if not 1 <= nprobe <= meta.nlist:
        raise InputDataError(f"nprobe must be between 1 and nlist ({meta.nlist}), got {nprobe}")
    meta.nprobe = int(nprobe)
    _, meta_path = ann_paths(index.path)
    tmp = meta_path.with_name(f"{meta_path.name}.tmp-{os.getpid()}")
    tmp.write_text(meta.to_json(), encoding="utf-8")
    os.replace(tmp, meta_path)
    return meta
