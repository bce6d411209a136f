"""Fusing rankings at query time: RISE with BM25 (or any scorers), by reciprocal rank or by standardised score.

Both act per query on (Q, N) score matrices, so a fused method needs no index of its own: it is the weighted
combination of rankings its parts already give."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import pandas as pd

from .baselines import Scorer
from .errors import ConfigError
from .samples import Sample

FusionRule = Literal["rrf", "zscore"]
FUSION_RULES: tuple[str, ...] = get_args(FusionRule)
RRF_K = 60  # the constant of Cormack, Clarke & Buettcher (SIGIR 2009), their choice across TREC runs


def _check(scores: Sequence[np.ndarray], weights: Sequence[float] | None) -> list[float]:
    if not scores:
        raise ConfigError("nothing to fuse: give at least one score matrix")
    shapes = {np.shape(s) for s in scores}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ConfigError(f"fusion needs (queries, pool) score matrices of one shape, got {sorted(shapes)}")
    weights = [1.0] * len(scores) if weights is None else [float(w) for w in weights]
    if len(weights) != len(scores):
        raise ConfigError(f"{len(weights)} weights for {len(scores)} score matrices")
    return weights


def ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every pool item per query (row), best first; tied scores share their average rank."""
    return pd.DataFrame(np.asarray(scores, dtype=np.float64)).rank(axis=1, ascending=False, method="average").to_numpy()


def reciprocal_rank_fusion(scores: Sequence[np.ndarray], weights: Sequence[float] | None = None,
                           k: float = RRF_K) -> np.ndarray:
    """sum_i w_i / (k + rank_i): only the order within each matrix counts, not its scale."""
    weights = _check(scores, weights)
    return sum(w / (k + ranks(s)) for w, s in zip(weights, scores, strict=True)).astype(np.float32)


def zscore_fusion(scores: Sequence[np.ndarray], weights: Sequence[float] | None = None) -> np.ndarray:
    """sum_i w_i * (s_i - mean) / std per query; a query whose scores are all equal adds 0."""
    weights = _check(scores, weights)
    out = np.zeros(np.shape(scores[0]), dtype=np.float64)
    for w, s in zip(weights, scores, strict=True):
        s = np.asarray(s, dtype=np.float64)
        std = s.std(axis=1, keepdims=True)
        out += w * np.divide(s - s.mean(axis=1, keepdims=True), std, out=np.zeros_like(s), where=std > 0)
    return out.astype(np.float32)


def fuse(scores: Sequence[np.ndarray], rule: FusionRule = "rrf", weights: Sequence[float] | None = None
         ) -> np.ndarray:
    """Fused (Q, N) scores under `rule` ("rrf" or "zscore")."""
    if rule == "rrf":
        return reciprocal_rank_fusion(scores, weights)
    if rule == "zscore":
        return zscore_fusion(scores, weights)
    raise ConfigError(f"unknown fusion rule {rule!r}; choose one of {FUSION_RULES}")


class FusionScorer(Scorer):
    """A scorer that fits each of its parts on the pool and fuses their scores per query."""

    def __init__(self, parts: Sequence[Scorer], rule: FusionRule = "rrf", weights: Sequence[float] | None = None,
                 name: str | None = None) -> None:
        if rule not in FUSION_RULES:
            raise ConfigError(f"unknown fusion rule {rule!r}; choose one of {FUSION_RULES}")
        self.parts, self.rule, self.weights = list(parts), rule, weights
        _check([np.zeros((1, 1))] * len(self.parts), weights)
        self.name = name or "+".join(p.name for p in self.parts)

    def fit(self, pool: Sequence[Sample]) -> None:
        for part in self.parts:
            part.fit(pool)

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        return fuse([part.score(queries) for part in self.parts], self.rule, self.weights)

    @property
    def index_bytes(self) -> int:
        return sum(int(getattr(part, "index_bytes", 0)) for part in self.parts)
