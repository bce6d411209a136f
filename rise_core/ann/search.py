"""Searching a loaded ANN index: the lambda-weighted concatenated query, how many cells it scans, the candidates of
the scan (a filter applied inside it) and their exact rescoring from the lossless fp16 codes, merged with the rows
appended since the build (scored exactly)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..config import ScoreOptions
from ..errors import ConfigError, IndexStoreError, InputDataError
from ..scoring import FeatureMatrix, Scores, matvec, query_vectors, weighted_channels
from .sidecar import AnnMeta, import_faiss

# a filtered query scans every cell (scoring every matching row: exact) when the matching rows are at most this many
# times the rows an unfiltered query scores (nprobe cells of ~n/nlist rows): it then costs about as much, and is exact
FILTER_EXACT_FACTOR = 2.0
# A query whose weights put less on HS than the default weights (with which the default nprobe was measured) scans up
# to this many times the default cells (`probe_factor`). On real features the k-means cells follow the HS channel
# most (it clusters by topic), so neighbours by RH + GH alone spread over many cells. On the real pools (3.5k and
# 8.7k rows, benchmarks/ann_recall_real.py, docs/SCALE.md), at the default nprobe (1/16 of the cells) the default
# weights found 0.94-0.96 of the exact top 10 (synthetic features of the same size: 0.88-0.94), and HS-only or
# RH-left-out weights as many, but the backdoor weights (HS 0) 0.70-0.78 (synthetic: 0.86-0.92). HS at 1/2, 1/7 and
# 0 of its default share needed about 2x, 4-8x and 8x the default cells for recall@10 >= 0.95.
MAX_PROBE_FACTOR = 8.0
GATHER_ROWS = 8192  # rows reconstructed from the ANN file per block when rescoring


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

    def blocks(self, rows: np.ndarray) -> Iterator[tuple[int, torch.Tensor]]:
        """(offset in `rows`, float32 stored vectors of the next GATHER_ROWS of them): the rows decoded a block at a
        time, so no more than one block is held."""
        for start in range(0, len(rows), GATHER_ROWS):
            yield start, torch.from_numpy(self.gather(rows[start:start + GATHER_ROWS]))

    def score_rows(self, rows: np.ndarray, parts: list[tuple[str, float, torch.Tensor]],
                   products: dict[str, torch.Tensor] | None = None) -> Scores:
        """Exact scores of these covered rows: the same products as `attribution.top_rows`'s rescoring (float32 rows
        of the stored float16 values times the float32 query vector), each weighted by its lambda. `products`:
        channel -> those products, when already computed (`channel_matvecs`), else computed here."""
        if products is None:
            products = self.channel_matvecs(rows, {c: q for c, _, q in parts})
        return Scores.from_parts({c: float32_weight(lam, len(rows)) * products[c] for c, lam, _ in parts}, len(rows))

    def channel_matvecs(self, rows: np.ndarray, vectors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """{c: (len(rows),) float32}: these covered rows' channel c times `vectors[c]` (d_c,), block by block (each
        block decoded once for every channel); unweighted, so queries that differ in their lambdas alone share
        them."""
        out: dict[str, list[torch.Tensor]] = {c: [] for c in vectors}
        for _, x in self.blocks(rows):
            for c, q in vectors.items():
                out[c].append(matvec(x[:, self.slices[c]].contiguous(), q))
        return {c: torch.cat(v) if v else torch.zeros(0) for c, v in out.items()}


def channel_products(ann: AnnIndex, vectors: dict[str, torch.Tensor], tail: FeatureMatrix | None = None
                     ) -> dict[str, torch.Tensor]:
    """{c: (rows, m) float32}: every covered row's channel c times the columns of `vectors[c]` (d_c, m), in one pass
    over the ANN file's codes a block at a time (each block decoded once for every channel), then the `tail` rows
    (appended since the build) from their features: what relevance feedback needs of a pool it does not hold."""
    n_cov = ann.meta.n_rows
    n = n_cov + (0 if tail is None else len(tail))
    vectors = {c: v.float() for c, v in vectors.items()}
    out = {c: torch.empty((n, v.shape[1]), dtype=torch.float32) for c, v in vectors.items()}
    for start, x in ann.blocks(np.arange(n_cov)):
        for c, v in vectors.items():
            out[c][start:start + len(x)] = x[:, ann.slices[c]] @ v
    if tail is not None and len(tail):
        for c, v in vectors.items():
            out[c][n_cov:] = matvec(getattr(tail, c), v)
    return out


def score_features(part: FeatureMatrix, parts: list[tuple[str, float, torch.Tensor]]) -> Scores:
    """Exact scores of rows held as features (those appended since the ANN build), with the same products as
    `AnnIndex.score_rows` (`query_parts`' weighted query vectors)."""
    return Scores.from_parts({c: float32_weight(lam, len(part)) * matvec(getattr(part, c), q).float()
                              for c, lam, q in parts}, len(part))


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
    parts = [(c, lam, q[c].float()) for c, lam in weighted_channels(options, q)]  # channels of dims only, in order
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
        scores.append(score_features(tail.select(local), parts))
        rows.append(local + n_cov)
    all_rows, all_scores = torch.cat(rows), _concat_scores(scores)
    info["n_candidates"] = len(cand) + (len(rows[1]) if n_tail else 0)
    best = torch.topk(all_scores.total, min(k, len(all_rows))).indices
    return all_rows[best], all_scores.take(best), info
