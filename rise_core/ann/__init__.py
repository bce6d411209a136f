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

The modules: `sidecar` (the files' names, the sidecar, the status), `layout` (faiss's byte layout, written and read on
disk), `files` (temporary files and the renames that commit them), `build` (the streaming build and update), `search`
(a loaded ANN's candidates and their exact rescoring), `rank` (the ANN path of `attribution.rank`, its caches, the
status lines).
"""

from .build import (
    CHUNK_ROWS,
    SHARD_BYTES,
    TRAIN_MAX_BYTES,
    TRAIN_PER_LIST,
    Reader,
    build_ann,
    concat_channels,
    default_nlist,
    default_nprobe,
    shard_rows_for,
    train_ivf,
    train_rows_for,
    update_ann,
    write_ivf,
)
from .files import commit_ann, set_nprobe, tmp_paths, write_ann
from .layout import FileLists, Progress, ann_file_lists
from .rank import (
    ANN_MIN_ROWS,
    SEARCH_MODES,
    check_search,
    load_ann,
    pool_channel_products,
    rank_rows,
    score_pool_rows,
    search_summary,
    status_summary,
    usable_ann,
)
from .search import FILTER_EXACT_FACTOR, MAX_PROBE_FACTOR, AnnIndex, float32_weight, probe_factor, query_parts, top_rows
from .sidecar import (
    ANN_FORMAT,
    ANN_FORMAT_VERSION,
    FAISS_SUFFIX,
    INSTALL_HINT,
    META_SUFFIX,
    AnnMeta,
    AnnStatus,
    ann_paths,
    ann_status,
    import_faiss,
    index_dims,
)

__all__ = ["ANN_FORMAT", "ANN_FORMAT_VERSION", "ANN_MIN_ROWS", "CHUNK_ROWS", "FAISS_SUFFIX", "FILTER_EXACT_FACTOR",
           "INSTALL_HINT", "MAX_PROBE_FACTOR", "META_SUFFIX", "SEARCH_MODES", "SHARD_BYTES", "TRAIN_MAX_BYTES",
           "TRAIN_PER_LIST", "AnnIndex", "AnnMeta", "AnnStatus", "FileLists", "Progress", "Reader", "ann_file_lists",
           "ann_paths", "ann_status", "build_ann", "check_search", "commit_ann", "concat_channels", "default_nlist",
           "default_nprobe", "float32_weight", "import_faiss", "index_dims", "load_ann", "pool_channel_products",
           "probe_factor", "query_parts", "rank_rows", "score_pool_rows", "search_summary", "set_nprobe",
           "shard_rows_for", "status_summary", "tmp_paths", "top_rows", "train_ivf", "train_rows_for", "update_ann",
           "usable_ann", "write_ann", "write_ivf"]
