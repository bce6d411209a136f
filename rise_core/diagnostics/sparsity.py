"""Sparse active tokens (the paper's Observation 3): how much of the residual a small support keeps.

For a counted position with full softmax p = softmax(z / tau), target y, residual r = p - onehot(y) and a support S
containing y, per position:
    mass    = sum_{v in S} p_v                                  probability mass kept
    e_full  = sum_{v in S} r_v^2 / ||r||^2                      full residual energy kept
    e_gt    = (1 - p_y)^2 / ||r||^2                              share of ||r||^2 on the target coordinate
    e_tail  = sum_{v in S, v != y} p_v^2 / sum_{v != y} p_v^2   non-target tail energy kept
All of these use the FULL-vocabulary p restricted to S, not the renormalised sparse distribution. RISE itself uses
the renormalised p_tilde (softmax over S): `renorm_energy` = ||r_tilde||^2 / ||r||^2 reports that residual's energy
against the full one, and the GH fidelity compares g_tilde = W^T r_tilde (what RISE sketches) with the dense
g = W^T r at the same tau: `gh_cos` (cosine) and `gh_rel_error` (||g_tilde - g|| / ||g||); `gh_cos_tau1` compares
it with the dense g of the training loss (tau = 1) instead, which is what a temperature other than 1 is judged
against when the question is fidelity to the true LM-head gradient. Every metric is averaged over positions.

Supports: the adaptive rule of the configuration (`engine.support_mask` on the engine's candidates, at the
configuration's tau), and the paper's fixed-control protocol: S = TopK(z / tau, K) with y added (|S| = K or K + 1),
swept over K at tau = 1 and over tau at fixed K. Dense references come from the full logits, formed in chunks of
positions so memory stays O(chunk x V).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ..config import RiseConfig
from ..engine import compute_dtype, project_residual, readout_forward, support_mask
from ..ingest import jsonable
from ..models import LoadedModel
from ..samples import Sample
from ._common import DiagnosticResult, batches, encode_samples

DEFAULT_K_VALUES = (8, 16, 32, 64, 128, 256)
DEFAULT_TAU_VALUES = (0.4, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0)
METRICS = ("support_size", "mass", "e_full", "e_gt", "e_tail", "renorm_energy", "gh_cos", "gh_rel_error", "gh_cos_tau1")
POSITION_CHUNK = 128  # positions per dense-logits chunk (chunk x V doubles)


class _Dense:
    """Full-vocabulary quantities of a chunk of positions at one temperature (float64)."""

    def __init__(self, z: torch.Tensor, y: torch.Tensor, tau: float, weight: torch.Tensor) -> None:
        self.zt = z / tau
        self.lse = torch.logsumexp(self.zt, dim=1)
        p = torch.exp(self.zt - self.lse[:, None])
        rows = torch.arange(z.shape[0], device=z.device)
        self.p_y = p[rows, y]
        p_not_y = p.clone()
        p_not_y[rows, y] = 0.0
        self.one_minus_py = p_not_y.sum(dim=1)  # 1 - p_y without cancellation
        self.tail_sq = p_not_y.pow(2).sum(dim=1)  # sum_{v != y} p_v^2
        self.r_sq = self.one_minus_py**2 + self.tail_sq  # ||r||^2
        p_not_y[rows, y] = -self.one_minus_py  # now the residual r = p - onehot(y)
        self.g = p_not_y.to(weight.dtype) @ weight  # dense g = W^T r, (n, d)
        self.y = y


def _cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum(dim=1) / (a.norm(dim=1) * b.norm(dim=1)).clamp_min(1e-300)


def _support_metrics(dense: _Dense, idx: torch.Tensor, mask: torch.Tensor, weight: torch.Tensor,
                     g_tau1: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-position metrics of a support given as candidate ids (n, m) and a mask (n, m); y must be in it."""
    z_s = dense.zt.gather(1, idx)
    p_s = torch.exp(z_s - dense.lse[:, None]) * mask
    is_y = (idx == dense.y[:, None]) & mask
    tail_kept = (p_s.pow(2) * ~is_y).sum(dim=1)
    gt = dense.one_minus_py**2
    p_tilde = torch.softmax(z_s.masked_fill(~mask, float("-inf")), dim=1)
    r_tilde = p_tilde - is_y.to(p_tilde.dtype)
    g_tilde = project_residual(weight, idx, r_tilde.to(weight.dtype), mask)  # sum_{v in S} r_tilde(v) W_v
    g_dense = dense.g.double()
    g_tilde = g_tilde.double()
    g_norm = g_dense.norm(dim=1).clamp_min(1e-300)
    return {
        "support_size": mask.sum(dim=1).double(),
        "mass": p_s.sum(dim=1),
        "e_full": (tail_kept + gt) / dense.r_sq,
        "e_gt": gt / dense.r_sq,
        "e_tail": tail_kept / dense.tail_sq.clamp_min(1e-300),
        "renorm_energy": (r_tilde * mask).pow(2).sum(dim=1) / dense.r_sq,
        "gh_cos": _cosine(g_tilde, g_dense),
        "gh_rel_error": (g_tilde - g_dense).norm(dim=1) / g_norm,
        "gh_cos_tau1": _cosine(g_tilde, g_tau1.double()),
    }


def _topk_support(top: torch.Tensor, y: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """TopK with y appended when it is not already among the K (|S| = K or K + 1)."""
    head = top[:, :k]
    missing = ~(head == y[:, None]).any(dim=1)
    idx = torch.cat([head, y[:, None]], dim=1)
    mask = torch.ones_like(idx, dtype=torch.bool)
    mask[:, -1] = missing
    return idx, mask


def _mean_row(values: dict[str, list[torch.Tensor]]) -> dict[str, float]:
    return {m: float(torch.cat(values[m]).mean()) for m in METRICS}


@torch.no_grad()
def sparsity(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig | None = None,
             k_values: Sequence[int] = DEFAULT_K_VALUES, tau_values: Sequence[float] = DEFAULT_TAU_VALUES,
             tau_sweep_k: int = 128, batch_size: int = 8) -> DiagnosticResult:
    """Probability mass, residual energy and GH fidelity kept by sparse supports, with sweeps over K and tau.

    Tables (fractions in [0, 1]; `support_frac` = mean |S| / V):
        adaptive: one row for the configuration's adaptive rule -- n_positions, the METRICS means, support_median,
            support_p90, support_max, support_frac, at_cap_frac (|S| = K_max candidates), at_min_frac
            (|S| <= min_top_l, i.e. the minimum applied), gh_cos_p10.
        k_sweep: one row per K (tau = 1): k, tau, the METRICS means, support_frac, gh_cos_p10.
        tau_sweep: one row per tau (K = tau_sweep_k): same columns.
        support_sizes: histogram of the adaptive support sizes -- support_size, count, fraction.
        positions: per counted position under the adaptive rule -- sample (index among the samples that have a
            counted position), position, p_target, support_size, mass, e_full, e_tail, gh_cos.
    Summary: the adaptive means (prefixed adaptive_) and the K = 128 (or nearest), tau = 1 row (prefixed k128_).
    """
    config = config or RiseConfig()
    _, encoded = encode_samples(lm, samples, config)
    vocab = lm.vocab_size
    k_values = sorted({min(int(k), vocab) for k in k_values})
    tau_values = sorted({float(t) for t in tau_values})
    tau_k = min(int(tau_sweep_k), vocab)
    k_top = max([*k_values, tau_k])
    cdt = compute_dtype(lm)
    weight = lm.readout_weight.detach().to(cdt)
    bias = lm.readout_bias
    adaptive: dict[str, list[torch.Tensor]] = {m: [] for m in METRICS}
    k_acc = {k: {m: [] for m in METRICS} for k in k_values}
    t_acc = {t: {m: [] for m in METRICS} for t in tau_values}
    pos_rows: list[pd.DataFrame] = []
    at_cap, at_min = [], []
    for bsl in batches(len(encoded), batch_size):
        ro = readout_forward(lm, encoded[bsl], config)
        keep = support_mask(ro.cand_logit, ro.target_slot, config.rho_cum, config.min_top_l)
        for sl in batches(ro.hidden.shape[0], POSITION_CHUNK):
            z = ro.hidden[sl].to(cdt) @ weight.T
            if bias is not None:
                z = z + bias.to(cdt)
            z = z.double()
            y = ro.targets[sl]
            top = torch.topk(z, k_top, dim=1).indices  # the order of z / tau for every tau > 0
            topk_supports = {k: _topk_support(top, y, k) for k in {*k_values, tau_k}}
            # one temperature at a time (each holds a few chunk x V float64 buffers), tau = 1 first: its dense g is
            # the reference of `gh_cos_tau1`
            g_tau1 = None
            for tau in [1.0, *sorted({config.tau, *tau_values} - {1.0})]:
                dense = _Dense(z, y, tau, weight)
                if g_tau1 is None:
                    g_tau1 = dense.g
                if tau == config.tau:
                    met = _support_metrics(dense, ro.cand_idx[sl], keep[sl], weight, g_tau1)
                    for m in METRICS:
                        adaptive[m].append(met[m].cpu())
                    n_keep = keep[sl].sum(dim=1)
                    at_cap.append((n_keep >= ro.cand_idx.shape[1]).cpu())
                    at_min.append((n_keep <= config.min_top_l).cpu())
                    pos_rows.append(pd.DataFrame({
                        "sample": (ro.sample_index[sl].cpu() + bsl.start).numpy(),
                        "position": ro.position[sl].cpu().numpy(),
                        "p_target": dense.p_y.cpu().numpy(),
                        **{m: met[m].cpu().numpy() for m in ("support_size", "mass", "e_full", "e_tail", "gh_cos")},
                    }))
                if tau == 1.0:
                    for k in k_values:
                        met = _support_metrics(dense, *topk_supports[k], weight, g_tau1)
                        for m in METRICS:
                            k_acc[k][m].append(met[m].cpu())
                if tau in t_acc:
                    met = _support_metrics(dense, *topk_supports[tau_k], weight, g_tau1)
                    for m in METRICS:
                        t_acc[tau][m].append(met[m].cpu())
                del dense
    sizes = torch.cat(adaptive["support_size"])
    gh_cos = torch.cat(adaptive["gh_cos"])
    adaptive_row = {"n_positions": int(sizes.numel()), **_mean_row(adaptive),
                    "support_median": float(sizes.median()), "support_p90": float(torch.quantile(sizes, 0.9)),
                    "support_max": int(sizes.max()), "support_frac": float(sizes.mean()) / vocab,
                    "at_cap_frac": float(torch.cat(at_cap).double().mean()),
                    "at_min_frac": float(torch.cat(at_min).double().mean()),
                    "gh_cos_p10": float(torch.quantile(gh_cos, 0.1)),
                    "tau": config.tau, "rho_cum": config.rho_cum, "min_top_l": config.min_top_l, "k_max": config.k_max}

    def sweep_row(acc: dict[str, list[torch.Tensor]], **keys) -> dict:
        cos = torch.cat(acc["gh_cos"])
        row = {**keys, **_mean_row(acc)}
        row["support_frac"] = row["support_size"] / vocab
        row["gh_cos_p10"] = float(torch.quantile(cos, 0.1))
        return row

    k_sweep = pd.DataFrame([sweep_row(k_acc[k], k=k, tau=1.0) for k in k_values])
    tau_sweep = pd.DataFrame([sweep_row(t_acc[t], k=tau_k, tau=t) for t in tau_values])
    values, counts = torch.unique(sizes.long(), return_counts=True)
    hist = pd.DataFrame({"support_size": values.numpy(), "count": counts.numpy(),
                         "fraction": (counts.double() / sizes.numel()).numpy()})
    summary = {f"adaptive_{k}": v for k, v in adaptive_row.items()
               if k in ("n_positions", *METRICS, "support_median", "support_frac", "at_cap_frac")}
    ref = k_sweep.iloc[(k_sweep["k"] - 128).abs().argmin()]
    summary.update({f"k128_{m}": float(ref[m]) for m in ("k", *METRICS)})
    summary = {k: jsonable(v) for k, v in summary.items()}
    return DiagnosticResult(
        "sparsity",
        {"adaptive": pd.DataFrame([adaptive_row]), "k_sweep": k_sweep, "tau_sweep": tau_sweep,
         "support_sizes": hist, "positions": pd.concat(pos_rows, ignore_index=True)},
        summary,
        {"k_values": list(k_values), "tau_values": list(tau_values), "tau_sweep_k": tau_k, "tau": config.tau,
         "rho_cum": config.rho_cum, "min_top_l": config.min_top_l, "k_max": config.k_max,
         "counted_positions": config.counted_positions, "seq_len": config.seq_len},
    )
