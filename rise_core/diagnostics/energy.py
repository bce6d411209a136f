"""Layer gradient energy (the paper's Observation 1): where the gradient of the next-token loss lives.

For each sample x, one backward pass of the summed next-token loss over its counted positions (at tau = 1: the loss
the model is trained on, whatever the RISE temperature) gives G_c(x) = ||grad_c loss(x)||_F^2 for every component c:
the input embedding, each transformer block, the remaining base-model parameters (the final norm), and the LM head.
Shares E_c(x) = G_c(x) / sum_c' G_c'(x) are computed per sample and averaged over samples (the paper's E_c). They do
not depend on whether the loss is summed or averaged over positions (a common factor).

Tied embeddings (SmolLM2, GPT-2): the one shared matrix gets two gradients, from its use as the readout
(exactly sum_t r_t h_t^T, what RISE factorises) and from its use as the input embedding. The head is evaluated on a
detached alias of the matrix, so autograd returns the two uses separately; they are reported as two components
("lm_head (readout)" and "embedding (input)"). Their energies do not add up to the shared matrix's energy (there is a
cross term), which is reported in the summary.

Head-to-average ratio: mean over samples of G_head divided by the mean over blocks of the per-block mean energy
(the paper's E[G_head] / (1/L sum_l E[G_l])).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from ..config import RiseConfig
from ..ingest import jsonable
from ..models import LoadedModel
from ..samples import Sample
from ._common import DiagnosticResult, encode_samples


@dataclass
class Component:
    """A named group of parameters."""

    name: str
    kind: str  # embedding | block | final_norm | other | head
    params: list[torch.nn.Parameter]
    layer: int | None = None

    @property
    def n_params(self) -> int:
        return sum(p.numel() for p in self.params)


def _block_list(base: torch.nn.Module) -> torch.nn.ModuleList | None:
    """The transformer blocks: the ModuleList under the base model holding the most parameters."""
    best, best_n = None, 0
    for module in base.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 0:
            n = sum(p.numel() for p in module.parameters())
            if n > best_n:
                best, best_n = module, n
    return best


def model_components(model: torch.nn.Module) -> tuple[list[Component], bool]:
    """Parameter groups of a causal LM in forward order, and whether the head is tied to the input embedding.

    For a tied model the shared matrix appears once, as the embedding; the head's readout use is handled apart."""
    emb = model.get_input_embeddings()
    head = model.get_output_embeddings()
    tied = head.weight is emb.weight or head.weight.data_ptr() == emb.weight.data_ptr()
    base = model.base_model
    seen: set[int] = set()

    def take(params) -> list[torch.nn.Parameter]:
        out = []
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        return out

    comps = [Component("embedding (input)" if tied else "embedding", "embedding", take(emb.parameters()))]
    blocks = _block_list(base)
    if blocks is not None:
        for i, block in enumerate(blocks):
            comps.append(Component(f"block {i}", "block", take(block.parameters()), layer=i))
    head_params = [p for p in head.parameters() if not (tied and p is head.weight)]
    head_ids = {id(p) for p in head.parameters()}
    # remaining base-model parameters, grouped by the base model's top-level child (the final norm, mostly)
    for child_name, child in base.named_children():
        params = take(p for p in child.parameters() if id(p) not in head_ids)
        if params:
            kind = "final_norm" if "norm" in child_name.lower() or child_name.startswith("ln") else "other"
            comps.append(Component(child_name, kind, params))
    for name, p in model.named_parameters():
        if id(p) not in seen and id(p) not in head_ids:
            comps.append(Component(name, "other", take([p])))
    head_name = "lm_head (readout)" if tied else "lm_head"
    comps.append(Component(head_name, "head", take(head_params)))
    return comps, tied


def squared_norm(g: torch.Tensor) -> float:
    """||g||_F^2 accumulated in float64 (row norms in the tensor's own dtype first: fast and accurate enough)."""
    if g.dtype == torch.float64:
        return float(g.pow(2).sum())
    rows = g.reshape(g.shape[0], -1) if g.dim() > 1 else g.reshape(1, -1)
    return float(torch.linalg.vector_norm(rows.float(), dim=1).double().pow(2).sum())


def _per_sample_energies(lm: LoadedModel, ids: list[int], counted: list[bool], comps: list[Component],
                         tied: bool) -> tuple[list[float], float]:
    """Energies ||grad_c||^2 of every component for one sample, and (tied) the shared matrix's total energy."""
    model = lm.model
    head = model.get_output_embeddings()
    dev = lm.device
    input_ids = torch.tensor([ids], device=dev)
    mask = torch.ones_like(input_ids)
    positions = torch.tensor(counted, device=dev).nonzero(as_tuple=True)[0]
    targets = input_ids[0, 1:][positions]
    with torch.enable_grad():
        hidden = lm.final_hidden(input_ids, mask)[0, positions]  # (T_c, d)
        w_read = head.weight.detach().requires_grad_(True) if tied else head.weight
        logits = hidden @ w_read.T
        if getattr(head, "bias", None) is not None:
            logits = logits + head.bias
        loss = torch.nn.functional.cross_entropy(logits.float() if logits.dtype != torch.float64 else logits,
                                                 targets, reduction="sum")
        params = [p for c in comps for p in c.params]
        extra = [w_read] if tied else []
        grads = torch.autograd.grad(loss, params + extra, allow_unused=True)
    energies, k = [], 0
    for c in comps:
        e = 0.0
        for _ in c.params:
            g = grads[k]
            k += 1
            if g is not None:
                e += squared_norm(g)
        energies.append(e)
    shared = 0.0
    if tied:
        shared_pos = next(i for i, p in enumerate(params) if p.data_ptr() == head.weight.data_ptr())
        emb_grad, read_grad = grads[shared_pos], grads[-1]
        shared = squared_norm(read_grad if emb_grad is None else emb_grad + read_grad)
        energies[-1] += squared_norm(read_grad)
    return energies, shared


def layer_energy(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig | None = None,
                 progress: Callable[[int, int], None] | None = None) -> DiagnosticResult:
    """Per-component gradient-energy shares from one backward pass per sample.

    Tables:
        components: one row per component in forward order -- order, component, kind (embedding | block |
            final_norm | other | head), layer (block index or empty), n_params, energy_mean (mean ||grad||^2 over
            samples), share_mean / share_std (of the per-sample shares; share_mean sums to 1), share_of_mean_energy
            (energy_mean / its sum).
        per_sample: long format -- sample, component, kind, energy, share.
    Summary: head_share, head_to_avg_ratio, n_blocks, tied, embedding_share, max_block_share, max_block, n_samples;
        for tied heads also tied_shared_energy_mean and tied_cross_term_share (the part of the shared matrix's energy
        that belongs to neither use alone: 2 <readout grad, input grad> / ||total||^2).
    """
    config = config or RiseConfig()
    kept, encoded = encode_samples(lm, samples, config)
    comps, tied = model_components(lm.model)
    rows, shared_energies = [], []
    for n, enc in enumerate(encoded):
        energies, shared = _per_sample_energies(lm, enc.input_ids, enc.counted, comps, tied)
        total = sum(energies)
        for order, (c, e) in enumerate(zip(comps, energies, strict=True)):
            rows.append({"sample": n, "order": order, "component": c.name, "kind": c.kind, "energy": e,
                         "share": e / total if total > 0 else 0.0})
        shared_energies.append((shared, energies[0], energies[-1]))
        if progress is not None:
            progress(n + 1, len(encoded))
    per_sample = pd.DataFrame(rows)
    grouped = per_sample.groupby("order", sort=True)
    comp_df = pd.DataFrame({
        "order": range(len(comps)),
        "component": [c.name for c in comps],
        "kind": [c.kind for c in comps],
        "layer": pd.array([c.layer for c in comps], dtype="Int64"),
        "n_params": [c.n_params for c in comps],
        "energy_mean": grouped["energy"].mean().to_numpy(),
        "share_mean": grouped["share"].mean().to_numpy(),
        "share_std": grouped["share"].std(ddof=0).to_numpy(),
    })
    comp_df["share_of_mean_energy"] = comp_df["energy_mean"] / comp_df["energy_mean"].sum()
    blocks = comp_df[comp_df["kind"] == "block"]
    head = comp_df[comp_df["kind"] == "head"].iloc[0]
    emb = comp_df[comp_df["kind"] == "embedding"].iloc[0]
    block_avg = float(blocks["energy_mean"].mean()) if len(blocks) else float("nan")
    summary = {
        "n_samples": len(encoded),
        "tied": tied,
        "n_blocks": len(blocks),
        "head_share": float(head["share_mean"]),
        "head_to_avg_ratio": float(head["energy_mean"]) / block_avg if block_avg > 0 else float("nan"),
        "embedding_share": float(emb["share_mean"]),
        "max_block_share": float(blocks["share_mean"].max()) if len(blocks) else float("nan"),
        "max_block": int(blocks.loc[blocks["share_mean"].idxmax(), "layer"]) if len(blocks) else None,
    }
    if tied:
        shared = torch.tensor(shared_energies, dtype=torch.float64)
        cross = shared[:, 0] - shared[:, 1] - shared[:, 2]
        summary["tied_shared_energy_mean"] = float(shared[:, 0].mean())
        summary["tied_cross_term_share"] = float((cross / shared[:, 0].clamp_min(1e-300)).mean())
    summary = {k: jsonable(v) for k, v in summary.items()}
    return DiagnosticResult("energy", {"components": comp_df, "per_sample": per_sample}, summary,
                            {"n_samples": len(encoded), "counted_positions": config.counted_positions,
                             "seq_len": config.seq_len})
