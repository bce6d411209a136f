"""An index's ANN for `attribution.rank`: whether a query takes the ANN path (and why not), the loaded ANN files and
the appended rows' features cached per file version; the lines saying whether an index has a usable ANN (`rise
info`) and which path ranked a query."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..adaptive import Weighting
from ..config import ScoreOptions
from ..errors import ConfigError, InputDataError
from ..memo import BoundedMemo
from ..ranking import Ranking
from ..scoring import FeatureMatrix, Scores
from ..units import format_bytes
from .search import AnnIndex, channel_products, query_parts, score_features, top_rows
from .sidecar import AnnStatus, ann_paths, ann_status, import_faiss

if TYPE_CHECKING:
    from ..store import RiseIndex

logger = logging.getLogger(__name__)

SEARCH_MODES = ("auto", "exact", "ann")
# search='auto' uses the ANN index from this many rows on: below it the exact float16 scan takes a few ms
# (benchmarks/query_latency.py) and is exact
ANN_MIN_ROWS = 50_000

_LOADED: BoundedMemo[AnnIndex] = BoundedMemo(4)  # by file version: path, mtime, size, metadata
_TAILS: BoundedMemo[FeatureMatrix] = BoundedMemo(2)  # the rows appended since the ANN build, by index and rows


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
    return _LOADED.get(key, lambda: AnnIndex.read(faiss_path, meta))


def _tail(index: RiseIndex, start: int, stop: int) -> FeatureMatrix | None:
    """Features of rows start..stop-1 (appended since the ANN build), cached."""
    if stop <= start:
        return None
    key = (str(index.path), index.manifest.index_uuid, start, stop)
    return _TAILS.get(key, lambda: index.load_features(start, stop))


def score_pool_rows(index: RiseIndex, handle: AnnIndex, query_fm: FeatureMatrix, options: ScoreOptions,
                    rows: torch.Tensor, products: dict | None = None) -> Scores:
    """Exact scores (total and per channel) of these pool rows under fixed `options`, read without the pool's feature
    matrix: the rows the ANN index covers from its lossless codes (memory-mapped, a block at a time), the rows
    appended since from their features (the cached tail). The spread of an ANN-ranked query's scores
    (`span_lift.spread_rows`) costs its sampled rows alone, and a valuation of a large pool every row once, without
    holding the matrix. `products`: a dict the caller keeps, where the covered rows' unweighted channel products are
    kept by query vector and rows, so scores of the same query under other weights (Compare's RISE and RISE with
    fixed weights) decode the codes once; the same floats as without it."""
    n_cov = handle.meta.n_rows
    _, parts = query_parts(query_fm, options, handle.meta.dims)
    covered = rows < n_cov
    pieces, order = [], []
    if bool(covered.any()):
        kept = rows[covered].numpy()
        found = None if products is None else _kept_products(products, handle, kept, parts)
        pieces.append(handle.score_rows(kept, parts, found))
        order.append(covered.nonzero()[:, 0])
    if not bool(covered.all()):
        tail = _tail(index, n_cov, len(index))
        assert tail is not None  # rows past the covered ones exist only in the tail
        pieces.append(score_features(tail.select(rows[~covered] - n_cov), parts))
        order.append((~covered).nonzero()[:, 0])
    if not pieces:
        return Scores.from_parts({}, 0)
    where = torch.cat(order)
    back = torch.empty_like(where)
    back[where] = torch.arange(len(where))
    return Scores(*(torch.cat([getattr(p, f) for p in pieces])[back] for f in ("total", "rh", "gh", "hs")))


def _kept_products(products: dict, handle: AnnIndex, rows: np.ndarray, parts: list[tuple[str, float, torch.Tensor]]
                   ) -> dict[str, torch.Tensor]:
    """The covered rows' channel products with the query vectors of `parts`, from `products` or computed (every
    channel not kept yet, in one pass over the codes) and kept there."""
    rows_key = hashlib.sha1(np.ascontiguousarray(rows, dtype=np.int64).tobytes()).hexdigest()
    keys = {c: (c, rows_key, hashlib.sha1(q.numpy().tobytes()).hexdigest()) for c, _, q in parts}
    missing = {c: q for c, _, q in parts if keys[c] not in products}
    if missing:
        for c, value in handle.channel_matvecs(rows, missing).items():
            products[keys[c]] = value
    return {c: products[keys[c]] for c in keys}


def pool_channel_products(index: RiseIndex, handle: AnnIndex, vectors: dict[str, torch.Tensor]
                          ) -> dict[str, torch.Tensor]:
    """`search.channel_products` over every row of `index` (the rows appended since the ANN build included)."""
    return channel_products(handle, vectors, _tail(index, handle.meta.n_rows, len(index)))


def check_search(search: str) -> None:
    if search not in SEARCH_MODES:
        raise InputDataError(f"unknown search {search!r}; choose one of {', '.join(SEARCH_MODES)}")


def usable_ann(index: RiseIndex, options: ScoreOptions, search: str = "auto") -> tuple[AnnIndex | None, dict[str, Any]]:
    """Whether `attribution.top` takes the ANN path: (the loaded ANN index, {}) when it does, (None, the exact path's
    search info with the reason) when the query must be scored exactly.

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
    if search == "auto" and index.manifest.n_samples < ANN_MIN_ROWS:
        exact["reason"] = f"the ANN index is used from {ANN_MIN_ROWS:,} rows"
        return None, exact
    try:
        import_faiss()
        return load_ann(index, status), {}
    except ConfigError as exc:  # faiss missing
        if search == "ann":
            raise
        logger.warning("%s", exc)
        exact["reason"] = str(exc)
        return None, exact


def rank_rows(index: RiseIndex, handle: AnnIndex, query_fm: FeatureMatrix, weighting: Weighting, k: int,
              where: str | None = None) -> Ranking:
    """The ANN path of `attribution.top` (`usable_ann` said to take it): the k best rows among those matching `where`,
    with exact scores; the rows appended since the ANN build are scored exactly. `search` says what ran."""
    n = index.manifest.n_samples
    allowed = index.row_mask(where) if where else None
    n = n if allowed is None else len(allowed)
    rows, scores, info = top_rows(handle, query_fm, weighting.options, k, allowed, _tail(index, handle.meta.n_rows, n))
    return Ranking.of(rows, scores, weighting=weighting, search=info)


def status_summary(status: AnnStatus, index_path: str | Path) -> str:
    """One line for `rise info`: whether the index has a usable ANN index, the rows it covers of the index's rows
    (stale when rows were appended since), its default nprobe and its file size."""
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
