"""Token-level explanations: which tokens of a training example and of the query carry a hit's score, per channel.

With phi = sum_t r_t (outer) h_t, the RH score of a pool sample splits exactly over its tokens:
<u_i, q> = sum_t (r_t^T Q h_t) / ||phi_i||, with Q the query vector as a K_r x K_h matrix; likewise for the GH
channel and for the query's own tokens. Contributions therefore sum to the channel scores shown in the ranking.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .config import ScoreOptions
from .engine import RiseExtractor, TokenSketches
from .samples import Sample
from .scoring import FeatureMatrix, channel_scales, query_vectors


@dataclass
class TokenAttribution:
    """Per-token score contributions of one text (every token; zero where the token is not predicted/counted)."""

    tokens: list[str]
    rh: list[float]  # contribution of each token to the RH channel score
    gh: list[float]
    n_prompt_tokens: int

    @property
    def total(self) -> list[float]:
        return [a + b for a, b in zip(self.rh, self.gh, strict=False)]


def _per_token(ts: TokenSketches, q_rh: torch.Tensor, q_gh: torch.Tensor, scale_rh: float, scale_gh: float,
               norm_rh: float, norm_gh: float) -> TokenAttribution:
    k_r, k_h, k_g = ts.r.shape[1], ts.h.shape[1], ts.g.shape[1]
    mat_rh = q_rh.reshape(k_r, k_h).to(ts.r.dtype)
    mat_gh = q_gh.reshape(k_g, k_h).to(ts.g.dtype)
    rh_t = ((ts.r @ mat_rh) * ts.h).sum(dim=1) * (scale_rh / max(norm_rh, 1e-300))
    gh_t = ((ts.g @ mat_gh) * ts.h).sum(dim=1) * (scale_gh / max(norm_gh, 1e-300))
    rh = [0.0] * len(ts.tokens)
    gh = [0.0] * len(ts.tokens)
    # the prediction at position t is of token t + 1: credit the predicted token
    for pos, a, b in zip(ts.positions.tolist(), rh_t.tolist(), gh_t.tolist(), strict=False):
        rh[pos + 1] = a
        gh[pos + 1] = b
    return TokenAttribution(tokens=ts.tokens, rh=rh, gh=gh, n_prompt_tokens=ts.n_prompt_tokens)


def explain_hit(extractor: RiseExtractor, example: Sample, example_features: FeatureMatrix, query: Sample,
                query_features: FeatureMatrix, options: ScoreOptions | None = None
                ) -> tuple[TokenAttribution, TokenAttribution]:
    """Token contributions of a pool example (against the query) and of the query (against the example).

    `example_features` / `query_features` are the one-row feature matrices that were scored, so the example's
    token contributions sum to its (weighted) channel scores."""
    options = options or ScoreOptions()
    ex_c_rh, ex_c_gh = (float(c[0]) for c in channel_scales(example_features, options.sample_norm))
    q_rh, q_gh = query_vectors(query_features, options)
    ex_tokens = extractor.token_sketches(example)
    ex_attr = _per_token(ex_tokens, q_rh, q_gh, options.lambda_rh * ex_c_rh, options.lambda_gh * ex_c_gh,
                         float(example_features.rh_norm[0]), float(example_features.gh_norm[0]))
    # symmetric: the example plays the query role for the query's own tokens
    e_rh, e_gh = query_vectors(example_features, options)
    q_c_rh, q_c_gh = (float(c[0]) for c in channel_scales(query_features, options.sample_norm))
    q_tokens = extractor.token_sketches(query)
    q_attr = _per_token(q_tokens, e_rh, e_gh, options.lambda_rh * q_c_rh, options.lambda_gh * q_c_gh,
                        float(query_features.rh_norm[0]), float(query_features.gh_norm[0]))
    return ex_attr, q_attr
