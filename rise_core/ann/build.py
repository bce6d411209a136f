"""Building and updating an index's ANN in bounded memory: rows streamed from the index a block at a time, k-means
cells trained on a bounded seeded sample, rows added a shard at a time and merged on disk (`layout`)."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import IndexStoreError, InputDataError
from ..scoring import FeatureMatrix
from ..store.schema import utc_now
from .files import commit_ann, tmp_paths, writing
from .layout import FileLists, Progress, ann_file_lists, dump_shard, new_ivf, write_merged
from .sidecar import AnnMeta, ann_paths, ann_status, import_faiss, index_dims

if TYPE_CHECKING:
    from ..store import RiseIndex

logger = logging.getLogger(__name__)

TRAIN_PER_LIST = 64  # k-means training rows per cell (faiss's own default is 256; 64 keeps 1M-row builds in minutes)


def default_nlist(n: int) -> int:
    """k-means cells for n rows: the power of two nearest 2 sqrt(n) (2048 for 1M rows), with at least 8 rows a cell."""
    if n < 16:
        return 1
    nlist = 2 ** round(math.log2(2 * math.sqrt(n)))
    return int(max(1, min(nlist, n // 8)))


def default_nprobe(nlist: int) -> int:
    """Cells scanned per query: nlist/16, at least 8 (recall@10 >= 0.95 on the synthetic pools of
    benchmarks/ann_scale.py, and at least as high on real features as on synthetic ones of the same size under the
    default weights: benchmarks/ann_recall_real.py); tune per index with `rise index-ann --set-nprobe`. Queries
    whose weights put less on HS than the default scan up to MAX_PROBE_FACTOR times as many (`probe_factor`)."""
    return int(min(nlist, max(8, nlist // 16)))


Reader = Callable[[int, int], np.ndarray]  # (start, stop) -> float32 (stop - start, d) concatenated unit channels


def concat_channels(fm: FeatureMatrix, channels: list[str] | tuple[str, ...]) -> np.ndarray:
    """float32 [u_rh; u_gh; u_hs] rows of a feature matrix (the vectors the ANN index holds), each channel cast
    straight into its columns (no float32 copy per channel)."""
    parts = [getattr(fm, c).numpy() for c in channels]
    out = np.empty((len(fm), sum(p.shape[1] for p in parts)), dtype=np.float32)
    start = 0
    for p in parts:
        out[:, start:start + p.shape[1]] = p
        start += p.shape[1]
    return out


@contextlib.contextmanager
def _threads(threads: int | None) -> Iterator[None]:
    """faiss's OpenMP threads set to `threads` (when given) for a build, restored after."""
    faiss = import_faiss()
    before = faiss.omp_get_max_threads()
    if threads:
        faiss.omp_set_num_threads(int(threads))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


# Rows read (float32) per block while training and adding. A build holds at most one block, the k-means sample and
# one shard's codes at a time, whatever the pool's size.
CHUNK_ROWS = 16384
# fp16 codes and int64 ids one shard holds in memory while its rows are added (about 127k rows at the default dims);
# faiss grows each cell's vectors by doubling, so a shard may briefly take up to twice this
SHARD_BYTES = 512 << 20
# the float32 k-means sample is capped at this size: 2 GiB is 254k rows of 2112 values, so every default up to 1M
# rows keeps its TRAIN_PER_LIST rows a cell (131k at 1M); at 10M (8192 cells) it is 31 a cell
TRAIN_MAX_BYTES = 2 << 30


def shard_rows_for(d: int) -> int:
    """Rows of one shard: SHARD_BYTES of fp16 codes (2 d bytes a row) and ids (8 bytes)."""
    return max(1, SHARD_BYTES // (2 * d + 8))


def train_rows_for(n: int, nlist: int, train_per_list: int, d: int) -> int:
    """k-means sample size: train_per_list rows a cell, at most TRAIN_MAX_BYTES of float32 and at least one a cell."""
    cap = TRAIN_MAX_BYTES // (4 * d)
    return int(min(n, max(nlist, min(nlist * int(train_per_list), cap))))


def train_ivf(read: Reader, n: int, d: int, nlist: int, train_per_list: int = TRAIN_PER_LIST, seed: int = 0,
              chunk_rows: int = CHUNK_ROWS, progress: Progress | None = None) -> tuple[Any, int]:
    """An empty IVF(nlist),SQfp16 index whose cells are the k-means centroids of a seeded random sample of rows
    0..n-1 of `read` (`train_rows_for`: bounded, whatever n), and the sample's size. One pass over the rows."""
    faiss = import_faiss()
    if not 1 <= nlist <= n:
        raise InputDataError(f"nlist must be between 1 and the number of rows ({n}), got {nlist}")
    ivf = new_ivf(faiss.IndexFlatIP(d), d, nlist, own=True)
    ivf.cp.seed = int(seed)
    ivf.cp.max_points_per_centroid = max(1, int(train_per_list))
    ivf.cp.min_points_per_centroid = 1
    n_train = train_rows_for(n, nlist, train_per_list, d)
    if n_train < 8 * nlist:
        logger.warning("training %d cells on %d rows (fewer than 8 a cell): use a smaller nlist", nlist, n_train)
    train_ids = np.sort(np.random.default_rng(seed).choice(n, n_train, replace=False))
    train = np.empty((n_train, d), dtype=np.float32)
    for start in range(0, n, chunk_rows):
        stop = min(n, start + chunk_rows)
        lo, hi = np.searchsorted(train_ids, [start, stop])
        if hi > lo:
            train[lo:hi] = _block(read, start, stop, d)[train_ids[lo:hi] - start]
        if progress:
            progress("read training rows", stop, n)
    if progress:
        progress("k-means", 0, 1)
    # the cells alone, as IndexIVF.train trains them (its quantizer step), without its encoder step: for fp16 codes
    # that learns nothing, yet IndexIVF.train first copies up to 100k sample rows for it (1.5 GB at the default
    # dims, a peak above the sample itself)
    clustering = faiss.Clustering(d, nlist, ivf.cp)
    ivf.quantizer.reset()
    clustering.train(train, ivf.quantizer)
    ivf.quantizer.is_trained = True
    ivf.is_trained = True
    del train
    if progress:
        progress("k-means", 1, 1)
    return ivf, n_train


def _block(read: Reader, start: int, stop: int, d: int) -> np.ndarray:
    """read(start, stop) as a C-contiguous float32 (stop - start, d) array, checked."""
    x = np.ascontiguousarray(read(start, stop), dtype=np.float32)
    if x.shape != (stop - start, d):
        raise IndexStoreError(f"rows {start}..{stop - 1} came back as {x.shape}, expected {(stop - start, d)}")
    return x


def write_ivf(template: Any, read: Reader, stop: int, path: Path, scratch: Path, start: int = 0,
              base: FileLists | None = None, base_map: np.ndarray | None = None, shard_rows: int | None = None,
              chunk_rows: int = CHUNK_ROWS, progress: Progress | None = None) -> int:
    """Write the ANN file `path`: the trained, empty `template` (consumed) holding rows start..stop-1 of `read`
    after `base` (the lists of rows 0..start-1, with their direct map `base_map`). Returns the number of shards.

    Rows are added `shard_rows` at a time into indexes sharing the template's quantizer (so a row lands in the same
    cell as in a one-shot build); each shard's lists go to the scratch file and the shard is freed. The shards are
    then merged cell by cell into faiss's own file layout: at most one shard and one block of rows are ever in
    memory, plus the direct map (8 bytes a row)."""
    nlist, d = template.nlist, template.d
    shard_rows = max(1, int(shard_rows or shard_rows_for(d)))
    chunk_rows = max(1, min(int(chunk_rows), shard_rows))
    direct_map = np.empty(stop, dtype=np.int64)
    filled = np.zeros(nlist, dtype=np.int64)
    sources = []
    if base is not None:
        assert base_map is not None and len(base_map) == start
        direct_map[:start] = base_map
        filled += base.sizes
        sources.append(base)
    n_shards = 0
    try:
        with open(scratch, "w+b") as fh:
            for s0 in range(start, stop, shard_rows):
                s1 = min(stop, s0 + shard_rows)
                shard = new_ivf(template.quantizer, d, nlist, own=False)
                shard.is_trained = True
                for a in range(s0, s1, chunk_rows):
                    b = min(s1, a + chunk_rows)
                    shard.add_with_ids(_block(read, a, b, d), np.arange(a, b, dtype=np.int64))
                    if progress:
                        progress("add rows", b - start, stop - start)
                sources.append(dump_shard(shard, fh, direct_map, filled))
                del shard
                n_shards += 1
            fh.flush()
            write_merged(template, sources, direct_map, path, progress)
    finally:
        scratch.unlink(missing_ok=True)
    return n_shards



def _index_reader(index: RiseIndex, channels: list[str]) -> Reader:
    """Blocks of an index's rows as the ANN holds them. DuckDB keeps every block a connection reads in its buffer
    pool (up to 80% of RAM) until the connection closes: a build over a 1M-row index would hold 7 GB of them. So a
    read-only handle releases its connection after each block (the next read reconnects, in milliseconds)."""

    def read(start: int, stop: int) -> np.ndarray:
        block = concat_channels(index.load_features(start, stop), channels)
        if index.read_only:
            index.release()
        return block

    return read


def build_ann(index: RiseIndex, nlist: int | None = None, nprobe: int | None = None,
              train_per_list: int = TRAIN_PER_LIST, seed: int = 0, threads: int | None = None,
              chunk_rows: int = CHUNK_ROWS, shard_rows: int | None = None,
              progress: Progress | None = None) -> AnnMeta:
    """Build (or rebuild) the ANN index beside `index` over all its rows; returns the sidecar written.

    Streams: k-means on a bounded sample, then rows added a shard at a time and merged on disk (`write_ivf`), so
    the build's memory does not grow with the pool (about 2 GB at the default dims, from 1M rows on). Until the
    final rename the old ANN files stay as they were; an interrupted build removes its temporary files."""
    from .. import __version__  # the package root, read at run time

    faiss = import_faiss()
    m = index.manifest
    n = m.n_samples
    if n == 0:
        raise InputDataError(f"{index.path} has no samples yet: build the index first (`rise build`)")
    dims = index_dims(index)
    d = sum(dims.values())
    nlist = default_nlist(n) if nlist is None else int(nlist)
    if not 1 <= nlist <= n:
        raise InputDataError(f"--nlist must be between 1 and the number of samples ({n}), got {nlist}")
    nprobe = default_nprobe(nlist) if nprobe is None else int(nprobe)
    if not 1 <= nprobe <= nlist:
        raise InputDataError(f"--nprobe must be between 1 and nlist ({nlist}), got {nprobe}")
    shard_rows = int(shard_rows or shard_rows_for(d))
    faiss_path, meta_path = ann_paths(index.path)
    tmp, scratch = tmp_paths(faiss_path)
    read = _index_reader(index, list(dims))
    start = time.perf_counter()
    with writing(faiss_path, tmp, scratch), _threads(threads):
        template, n_train = train_ivf(read, n, d, nlist, train_per_list, seed, chunk_rows, progress)
        n_shards = write_ivf(template, read, n, tmp, scratch, shard_rows=shard_rows, chunk_rows=chunk_rows,
                             progress=progress)
    meta = AnnMeta(index_uuid=m.index_uuid, config_fingerprint=index.config.fingerprint(), n_rows=n, dims=dims,
                   nlist=nlist, nprobe=nprobe, train_rows=n_train, seed=seed, structure=f"IVF{nlist},SQfp16",
                   faiss_version=faiss.__version__, library_version=__version__, built_at=utc_now(),
                   build_seconds=round(time.perf_counter() - start, 2),
                   extra={"shards": n_shards, "shard_rows": shard_rows})
    return commit_ann(tmp, meta, faiss_path, meta_path)


def update_ann(index: RiseIndex, threads: int | None = None, chunk_rows: int = CHUNK_ROWS,
               shard_rows: int | None = None, progress: Progress | None = None) -> tuple[AnnMeta, int]:
    """Add the rows appended since the ANN build (cells unchanged, no retraining); returns (sidecar, rows added).

    Streams like `build_ann`: the existing file's lists are copied cell by cell into a new file with the new rows'
    shards, which replaces it by a rename."""
    status = ann_status(index)
    if not status.valid:
        raise status.error(status.reason)
    meta = status.meta
    assert meta is not None
    n = index.manifest.n_samples
    if meta.n_rows == n:
        return meta, 0
    faiss = import_faiss()
    faiss_path, meta_path = ann_paths(index.path)
    tmp, scratch = tmp_paths(faiss_path)
    rebuild = f"rebuild it with `rise index-ann --index {index.path}`"
    start = time.perf_counter()
    added = n - meta.n_rows
    with open(faiss_path, "rb") as fh, writing(faiss_path, tmp, scratch):
        try:
            old = faiss.read_index(str(faiss_path), getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP))
        except RuntimeError as exc:
            raise IndexStoreError(f"cannot read {faiss_path} ({str(exc).splitlines()[-1]}); {rebuild}") from exc
        if (not isinstance(old, faiss.IndexIVFScalarQuantizer) or old.ntotal != meta.n_rows or old.d != meta.d
                or old.direct_map.type != faiss.DirectMap.Array):
            raise IndexStoreError(f"{faiss_path} is not the IVF index its sidecar describes; {rebuild}")
        try:
            base = ann_file_lists(old, fh.fileno())
        except IndexStoreError as exc:
            raise IndexStoreError(f"cannot add rows to {faiss_path}: {exc}; {rebuild}") from exc
        base_map = faiss.vector_to_array(old.direct_map.array).astype(np.int64)
        template = new_ivf(faiss.clone_index(old.quantizer), old.d, old.nlist, own=True)
        template.is_trained = True
        del old
        with _threads(threads):
            write_ivf(template, _index_reader(index, list(meta.dims)), n, tmp, scratch, start=meta.n_rows,
                      base=base, base_map=base_map, shard_rows=shard_rows, chunk_rows=chunk_rows, progress=progress)
    meta.n_rows = n
    meta.extra["last_update"] = {"rows_added": added, "seconds": round(time.perf_counter() - start, 2)}
    return commit_ann(tmp, meta, faiss_path, meta_path), added
