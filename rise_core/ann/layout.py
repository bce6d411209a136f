"""faiss's byte layout of an IVF,SQfp16 index with its inverted lists, written and read without holding the lists in
memory: shards' lists dumped to a scratch file, merged cell by cell into the file `faiss.write_index` would write, and
an existing file's lists located in it (to copy them into an updated file)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexStoreError
from .sidecar import import_faiss

Progress = Callable[[str, int, int], None]  # (stage, done, total)
COPY_BYTES = 64 << 20  # bytes copied at a time when the shards are merged into the ANN file


def new_ivf(quantizer: Any, d: int, nlist: int, own: bool) -> Any:
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


def dump_shard(shard: Any, fh: Any, direct_map: np.ndarray, filled: np.ndarray) -> FileLists:
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


def write_merged(head: Any, sources: list[FileLists], direct_map: np.ndarray, path: Path,
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
