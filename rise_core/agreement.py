"""How far attribution methods agree on one pool: top-k overlap and rank correlations of their scores.

Every function compares score vectors over the same pool items (higher = more influential). For (Q, N) score
matrices, one row per query, each statistic is computed per query and averaged over the queries (a query where a
statistic is undefined, e.g. a method that scores every item alike, is left out of that average).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd
from scipy import stats

from .errors import InputDataError

RankMethod = Literal["spearman", "kendall"]
RANK_METHODS: tuple[str, ...] = get_args(RankMethod)


def _pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise InputDataError(f"score vectors must be 1-D and of the same length, got shapes {a.shape} and {b.shape}")
    return a, b


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputDataError(f"k must be a positive integer, got {k!r}")
    return int(k)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k highest scores, best first; equal scores keep pool order (as `ranking_frame` shows them)."""
    k = _check_k(k)
    return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")[:k]


def ranking_overlap(ids_a: Sequence[Any], ids_b: Sequence[Any], k: int) -> float:
    """Share of the first k of ranking A (ids, best first) that are among the first k of ranking B; nan when A is
    empty. The denominator is min(k, len(A))."""
    k = _check_k(k)
    top_a, top_b = list(ids_a)[:k], set(list(ids_b)[:k])
    if not top_a:
        return float("nan")
    return sum(1 for i in top_a if i in top_b) / len(top_a)


def topk_overlap(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """|top-k(a) ∩ top-k(b)| / k for two 1-D score vectors: 1 = the same k items, 0 = disjoint.

    Ties at the k-th place are broken by pool order; a k beyond the pool size means the whole pool."""
    k = _check_k(k)
    a, b = _pair(a, b)
    if a.size == 0:
        return float("nan")
    k_eff = min(k, a.size)
    return ranking_overlap(top_k_indices(a, k_eff).tolist(), top_k_indices(b, k_eff).tolist(), k_eff)


def rank_correlation(a: np.ndarray, b: np.ndarray, method: RankMethod = "spearman") -> float:
    """Spearman's rho or Kendall's tau-b of two 1-D score vectors (ties share their average rank): 1 = the same
    order, -1 = reversed; nan with fewer than two items or when a vector is constant (no order to compare)."""
    if method not in RANK_METHODS:
        raise InputDataError(f"unknown rank correlation {method!r}; choose one of {', '.join(RANK_METHODS)}")
    a, b = _pair(a, b)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    result = stats.spearmanr(a, b) if method == "spearman" else stats.kendalltau(a, b, variant="b")
    return float(result.statistic)


def _rows(scores: np.ndarray, name: str) -> np.ndarray:
    m = np.asarray(scores, dtype=np.float64)
    if m.ndim == 1:
        m = m[None, :]
    if m.ndim != 2:
        raise InputDataError(f"{name}: scores must be (N,) or (queries, N), got shape {m.shape}")
    return m


def agreement_table(scores: Mapping[str, np.ndarray], reference: str, k: int) -> pd.DataFrame:
    """Agreement of every method with `reference`: one row per other method (index `method`), columns
    `top{k}_overlap`, `spearman` and `kendall`; (Q, N) matrices give per-query values averaged over the queries.

    Every score array must have the reference's shape (the same queries and pool, in the same order)."""
    if reference not in scores:
        raise InputDataError(f"no scores for the reference {reference!r}; have {', '.join(scores) or 'none'}")
    ref = _rows(scores[reference], reference)
    rows = {}
    for name, values in scores.items():
        if name == reference:
            continue
        other = _rows(values, name)
        if other.shape != ref.shape:
            raise InputDataError(f"{name}: scores of shape {other.shape}, but {reference}'s are {ref.shape}")
        per_query = pd.DataFrame([{f"top{k}_overlap": topk_overlap(r, o, k),
                                   **{m: rank_correlation(r, o, m) for m in RANK_METHODS}}
                                  for r, o in zip(ref, other, strict=True)])
        rows[name] = per_query.mean(skipna=True)
    columns = [f"top{k}_overlap", *RANK_METHODS]
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns).rename_axis("method")
