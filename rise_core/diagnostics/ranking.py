"""RH vs GH rankings (the paper's Observation 2): how the lexical and the semantic channel order candidates.

For a query and a list of candidates, each channel's similarity is computed twice: exactly (the unsketched per-sample
sums phi_RH = sum_t r_t (x) h_t and phi_GH = sum_t g_t (x) h_t, with the configuration's support, centring and
per-token normalisation) and as RISE computes it (CountSketch features). Scores follow `ScoreOptions`: per-sample
normalisation, and RH+GH = lambda_rh * RH + lambda_gh * GH. Rank 1 is the most similar; ties share the best rank.

A built-in example set mirrors the paper's cat/blanket table: paraphrases with and without word overlap, lexical-only
distractors (the words, not the meaning) and an unrelated sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ..config import RiseConfig, ScoreOptions
from ..engine import RiseExtractor, aggregate, readout_forward, sketch_readout
from ..errors import InputDataError
from ..ingest import jsonable
from ..metrics import spearman
from ..models import LoadedModel
from ..samples import Sample
from ..sketch import SketchSet
from ._common import (
    DiagnosticResult,
    coerce_samples,
    exact_factors,
    exact_grams,
    normalised_scores,
    pairwise_gram,
    sample_label,
)

EXAMPLE_QUERY = "The cat is sleeping on the blanket."

# (text, semantic match, lexical overlap, group)
EXAMPLE_CANDIDATES: list[tuple[str, bool, bool, str]] = [
    ("A cat sleeps on a blanket.", True, True, "semantic + lexical"),
    ("The kitten is napping on the throw.", True, False, "paraphrase"),
    ("A tabby dozed off on the quilt.", True, False, "paraphrase"),
    ("Our feline friend was dozing on the coverlet.", True, False, "hard paraphrase"),
    ("Sleepy cat? Shop the blanket sale on our website.", False, True, "lexical only"),
    ("Cat food and blanket orders ship on Monday.", False, True, "lexical only"),
    ("The blanket factory hired a cat to catch mice.", False, True, "lexical only"),
    ("The stock market crashed after the bank reported losses.", False, False, "unrelated"),
]


def example_set() -> tuple[str, pd.DataFrame]:
    """The built-in query and its candidates (columns: candidate, semantic, lexical, group)."""
    df = pd.DataFrame(EXAMPLE_CANDIDATES, columns=["candidate", "semantic", "lexical", "group"])
    return EXAMPLE_QUERY, df


def _ranks(scores: torch.Tensor) -> list[int]:
    """Rank 1 = highest; equal scores share the best rank (scores are rounded to 12 significant digits first)."""
    return pd.Series(_round(scores).numpy()).rank(ascending=False, method="min").astype(int).tolist()


def _round(scores: torch.Tensor, digits: int = 12) -> torch.Tensor:
    finite = torch.isfinite(scores) & (scores != 0)
    scale = torch.ones_like(scores)
    scale[finite] = 10.0 ** (digits - 1 - torch.floor(torch.log10(scores[finite].abs())))
    return torch.where(finite, torch.round(scores * scale) / scale, scores)


@torch.no_grad()
def rh_gh_ranking(lm: LoadedModel, query: Sample | str | dict, candidates: Sequence[Sample | str | dict],
                  config: RiseConfig | None = None, options: ScoreOptions | None = None,
                  sketches: SketchSet | None = None, hidden_mean: torch.Tensor | None = None,
                  annotations: pd.DataFrame | None = None) -> DiagnosticResult:
    """Ranks of the candidates for the query under RH, GH and RH+GH, exact and sketched, side by side.

    Samples are run one at a time, so identical candidates get bit-identical scores (and tie).
    `sketches` / `hidden_mean` default to the configuration's seed and, when `center_hidden` is on, the mean over the
    query and candidates. `annotations` (one row per candidate, e.g. semantic / lexical / group) is joined in.

    Tables:
        ranking: one row per candidate, sorted by exact RH rank -- candidate (text), [annotation columns],
            n_counted, rh, gh, rh_gh (exact scores), rank_rh, rank_gh, rank_rh_gh, delta_gh (rank_gh - rank_rh:
            negative = GH promotes it), rh_sketch, gh_sketch, rh_gh_sketch, rank_rh_sketch, rank_gh_sketch,
            rank_rh_gh_sketch.
    Summary: n_candidates, spearman of exact vs sketched scores per channel, rank changes between RH and GH.
    """
    config = config or RiseConfig()
    options = options or ScoreOptions()
    items = coerce_samples([query, *candidates])
    if len(items) < 2:
        raise InputDataError("give at least one candidate")
    extractor = RiseExtractor(lm, config, sketches=sketches, hidden_mean=hidden_mean)
    if config.center_hidden and extractor.hidden_mean is None:
        extractor.fit_hidden_mean(items)
    encoded = extractor.encode(items)
    weight = lm.readout_weight.detach()
    factors, feats = [], []
    for enc in encoded:
        if enc.n_counted == 0:
            factors.append(None)
            feats.append(None)
            continue
        ro = readout_forward(lm, [enc], config)
        factors.extend(exact_factors(ro, weight, config, extractor.hidden_mean))
        feats.append(aggregate(ro, sketch_readout(ro, weight, config, extractor.sketches, extractor.hidden_mean)))
    present = [i for i, f in enumerate(factors) if f is not None]
    if 0 not in present:
        raise InputDataError("the query has no counted (predicted) token")
    g_rh_p, g_gh_p = exact_grams([factors[i] for i in present])
    sk_rh = pairwise_gram(torch.stack([feats[i].rh[0] for i in present]))
    sk_gh = pairwise_gram(torch.stack([feats[i].gh[0] for i in present]))
    exact = normalised_scores(g_rh_p, g_gh_p, options)
    sketched = normalised_scores(sk_rh, sk_gh, options)
    n = len(items)
    cols: dict[str, list] = {}
    for prefix, scores in (("", exact), ("_sketch", sketched)):
        for ch in ("rh", "gh", "rh_gh"):
            full = torch.full((n,), float("-inf"), dtype=torch.float64)  # no counted token: ranked last
            full[present] = _round(scores[ch][0])
            cols[f"{ch}{prefix}"] = full[1:]
    df = pd.DataFrame({"candidate": [sample_label(s, 120) for s in items[1:]]})
    if annotations is not None:
        for col in annotations.columns:
            if col != "candidate":
                df[col] = annotations[col].to_numpy()
    df["n_counted"] = [e.n_counted for e in encoded[1:]]
    for ch in ("rh", "gh", "rh_gh"):
        df[ch] = cols[ch].numpy()
    for ch in ("rh", "gh", "rh_gh"):
        df[f"rank_{ch}"] = _ranks(cols[ch])
    df["delta_gh"] = df["rank_gh"] - df["rank_rh"]
    for ch in ("rh", "gh", "rh_gh"):
        df[f"{ch}_sketch"] = cols[f"{ch}_sketch"].numpy()
    for ch in ("rh", "gh", "rh_gh"):
        df[f"rank_{ch}_sketch"] = _ranks(cols[f"{ch}_sketch"])
    df = df.sort_values(["rank_rh", "rank_gh"], kind="stable").reset_index(drop=True)
    summary = {"n_candidates": n - 1,
               "n_moved_by_gh": int((df["delta_gh"] != 0).sum())}
    for ch in ("rh", "gh", "rh_gh"):
        finite_rows = df[ch].abs() < float("inf")
        summary[f"spearman_{ch}_exact_vs_sketch"] = jsonable(
            spearman(df.loc[finite_rows, ch].to_numpy(), df.loc[finite_rows, f"{ch}_sketch"].to_numpy()))
    if "semantic" in df.columns and "lexical" in df.columns:
        lexical_only = df["lexical"].astype(bool) & ~df["semantic"].astype(bool)
        semantic_only = df["semantic"].astype(bool) & ~df["lexical"].astype(bool)
        summary["lexical_only_mean_delta_gh"] = jsonable(float(df.loc[lexical_only, "delta_gh"].mean()))
        summary["paraphrase_mean_delta_gh"] = jsonable(float(df.loc[semantic_only, "delta_gh"].mean()))
    params = {"query": sample_label(items[0], 200), "lambda_rh": options.lambda_rh, "lambda_gh": options.lambda_gh,
              "sample_norm": options.sample_norm, "config": config.fingerprint()}
    return DiagnosticResult("rhgh", {"ranking": df}, summary, params)


def rh_gh_examples(lm: LoadedModel, config: RiseConfig | None = None, options: ScoreOptions | None = None,
                   sketches: SketchSet | None = None, hidden_mean: torch.Tensor | None = None) -> DiagnosticResult:
    """`rh_gh_ranking` on the built-in cat/blanket example set (with semantic / lexical / group columns)."""
    query, cands = example_set()
    return rh_gh_ranking(lm, query, cands["candidate"].tolist(), config, options, sketches=sketches,
                         hidden_mean=hidden_mean, annotations=cands)
