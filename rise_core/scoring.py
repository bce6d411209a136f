"""Query-time scoring: channel weights and per-sample normalisation applied to stored features, top-k, valuation.

An index stores each channel (RH, GH and, when built with it, HS) as a unit vector plus its norm (`FeatureMatrix`),
so every normalisation mode (per channel, joint, none) and every set of weights can be applied at query time:
score_i = sum over channels c of lambda_c * s_c(i) * <u_c(i), q_c>, with s_c the sample's normalisation factor.

A contrastive query ("why this answer and not that one", `ContrastFeatures`) scores score(A) - score(B): every score
is linear in the query vector, so its query vector is q_c(A) - q_c(B) per channel and every path (exact scan, ANN
index, valuation, feedback, token explanations) scores it as one query.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import adaptive
from .adaptive import ChannelChoice
from .config import CHANNELS, ScoreOptions
from .engine import SampleFeatures
from .errors import InputDataError


def _unit(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    norm = x.double().norm(dim=1)
    return (x.double() / norm.clamp_min(1e-300)[:, None]).to(dtype), norm.float()


@dataclass
class FeatureMatrix:
    """Unit-normalised per-sample channel features and their norms (rows with no counted token are zero).

    `hs` is None for an index built without the HS channel."""

    rh: torch.Tensor  # (N, D_rh)
    gh: torch.Tensor  # (N, D_gh)
    rh_norm: torch.Tensor  # (N,) float32
    gh_norm: torch.Tensor  # (N,) float32
    hs: torch.Tensor | None = None  # (N, d)
    hs_norm: torch.Tensor | None = None  # (N,) float32
    loss: torch.Tensor | None = None  # (N,) float32 mean next-token loss per sample (None: not known)
    texts: tuple[Any, ...] | None = None
    """the queries' samples, one per row, when the features are a query's (`attribution.query_features`): the
    behaviour test checks that the query holds the span it finds; None for a pool's features."""

    def __len__(self) -> int:
        return int(self.rh.shape[0])

    @property
    def has_hs(self) -> bool:
        return self.hs is not None

    @property
    def channels(self) -> tuple[str, ...]:
        """The channels these features store (RH, GH, and HS when present)."""
        return CHANNELS if self.has_hs else CHANNELS[:2]

    def _map(self, fn) -> FeatureMatrix:
        return FeatureMatrix(*(None if getattr(self, f) is None else fn(f, getattr(self, f)) for f in
                               ("rh", "gh", "rh_norm", "gh_norm", "hs", "hs_norm", "loss")), texts=self.texts)

    @classmethod
    def from_features(cls, feats: SampleFeatures, dtype: torch.dtype = torch.float32) -> FeatureMatrix:
        rh, rh_norm = _unit(feats.rh, dtype)
        gh, gh_norm = _unit(feats.gh, dtype)
        hs, hs_norm = _unit(feats.hs, dtype) if feats.hs is not None else (None, None)
        return cls(rh=rh, gh=gh, rh_norm=rh_norm, gh_norm=gh_norm, hs=hs, hs_norm=hs_norm,
                   loss=None if feats.loss is None else feats.loss.float())

    def to(self, dtype: torch.dtype) -> FeatureMatrix:
        return self._map(lambda f, x: x if f.endswith("_norm") or f == "loss" else x.to(dtype))

    def select(self, rows: torch.Tensor | Sequence[int]) -> FeatureMatrix:
        rows = torch.as_tensor(rows, dtype=torch.long)
        out = self._map(lambda f, x: x[rows])
        out.texts = None if self.texts is None else tuple(self.texts[int(i)] for i in rows.reshape(-1))
        return out

    def without_hs(self) -> FeatureMatrix:
        return FeatureMatrix(self.rh, self.gh, self.rh_norm, self.gh_norm, loss=self.loss, texts=self.texts)

    @staticmethod
    def concat(parts: Sequence[FeatureMatrix]) -> FeatureMatrix:
        has_hs = all(p.has_hs for p in parts)
        cat = {f: torch.cat([getattr(p, f) for p in parts]) for f in ("rh", "gh", "rh_norm", "gh_norm")}
        if has_hs:
            cat.update(hs=torch.cat([p.hs for p in parts]), hs_norm=torch.cat([p.hs_norm for p in parts]))
        if all(p.loss is not None for p in parts):
            cat["loss"] = torch.cat([p.loss for p in parts])
        if all(p.texts is not None for p in parts):
            cat["texts"] = tuple(t for p in parts for t in p.texts)
        return FeatureMatrix(**cat)


@dataclass
class ContrastFeatures(FeatureMatrix):
    """A query's features (the answer A) contrasted with another answer's (B): "why A and not B". Every score against
    it is score(A) - score(B) per channel (`query_vectors`), under one set of weights: those the per-query rule
    chooses for A (its loss is A's), applied to both, so the contrast is exactly the difference of the two plain
    scores. HS is contrasted as the difference of its two cosines (not the cosine with A - B).

    `versus` has one row (every row of A is contrasted with it) or one row per row of A (paired); a set's query
    vector is mean(A) - mean(B). `versus_label` names B for the ranking's note."""

    versus: FeatureMatrix | None = None
    versus_label: str = "the other answer"

    @classmethod
    def of(cls, query: FeatureMatrix, versus: FeatureMatrix, label: str = "the other answer") -> ContrastFeatures:
        """A contrasted with B (`versus`: one row, or one per row of `query`)."""
        if isinstance(query, ContrastFeatures) or isinstance(versus, ContrastFeatures):
            raise InputDataError("a contrast is between two plain queries; contrast A with B once")
        if len(query) == 0 or len(versus) == 0:
            raise InputDataError("a contrast needs features of both answers (A and B); one of them is empty")
        if len(versus) not in (1, len(query)):
            raise InputDataError(f"a contrast pairs each query with one other answer, or all with one: {len(query)} "
                                 f"queries but {len(versus)} other answers")
        if query.has_hs != versus.has_hs or query.rh.shape[1:] != versus.rh.shape[1:]:
            raise InputDataError("the two answers of a contrast must come from the same index")
        fields = {f: getattr(query, f) for f in ("rh", "gh", "rh_norm", "gh_norm", "hs", "hs_norm", "loss", "texts")}
        return cls(**fields, versus=versus, versus_label=label)

    @property
    def plain(self) -> FeatureMatrix:
        """A's features alone (the plain query)."""
        return FeatureMatrix(self.rh, self.gh, self.rh_norm, self.gh_norm, self.hs, self.hs_norm, self.loss,
                             self.texts)

    @property
    def note(self) -> str:
        """The ranking's line saying what was contrasted."""
        n = len(self.versus) if self.versus is not None else 0
        return (f"contrast: each score is the query's minus its score against {self.versus_label} ({n} text"
                f"{'s' if n != 1 else ''}): rows that support this answer and not that one rank first, rows that "
                "support that one rank last; the weights were chosen for this answer and applied to both")

    def select(self, rows: torch.Tensor | Sequence[int]) -> ContrastFeatures:
        assert self.versus is not None
        versus = self.versus if len(self.versus) == 1 else self.versus.select(rows)
        return ContrastFeatures.of(self.plain.select(rows), versus, self.versus_label)

    def to(self, dtype: torch.dtype) -> ContrastFeatures:
        assert self.versus is not None
        return ContrastFeatures.of(self.plain.to(dtype), self.versus.to(dtype), self.versus_label)

    def paired_versus(self) -> FeatureMatrix:
        """B with one row per row of A (the one row repeated when every query is contrasted with it)."""
        assert self.versus is not None
        return self.versus if len(self.versus) == len(self) else self.versus.select([0] * len(self))


def versus_of(queries: FeatureMatrix) -> FeatureMatrix | None:
    """B of a contrastive query (`ContrastFeatures`), else None."""
    return queries.versus if isinstance(queries, ContrastFeatures) else None


def weights(options: ScoreOptions) -> dict[str, float]:
    """{channel: lambda} of the channels `options` weighs."""
    return {"rh": float(options.lambda_rh), "gh": float(options.lambda_gh), "hs": float(options.lambda_hs)}


def channel_scales(fm: FeatureMatrix, options: ScoreOptions) -> dict[str, torch.Tensor]:
    """Per-sample factors {channel: s_c} turning unit vectors into the vectors scored under `options.sample_norm`.

    'joint' normalises [phi_RH; phi_GH] together (the paper's normalize_sample) over the channels it weighs (a
    channel with weight 0 is not part of the signature, so an RH-only ablation is normalised by RH alone); HS, not
    part of the paper's signature, is normalised by itself under 'channel' and 'joint'."""
    mode = options.sample_norm
    ones = torch.ones_like(fm.rh_norm)
    if mode == "channel":
        out = {"rh": ones, "gh": ones, "hs": ones}
    elif mode == "none":
        out = {"rh": fm.rh_norm, "gh": fm.gh_norm, "hs": fm.hs_norm}
    elif mode == "joint":
        lam = weights(options)
        in_joint = [c for c in ("rh", "gh") if lam[c] != 0] or ["rh", "gh"]
        joint = torch.sqrt(sum(getattr(fm, f"{c}_norm").double() ** 2 for c in in_joint)).clamp_min(1e-300)
        out = {"rh": (fm.rh_norm / joint).float(), "gh": (fm.gh_norm / joint).float(), "hs": ones}
    else:
        raise InputDataError(f"unknown sample_norm {mode!r}; choose channel, joint or none")
    if not fm.has_hs:
        out.pop("hs")
    return out


def query_vectors(queries: FeatureMatrix, options: ScoreOptions) -> dict[str, torch.Tensor]:
    """Mean over the query set of the scored query vectors, per channel (Algorithm 1, stage 3); for a contrast
    (`ContrastFeatures`), A's minus B's, both scaled under the same `options`."""
    if len(queries) == 0:
        raise InputDataError("the query set is empty")
    scales = channel_scales(queries, options)
    q = {c: (getattr(queries, c).float() * s[:, None]).mean(dim=0) for c, s in scales.items()}
    versus = versus_of(queries)
    if versus is None:
        return q
    q_b = query_vectors(versus, options)
    return {c: v - q_b[c] for c, v in q.items()}


@dataclass
class Scores:
    """Scores of every pool sample: total and the weighted channel parts (total = rh + gh + hs)."""

    total: torch.Tensor  # (N,)
    rh: torch.Tensor  # (N,)
    gh: torch.Tensor  # (N,)
    hs: torch.Tensor  # (N,) zeros when the HS channel is not weighed

    def take(self, rows: torch.Tensor) -> Scores:
        return Scores(self.total[rows], self.rh[rows], self.gh[rows], self.hs[rows])

    @classmethod
    def from_parts(cls, parts: dict[str, torch.Tensor], n: int) -> Scores:
        """Scores of n rows from the weighted channel parts computed (a channel left out scores 0)."""
        zero = torch.zeros(n)
        rh, gh, hs = (parts.get(c, zero) for c in CHANNELS)
        return cls(total=rh + gh + hs, rh=rh, gh=gh, hs=hs)


def weighting(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions | None,
              behaviour: adaptive.BehaviourTest | None = None) -> adaptive.Weighting:
    """`adaptive.resolve` for a query set against in-memory pool features: the pool's channels, its median loss
    (`adaptive.pool_loss`) as the per-query rule's reference, and `behaviour` (`rise_core.behaviour`) when given."""
    return adaptive.resolve(options or ScoreOptions(), pool.channels, queries.loss,
                            lambda: adaptive.pool_loss(pool.loss), behaviour=behaviour)


def channel_choice(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions,
                   behaviour: adaptive.BehaviourTest | None = None) -> ChannelChoice:
    """The weights `options` come to for this query set and pool (`weighting`), and why."""
    return weighting(pool, queries, options, behaviour).choice


def weighted_channels(options: ScoreOptions, q: dict[str, torch.Tensor]) -> list[tuple[str, float]]:
    """THE loop over channels of every score: (channel, lambda_c) of each channel with a nonzero weight under the
    (resolved) `options` that has a query vector in `q`, in score order."""
    return [(c, lam) for c, lam in weights(options).items() if lam != 0 and c in q]


def channel_sum(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions) -> Scores:
    """Scores of every pool row under fixed, resolved `options`: sum over channels of lambda_c s_c <u_c, q_c>."""
    q = query_vectors(queries, options)
    scales = channel_scales(pool, options)
    return Scores.from_parts({c: lam * scales[c] * matvec(getattr(pool, c), q[c]) for c, lam in weighted_channels(
        options, q)}, len(pool))


def score_pool(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions | None = None) -> Scores:
    """Influence of each pool sample on the query set: one matrix-vector product per weighted channel."""
    return channel_sum(pool, queries, weighting(pool, queries, options).options)


def score_each_query(pool: FeatureMatrix, queries: FeatureMatrix, options: ScoreOptions | None = None,
                     behaviour: Callable[[int], adaptive.BehaviourTest] | None = None) -> torch.Tensor:
    """(Q, N) score matrix, one row per query (for evaluation); with weighting='auto', each query its own weights
    (`behaviour(q)`: query q's behaviour test, when the pool's text is at hand)."""
    options = options or ScoreOptions()
    if options.weighting == "auto":  # each query scored with its own weights
        rows = [queries.select([q]) for q in range(len(queries))]
        return torch.cat([score_each_query(pool, one, channel_choice(
            pool, one, options, behaviour(q) if behaviour is not None else None).options)
            for q, one in enumerate(rows)]) if rows else torch.zeros(0, len(pool))
    options = options.for_channels(pool.channels).options
    if isinstance(queries, ContrastFeatures):  # each query minus its other answer, with the same weights
        return score_each_query(pool, queries.plain, options) - score_each_query(pool, queries.paired_versus(), options)
    q_scales, p_scales = channel_scales(queries, options), channel_scales(pool, options)
    out = torch.zeros(len(queries), len(pool))
    for c, lam in weighted_channels(options, q_scales):
        out += lam * ((getattr(queries, c).float() * q_scales[c][:, None]) @ getattr(pool, c).float().T
                      * p_scales[c][None, :])
    return out


def matvec(matrix: torch.Tensor, vector: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """matrix @ vector in float32 (a vector (d,), or several as the columns of (d, m): then (N, m)); half-precision
    rows are widened a cache-sized chunk at a time, never all at once."""
    if matrix.dtype not in (torch.float16, torch.bfloat16):
        return matrix @ vector.to(matrix.dtype)
    vector = vector.float()
    out = torch.empty((matrix.shape[0], *vector.shape[1:]), dtype=torch.float32)
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
