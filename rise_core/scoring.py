"""Query-time scoring: channel weights and per-sample normalisation applied to stored features, top-k, valuation.

An index stores each channel as a unit vector plus its norm (`FeatureMatrix`), so every normalisation mode
(per channel, joint, none) and every (lambda_rh, lambda_gh) can be applied at query time without recomputation:
score_i = lambda_rh * c_rh(i) * <u_rh(i), q_rh> + lambda_gh * c_gh(i) * <u_gh(i), q_gh>.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .config import ScoreOptions
from .engine import SampleFeatures
from .errors import InputDataError


@dataclass
class FeatureMatrix:
    """Unit-normalised per-sample channel features and their norms (rows with no counted token are zero)."""

    rh: torch.Tensor  # (N, K_r*K_h)
    gh: torch.Tensor  # (N, K_g*K_h)
    rh_norm: torch.Tensor  # (N,) float32
    gh_norm: torch.Tensor  # (N,) float32

    def __len__(self) -> int:
        return int(self.rh.shape[0])

    @classmethod
    def from_features(cls, feats: SampleFeatures, dtype: torch.dtype = torch.float32) -> FeatureMatrix:
        rh_norm, gh_norm = feats.rh.double().norm(dim=1), feats.gh.double().norm(dim=1)
        rh = (feats.rh.double() / rh_norm.clamp_min(1e-300)[:, None]).to(dtype)
        gh = (feats.gh.double() / gh_norm.clamp_min(1e-300)[:, None]).to(dtype)
        return cls(rh=rh, gh=gh, rh_norm=rh_norm.float(), gh_norm=gh_norm.float())

    def to(self, dtype: torch.dtype) -> FeatureMatrix:
        return FeatureMatrix(self.rh.to(dtype), self.gh.to(dtype), self.rh_norm, self.gh_norm)

    def select(self, rows: torch.Tensor | Sequence[int]) -> FeatureMatrix:
        rows = torch.as_tensor(rows, dtype=torch.long)
        return FeatureMatrix(self.rh[rows], self.gh[rows], self.rh_norm[rows], self.gh_norm[rows])

    @staticmethod
    def concat(parts: Sequence[FeatureMatrix]) -> FeatureMatrix:
        return FeatureMatrix(*(torch.cat([getattr(p, f) for p in parts]) for f in ("rh", "gh", "rh_norm", "gh_norm")))


def channel_scales(fm: FeatureMatrix, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample factors c_rh, c_gh turning unit vectors into the vectors scored under `mode`."""
    if mode == "channel":
        ones = torch.ones_like(fm.rh_norm)
        return ones, ones
    if mode == "none":
        return fm.rh_norm, fm.gh_norm
    if mode == "joint":
        joint = torch.sqrt(fm.rh_norm.double() ** 2 + fm.gh_norm.double() ** 2).clamp_min(1e-300)
        return (fm.rh_norm / joint).float(), (fm.gh_norm / joint).float()
    raise InputDataError(f"unknown sample_norm {mode!r}; choose channel, joint or none")


def query_vectors(queries: FeatureMatrix, options: ScoreOptions) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over the query set of the scored query vectors (Algorithm 1, stage 3)."""
    if len(queries) == 0:
        raise InputDataError("the query set is empty")
    c_rh, c_gh = channel_scales(queries, options.sample_norm)
    q_rh = (queries.rh.float() * c_rh[:, None]).mean(dim=0)
    q_gh = (queries.gh.float() * c_gh[:, None]).mean(dim=0)
    return q_rh, q_gh


@dataclass
class Scores:
    """Scores of every pool sample: total and the two weighted channel parts (total = rh + gh)."""

    total: torch.Tensor  # (N,)
    rh: torch.Tensor  # (N,)
    gh: torch.Tensor  # (N,)


def score_pool(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions | None = None) -> Scores:
    """Influence of each pool sample on the query set: one matrix-vector product per channel."""
    options = options or ScoreOptions()
    q_rh, q_gh = query_vectors(queries, options)
    c_rh, c_gh = channel_scales(pool, options.sample_norm)
    rh = options.lambda_rh * c_rh * matvec(pool.rh, q_rh)
    gh = options.lambda_gh * c_gh * matvec(pool.gh, q_gh)
    return Scores(total=rh + gh, rh=rh, gh=gh)


def score_each_query(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions | None = None) -> torch.Tensor:
    """(Q, N) score matrix, one row per query (for evaluation)."""
    options = options or ScoreOptions()
    qc_rh, qc_gh = channel_scales(queries, options.sample_norm)
    c_rh, c_gh = channel_scales(pool, options.sample_norm)
    rh = (queries.rh.float() * qc_rh[:, None]) @ pool.rh.float().T * c_rh[None, :]
    gh = (queries.gh.float() * qc_gh[:, None]) @ pool.gh.float().T * c_gh[None, :]
    return options.lambda_rh * rh + options.lambda_gh * gh


def matvec(matrix: torch.Tensor, vector: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """matrix @ vector in float32; half-precision rows are widened a cache-sized chunk at a time, never all at once."""
    if matrix.dtype not in (torch.float16, torch.bfloat16):
        return matrix @ vector.to(matrix.dtype)
    vector = vector.float()
    out = torch.empty(matrix.shape[0], dtype=torch.float32)
    for start in range(0, matrix.shape[0], chunk):
        out[start:start + chunk] = matrix[start:start + chunk].float() @ vector
    return out


def top_k(scores: torch.Tensor, k: int, allowed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices and values of the k highest scores (partial sort), optionally among `allowed` rows only."""
    if allowed is not None:
        scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
        k = min(k, int(allowed.sum()))
    k = max(0, min(k, scores.numel()))
    values, idx = torch.topk(scores, k)
    return idx, values
