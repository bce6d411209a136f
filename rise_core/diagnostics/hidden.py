"""Hidden-state discriminativeness per layer: the variance of pairwise cosines of token hidden states (the U-shape).

Tokens are the counted positions of the samples (the h_t RISE uses), of which up to `n_tokens` are drawn with a
seeded generator; the same tokens are used at every layer. Layer l is the model's `hidden_states[l]`: 0 is the
embedding output, l the output of block l, and the last one the final hidden state after the final norm (what the LM
head reads). A low variance means every pair of tokens looks alike (collapse); the paper finds it drops through the
middle layers and recovers at the final one.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ..config import RiseConfig
from ..ingest import jsonable
from ..models import LoadedModel
from ..samples import Sample, collate
from ._common import DiagnosticResult, batches, encode_samples


def pairwise_cosine_stats(x: torch.Tensor) -> tuple[float, float]:
    """Variance and mean of the cosines of all pairs i < j of the rows of x (N, d)."""
    n = x.shape[0]
    if n < 2:
        return float("nan"), float("nan")
    u = x.double()
    u = u / u.norm(dim=1, keepdim=True).clamp_min(1e-300)
    iu = torch.triu_indices(n, n, offset=1)
    cos = (u @ u.T)[iu[0], iu[1]]
    return float(cos.var(unbiased=False)), float(cos.mean())


@torch.no_grad()
def discriminativeness(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig | None = None,
                       n_tokens: int = 1000, seed: int = 0, batch_size: int = 8) -> DiagnosticResult:
    """Variance of pairwise cosine similarities of token hidden states at every layer.

    Tables:
        layers: layer (0 = embeddings ... L = final), depth (layer / L), name, cos_var (the discriminativeness),
            cos_mean, n_tokens.
    Summary: n_tokens, n_layers, final_var, min_var, min_layer, embedding_var, final_over_min (recovery ratio),
        u_shape (the minimum is at an inner layer and the final layer is above it).
    """
    config = config or RiseConfig()
    _, encoded = encode_samples(lm, samples, config)
    where = [(i, t) for i, e in enumerate(encoded) for t, c in enumerate(e.counted) if c]
    gen = torch.Generator().manual_seed(seed)
    if len(where) > n_tokens:
        pick = torch.randperm(len(where), generator=gen)[:n_tokens].sort().values.tolist()
        where = [where[k] for k in pick]
    by_sample: dict[int, list[int]] = {}
    for i, t in where:
        by_sample.setdefault(i, []).append(t)
    chosen = sorted(by_sample)
    per_layer: list[list[torch.Tensor]] | None = None
    for sl in batches(len(chosen), batch_size):
        idx = chosen[sl]
        batch = collate([encoded[i] for i in idx], lm.pad_id)
        out = lm.model.base_model(input_ids=batch.input_ids.to(lm.device),
                                  attention_mask=batch.attention_mask.to(lm.device),
                                  output_hidden_states=True, use_cache=False)
        rows = torch.tensor([b for b, i in enumerate(idx) for _ in by_sample[i]], device=lm.device)
        cols = torch.tensor([t for i in idx for t in by_sample[i]], device=lm.device)
        states = out.hidden_states
        if per_layer is None:
            per_layer = [[] for _ in states]
        for layer, hs in enumerate(states):
            per_layer[layer].append(hs[rows, cols].double().cpu())
    assert per_layer is not None
    n_layers = len(per_layer) - 1
    records = []
    for layer, parts in enumerate(per_layer):
        x = torch.cat(parts)
        var, mean = pairwise_cosine_stats(x)
        name = "embeddings" if layer == 0 else (f"block {layer - 1} + final norm" if layer == n_layers
                                                else f"block {layer - 1}")
        records.append({"layer": layer, "depth": layer / max(n_layers, 1), "name": name, "cos_var": var,
                        "cos_mean": mean, "n_tokens": int(x.shape[0])})
    table = pd.DataFrame(records)
    var = table["cos_var"]
    min_layer = int(table.loc[var.idxmin(), "layer"])
    summary = {
        "n_tokens": int(table["n_tokens"].iloc[0]),
        "n_layers": n_layers,
        "final_var": float(var.iloc[-1]),
        "min_var": float(var.min()),
        "min_layer": min_layer,
        "embedding_var": float(var.iloc[0]),
        "final_over_min": float(var.iloc[-1] / var.min()) if var.min() > 0 else float("nan"),
        "u_shape": bool(0 < min_layer < n_layers and var.iloc[-1] > var.min()),
    }
    return DiagnosticResult("discriminativeness", {"layers": table}, {k: jsonable(v) for k, v in summary.items()},
                            {"n_tokens": n_tokens, "seed": seed, "counted_positions": config.counted_positions,
                             "seq_len": config.seq_len})
