"""Shared pieces of the diagnostics: the result type, sample encoding, and exact (unsketched) RISE channel factors.

The exact factors are what RISE sketches, before sketching: per counted position the sparse residual r_t on its
support (candidate ids + values), the hidden state h_t and g_t = W^T r_t, after the same centring and per-token
normalisation the configuration applies to the sketches. Their per-sample sums phi_RH = sum_t r_t (x) h_t (V x d) and
phi_GH = sum_t g_t (x) h_t (d x d) are never materialised for RH: inner products use
<phi_a, phi_b> = sum_{t, s} (r_t . r_s)(h_t . h_s) with sparse residual dot products.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch

from ..config import RiseConfig, ScoreOptions
from ..engine import Readout, readout_factors, rendering_for
from ..errors import InputDataError
from ..models import LoadedModel
from ..samples import EncodedSample, Sample, encode_sample
from ..units import one_line

TINY = 1e-300


@dataclass
class DiagnosticResult:
    """Output of one diagnostic: named tables, a flat summary of headline numbers, and the parameters used.

    `result["table"]` is shorthand for `result.tables["table"]`."""

    name: str
    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, table: str) -> pd.DataFrame:
        try:
            return self.tables[table]
        except KeyError:
            raise KeyError(f"diagnostic {self.name!r} has no table {table!r}; tables: {sorted(self.tables)}") from None


def coerce_samples(samples: Sequence[Sample | str | dict]) -> list[Sample]:
    if len(samples) == 0:
        raise InputDataError("the diagnostics need at least one sample")
    return [Sample.coerce(s) for s in samples]


def encode_samples(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig,
                   require_counted: bool = True) -> tuple[list[Sample], list[EncodedSample]]:
    """Encode samples under the config's seq_len / counted positions; drop those with no counted position."""
    kept_s, kept_e = [], []
    rendering = rendering_for(lm, config)  # as the index renders pairs and conversations
    for s in coerce_samples(samples):
        enc = encode_sample(s, lm.tokenizer, config.seq_len, config.counted_positions, rendering)
        if enc.n_counted > 0 or not require_counted:
            kept_s.append(s)
            kept_e.append(enc)
    if not kept_e:
        raise InputDataError("no sample has a counted (predicted) token; give longer texts or completions")
    return kept_s, kept_e


def batches(n: int, size: int) -> list[slice]:
    return [slice(i, min(n, i + size)) for i in range(0, n, max(1, size))]


def sample_label(sample: Sample, width: int = 80) -> str:
    """One-line display text of a sample."""
    return one_line(sample.full_text, width)


@dataclass
class ExactFactors:
    """Unsketched RISE factors of one sample's counted positions (float64, CPU)."""

    ids: torch.Tensor  # (T, C) candidate token ids
    r: torch.Tensor  # (T, C) sparse residual values on the support (0 off the support)
    h: torch.Tensor  # (T, d) hidden state (centred if configured)
    g: torch.Tensor  # (T, d) g_t = W^T r_t

    @property
    def n_positions(self) -> int:
        return int(self.h.shape[0])

    def gh_matrix(self) -> torch.Tensor:
        """phi_GH = sum_t g_t (x) h_t as a (d, d) matrix."""
        return self.g.T @ self.h


def _unit_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(TINY)


def exact_factors(readout: Readout, weight: torch.Tensor, config: RiseConfig,
                  hidden_mean: torch.Tensor | None = None) -> list[ExactFactors]:
    """Per-sample exact factors from a readout, with the config's support rule, centring and token normalisation."""
    _, r_vals, h, g = readout_factors(readout, weight, config, hidden_mean, chunk=64)
    r_vals, h, g = r_vals.double().cpu(), h.double().cpu(), g.double().cpu()
    if config.token_norm:
        r_vals, h, g = _unit_rows(r_vals), _unit_rows(h), _unit_rows(g)
    ids = readout.cand_idx.cpu()
    sample_index = readout.sample_index.cpu()
    out = []
    for b in range(readout.n_samples):
        rows = (sample_index == b).nonzero(as_tuple=True)[0]
        out.append(ExactFactors(ids=ids[rows], r=r_vals[rows], h=h[rows], g=g[rows]))
    return out


def rh_inner(a: ExactFactors, b: ExactFactors) -> float:
    """<phi_RH(a), phi_RH(b)>_F = sum_{t, s} (r_t . r_s)(h_t . h_s), with sparse residual dot products."""
    if a.n_positions == 0 or b.n_positions == 0:
        return 0.0
    ta, ca = (a.r != 0).nonzero(as_tuple=True)
    tb, cb = (b.r != 0).nonzero(as_tuple=True)
    ids_a, ids_b = a.ids[ta, ca], b.ids[tb, cb]
    uniq, inverse = torch.unique(torch.cat([ids_a, ids_b]), return_inverse=True)
    n_a = ids_a.numel()
    # residuals of a as a sparse (T_a, U) matrix, of b dense over the shared compact vocabulary U
    ra = torch.sparse_coo_tensor(torch.stack([ta, inverse[:n_a]]), a.r[ta, ca], (a.n_positions, uniq.numel()),
                                 check_invariants=False)
    rb = torch.zeros((b.n_positions, uniq.numel()), dtype=torch.float64)
    rb.index_put_((tb, inverse[n_a:]), b.r[tb, cb], accumulate=True)
    r_gram = torch.sparse.mm(ra.coalesce(), rb.T.contiguous())  # (T_a, T_b)
    return float((r_gram * (a.h @ b.h.T)).sum())


def exact_grams(factors: Sequence[ExactFactors]) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, N) exact Gram matrices of phi_RH and phi_GH over samples (float64)."""
    n = len(factors)
    g_rh = torch.zeros((n, n), dtype=torch.float64)
    for i in range(n):
        for j in range(i, n):
            g_rh[i, j] = g_rh[j, i] = rh_inner(factors[i], factors[j])
    return g_rh, pairwise_gram(torch.stack([f.gh_matrix().reshape(-1) for f in factors]))


def pairwise_gram(x: torch.Tensor) -> torch.Tensor:
    """x x^T by one dot product per pair, so identical rows give bit-identical entries (a blocked matmul need not)."""
    x = x.double()
    n = x.shape[0]
    out = torch.zeros((n, n), dtype=torch.float64)
    for i in range(n):
        for j in range(i, n):
            out[i, j] = out[j, i] = torch.dot(x[i], x[j])
    return out


def normalised_scores(g_rh: torch.Tensor, g_gh: torch.Tensor, options: ScoreOptions
                      ) -> dict[str, torch.Tensor]:
    """Channel scores from raw Gram matrices under `options.sample_norm`, as `scoring.score_each_query` computes them.

    Returns {"rh": ..., "gh": ..., "rh_gh": lambda_rh * rh + lambda_gh * gh}; rh and gh are unweighted."""
    n_rh = g_rh.diagonal().clamp_min(0).sqrt()
    n_gh = g_gh.diagonal().clamp_min(0).sqrt()
    if options.sample_norm == "channel":
        d_rh, d_gh = n_rh.clamp_min(TINY), n_gh.clamp_min(TINY)
    elif options.sample_norm == "joint":
        d_rh = d_gh = (n_rh**2 + n_gh**2).sqrt().clamp_min(TINY)
    else:
        d_rh = d_gh = torch.ones_like(n_rh)
    rh = g_rh / (d_rh[:, None] * d_rh[None, :])
    gh = g_gh / (d_gh[:, None] * d_gh[None, :])
    return {"rh": rh, "gh": gh, "rh_gh": options.lambda_rh * rh + options.lambda_gh * gh}
