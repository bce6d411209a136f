"""Ranking metrics for attribution scores against known-influential (positive) training samples.

The RISE paper follows RapidIn: for each query the whole pool is ranked by score, the K highest- and K lowest-scored
candidates are kept, and average precision (auPRC) and ROC AUC of the scores against the binary labels are computed
over those 2K candidates; values are macro-averaged over queries. Plain precision@K and full-ranking average precision
(AP) are reported alongside.

Conventions (shared by every function here):

* Scores: higher = more influential. NaN scores are rejected; +-inf are allowed.
* Labels: binary (bool, or numbers equal to 0 or 1); 1 = truly influential.
* Ties: rankings are built by `rank_order`. The default ``ties="pessimistic"`` places negatives before positives
  inside a group of equal scores, so a tie never helps the scorer (a constant scorer gets the worst possible AP and
  precision@K, whatever the pool order). ``ties="stable"`` keeps the pool order inside a tie group instead (what a
  stable ``argsort`` of the negated scores gives). `roc_auc` is tie-invariant (average ranks) and takes no option.
* Undefined values are ``nan``: AP when there is no positive at all, ROC AUC when either class is absent.
  `auprc_at_k` is ``nan`` only when the whole pool has no positive; when the pool has positives but none of them is
  among the 2K extremes, it is 0.0 (the scorer surfaced none of them, which must count as a failure, not be skipped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputDataError

TIE_RULES = ("pessimistic", "stable")
METRICS = ("auPRC", "auROC", "precision@K", "AP")


def _as_scores_labels(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert to 1-D float64 scores and 1-D int8 labels of equal length."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1:
        raise InputDataError(f"scores and labels must be 1-D, got shapes {s.shape} and {y.shape}")
    if s.shape != y.shape:
        raise InputDataError(f"scores ({s.shape[0]}) and labels ({y.shape[0]}) have different lengths")
    if s.size == 0:
        raise InputDataError("cannot rank an empty list of scores")
    if np.isnan(s).any():
        raise InputDataError("scores contain NaN; replace them (e.g. with -inf) before evaluating")
    return s, as_binary(y)


def as_binary(labels: np.ndarray) -> np.ndarray:
    y = np.asarray(labels)
    if y.dtype == bool:
        return y.astype(np.int8)
    if not np.isin(y, (0, 1)).all():
        raise InputDataError("labels must be binary (bool, or 0/1)")
    return y.astype(np.int8)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise InputDataError(f"K must be a positive integer, got {k!r}")
    return int(k)


def rank_order(scores: np.ndarray, labels: np.ndarray, ties: str = "pessimistic") -> np.ndarray:
    """Indices of the items from highest to lowest score, ties resolved by `ties` (see the module docstring)."""
    s, y = _as_scores_labels(scores, labels)
    if ties == "pessimistic":
        # lexsort sorts by the last key first: score descending, then label ascending (negatives first), then index
        return np.lexsort((np.arange(s.size), y, -s))
    if ties == "stable":
        return np.argsort(-s, kind="stable")
    raise InputDataError(f"unknown tie rule {ties!r}; choose one of {', '.join(TIE_RULES)}")


def _ap_of_ranked(ranked_labels: np.ndarray) -> float:
    """AP of labels already in rank order: mean over positives of the precision at their rank; nan if none."""
    n_pos = int(ranked_labels.sum())
    if n_pos == 0:
        return float("nan")
    hits = np.cumsum(ranked_labels)
    precision = hits / np.arange(1, ranked_labels.size + 1)
    return float(precision[ranked_labels == 1].sum() / n_pos)


def average_precision(scores: np.ndarray, labels: np.ndarray, ties: str = "pessimistic") -> float:
    """Average precision over the full ranking: mean, over positives, of precision at each positive's rank.

    Ranking [1, 0, 1, 0] gives (1/1 + 2/3) / 2. Ties follow `ties` (default pessimistic). Returns nan when there is
    no positive (undefined; `evaluate_rankings` skips and counts such queries).
    """
    s, y = _as_scores_labels(scores, labels)
    return _ap_of_ranked(y[rank_order(s, y, ties)])


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC as the Mann-Whitney statistic with average ranks for ties; nan if either class is absent.

    Equals P(score of a random positive > score of a random negative) + 0.5 * P(equal).
    """
    s, y = _as_scores_labels(scores, labels)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    _, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # 1-based rank of the last member of each tie group
    avg_rank = ends - (counts - 1) / 2.0  # mean of the ranks end-count+1 .. end
    rank_sum_pos = float(avg_rank[inverse][y == 1].sum())
    return (rank_sum_pos - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def precision_at_k(scores: np.ndarray, labels: np.ndarray, k: int, ties: str = "pessimistic") -> float:
    """Fraction of positives among the K highest-scored items. When K > N, the denominator is N (all items)."""
    s, y = _as_scores_labels(scores, labels)
    k = min(_check_k(k), s.size)
    return float(y[rank_order(s, y, ties)[:k]].mean())


def extremes_at_k(
    scores: np.ndarray, labels: np.ndarray, k: int, ties: str = "pessimistic"
) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels of the K highest- then the K lowest-scored items (2K items, in rank order).

    When 2K >= N every item is returned (in rank order), so no item is counted twice.
    """
    s, y = _as_scores_labels(scores, labels)
    order = rank_order(s, y, ties)[_extreme_positions(s.size, _check_k(k))]
    return s[order], y[order]


def _extreme_positions(n: int, k: int) -> np.ndarray:
    """Rank positions of the top K and bottom K of n ranked items (all n when 2K >= n)."""
    return np.r_[0:k, n - k : n] if 2 * k < n else np.arange(n)


def _auprc_of_extremes(ext_labels: np.ndarray, pool_has_positive: bool) -> float:
    if not pool_has_positive:
        return float("nan")
    return _ap_of_ranked(ext_labels) if ext_labels.any() else 0.0


def auprc_at_k(scores: np.ndarray, labels: np.ndarray, k: int, ties: str = "pessimistic") -> float:
    """Average precision of the scores over the 2K extremes (see `extremes_at_k`).

    nan when the pool has no positive at all; 0.0 when it has some but none is among the extremes.
    """
    s, y = _as_scores_labels(scores, labels)
    _, ext_y = extremes_at_k(s, y, k, ties)
    # extremes come in rank order, so AP reads them as they are
    return _auprc_of_extremes(ext_y, bool(y.any()))


def auroc_at_k(scores: np.ndarray, labels: np.ndarray, k: int, ties: str = "pessimistic") -> float:
    """ROC AUC of the scores over the 2K extremes; nan when they hold only one class.

    `ties` only matters for which items are selected at the K boundaries; the AUC itself is tie-invariant.
    """
    ext_s, ext_y = extremes_at_k(scores, labels, k, ties)
    return roc_auc(ext_s, ext_y)


def _query_metrics(scores: np.ndarray, labels: np.ndarray, ks: Sequence[int], ties: str) -> list[dict[str, float]]:
    """Every metric for one query and each K, ranking the pool once."""
    order = rank_order(scores, labels, ties)
    ranked_s, ranked_y = scores[order], labels[order]
    n = ranked_y.size
    has_pos = bool(ranked_y.any())
    ap = _ap_of_ranked(ranked_y)
    rows = []
    for k in ks:
        idx = _extreme_positions(n, k)
        ext_s, ext_y = ranked_s[idx], ranked_y[idx]
        rows.append(
            {
                "K": k,
                "auPRC": _auprc_of_extremes(ext_y, has_pos),
                "auROC": roc_auc(ext_s, ext_y),
                "precision@K": float(ranked_y[: min(k, n)].mean()),
                "AP": ap,
            }
        )
    return rows


def _per_query_table(score_matrix: np.ndarray, labels: np.ndarray, ks: Sequence[int], ties: str) -> pd.DataFrame:
    m = np.asarray(score_matrix, dtype=np.float64)
    if m.ndim != 2:
        raise InputDataError(f"score_matrix must be 2-D (queries x pool), got shape {m.shape}")
    y = as_binary(np.asarray(labels))
    if y.ndim != 1 or y.size != m.shape[1]:
        raise InputDataError(f"labels must have one entry per pool item ({m.shape[1]}), got shape {y.shape}")
    if m.shape[0] == 0 or m.shape[1] == 0:
        raise InputDataError(f"score_matrix is empty (shape {m.shape})")
    if np.isnan(m).any():
        raise InputDataError("score_matrix contains NaN; replace them (e.g. with -inf) before evaluating")
    if ties not in TIE_RULES:
        raise InputDataError(f"unknown tie rule {ties!r}; choose one of {', '.join(TIE_RULES)}")
    ks = list(dict.fromkeys(_check_k(k) for k in ks))  # drop repeated Ks, keep order
    if not ks:
        raise InputDataError("give at least one K")
    rows = []
    for q in range(m.shape[0]):
        for row in _query_metrics(m[q], y, ks, ties):
            rows.append({"query": q, **row})
    return pd.DataFrame(rows, columns=["query", "K", *METRICS])


def _macro_average(per_query: pd.DataFrame) -> pd.DataFrame:
    out = []
    for k, group in per_query.groupby("K", sort=False):
        row: dict[str, float | int] = {"K": int(k)}
        for metric in METRICS:
            values = group[metric].to_numpy()
            defined = values[~np.isnan(values)]
            row[metric] = float(defined.mean()) if defined.size else float("nan")
        for metric in METRICS:
            row[f"n_undefined_{metric}"] = int(np.isnan(group[metric].to_numpy()).sum())
        row["n_queries"] = int(len(group))
        out.append(row)
    return pd.DataFrame(out)


def evaluate_rankings(
    score_matrix: np.ndarray, labels: np.ndarray, ks: Sequence[int], ties: str = "pessimistic"
) -> pd.DataFrame:
    """Macro-averaged metrics of a (Q, N) score matrix against pool labels (N,), one row per K (in the given order).

    Columns: ``K, auPRC, auROC, precision@K, AP`` (AP is over the full ranking, the same on every row), then
    ``n_undefined_<metric>`` (queries whose value was nan and were left out of that average) and ``n_queries``.
    A metric undefined for every query averages to nan.
    """
    return _macro_average(_per_query_table(score_matrix, labels, ks, ties))


@dataclass
class EvalResult:
    """Macro averages (`table`, as from `evaluate_rankings`) plus the per-query values they came from."""

    table: pd.DataFrame
    per_query: pd.DataFrame = field(repr=False)

    @classmethod
    def from_scores(
        cls, score_matrix: np.ndarray, labels: np.ndarray, ks: Sequence[int], ties: str = "pessimistic"
    ) -> EvalResult:
        """Evaluate a (Q, N) score matrix; `per_query` has one row per (query, K)."""
        per_query = _per_query_table(score_matrix, labels, ks, ties)
        return cls(table=_macro_average(per_query), per_query=per_query)

    def of_queries(self, mask: np.ndarray) -> pd.DataFrame:
        """The macro averages over the queries `mask` selects (a boolean mask over the queries), from their per-query
        values: the table `evaluate_rankings` gives for those queries' rows alone."""
        chosen = np.flatnonzero(np.asarray(mask, dtype=bool))
        return _macro_average(self.per_query[self.per_query["query"].isin(chosen)])

    def value(self, metric: str, k: int) -> float:
        """Macro average of `metric` (one of METRICS) at K."""
        if metric not in METRICS:
            raise InputDataError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        rows = self.table[self.table["K"] == k]
        if rows.empty:
            raise InputDataError(f"K={k} was not evaluated; evaluated: {', '.join(map(str, self.table['K']))}")
        return float(rows[metric].iloc[0])

    def as_dict(self) -> dict[tuple[str, int], float]:
        """{(metric, K): macro average} for every metric and K."""
        return {(m, int(row["K"])): float(row[m]) for _, row in self.table.iterrows() for m in METRICS}


def spearman(scores_a: Sequence[float] | np.ndarray, scores_b: Sequence[float] | np.ndarray) -> float:
    """Spearman rank correlation of two score vectors over the same items (average ranks for ties)."""
    a, b = np.asarray(scores_a, dtype=float), np.asarray(scores_b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputDataError(f"score vectors must have the same length, got {a.shape} and {b.shape}")
    if a.size < 2:
        return float("nan")
    ra = pd.Series(a).rank(method="average").to_numpy()
    rb = pd.Series(b).rank(method="average").to_numpy()
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt(float((ra**2).sum() * (rb**2).sum()))
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


# --- a pool's own labels (the Compare page, `rise query --compare`) ---------------------------------------------

_LABEL_WORDS = {"1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0, "1.0": 1, "0.0": 0,
                "positive": 1, "negative": 0, "pos": 1, "neg": 0}


def binary_labels(values: pd.Series | Sequence[Any] | None) -> np.ndarray | None:
    """Pool labels as 0/1 when they look binary (bool, 0/1, 'true'/'false', 'yes'/'no'); None otherwise.

    Words are mapped to 0/1 here; `metrics.as_binary`, the rule the metrics apply, checks and converts the result."""
    if values is None:
        return None
    s = pd.Series(list(values), dtype=object)
    if len(s) == 0 or s.isna().any():
        return None
    out = []
    for v in s:
        key = str(int(v)) if isinstance(v, (bool, np.bool_)) else str(v).strip().lower()
        if key not in _LABEL_WORDS:
            return None
        out.append(_LABEL_WORDS[key])
    try:
        return as_binary(np.asarray(out))
    except InputDataError:
        return None


def label_metrics(scores: np.ndarray, labels: np.ndarray, k: int) -> dict[str, float]:
    """precision@k and AP over the full ranking of one method's scores against binary labels."""
    return {f"precision@{k}": precision_at_k(scores, labels, k), "AP": average_precision(scores, labels)}


def label_table(scores: dict[str, np.ndarray], labels: np.ndarray, k: int) -> pd.DataFrame:
    """`label_metrics` of several methods' (N,) scores: one row per method (index `method`)."""
    return pd.DataFrame({name: label_metrics(s, labels, k) for name, s in scores.items()}).T.rename_axis("method")
