"""Token-level explanations: which tokens of a training example and of the query carry a hit's score, per channel.

Every channel is a sum over the sample's counted positions (phi_RH = sum_t f_t, HS = sum_t (h_t - mu) / T_c), so a
pool sample's channel score splits exactly over its tokens: <u_i, q> = sum_t <f_t, q> / ||phi_i||. Likewise for the
query's own tokens. Contributions therefore sum to the channel scores shown in the ranking.

A contrastive query (A versus B, `scoring.ContrastFeatures`): the example's tokens are scored against q(A) - q(B), so
they sum to the contrast score; A's tokens push it up (their contributions to the example's score against A) and B's
push it down (`versus_attribution`: their contributions to the score against B, negated), so A's and B's token
contributions together also sum to the contrast score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .config import ScoreOptions
from .engine import RiseExtractor, TokenSketches
from .samples import Sample
from .scoring import FeatureMatrix, channel_scales, query_vectors, weighted_channels


@dataclass
class TokenAttribution:
    """Per-token score contributions of one text (every token; zero where the token is not predicted/counted)."""

    tokens: list[str]
    rh: list[float]  # contribution of each token to the RH channel score
    gh: list[float]
    n_prompt_tokens: int
    hs: list[float] = field(default_factory=list)  # HS channel (zeros when it is not weighed)

    def __post_init__(self) -> None:
        if not self.hs:
            self.hs = [0.0] * len(self.tokens)

    @property
    def total(self) -> list[float]:
        return [a + b + c for a, b, c in zip(self.rh, self.gh, self.hs, strict=False)]

    def negated(self) -> TokenAttribution:
        """The same tokens with every contribution's sign flipped (the other answer of a contrast pushes down)."""
        return TokenAttribution(tokens=self.tokens, rh=[-v for v in self.rh], gh=[-v for v in self.gh],
                                n_prompt_tokens=self.n_prompt_tokens, hs=[-v for v in self.hs])


def token_attribution(ts: TokenSketches, q: dict[str, torch.Tensor], features: FeatureMatrix, options: ScoreOptions
                      ) -> TokenAttribution:
    """Each token's contribution to a sample's score against the query vectors `q` (`scoring.query_vectors`): `ts`
    are the sample's token sketches and `features` its one-row feature matrix that was scored, so a channel's
    contributions sum to its weighted channel score. The prediction at position t credits token t + 1."""
    scales = channel_scales(features, options)
    per_channel = {}
    for c, lam in weighted_channels(options, q):
        terms = getattr(ts, c)  # (T_c, D_c)
        norm = float(getattr(features, f"{c}_norm")[0])
        per_channel[c] = ((terms @ q[c].to(terms.dtype)) * (lam * float(scales[c][0]) / max(norm, 1e-300))).tolist()
    out = {c: [0.0] * len(ts.tokens) for c in ("rh", "gh", "hs")}
    # the prediction at position t is of token t + 1: credit the predicted token
    for i, pos in enumerate(ts.positions.tolist()):
        for c, values in per_channel.items():
            out[c][pos + 1] = values[i]
    return TokenAttribution(tokens=ts.tokens, rh=out["rh"], gh=out["gh"], hs=out["hs"],
                            n_prompt_tokens=ts.n_prompt_tokens)


def explain_hit(extractor: RiseExtractor, example: Sample, example_features: FeatureMatrix, query: Sample,
                query_features: FeatureMatrix, options: ScoreOptions | None = None,
                query_sketches: TokenSketches | None = None, example_sketches: TokenSketches | None = None
                ) -> tuple[TokenAttribution, TokenAttribution]:
    """Token contributions of a pool example (against the query) and of the query (against the example).

    `example_features` / `query_features` are the one-row feature matrices that were scored, so the example's
    token contributions sum to its (weighted) channel scores. `query_sketches`, `example_sketches`: the texts' token
    sketches when already computed (explaining several hits of one query runs its forward pass once, and the hits'
    in batches: `RiseExtractor.token_sketches_many`)."""
    options = options or ScoreOptions()
    options = options.for_channels(example_features.channels).options
    ex_sketches = extractor.token_sketches(example) if example_sketches is None else example_sketches
    ex_attr = token_attribution(ex_sketches, query_vectors(query_features, options), example_features, options)
    # symmetric: the example plays the query role for the query's own tokens
    q_attr = token_attribution(extractor.token_sketches(query) if query_sketches is None else query_sketches,
                               query_vectors(example_features, options), query_features, options)
    return ex_attr, q_attr


def versus_attribution(extractor: RiseExtractor, example_features: FeatureMatrix, versus: Sample,
                       versus_features: FeatureMatrix, options: ScoreOptions,
                       versus_sketches: TokenSketches | None = None) -> TokenAttribution:
    """Token contributions of a contrast's other answer B (one row of features) to a pool example's contrast score,
    negated: B's tokens push the score down. `options`: the resolved weights the contrast was scored with;
    `versus_sketches`: B's token sketches when already computed."""
    options = options.for_channels(example_features.channels).options
    return token_attribution(extractor.token_sketches(versus) if versus_sketches is None else versus_sketches,
                             query_vectors(example_features, options), versus_features, options).negated()
