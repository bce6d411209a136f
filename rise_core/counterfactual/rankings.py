"""Each method's ranking of the pool for the check's queries, aggregated over the queries into one `Ranking`
(rows: the index's rows for an index check, the pool's positions for a task check)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .. import compare
from ..attribution import query_features
from ..config import RiseConfig, ScoreOptions
from ..errors import ConfigError, InputDataError
from ..methods import IndexSource, TaskSource, needs_forward_pass, resolve
from ..ranking import Ranking
from ..readout_cache import ReadoutCache, grad_sketch_dim
from ..samples import Sample
from .config import AGGREGATES


def aggregate_ranking(scores: np.ndarray, how: str = "best_rank", rows: Sequence[int] | None = None) -> Ranking:
    """The `Ranking` of N pool rows, best first, from (Q, N) scores for Q queries (column j: row `rows[j]`, default j).

    'best_rank': by the best (lowest) rank a row reaches over the queries, ties by its mean rank, then by column; with
    one query, that query's ranking. 'mean_score': by the mean score over the queries (ties by column). The ranking's
    scores are each row's mean score over the queries (under 'best_rank' they need not descend); no channel parts."""
    s = np.asarray(scores, dtype=np.float64)
    s = s[None] if s.ndim == 1 else s
    n = s.shape[1]
    columns = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
    if columns.shape != (n,):
        raise InputDataError(f"{n} score columns but {len(columns)} rows")
    s = np.where(np.isnan(s), -np.inf, s)
    if how == "mean_score":
        order = np.argsort(-s.mean(axis=0), kind="stable")
    elif how == "best_rank":
        ranks = np.empty(s.shape, dtype=np.int64)
        for q in range(len(s)):
            ranks[q, np.argsort(-s[q], kind="stable")] = np.arange(n)
        order = np.lexsort((np.arange(n), ranks.mean(axis=0), ranks.min(axis=0)))  # last key is the primary one
    else:
        raise ConfigError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")
    return Ranking(rows=torch.from_numpy(columns[order]), scores=torch.from_numpy(s.mean(axis=0)[order]), parts={})


def index_rankings(index: Any, lm: Any, queries: Sequence[Sample], methods: Sequence[str],
                   options: ScoreOptions | None = None, aggregate: str = "best_rank", *, where: str | None = None,
                   bm25: Any = None, embeddings: Any = None, forward: Any = None) -> dict[str, Ranking]:
    """Each method's `Ranking` of the index's rows for the queries, aggregated over the queries (only the rows
    matching `where`, when given).

    `bm25`, `embeddings`: scorers fitted on the index's pool (or functions returning one); fitted here when a method
    needs them. Grad-Sketch (and hidden cosine on an index without the HS channel) needs the pool's forward-pass
    vectors: `forward` (`compare.forward_vectors` of the pool), else one forward pass here. A method that cannot rank
    this index raises ConfigError saying why."""
    chosen = resolve(methods)
    if not chosen:
        return {}
    queries = [Sample.coerce(q) for q in queries]
    query_fm = query_features(index, lm, queries)
    if forward is None and needs_forward_pass([m.name for m in chosen], index):
        forward = compare.forward_vectors(lm, index.sample_list(), index.config)
    source = IndexSource(index, queries, query_fm, options,
                         bm25=bm25 if bm25 is not None else (lambda: compare.fit_bm25(index)),
                         embeddings=embeddings if embeddings is not None else (lambda: compare.fit_embeddings(index)),
                         forward=forward, lm=lm)
    keep = None if where is None else index.row_mask(where).numpy()
    out = {}
    for method in chosen:
        scores = method.score(source)
        if not scores.available:
            raise ConfigError(f"{method.name} cannot rank this index: {scores.missing}")
        matrix, rows = scores.scores, None  # column j: index row j
        if keep is not None:
            matrix, rows = matrix[:, keep], np.flatnonzero(keep)
        out[method.name] = aggregate_ranking(matrix, aggregate, rows)
    return out


def task_rankings(pool: Sequence[Sample], queries: Sequence[Sample], lm: Any, methods: Sequence[str],
                  rise_config: RiseConfig | None = None, options: ScoreOptions | None = None,
                  aggregate: str = "best_rank", cache: Any = None) -> dict[str, Ranking]:
    """Each method's `Ranking` of a labelled task's pool (rows: positions in `pool`), scored as `rise evaluate` scores
    it (one shared forward pass, `cache`, made here when None and a method needs the model)."""
    config, options = rise_config or RiseConfig(), options or ScoreOptions()
    chosen = [m for m in resolve(methods) if m.applies(config)]
    if cache is None and any(m.needs_lm for m in chosen):
        if lm is None:
            raise ConfigError(f"methods {[m.name for m in chosen if m.needs_lm]} need a model")
        cache = ReadoutCache.for_config(lm, config, grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
    source = TaskSource(list(pool), list(queries), cache, config, options, memo={})
    if cache is not None and any(m.needs_lm for m in chosen):
        cache.add(source.pool + source.queries)
    return {m.name: aggregate_ranking(m.score(source).scores, aggregate) for m in chosen}

