"""Sketch fidelity: how well CountSketch features reproduce the exact channel similarities, and how stable top-k is.

The exact similarity of two samples is the inner product of their unsketched channel sums (see `_common`), with the
same support, centring and per-token normalisation as the sketched features, so only the sketch differs. Both are
normalised per `ScoreOptions.sample_norm` and compared over all pairs i < j of the (sub)sampled set: Pearson and
Spearman correlation per channel (RH, GH, RH+GH), for each sketch dims (K_r, K_h, K_g) and each sketch seed.
Rank stability: every sample in turn is the query and the others are ranked; the top-k sets of two seeds are
compared by overlap@k = |A cap B| / k (mean over queries and seed pairs), and each seed's top-k with the exact one.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ..config import RiseConfig, ScoreOptions
from ..engine import RiseExtractor, SampleFeatures, aggregate, readout_forward, sketch_readout
from ..errors import InputDataError
from ..ingest import jsonable
from ..metrics import spearman
from ..models import LoadedModel
from ..samples import Sample
from ..sketch import SketchSet
from ._common import DiagnosticResult, batches, encode_samples, exact_factors, exact_grams, normalised_scores

CHANNELS = ("rh", "gh", "rh_gh")


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _top_sets(scores: torch.Tensor, k: int) -> list[set[int]]:
    """Top-k of each row, the diagonal (the query itself) excluded."""
    s = scores.clone()
    s.fill_diagonal_(float("-inf"))
    idx = torch.topk(s, k, dim=1).indices
    return [set(row) for row in idx.tolist()]


def _overlap(a: list[set[int]], b: list[set[int]], k: int) -> float:
    return float(np.mean([len(x & y) / k for x, y in zip(a, b, strict=True)]))


def dims_label(dims: tuple[int, int, int]) -> str:
    return "x".join(str(d) for d in dims)


@torch.no_grad()
def sketch_fidelity(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig | None = None,
                    options: ScoreOptions | None = None, n_seeds: int = 5,
                    dims: Sequence[tuple[int, int, int]] | None = None, top_k: Sequence[int] = (1, 5, 10),
                    sketches: SketchSet | None = None, hidden_mean: torch.Tensor | None = None,
                    batch_size: int = 8) -> DiagnosticResult:
    """Correlation of sketched vs exact channel similarities, and top-k stability across sketch seeds.

    Seeds are config.seed + 1000 * i for i < n_seeds (`sketches`, e.g. an index's, replaces the first one at the
    configuration's dims). `dims` defaults to the configuration's (K_r, K_h, K_g). Cost: one forward pass per batch,
    N (N + 1) / 2 sparse exact inner products; keep N to a few dozen samples.

    Tables:
        correlation: one row per (dims, seed, channel) -- dims, k_r, k_h, k_g, seed, channel, pearson, spearman,
            n_pairs.
        pairs: every pair i < j at the configuration's dims and seed -- i, j, and per channel `<ch>_exact`,
            `<ch>_sketch`.
        topk_stability: one row per (dims, channel, k) -- overlap_across_seeds, overlap_with_exact (means).
    Summary: at the configuration's dims, the mean Pearson / Spearman over seeds per channel and the top-k overlaps.
    """
    config = config or RiseConfig()
    options = options or ScoreOptions()
    _, encoded = encode_samples(lm, samples, config)
    n = len(encoded)
    if n < 2:
        raise InputDataError("sketch fidelity needs at least two samples with counted tokens")
    if config.center_hidden and hidden_mean is None:
        extractor = RiseExtractor(lm, config)
        hidden_mean = extractor.fit_hidden_mean(list(samples))
    base_dims = (config.k_r, config.k_h, config.k_g)
    all_dims = list(dict.fromkeys([tuple(int(x) for x in d) for d in (dims or [base_dims])]))
    primary = base_dims if base_dims in all_dims else all_dims[0]
    seeds = [config.seed + 1000 * i for i in range(max(1, n_seeds))]
    variants: list[tuple[tuple[int, int, int], int, SketchSet]] = []
    for d in all_dims:
        for s in seeds:
            if sketches is not None and d == base_dims and s == config.seed:
                sk = sketches
            else:
                sk = SketchSet.from_seed(lm.vocab_size, lm.hidden_size, *d, s, config.composition)
            variants.append((d, s, sk.to(lm.device)))
    weight = lm.readout_weight.detach()
    factors = []
    feats: list[list[SampleFeatures]] = [[] for _ in variants]
    for sl in batches(n, batch_size):
        ro = readout_forward(lm, encoded[sl], config)
        factors.extend(exact_factors(ro, weight, config, hidden_mean))
        for v, (_, _, sk) in enumerate(variants):
            feats[v].append(aggregate(ro, sketch_readout(ro, weight, config, sk, hidden_mean)))
    exact = normalised_scores(*exact_grams(factors), options)
    iu = torch.triu_indices(n, n, offset=1)
    ks = sorted({min(int(k), n - 1) for k in top_k if k >= 1})
    corr_rows, pair_df, stab_rows = [], None, []
    sketched_by_variant = []
    for (d, s, _), parts in zip(variants, feats, strict=True):
        f = SampleFeatures.concat(parts)
        rh, gh = f.rh.double(), f.gh.double()
        sk_scores = normalised_scores(rh @ rh.T, gh @ gh.T, options)
        sketched_by_variant.append(sk_scores)
        for ch in CHANNELS:
            a = exact[ch][iu[0], iu[1]].numpy()
            b = sk_scores[ch][iu[0], iu[1]].numpy()
            corr_rows.append({"dims": dims_label(d), "k_r": d[0], "k_h": d[1], "k_g": d[2], "seed": s,
                              "channel": ch, "pearson": _pearson(a, b), "spearman": spearman(a, b),
                              "n_pairs": int(a.size)})
        if d == primary and s == config.seed:
            pair_df = pd.DataFrame({"i": iu[0].numpy(), "j": iu[1].numpy()})
            for ch in CHANNELS:
                pair_df[f"{ch}_exact"] = exact[ch][iu[0], iu[1]].numpy()
                pair_df[f"{ch}_sketch"] = sk_scores[ch][iu[0], iu[1]].numpy()
    for d in all_dims:
        scored = [sc for (dv, _, _), sc in zip(variants, sketched_by_variant, strict=True) if dv == d]
        for ch in CHANNELS:
            for k in ks:
                exact_top = _top_sets(exact[ch], k)
                tops = [_top_sets(sc[ch], k) for sc in scored]
                across = [_overlap(a, b, k) for a, b in itertools.combinations(tops, 2)]
                stab_rows.append({"dims": dims_label(d), "channel": ch, "k": k,
                                  "overlap_across_seeds": float(np.mean(across)) if across else float("nan"),
                                  "overlap_with_exact": float(np.mean([_overlap(t, exact_top, k) for t in tops])),
                                  "n_seeds": len(tops), "n_queries": n})
    corr = pd.DataFrame(corr_rows)
    stab = pd.DataFrame(stab_rows)
    base = corr[corr["dims"] == dims_label(primary)].groupby("channel")[["pearson", "spearman"]].mean()
    summary: dict = {"n_samples": n, "n_pairs": int(iu.shape[1]), "dims": dims_label(primary), "n_seeds": len(seeds)}
    for ch in CHANNELS:
        summary[f"{ch}_pearson"] = jsonable(float(base.loc[ch, "pearson"]))
        summary[f"{ch}_spearman"] = jsonable(float(base.loc[ch, "spearman"]))
    base_stab = stab[(stab["dims"] == dims_label(primary)) & (stab["channel"] == "rh_gh")]
    for _, row in base_stab.iterrows():
        summary[f"rh_gh_top{int(row['k'])}_overlap_across_seeds"] = jsonable(row["overlap_across_seeds"])
        summary[f"rh_gh_top{int(row['k'])}_overlap_with_exact"] = jsonable(row["overlap_with_exact"])
    params = {"n_seeds": len(seeds), "seeds": seeds, "dims": [list(d) for d in all_dims], "top_k": ks,
              "config": config.fingerprint(), "lambda_rh": options.lambda_rh, "lambda_gh": options.lambda_gh,
              "sample_norm": options.sample_norm}
    return DiagnosticResult("fidelity", {"correlation": corr, "pairs": pair_df, "topk_stability": stab}, summary,
                            params)
