"""Approximate nearest-neighbour (ANN) search over a RISE index's stored features, for pools of a million samples.

Why one structure serves every query: under sample_norm='channel' every per-sample scale is 1, so the fused score
sum_c lambda_c <u_c(i), q_c> is ONE inner product between the concatenated stored unit channels [u_rh; u_gh; u_hs]
and the lambda-weighted concatenated query [l_rh q_rh; l_gh q_gh; l_hs q_hs]. The stored side does not depend on the
lambdas, which stay a query-time choice. ('joint' and 'none' scale each sample's channels by its own norms: those
queries are scored exactly.)

Structure: faiss IndexIVFScalarQuantizer, inner-product metric, fp16 codes of the raw vectors (no residual): `nlist`
k-means cells; a query scans the `nprobe` cells whose centroids score highest. The stored features are float16
already, so the fp16 codes hold them losslessly and the ANN file doubles as a memory-mapped copy of the features:
candidates are reconstructed from it and rescored exactly (the numbers `attribution.rank` gives for those rows), so
returned scores are exact and only recall is approximate. Why this and not HNSW or PQ: benchmarks/ann_scale.py.

Files beside the index: `<index>.ann.faiss` (the faiss index with a direct map, opened memory-mapped, so a query
pages in only the cells it scans and a server needs no memory for the whole index) and `<index>.ann.json` (sidecar:
index_uuid, config fingerprint, rows covered, dims, faiss parameters, the faiss file's size). A build writes
`<index>.ann.faiss.tmp-<pid>` and `<index>.ann.shards.tmp-<pid>` and renames the first into place when done; an
interrupted build removes both and leaves the previous files as they were. A sidecar for another index or config,
covering more rows than the index has, or beside a faiss file of another size is refused (search='ann') or ignored
with the reason (search='auto').

Building in bounded memory (`build_ann`, `update_ann`): rows are streamed from the index a block at a time; the
k-means cells are trained on a seeded sample capped at TRAIN_MAX_BYTES; rows are added a shard at a time
(SHARD_BYTES of codes) into indexes sharing the trained quantizer, each shard's cells written to a scratch file and
freed; the shards are then merged cell by cell into the ANN file, in faiss's own layout (the bytes
`faiss.write_index` writes for the same index built in memory, so files from before the streaming build read and
update unchanged). Peak memory is the sample, one shard and one block (about 2 GB at the default dims), whatever
the pool's size; the disk briefly holds the ANN file twice (scratch shards and the merged file). Why not faiss's
OnDiskInvertedLists: it keeps the cells in a second file whose path is written inside the index (two files to keep
in step, no single rename), and it writes them through a shared memory map, whose pages count as the builder's
resident memory.

Appended samples: rows added after the ANN build are scored exactly and merged (`rise index-ann --update` adds them
to the ANN: the existing cells are copied into a new file with the new rows' shards, no retraining). Filters
(`where`): an IDSelectorBitmap restricts the scan to matching rows, with nprobe raised as the filter gets more
selective; when few rows match, every cell is scanned, so every matching row is scored (exact).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .config import ScoreOptions
from .errors import ConfigError, IndexMismatchError, IndexStoreError, InputDataError, RiseError
from .scoring import FeatureMatrix, Scores, matvec, query_vectors, weights

if TYPE_CHECKING:
    from .store import RiseIndex

logger = logging.getLogger(__name__)

ANN_FORMAT = "rise-ann"
ANN_FORMAT_VERSION = 1
FAISS_SUFFIX = ".ann.faiss"
META_SUFFIX = ".ann.json"
SEARCH_MODES = ("auto", "exact", "ann")
# search='auto' uses the ANN index from this many rows on: below it the exact float16 scan takes a few ms
# (benchmarks/query_latency.py) and is exact
ANN_MIN_ROWS = 50_000
TRAIN_PER_LIST = 64  # k-means training rows per cell (faiss's own default is 256; 64 keeps 1M-row builds in minutes)
# a filtered query scans every cell (scoring every matching row: exact) when the matching rows are at most this many
# times the rows an unfiltered query scores (nprobe cells of ~n/nlist rows): it then costs about as much, and is exact
FILTER_EXACT_FACTOR = 2.0
INSTALL_HINT = "pip install faiss-cpu (or pip install 'rise-core[ann]')"
# A query whose weights put less on HS than the default weights (with which the default nprobe was measured) scans up
# to this many times the default cells (`probe_factor`). On real features the k-means cells follow the HS channel
# most (it clusters by topic), so neighbours by RH + GH alone spread over many cells. On the real pools (3.5k and
# 8.7k rows, benchmarks/ann_recall_real.py, docs/SCALE.md), at the default nprobe (1/16 of the cells) the default
# weights found 0.94-0.96 of the exact top 10 (synthetic features of the same size: 0.88-0.94), and HS-only or
# RH-left-out weights as many, but the backdoor weights (HS 0) 0.70-0.78 (synthetic: 0.86-0.92). HS at 1/2, 1/7 and
# 0 of its default share needed about 2x, 4-8x and 8x the default cells for recall@10 >= 0.95.
MAX_PROBE_FACTOR = 8.0
GATHER_ROWS = 8192  # rows reconstructed from the ANN file per block when rescoring


def import_faiss() -> Any:
    """The faiss module, imported on first use (an optional dependency); ConfigError naming the install otherwise."""
    loader = logging.getLogger("faiss.loader")  # its INFO lines about instruction sets are noise under `rise -v`
    level = loader.level
    loader.setLevel(max(level, logging.WARNING))
    try:
        import faiss
    except ImportError as exc:
        raise ConfigError(f"the ANN index needs faiss, which is not installed: {INSTALL_HINT}") from exc
    finally:
        loader.setLevel(level)
    return faiss


def ann_paths(index_path: str | Path) -> tuple[Path, Path]:
    """(faiss file, JSON sidecar) of the ANN index beside an index file."""
    p = str(index_path)
    return Path(p + FAISS_SUFFIX), Path(p + META_SUFFIX)


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


# -- the sidecar ------------------------------------------------------------------------------------------------


@dataclass
class AnnMeta:
    """The JSON sidecar: what the ANN file covers and how it was built."""

    index_uuid: str
    config_fingerprint: str
    n_rows: int  # rows 0..n_rows-1 of the index are in the ANN file
    dims: dict[str, int]  # channel -> length, in concatenation order (rh, gh[, hs])
    nlist: int
    nprobe: int  # default cells scanned per query
    train_rows: int
    seed: int
    faiss_bytes: int = 0  # size of the faiss file written with this sidecar
    structure: str = ""
    metric: str = "inner_product"
    faiss_version: str = ""
    library_version: str = ""
    built_at: str = ""
    build_seconds: float = 0.0
    format: str = ANN_FORMAT
    format_version: int = ANN_FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def d(self) -> int:
        return int(sum(self.dims.values()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> AnnMeta:
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("format") != ANN_FORMAT:
            raise ValueError(f"not a {ANN_FORMAT} sidecar")
        if not isinstance(raw.get("format_version"), int) or raw["format_version"] > ANN_FORMAT_VERSION:
            raise ValueError(f"ANN format {raw.get('format_version')!r} is newer than this library reads")
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in raw.items() if k in names})


@dataclass
class AnnStatus:
    """Whether an index has a usable ANN index: state 'absent', 'valid' or 'invalid' (with the reason)."""

    state: str
    reason: str
    meta: AnnMeta | None = None
    n_index_rows: int = 0
    error: type[RiseError] = IndexStoreError  # what search='ann' raises for this state

    @property
    def valid(self) -> bool:
        return self.state == "valid"

    @property
    def n_tail(self) -> int:
        """Rows appended since the ANN build (scored exactly until `rise index-ann --update`)."""
        return max(0, self.n_index_rows - self.meta.n_rows) if self.meta else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: state, reason, rows in the index, rows the ANN covers, rows appended since, and the sidecar."""
        return {"state": self.state, "reason": self.reason, "n_index_rows": self.n_index_rows,
                "n_covered": self.meta.n_rows if self.meta else 0, "n_tail": self.n_tail,
                "meta": None if self.meta is None else asdict(self.meta)}


def index_dims(index: RiseIndex) -> dict[str, int]:
    """{channel: length} of the features an index stores, in concatenation order."""
    d_rh, d_gh = index.config.feature_dims
    dims = {"rh": d_rh, "gh": d_gh}
    if index.config.hidden_channel:
        mean = index.hidden_mean
        dims["hs"] = int(mean.numel()) if mean is not None else int(index.manifest.model_info.get("hidden_size", 0))
    return dims


def ann_status(index: RiseIndex) -> AnnStatus:
    """Check the sidecar against the index (no faiss needed): identity, config, rows, dims, faiss file size."""
    m = index.manifest
    faiss_path, meta_path = ann_paths(index.path)
    rebuild = f"rebuild it with `rise index-ann --index {index.path}`"
    if not meta_path.exists():
        return AnnStatus("absent", f"no ANN index (`rise index-ann --index {index.path}` builds one)",
                         n_index_rows=m.n_samples)
    try:
        meta = AnnMeta.from_json(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError) as exc:
        return AnnStatus("invalid", f"{meta_path} is unreadable ({exc}); {rebuild}", n_index_rows=m.n_samples)
    status = AnnStatus("invalid", "", meta, m.n_samples, IndexMismatchError)
    if meta.index_uuid != m.index_uuid:
        status.reason = (f"{meta_path} was built for another index (index_uuid {meta.index_uuid}; this index is "
                         f"{m.index_uuid}): it does not describe these rows; {rebuild}")
    elif meta.config_fingerprint != index.config.fingerprint():
        status.reason = (f"{meta_path} was built for another config (fingerprint {meta.config_fingerprint}, the "
                         f"index has {index.config.fingerprint()}); {rebuild}")
    elif meta.dims != index_dims(index):
        status.reason = f"{meta_path} has dims {meta.dims}, the index {index_dims(index)}; {rebuild}"
    elif meta.n_rows > m.n_samples:
        status.reason = (f"{meta_path} covers {meta.n_rows} rows but the index has {m.n_samples}: it is stale; "
                         f"{rebuild}")
    else:
        status.error = IndexStoreError
        size = faiss_path.stat().st_size if faiss_path.exists() else None
        if size is None:
            status.reason = f"{faiss_path} is missing (its sidecar {meta_path.name} is there); {rebuild}"
        elif size != meta.faiss_bytes:
            status.reason = (f"{faiss_path} ({size} bytes) does not match its sidecar ({meta.faiss_bytes} bytes): an "
                             f"interrupted build or a file from another build; {rebuild}")
        else:
            status.state = "valid"
            tail = m.n_samples - meta.n_rows
            status.reason = (f"ANN index over {meta.n_rows:,} rows ({meta.structure}, nprobe {meta.nprobe})" +
                             (f"; {tail:,} rows appended since are scored exactly (`rise index-ann --index "
                              f"{index.path} --update` adds them)" if tail else ""))
    return status


def status_summary(status: AnnStatus, index_path: str | Path) -> str:
    """One line for `rise info`: whether the index has a usable ANN index, the rows it covers of the index's rows
    (stale when rows were appended since), its default nprobe and its file size."""
    from .units import format_bytes

    if status.state == "absent":
        return f"none (`rise index-ann --index {index_path}` builds one; queries scan every row)"
    if not status.valid:
        return f"unusable, queries scan every row: {status.reason}"
    meta = status.meta
    assert meta is not None
    tail = status.n_tail
    text = (f"{meta.structure} over {meta.n_rows:,} of {status.n_index_rows:,} rows" +
            (f" (stale: the {tail:,} appended since are scored exactly; `rise index-ann --index {index_path} "
             f"--update` adds them)" if tail else " (up to date)") +
            f", nprobe {meta.nprobe} of {meta.nlist} cells, {format_bytes(meta.faiss_bytes)}")
    if status.n_index_rows < ANN_MIN_ROWS:
        text += f"; queries use it from {ANN_MIN_ROWS:,} rows (`rank(..., search='ann')` forces it)"
    return text


# -- building ---------------------------------------------------------------------------------------------------


Progress = Callable[[str, int, int], None]  # (stage, done, total)
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
COPY_BYTES = 64 << 20  # bytes copied at a time when the shards are merged into the ANN file


def shard_rows_for(d: int) -> int:
    """Rows of one shard: SHARD_BYTES of fp16 codes (2 d bytes a row) and ids (8 bytes)."""
    return max(1, SHARD_BYTES // (2 * d + 8))


def train_rows_for(n: int, nlist: int, train_per_list: int, d: int) -> int:
    """k-means sample size: train_per_list rows a cell, at most TRAIN_MAX_BYTES of float32 and at least one a cell."""
    cap = TRAIN_MAX_BYTES // (4 * d)
    return int(min(n, max(nlist, min(nlist * int(train_per_list), cap))))


def _new_ivf(quantizer: Any, d: int, nlist: int, own: bool) -> Any:
    """An empty faiss IVF(nlist),SQfp16 inner-product index over `quantizer` (fp16 codes of the raw vectors, no
    residual: lossless for float16 features, so candidates reconstruct exactly). own: the index frees the quantizer;
    otherwise it is shared (shards share the trained one)."""
    faiss = import_faiss()
    ivf = faiss.IndexIVFScalarQuantizer(quantizer, d, nlist, faiss.ScalarQuantizer.QT_fp16,
                                        faiss.METRIC_INNER_PRODUCT)
    ivf.by_residual = False
    if own:
        ivf.own_fields = True
        quantizer.this.disown()
    return ivf


def train_ivf(read: Reader, n: int, d: int, nlist: int, train_per_list: int = TRAIN_PER_LIST, seed: int = 0,
              chunk_rows: int = CHUNK_ROWS, progress: Progress | None = None) -> tuple[Any, int]:
    """An empty IVF(nlist),SQfp16 index whose cells are the k-means centroids of a seeded random sample of rows
    0..n-1 of `read` (`train_rows_for`: bounded, whatever n), and the sample's size. One pass over the rows."""
    faiss = import_faiss()
    if not 1 <= nlist <= n:
        raise InputDataError(f"nlist must be between 1 and the number of rows ({n}), got {nlist}")
    ivf = _new_ivf(faiss.IndexFlatIP(d), d, nlist, own=True)
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


@dataclass
class FileLists:
    """Inverted lists lying in a file (a shard, or an ANN file's last section): list i has sizes[i] rows, its fp16
    codes at byte codes_at[i] and its int64 ids at ids_at[i]."""

    fd: int
    sizes: np.ndarray
    codes_at: np.ndarray
    ids_at: np.ndarray


def _copy(fd: int, offset: int, size: int, out: Any) -> None:
    """Copy `size` bytes at `offset` of file descriptor fd to `out`, COPY_BYTES at a time (read, not mapped: the
    pages stay in the OS's cache, not in this process)."""
    while size > 0:
        data = os.pread(fd, min(size, COPY_BYTES), offset)
        if not data:
            raise IndexStoreError("a shard of the ANN build ended early")
        out.write(data)
        offset += len(data)
        size -= len(data)


def _dump_shard(shard: Any, fh: Any, direct_map: np.ndarray, filled: np.ndarray) -> FileLists:
    """Append a shard's lists (per cell: codes, then ids) to the scratch file `fh`; fill the direct-map entries
    (cell << 32 | position in the merged cell) of its rows. `filled`: rows each merged cell holds before it."""
    faiss = import_faiss()
    lists, cs = shard.invlists, shard.code_size
    sizes = np.array([lists.list_size(i) for i in range(shard.nlist)], dtype=np.int64)
    codes_at, ids_at = np.zeros_like(sizes), np.zeros_like(sizes)
    for i in np.flatnonzero(sizes):
        m = int(sizes[i])
        codes_at[i] = fh.tell()
        fh.write(faiss.rev_swig_ptr(lists.get_codes(int(i)), m * cs))
        ids = faiss.rev_swig_ptr(lists.get_ids(int(i)), m)
        ids_at[i] = fh.tell()
        fh.write(ids)
        direct_map[ids] = (int(i) << 32) | (filled[i] + np.arange(m, dtype=np.int64))
        filled[i] += m
    return FileLists(fh.fileno(), sizes, codes_at, ids_at)


def _lists_header(sizes: np.ndarray, code_size: int) -> bytes:
    """faiss's header of an ArrayInvertedLists ('ilar', nlist, code_size, then the sizes of every cell ('full') or
    the (cell, size) pairs of the non-empty ones ('sprs'), as faiss's write_InvertedLists chooses)."""
    nlist = len(sizes)
    nonzero = np.flatnonzero(sizes)
    if len(nonzero) > nlist // 2:
        kind, table = b"full", sizes
    else:
        kind, table = b"sprs", np.stack([nonzero, sizes[nonzero]], axis=1).ravel()
    return (b"ilar" + np.array([nlist, code_size], dtype="<u8").tobytes() + kind +
            np.array([len(table)], dtype="<u8").tobytes() + np.asarray(table, dtype="<u8").tobytes())


def _write_merged(head: Any, sources: list[FileLists], direct_map: np.ndarray, path: Path,
                  progress: Progress | None = None) -> None:
    """Write `path`: the faiss file of `head` (trained, empty; consumed) holding the lists of `sources` merged cell
    by cell in order, byte for byte what faiss.write_index writes for the same index built in memory, so
    `faiss.read_index` (memory-mapped, `AnnIndex.read`) opens it as before."""
    faiss = import_faiss()
    nlist, cs = head.nlist, head.code_size
    sizes = np.sum([s.sizes for s in sources], axis=0, dtype=np.int64) if sources else np.zeros(nlist, np.int64)
    head.replace_invlists(None, False)  # faiss then writes the index without lists: 'il00' as its last 4 bytes
    head.ntotal = len(direct_map)
    head.direct_map.type = faiss.DirectMap.Array
    faiss.copy_array_to_vector(direct_map, head.direct_map.array)
    faiss.write_index(head, str(path))
    head.direct_map.clear()
    with open(path, "r+b") as out:
        out.seek(-4, os.SEEK_END)
        if out.read(4) != b"il00":
            raise IndexStoreError(f"faiss {faiss.__version__} wrote an index layout this library does not know")
        out.seek(-4, os.SEEK_END)
        out.truncate()
        out.write(_lists_header(sizes, cs))
        cells = np.flatnonzero(sizes)
        for j, i in enumerate(cells):
            for s in sources:
                _copy(s.fd, int(s.codes_at[i]), int(s.sizes[i]) * cs, out)
            for s in sources:
                _copy(s.fd, int(s.ids_at[i]), int(s.sizes[i]) * 8, out)
            if progress and (j % 64 == 63 or j == len(cells) - 1):
                progress("merge shards", j + 1, len(cells))


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
                shard = _new_ivf(template.quantizer, d, nlist, own=False)
                shard.is_trained = True
                for a in range(s0, s1, chunk_rows):
                    b = min(s1, a + chunk_rows)
                    shard.add_with_ids(_block(read, a, b, d), np.arange(a, b, dtype=np.int64))
                    if progress:
                        progress("add rows", b - start, stop - start)
                sources.append(_dump_shard(shard, fh, direct_map, filled))
                del shard
                n_shards += 1
            fh.flush()
            _write_merged(template, sources, direct_map, path, progress)
    finally:
        scratch.unlink(missing_ok=True)
    return n_shards


def ann_file_lists(ivf: Any, fd: int) -> FileLists:
    """Where the lists of an ANN file lie in it (opened as `fd`; `ivf` read from it memory-mapped, its codes not
    touched): faiss's 'ilar' section is the file's last, per cell its codes then its ids. Raises if the file does not
    end in that layout (a file faiss wrote another way: rebuild)."""
    faiss = import_faiss()
    nlist, cs = ivf.nlist, ivf.code_size
    lists = ivf.invlists
    sizes = np.array([lists.list_size(i) for i in range(nlist)], dtype=np.int64)
    nbytes = sizes * (cs + 8)
    data_at = os.fstat(fd).st_size - int(nbytes.sum())
    header = _lists_header(sizes, cs)
    if data_at < len(header) or os.pread(fd, len(header), data_at - len(header)) != header:
        raise IndexStoreError(f"the ANN file does not end in the inverted-list layout this library writes (faiss "
                              f"{faiss.__version__})")
    codes_at = data_at + np.concatenate([[0], np.cumsum(nbytes)[:-1]]).astype(np.int64)
    return FileLists(fd, sizes, codes_at, codes_at + sizes * cs)


def write_ann(ivf: Any, meta: AnnMeta, faiss_path: Path, meta_path: Path) -> AnnMeta:
    """Write an ANN index held in memory (`faiss.write_index`) and then its sidecar (`_commit`). The builds stream
    instead (`write_ivf`); this serves small indexes made by hand, e.g. in tests and benchmarks."""
    faiss = import_faiss()
    tmp, _ = _tmp_paths(faiss_path)
    with _writing(faiss_path, tmp):
        faiss.write_index(ivf, str(tmp))
    return _commit(tmp, meta, faiss_path, meta_path)


def _tmp_paths(faiss_path: Path) -> tuple[Path, Path]:
    """(temporary faiss file, shard scratch file) of a build writing `faiss_path`: <index>.ann.faiss.tmp-<pid> and
    <index>.ann.shards.tmp-<pid>."""
    name, pid = faiss_path.name, os.getpid()
    stem = name[:-len(FAISS_SUFFIX)] + ".ann" if name.endswith(FAISS_SUFFIX) else name
    return faiss_path.with_name(f"{name}.tmp-{pid}"), faiss_path.with_name(f"{stem}.shards.tmp-{pid}")


@contextlib.contextmanager
def _writing(faiss_path: Path, *tmps: Path) -> Iterator[None]:
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


def _commit(tmp: Path, meta: AnnMeta, faiss_path: Path, meta_path: Path) -> AnnMeta:
    """Move a finished faiss file into place, then write its sidecar, each by a rename; the old sidecar is removed
    first, so a reader never pairs a new faiss file with an old sidecar."""
    with _writing(faiss_path, tmp):
        meta.faiss_bytes = tmp.stat().st_size
        meta_path.unlink(missing_ok=True)
        os.replace(tmp, faiss_path)
    tmp_meta = meta_path.with_name(f"{meta_path.name}.tmp-{os.getpid()}")
    tmp_meta.write_text(meta.to_json(), encoding="utf-8")
    os.replace(tmp_meta, meta_path)
    return meta


def _index_reader(index: RiseIndex, channels: list[str]) -> Reader:
    """Blocks of an index's rows as the ANN holds them. DuckDB keeps every block a connection reads in its buffer
    pool (up to 80% of RAM) until the connection closes: a build over a 1M-row index would hold 7 GB of them. So a
    read-only handle releases its connection after each block (the next read reconnects, in milliseconds)."""

    def read(start: int, stop: int) -> np.ndarray:
        block = concat_channels(index._load_features(start, stop), channels)
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
    from . import __version__
    from .store.schema import utc_now

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
    tmp, scratch = _tmp_paths(faiss_path)
    read = _index_reader(index, list(dims))
    start = time.perf_counter()
    with _writing(faiss_path, tmp, scratch), _threads(threads):
        template, n_train = train_ivf(read, n, d, nlist, train_per_list, seed, chunk_rows, progress)
        n_shards = write_ivf(template, read, n, tmp, scratch, shard_rows=shard_rows, chunk_rows=chunk_rows,
                             progress=progress)
    meta = AnnMeta(index_uuid=m.index_uuid, config_fingerprint=index.config.fingerprint(), n_rows=n, dims=dims,
                   nlist=nlist, nprobe=nprobe, train_rows=n_train, seed=seed, structure=f"IVF{nlist},SQfp16",
                   faiss_version=faiss.__version__, library_version=__version__, built_at=utc_now(),
                   build_seconds=round(time.perf_counter() - start, 2),
                   extra={"shards": n_shards, "shard_rows": shard_rows})
    return _commit(tmp, meta, faiss_path, meta_path)


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
    tmp, scratch = _tmp_paths(faiss_path)
    rebuild = f"rebuild it with `rise index-ann --index {index.path}`"
    start = time.perf_counter()
    added = n - meta.n_rows
    with open(faiss_path, "rb") as fh, _writing(faiss_path, tmp, scratch):
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
        template = _new_ivf(faiss.clone_index(old.quantizer), old.d, old.nlist, own=True)
        template.is_trained = True
        del old
        with _threads(threads):
            write_ivf(template, _index_reader(index, list(meta.dims)), n, tmp, scratch, start=meta.n_rows,
                      base=base, base_map=base_map, shard_rows=shard_rows, chunk_rows=chunk_rows, progress=progress)
    meta.n_rows = n
    meta.extra["last_update"] = {"rows_added": added, "seconds": round(time.perf_counter() - start, 2)}
    return _commit(tmp, meta, faiss_path, meta_path), added


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


# -- searching --------------------------------------------------------------------------------------------------


class AnnIndex:
    """A loaded (memory-mapped) ANN index: candidate search, and exact rescoring from its lossless fp16 codes."""

    def __init__(self, ivf: Any, meta: AnnMeta) -> None:
        self.ivf = ivf
        self.meta = meta
        self.channels = list(meta.dims)
        bounds = np.cumsum([0, *meta.dims.values()])
        self.slices = {c: slice(int(bounds[i]), int(bounds[i + 1])) for i, c in enumerate(self.channels)}

    @classmethod
    def read(cls, faiss_path: str | Path, meta: AnnMeta, mmap: bool = True) -> AnnIndex:
        """Open a faiss file written by `write_ann`, memory-mapped: its codes stay on disk until a query scans them.

        faiss >= 1.10 maps the cells in place (IO_FLAG_MMAP_IFC); older versions map them as OnDiskInvertedLists,
        whose prefetch threads (32 by default) are switched off: they read every probed cell in parallel with the
        scan, which made a 1%-filter query at 1M rows 10x slower and a plain one 1.5x (benchmarks/ann_scale.py)."""
        faiss = import_faiss()
        flags = 0
        if mmap:
            flags = getattr(faiss, "IO_FLAG_MMAP_IFC", faiss.IO_FLAG_MMAP)
        try:
            ivf = faiss.read_index(str(faiss_path), flags)
        except RuntimeError as exc:
            raise IndexStoreError(f"cannot read {faiss_path} ({str(exc).splitlines()[-1]}); rebuild it with "
                                  "`rise index-ann`") from exc
        if not isinstance(ivf, faiss.IndexIVFScalarQuantizer) or ivf.ntotal != meta.n_rows or ivf.d != meta.d:
            raise IndexStoreError(f"{faiss_path} is not the IVF index its sidecar describes ({meta.n_rows} rows of "
                                  f"{meta.d} values); rebuild it with `rise index-ann`")
        lists = faiss.downcast_InvertedLists(ivf.invlists)
        if isinstance(lists, faiss.OnDiskInvertedLists):
            lists.prefetch_nthread = 0
        return cls(ivf, meta)

    def search(self, q: np.ndarray, k: int, nprobe: int, allowed: np.ndarray | None = None) -> np.ndarray:
        """Ids of the (approximately) k highest inner products with q, among `allowed` rows (bool, n_rows) if given."""
        faiss = import_faiss()
        keep: list[Any] = []
        params = faiss.SearchParametersIVF()
        params.nprobe = int(min(max(1, nprobe), self.meta.nlist))
        if allowed is not None:
            bitmap = np.packbits(allowed, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))  # its size in bytes
            keep += [bitmap, sel]  # alive until the search returns
            params.sel = sel
        _, ids = self.ivf.search(np.ascontiguousarray(q[None], dtype=np.float32), int(k), params=params)
        ids = ids[0]
        return ids[ids >= 0]

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """float32 (len(rows), d) stored vectors of these rows: exactly the index's float16 features."""
        return self.ivf.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64))

    def score_rows(self, rows: np.ndarray, parts: list[tuple[str, float, torch.Tensor]]) -> Scores:
        """Exact scores of these covered rows, block by block: the same products as `attribution.top_rows`'s
        rescoring (float32 rows of the stored float16 values times the float32 query vector)."""
        blocks = []
        for s in range(0, len(rows), GATHER_ROWS):
            x = torch.from_numpy(self.gather(rows[s:s + GATHER_ROWS]))
            blocks.append(Scores.from_parts({c: float32_weight(lam, len(x))
                                             * matvec(x[:, self.slices[c]].contiguous(), q) for c, lam, q in parts},
                                            len(x)))
        return _concat_scores(blocks)


def float32_weight(lam: float, n: int) -> torch.Tensor:
    """lambda_c as the (n,) float32 per-row weight `attribution` multiplies by (lambda * s_c, s_c = 1)."""
    return lam * torch.ones(n)


def _concat_scores(parts: list[Scores]) -> Scores:
    if not parts:
        return Scores.from_parts({}, 0)
    return Scores(*(torch.cat([getattr(p, f) for p in parts]) for f in ("total", "rh", "gh", "hs")))


def query_parts(query_fm: FeatureMatrix, options: ScoreOptions, dims: dict[str, int]
                ) -> tuple[np.ndarray, list[tuple[str, float, torch.Tensor]]]:
    """The lambda-weighted concatenated query [l_rh q_rh; l_gh q_gh; l_hs q_hs] (float32, for faiss) and the
    (channel, lambda, q_c) of every weighed channel (for exact rescoring). A weight on a channel the ANN index does
    not hold is dropped, as on the exact path (`ScoreOptions.for_channels`)."""
    if options.sample_norm != "channel":
        raise ConfigError(f"the ANN index ranks under sample_norm='channel', not {options.sample_norm!r}")
    options = options.for_channels(dims).options
    q = query_vectors(query_fm, options)
    lambdas = weights(options)
    parts = [(c, lambdas[c], q[c].float()) for c in dims if lambdas[c] != 0 and c in q]
    weighted = {c: lam * qc for c, lam, qc in parts}
    qcat = torch.cat([weighted.get(c, torch.zeros(d)) for c, d in dims.items()])
    return qcat.numpy().astype(np.float32), parts


def probe_factor(options: ScoreOptions, dims: dict[str, int]) -> tuple[float, str]:
    """How many times the default cells a query with these weights scans, and why ('' when 1).

    The k-means cells follow the HS channel most on real features, so what matters is HS's share of the weights,
    sum |lambda|, against its share under the default weights (`ScoreOptions()`, with which the default nprobe was
    measured): r = share / default share. The factor is 1 / r, between 1 and MAX_PROBE_FACTOR: 1 for the default
    weights or more on HS (RH or GH left out included), 2 for half HS's default share, 8 for HS left out (the backdoor
    preset). Features without HS: 1 (the cells follow RH and GH)."""
    options = options.for_channels(dims).options
    if "hs" not in dims:
        return 1.0, ""
    base = ScoreOptions()
    total = sum(abs(float(getattr(options, f"lambda_{c}"))) for c in dims)
    base_total = sum(abs(float(getattr(base, f"lambda_{c}"))) for c in dims)
    if total <= 0 or base.lambda_hs <= 0:
        return 1.0, ""
    r = (abs(float(options.lambda_hs)) / total) / (float(base.lambda_hs) / base_total)
    if r >= 1.0:
        return 1.0, ""
    factor = MAX_PROBE_FACTOR if r <= 0 else min(MAX_PROBE_FACTOR, 1.0 / r)
    why = "the weights leave out HS" if r <= 0 else f"HS has {r:.2g} of its default share of the weights"
    return factor, f"{factor:.2g}x the cells: {why}"


def top_rows(ann: AnnIndex, query_fm: FeatureMatrix, options: ScoreOptions, k: int,
             allowed: torch.Tensor | None = None, tail: FeatureMatrix | None = None, nprobe: int | None = None
             ) -> tuple[torch.Tensor, Scores, dict[str, Any]]:
    """Rows of the (approximately) k best scores, descending, with their exact scores, and what ran.

    Rows 0..n_covered-1 come from the ANN index, then the `tail` rows (appended since its build) are all scored
    exactly; `allowed` is a bool mask over all of them. Candidates: the ANN's best k + max(k, 16) rows (their ANN
    distances are already exact up to float32 summation order), all rescored exactly. A filter is applied inside the
    scan (IDSelectorBitmap: other rows are skipped by id, not scored) with nprobe / sqrt(fraction kept) cells; when
    at most FILTER_EXACT_FACTOR times the rows an unfiltered query scans match, every cell is scanned, so every
    matching row is scored (path 'exact').

    nprobe: cells to scan (default: the sidecar's, times `probe_factor` when the weights put less on HS than the
    default, e.g. 8x for HS left out by the backdoor preset; `probes_note` in the info says so). Given explicitly, it
    is used as is (before the filter's raise)."""
    meta = ann.meta
    n_cov, n_tail = meta.n_rows, 0 if tail is None else len(tail)
    n = n_cov + n_tail
    if allowed is not None and len(allowed) != n:
        raise InputDataError(f"the filter mask has {len(allowed)} rows, the pool {n}")
    qcat, parts = query_parts(query_fm, options, meta.dims)
    probes_note = ""
    if nprobe is None:
        factor, probes_note = probe_factor(options, meta.dims)
        nprobe = min(meta.nlist, math.ceil(meta.nprobe * factor))
    nprobe = int(nprobe)
    cov_mask = None if allowed is None else allowed[:n_cov]
    n_allowed_cov = n_cov if cov_mask is None else int(cov_mask.sum())
    n_allowed = n_allowed_cov + (n_tail if allowed is None else int(allowed[n_cov:].sum()))
    info: dict[str, Any] = {"path": "ann", "n_rows": n, "n_covered": n_cov, "n_tail": n_tail, "n_allowed": n_allowed,
                            "structure": meta.structure, "nlist": meta.nlist, "nprobe": nprobe, "n_candidates": 0,
                            "reason": "", "probes_note": probes_note}
    k = max(0, min(int(k), n_allowed))
    if k == 0:
        return torch.empty(0, dtype=torch.long), Scores.from_parts({}, 0), info
    if cov_mask is not None and n_allowed_cov:
        if n_allowed_cov <= FILTER_EXACT_FACTOR * nprobe * n_cov / meta.nlist:
            # few rows match: scan every cell, scoring the matching rows only (faiss skips the others by id)
            nprobe = meta.nlist
            info.update(path="exact", reason=f"the filter keeps {n_allowed:,} of {n:,} rows: all of them are scored")
        else:
            nprobe = min(meta.nlist, math.ceil(nprobe / math.sqrt(n_allowed_cov / n_cov)))
        info["nprobe"] = nprobe
    if n_allowed_cov:
        fetch = min(n_allowed_cov, k + max(k, 16))
        cand = ann.search(qcat, fetch, nprobe, None if cov_mask is None else cov_mask.numpy())
    else:
        cand = np.empty(0, dtype=np.int64)
    rows = [torch.from_numpy(cand.astype(np.int64))]
    scores = [ann.score_rows(cand, parts)]
    if n_tail:
        assert tail is not None
        local = torch.arange(n_tail) if allowed is None else allowed[n_cov:].nonzero()[:, 0]
        part = tail.select(local)
        scores.append(Scores.from_parts({c: float32_weight(lam, len(part)) * matvec(getattr(part, c), q).float()
                                         for c, lam, q in parts}, len(part)))
        rows.append(local + n_cov)
    all_rows, all_scores = torch.cat(rows), _concat_scores(scores)
    info["n_candidates"] = len(cand) + (len(rows[1]) if n_tail else 0)
    best = torch.topk(all_scores.total, min(k, len(all_rows))).indices
    return all_rows[best], all_scores.take(best), info


# -- an index's ANN, for `attribution.rank` ------------------------------------------------------------------------

_LOADED: OrderedDict[tuple[str, int, int, str], AnnIndex] = OrderedDict()
_TAILS: OrderedDict[tuple[str, str, int, int], FeatureMatrix] = OrderedDict()
_LOCK = threading.Lock()


def _cache_get(cache: OrderedDict, key: Any) -> Any:
    """cache[key] (marked most recently used), or None."""
    with _LOCK:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
        return hit


def _cache_put(cache: OrderedDict, key: Any, value: Any, size: int) -> Any:
    """Store value under key, dropping the least recently used entries beyond `size`; returns value."""
    with _LOCK:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size:
            cache.popitem(last=False)
    return value


def load_ann(index: RiseIndex, status: AnnStatus | None = None) -> AnnIndex:
    """The index's valid ANN index, memory-mapped once and cached (per file version); raises if it is not valid."""
    status = status or ann_status(index)
    if not status.valid:
        raise status.error(status.reason)
    meta = status.meta
    assert meta is not None
    faiss_path, _ = ann_paths(index.path)
    st = faiss_path.stat()
    key = (str(faiss_path.resolve()), st.st_mtime_ns, st.st_size, meta.to_json())
    hit = _cache_get(_LOADED, key)
    return hit if hit is not None else _cache_put(_LOADED, key, AnnIndex.read(faiss_path, meta), 4)


def _tail(index: RiseIndex, start: int, stop: int) -> FeatureMatrix | None:
    """Features of rows start..stop-1 (appended since the ANN build), cached."""
    if stop <= start:
        return None
    key = (str(index.path), index.manifest.index_uuid, start, stop)
    hit = _cache_get(_TAILS, key)
    return hit if hit is not None else _cache_put(_TAILS, key, index._load_features(start, stop), 2)


def check_search(search: str) -> None:
    if search not in SEARCH_MODES:
        raise InputDataError(f"unknown search {search!r}; choose one of {', '.join(SEARCH_MODES)}")


def rank_rows(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions, k: int, where: str | None = None,
              search: str = "auto") -> tuple[tuple[torch.Tensor, Scores] | None, dict[str, Any]]:
    """The ANN path of `attribution.rank`: ((rows, scores), info) when it ran, (None, info with the reason) when the
    query must be scored exactly.

    search: 'auto' uses a valid ANN index for sample_norm='channel' on pools of at least ANN_MIN_ROWS rows, and
    otherwise says why not (a stale or foreign ANN index is logged and ignored); 'ann' uses it whatever the pool
    size and raises when there is none or it is not valid; 'exact' never uses it. Under sample_norm 'joint' or
    'none' both fall back to exact."""
    check_search(search)
    exact: dict[str, Any] = {"path": "exact", "reason": ""}
    if search == "exact":
        exact["reason"] = "exact search asked for"
        return None, exact
    status = ann_status(index)
    if not status.valid:
        if search == "ann":
            raise status.error(status.reason)
        if status.state == "invalid":
            logger.warning("ignoring the ANN index: %s", status.reason)
        exact["reason"] = status.reason if status.state == "invalid" else "no ANN index"
        return None, exact
    if options.sample_norm != "channel":
        exact["reason"] = (f"sample_norm={options.sample_norm!r} scales each sample's channels by its own norms, "
                           "which the ANN index (one inner product, sample_norm='channel') cannot: scored exactly")
        return None, exact
    n = index.manifest.n_samples
    if search == "auto" and n < ANN_MIN_ROWS:
        exact["reason"] = f"the ANN index is used from {ANN_MIN_ROWS:,} rows"
        return None, exact
    try:
        import_faiss()
        ann = load_ann(index, status)
    except ConfigError as exc:  # faiss missing
        if search == "ann":
            raise
        logger.warning("%s", exc)
        exact["reason"] = str(exc)
        return None, exact
    allowed = index.row_mask(where) if where else None
    n = n if allowed is None else len(allowed)
    rows, scores, info = top_rows(ann, query_fm, options, k, allowed, _tail(index, ann.meta.n_rows, n))
    return (rows, scores), info


def search_summary(info: dict[str, Any] | None) -> str:
    """One line saying which path ranked a query (for the CLI's log and the explorer's caption)."""
    if not info:
        return ""
    n = info.get("n_rows")
    if info.get("path") == "ann":
        text = (f"approximate search over {n:,} rows ({info['structure']}, nprobe {info['nprobe']}"
                + (f": {info['probes_note']}" if info.get("probes_note") else "")
                + f"), exact rescoring of {info['n_candidates']:,} candidates")
        if info.get("n_allowed", n) != n:
            text += f"; {info['n_allowed']:,} rows match the filter"
        if info.get("n_tail"):
            text += f" ({info['n_tail']:,} rows added since the ANN build scored exactly)"
        return text
    text = "exact scan" + (f" of {n:,} rows" if n is not None else "")
    return text + (f" ({info['reason']})" if info.get("reason") else "")
