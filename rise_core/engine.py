"""RISE feature extraction (the paper's Algorithm 2), batched over samples and positions.

Two stages, so sweeps and diagnostics can reuse one forward pass:
1. `readout_forward`: one forward pass; for each counted position keep h_t, the top-K_max candidates of z_t/tau
   with the target forced in, and a few full-vocabulary scalars (logsumexp, sum of p^2) -- logits are formed only at
   counted positions, in chunks of positions and cache-sized vocabulary blocks (`vocab_pass`), so peak memory does
   not grow with batch x seq x V.
2. `sketch_readout`: support selection, sparse residual, g_t = W^T r_t, CountSketch and per-token normalisation;
   `aggregate` sums each sample's tokens (outer composition: one batched matmul, phi_RH[b] = R_hat_b^T H_hat_b;
   tensor composition: products of the factors' spectra, summed per sample, one inverse FFT).
   `features_from_readout` adds the HS channel: the mean final hidden state minus the pool's mean. For the tensor
   composition it takes a faster path to the same sums (`_tensor_sums`): CountSketches by scatter-add rather than
   dense matrices, positions in cache-sized chunks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .config import RiseConfig, mean_fit_rows
from .errors import InputDataError
from .models import LoadedModel, hs_layer_index
from .samples import EncodedSample, Rendering, Sample, collate, encode_sample, resolve_rendering
from .sketch import SketchSet, tensor_product
from .vocab_pass import vocab_pass

logger = logging.getLogger(__name__)

LOGITS_CHUNK = 512  # positions per logits chunk: 512 x V floats at a time
TENSOR_CHUNK = 256  # positions per step of the tensor composition's sums: (256, D) temporaries, cache-resident


@dataclass
class Readout:
    """Forward-pass quantities at the N counted positions of a batch of B samples (flattened)."""

    sample_index: torch.Tensor  # (N,) which sample each position belongs to
    position: torch.Tensor  # (N,) position t within its sample (predicts token t + 1)
    hidden: torch.Tensor  # (N, d) final hidden state h_t
    targets: torch.Tensor  # (N,) y_t
    cand_idx: torch.Tensor  # (N, C) candidate token ids, by descending logit; y_t always present
    cand_logit: torch.Tensor  # (N, C) z/tau at the candidates
    target_slot: torch.Tensor  # (N,) column of y_t in cand_idx
    lse: torch.Tensor  # (N,) logsumexp of z/tau over the full vocabulary
    p_sq_sum: torch.Tensor  # (N,) sum_v p_v^2 over the full vocabulary (at tau)
    nll: torch.Tensor  # (N,) -log p(y_t) at tau = 1 (the LM loss)
    n_samples: int
    hs_hidden: torch.Tensor | None = None  # (N, d) the HS layer's hidden state (config.hs_depth < 1), else None

    def hs_source(self, config: RiseConfig) -> torch.Tensor:
        """The hidden states the HS channel averages under `config`: the final ones, or the `hs_depth` layer's."""
        if not config.reads_hs_layer:
            return self.hidden
        if self.hs_hidden is None:
            raise InputDataError(f"hs_depth={config.hs_depth!r} needs the HS layer's hidden states, which this readout "
                                 "lacks: compute it with readout_forward under that config")
        return self.hs_hidden

    @property
    def position_counts(self) -> torch.Tensor:
        """(B,) how many counted positions each sample has (0: none counted)."""
        return torch.bincount(self.sample_index, minlength=self.n_samples)

    @property
    def target_prob(self) -> torch.Tensor:
        """Full-vocabulary p(y_t) at tau."""
        return torch.exp(self.cand_logit.gather(1, self.target_slot[:, None])[:, 0] - self.lse)


@dataclass
class PositionSketches:
    """Per-position sketched factors (after centring and, if configured, per-token normalisation).

    Outer composition: r (N, K_r), h (N, K_h), g (N, K_g). Tensor composition: r and h (N, K_r*K_h), g and h_g
    (N, K_g*K_h)."""

    r: torch.Tensor
    h: torch.Tensor
    g: torch.Tensor
    support_size: torch.Tensor  # (N,) |S_t|
    h_g: torch.Tensor | None = None  # tensor composition: the hidden factor of the GH channel

    @property
    def composition(self) -> str:
        return "outer" if self.h_g is None else "tensor"

    def token_features(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each position's own RH and GH feature vectors, (N, D_rh) and (N, D_gh): the terms `aggregate` sums."""
        if self.h_g is None:
            return ((self.r[:, :, None] * self.h[:, None, :]).flatten(1),
                    (self.g[:, :, None] * self.h[:, None, :]).flatten(1))
        return tensor_product(self.r, self.h), tensor_product(self.g, self.h_g)


@dataclass
class SampleFeatures:
    """Per-sample RISE features: raw sums over counted positions (no per-sample normalisation) and stats."""

    rh: torch.Tensor  # (B, K_r * K_h) float32
    gh: torch.Tensor  # (B, K_g * K_h) float32
    n_counted: torch.Tensor  # (B,) int64
    mean_support: torch.Tensor  # (B,) float32
    loss: torch.Tensor  # (B,) float32: mean next-token loss over counted positions (nan if none)
    hs: torch.Tensor | None = None  # (B, d): mean final hidden state minus the pool's mean (HS channel)

    _FIELDS = ("rh", "gh", "n_counted", "mean_support", "loss", "hs")

    def __len__(self) -> int:
        return int(self.rh.shape[0])

    @staticmethod
    def concat(parts: Sequence[SampleFeatures]) -> SampleFeatures:
        has_hs = all(p.hs is not None for p in parts)
        return SampleFeatures(*(torch.cat([getattr(p, f) for p in parts]) for f in SampleFeatures._FIELDS[:5]),
                              hs=torch.cat([p.hs for p in parts]) if has_hs else None)

    def select(self, order: torch.Tensor) -> SampleFeatures:
        return SampleFeatures(self.rh[order], self.gh[order], self.n_counted[order], self.mean_support[order],
                              self.loss[order], None if self.hs is None else self.hs[order])


EXPLAIN_BATCH_TOKENS = 512
"""Tokens (padding included) of one forward pass of `RiseExtractor.token_sketches_many`. Ten hits explained with the
embedded model on this 2-core machine (`python -m benchmarks.explain_hits`, 2 threads, docs/PERFORMANCE.md), time
against one at a time: tweets of 30 tokens 0.68-0.78 at budgets of 256 to 1,024; real finance and medical answers of
292-353 tokens 0.94-0.99 at 512 and 1,024, 0.99-1.00 at 256; a budget of 4,096 (two passes) 1.27 on the latter.
512 and 1,024 tie; 512 is the smaller."""


def length_groups(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices of `lengths` in groups of similar length, shortest first, each as long as its longest member times
    its size stays within `max_tokens` (a longer one alone)."""
    groups: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda j: lengths[j]):
        if groups and (len(groups[-1]) + 1) * lengths[i] <= max_tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


@dataclass
class TokenSketches:
    """Per-token sketches of one sample, for token-level explanations."""

    tokens: list[str]  # every token of the sample as text
    positions: torch.Tensor  # (T_c,) counted positions t (token t + 1 is the predicted one)
    rh: torch.Tensor  # (T_c, D_rh): each position's RH feature (they sum to phi_RH)
    gh: torch.Tensor  # (T_c, D_gh)
    support_size: torch.Tensor  # (T_c,)
    n_prompt_tokens: int
    hs: torch.Tensor | None = None  # (T_c, d): h_t minus the pool's mean, divided by T_c (they sum to HS)


def compute_dtype(lm: LoadedModel) -> torch.dtype:
    """The dtype RISE computes in for a model: float64 for a float64 model, float32 otherwise."""
    return torch.float64 if lm.dtype == torch.float64 else torch.float32


@torch.no_grad()
def readout_forward(lm: LoadedModel, encoded: Sequence[EncodedSample], config: RiseConfig) -> Readout:
    """One forward pass over a batch; candidates and full-vocab scalars at counted positions only."""
    batch = collate(list(encoded), lm.pad_id)
    dev, cdt = lm.device, compute_dtype(lm)
    ids, attn = batch.input_ids.to(dev), batch.attention_mask.to(dev)
    counted = batch.counted.to(dev)
    layer_all = None
    if config.reads_hs_layer:  # the HS channel reads another layer: from the same pass
        hidden_all, layer_all = lm.hidden_with_layer(ids, attn, hs_layer_index(config.hs_depth, lm.n_layers))
    else:
        hidden_all = lm.final_hidden(ids, attn)  # (B, T, d)
    sample_index, position = counted.nonzero(as_tuple=True)
    hidden = hidden_all[sample_index, position]  # (N, d)
    hs_hidden = None if layer_all is None else layer_all[sample_index, position].to(cdt)
    targets = batch.targets.to(dev)[sample_index, position]
    n, vocab = hidden.shape[0], lm.vocab_size
    c = min(config.k_max, vocab)
    cand_idx = torch.empty((n, c), dtype=torch.long, device=dev)
    cand_logit = torch.empty((n, c), dtype=cdt, device=dev)
    lse = torch.empty(n, dtype=cdt, device=dev)
    p_sq = torch.empty(n, dtype=cdt, device=dev)
    nll = torch.empty(n, dtype=cdt, device=dev)
    weight, bias = lm.readout_weight, lm.readout_bias
    for start in range(0, n, LOGITS_CHUNK):
        sl = slice(start, min(n, start + LOGITS_CHUNK))
        y = targets[sl]
        vp = vocab_pass(hidden[sl], weight, bias, y, c, config.tau, cdt)
        vals, idx, z_y = vp.values, vp.ids, vp.target_logit
        missing = ~(idx == y[:, None]).any(dim=1)
        # y_t outside the top-K_max: it takes the last slot (its logit is <= every other candidate's)
        idx[missing, -1] = y[missing]
        vals[missing, -1] = z_y[missing]
        cand_idx[sl], cand_logit[sl] = idx, vals
        lse[sl], p_sq[sl] = vp.lse, vp.p_sq_sum
        nll[sl] = vp.lse_untempered - z_y * config.tau if config.tau != 1.0 else vp.lse - z_y
    target_slot = (cand_idx == targets[:, None]).to(torch.int8).argmax(dim=1)
    return Readout(sample_index=sample_index, position=position, hidden=hidden.to(cdt), targets=targets,
                   cand_idx=cand_idx, cand_logit=cand_logit, target_slot=target_slot, lse=lse, p_sq_sum=p_sq, nll=nll,
                   n_samples=len(encoded), hs_hidden=hs_hidden)


def support_mask(cand_logit: torch.Tensor, target_slot: torch.Tensor, rho_cum: float, min_top_l: int) -> torch.Tensor:
    """Adaptive support S_t over the (descending) candidates: smallest prefix reaching rho_cum, at least min_top_l,
    union {y_t}. Returns a bool mask (N, C)."""
    p_bar = torch.softmax(cand_logit, dim=1)
    n, c = p_bar.shape
    rank = torch.arange(c, device=p_bar.device)[None, :]
    if rho_cum >= 1.0:
        keep = torch.ones_like(p_bar, dtype=torch.bool)
    else:
        exclusive = torch.cumsum(p_bar, dim=1) - p_bar
        keep = exclusive < rho_cum
    keep |= rank < min_top_l
    keep[torch.arange(n, device=p_bar.device), target_slot] = True
    return keep


def sparse_residual(readout: Readout, keep: torch.Tensor) -> torch.Tensor:
    """r_tilde on the candidate slots: p_tilde (renormalised on S_t) minus one-hot(y_t); zero off the support."""
    p_bar = torch.softmax(readout.cand_logit, dim=1)
    p_tilde = p_bar * keep
    p_tilde = p_tilde / p_tilde.sum(dim=1, keepdim=True)
    r = p_tilde.clone()
    rows = torch.arange(r.shape[0], device=r.device)
    r[rows, readout.target_slot] -= 1.0
    return r


def project_residual(weight: torch.Tensor, cand_idx: torch.Tensor, r_vals: torch.Tensor, keep: torch.Tensor,
                     chunk: int | None = None) -> torch.Tensor:
    """g_t = sum_{v in S_t} r_tilde_t(v) W_v = W^T r_tilde_t, reading only the candidate rows of W per position.

    A weighted `embedding_bag` (a fused gather-and-sum): nothing of size positions x |S_t| x d is materialised.
    `chunk` (positions per call) only bounds the size of the weight/index temporaries."""
    if weight.dtype != r_vals.dtype:
        weight = weight.to(r_vals.dtype)
    weights = r_vals * keep
    step = chunk or max(1, cand_idx.shape[0])
    parts = [torch.nn.functional.embedding_bag(cand_idx[i:i + step], weight, per_sample_weights=weights[i:i + step],
                                               mode="sum") for i in range(0, cand_idx.shape[0], step)]
    return torch.cat(parts) if parts else weight.new_zeros((0, weight.shape[1]))


def _normalise_rows(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)


def readout_factors(readout: Readout, weight: torch.Tensor, config: RiseConfig, hidden_mean: torch.Tensor | None = None,
                    chunk: int | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The exact per-position factors before sketching: (keep, r, h, g) with `keep` the sparse support over the
    candidates, `r` the residual on it (zero elsewhere), `h` the final hidden state (centred under `center_hidden`)
    and `g` = W^T r, the residual projected into embedding space."""
    keep = support_mask(readout.cand_logit, readout.target_slot, config.rho_cum, config.min_top_l)
    r_vals = sparse_residual(readout, keep) * keep
    g = project_residual(weight, readout.cand_idx, r_vals, keep, chunk)
    h = readout.hidden
    if config.center_hidden:
        if hidden_mean is None:
            raise InputDataError("center_hidden is on but no hidden mean was fitted; call fit_hidden_mean first")
        h = h - hidden_mean.to(h)
    return keep, r_vals, h, g


def sketch_readout(readout: Readout, weight: torch.Tensor, config: RiseConfig, sketches: SketchSet,
                   hidden_mean: torch.Tensor | None = None) -> PositionSketches:
    """Per-position sketched RH/GH factors from a readout (the inner loop of Algorithm 2, vectorised)."""
    keep, r_vals, h, g = readout_factors(readout, weight, config, hidden_mean)
    r_sk = sketches.r.apply_sparse(readout.cand_idx, r_vals)
    h_sk = h @ sketches.h.matrix(h.dtype)
    g_sk = g @ sketches.g.matrix(g.dtype)
    h_g_sk = None if sketches.h_g is None else h @ sketches.h_g.matrix(h.dtype)
    if config.token_norm:
        r_sk, h_sk, g_sk = _normalise_rows(r_sk), _normalise_rows(h_sk), _normalise_rows(g_sk)
        h_g_sk = None if h_g_sk is None else _normalise_rows(h_g_sk)
    return PositionSketches(r=r_sk, h=h_sk, g=g_sk, support_size=keep.sum(dim=1), h_g=h_g_sk)


def _sum_outer(readout: Readout, sk: PositionSketches, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """phi_RH[b] = sum_t r_hat_t (outer) h_hat_t over the counted positions of sample b (one bmm per channel)."""
    b = readout.n_samples
    dev, dt = sk.r.device, sk.r.dtype
    width = max(int(counts.max().item()) if counts.numel() else 0, 1)
    # slot of each position within its sample: positions are sorted by (sample, t) from nonzero()
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(readout.sample_index.numel(), device=dev) - starts[readout.sample_index]

    def padded(x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros((b, width, x.shape[1]), dtype=dt, device=dev)
        out[readout.sample_index, slot] = x
        return out

    hp = padded(sk.h)
    rh = torch.bmm(padded(sk.r).transpose(1, 2), hp).reshape(b, -1)
    gh = torch.bmm(padded(sk.g).transpose(1, 2), hp).reshape(b, -1)
    return rh, gh


def _sum_tensor(readout: Readout, sk: PositionSketches) -> tuple[torch.Tensor, torch.Tensor]:
    """phi_RH[b] = sum_t TensorSketch(r_t, h_t): the factors' spectra multiplied per position, summed per sample,
    then one inverse FFT per sample (the transform is linear)."""
    b, idx = readout.n_samples, readout.sample_index

    def channel(a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        d = a.shape[1]
        prod = torch.fft.rfft(a, n=d) * torch.fft.rfft(c, n=d)
        spec = torch.zeros((b, prod.shape[1]), dtype=prod.dtype, device=prod.device).index_add_(0, idx, prod)
        return torch.fft.irfft(spec, n=d)

    return channel(sk.r, sk.h), channel(sk.g, sk.h_g)


def _tensor_sums(readout: Readout, weight: torch.Tensor, config: RiseConfig, sketches: SketchSet,
                 hidden_mean: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sample tensor-composition features (rh (B, D_rh), gh (B, D_gh)) and each position's |S_t|: the same sums
    as `aggregate(readout, sketch_readout(...))` (its `_sum_tensor` is the per-position reference), computed faster.

    Per position, each factor is CountSketched by a scatter-add (O(d); `sketch_readout`'s dense (d, D) matrices cost
    O(d D), more than the FFTs), normalised, and put through one real FFT. The sum over a sample's positions commutes
    with the inverse FFT, so phi[b] = irfft(sum_t A_t * C_t) with A_t, C_t the factors' spectra: the products are
    scatter-summed per sample and there is one inverse FFT per sample. Positions go in chunks of TENSOR_CHUNK, so the
    (chunk, D) temporaries stay in cache (this halves the time against one pass over all positions)."""
    keep, r_vals, h, g = readout_factors(readout, weight, config, hidden_mean)
    b, idx, n = readout.n_samples, readout.sample_index, h.shape[0]
    channels = (  # per channel: its two factors' sketches for a slice of positions
        (lambda sl: sketches.r.apply_sparse(readout.cand_idx[sl], r_vals[sl]), lambda sl: sketches.h.apply_dense(h[sl])),
        (lambda sl: sketches.g.apply_dense(g[sl]), lambda sl: sketches.h_g.apply_dense(h[sl])),
    )
    dims = (sketches.r.sketch_dim, sketches.g.sketch_dim)
    totals = [h.new_zeros((b, dim // 2 + 1, 2)) for dim in dims]  # (B, D // 2 + 1, 2): summed spectra as reals

    def spectrum(x: torch.Tensor) -> torch.Tensor:
        x = _normalise_rows(x) if config.token_norm else x
        return torch.fft.rfft(x, n=x.shape[1])  # (n_c, D // 2 + 1) complex

    for start in range(0, n, TENSOR_CHUNK):
        sl = slice(start, min(n, start + TENSOR_CHUNK))
        for total, (first, second) in zip(totals, channels, strict=True):
            total.index_add_(0, idx[sl], torch.view_as_real(spectrum(first(sl)) * spectrum(second(sl))))
    rh, gh = (torch.fft.irfft(torch.view_as_complex(t), n=dim) for t, dim in zip(totals, dims, strict=True))
    return rh, gh, keep.sum(dim=1)


def mean_hidden(readout: Readout, hidden_mean: torch.Tensor | None, config: RiseConfig) -> torch.Tensor:
    """(B, d): each sample's mean hidden state over its counted positions (the final one, or the layer `config`'s
    `hs_depth` names), minus `hidden_mean` (the HS channel; zero for a sample with no counted position)."""
    b, h, counts = readout.n_samples, readout.hs_source(config), readout.position_counts
    total = torch.zeros((b, h.shape[1]), dtype=h.dtype, device=h.device).index_add_(0, readout.sample_index, h)
    out = total / counts.to(h.dtype).clamp_min(1)[:, None]
    if hidden_mean is not None:
        out = torch.where((counts > 0)[:, None], out - hidden_mean.to(out), out)
    return out


def aggregate(readout: Readout, sk: PositionSketches) -> SampleFeatures:
    """Per-sample RH and GH features (sums over counted positions) and stats, without the HS channel."""
    counts = readout.position_counts
    rh, gh = _sum_outer(readout, sk, counts) if sk.h_g is None else _sum_tensor(readout, sk)
    return _sample_features(readout, rh, gh, sk.support_size)


def sample_losses(readout: Readout) -> torch.Tensor:
    """(B,) each sample's mean loss over its counted positions, nats per token, float64 on the readout's device (nan:
    no counted position): the loss an index keeps with the features."""
    b, counts = readout.n_samples, readout.position_counts
    total = torch.zeros(b, dtype=torch.float64, device=readout.nll.device).index_add_(0, readout.sample_index,
                                                                                      readout.nll.double())
    return torch.where(counts > 0, total / counts.double().clamp_min(1), torch.full_like(total, float("nan")))


def _sample_features(readout: Readout, rh: torch.Tensor, gh: torch.Tensor,
                     support_size: torch.Tensor) -> SampleFeatures:
    """SampleFeatures from the summed channels (B, D_rh), (B, D_gh), with the per-sample stats."""
    b = readout.n_samples
    dev, dt = rh.device, rh.dtype
    counts = readout.position_counts
    n_counted = counts.cpu()
    support_sum = torch.zeros(b, dtype=torch.float64, device=dev).index_add_(
        0, readout.sample_index, support_size.double())
    denom = counts.double().clamp_min(1)
    loss = sample_losses(readout)
    return SampleFeatures(rh=rh.cpu().float() if dt != torch.float64 else rh.cpu(),
                          gh=gh.cpu().float() if dt != torch.float64 else gh.cpu(),
                          n_counted=n_counted, mean_support=(support_sum / denom).float().cpu(),
                          loss=loss.float().cpu())


def features_from_readout(readout: Readout, weight: torch.Tensor, config: RiseConfig, sketches: SketchSet,
                          hidden_mean: torch.Tensor | None = None) -> SampleFeatures:
    """Per-sample features of a readout under `config`: RH, GH and (when `config.hidden_channel`) HS."""
    if sketches.h_g is None:
        feats = aggregate(readout, sketch_readout(readout, weight, config, sketches, hidden_mean))
    else:
        feats = _sample_features(readout, *_tensor_sums(readout, weight, config, sketches, hidden_mean))
    if config.hidden_channel:
        if hidden_mean is None:
            raise InputDataError("the HS channel needs the pool's hidden-state mean; call fit_hidden_mean first")
        hs = mean_hidden(readout, hidden_mean, config).cpu()
        feats.hs = hs if hs.dtype == torch.float64 else hs.float()
    return feats


def rendering_for(lm: LoadedModel, config: RiseConfig) -> Rendering:
    """How `config` (chat_template, chat_turns) renders pairs and conversations for this model's tokenizer (and the
    rendering a `rise finetune` adapter in its weights learned)."""
    return resolve_rendering(config.chat_template, config.chat_turns, lm.tokenizer,
                             getattr(lm, "learned_chat_template", None))


class RiseExtractor:
    """Computes RISE features for samples with one model, config, sketch set and (optional) hidden mean."""

    def __init__(self, lm: LoadedModel, config: RiseConfig, sketches: SketchSet | None = None,
                 hidden_mean: torch.Tensor | None = None) -> None:
        self.lm = lm
        self.config = config
        if sketches is None:
            sketches = SketchSet.for_config(lm.vocab_size, lm.hidden_size, config)
        self._check_sketches(sketches)
        self.sketches = sketches.to(lm.device)
        self.hidden_mean = None if hidden_mean is None else hidden_mean.to(lm.device)
        self.rendering = rendering_for(lm, config)

    def _check_sketches(self, sk: SketchSet) -> None:
        cfg, v, d = self.config, self.lm.vocab_size, self.lm.hidden_size
        if sk.composition != cfg.composition:
            raise InputDataError(f"the sketches are for the {sk.composition} composition; the config says "
                                 f"{cfg.composition}")
        if cfg.composition == "tensor":
            d_rh, d_gh = cfg.feature_dims
            expected = {"r": (v, d_rh), "h": (d, d_rh), "g": (d, d_gh), "h_g": (d, d_gh)}
        else:
            expected = {"r": (v, cfg.k_r), "h": (d, cfg.k_h), "g": (d, cfg.k_g)}
        for name, (din, dout) in expected.items():
            cs = getattr(sk, name)
            if (cs.input_dim, cs.sketch_dim) != (din, dout):
                raise InputDataError(f"sketch {name} maps {cs.input_dim}->{cs.sketch_dim}, expected {din}->{dout}")

    def encode(self, samples: Sequence[Sample | str | dict]) -> list[EncodedSample]:
        cfg = self.config
        return [encode_sample(Sample.coerce(s), self.lm.tokenizer, cfg.seq_len, cfg.counted_positions, self.rendering)
                for s in samples]

    @torch.no_grad()
    def fit_hidden_mean(self, samples: Sequence[Sample | str | dict], batch_size: int = 8) -> torch.Tensor:
        """Mean hidden state (the final one, or the `hs_depth` layer's the HS channel reads) over the counted positions
        of `samples` (all of them), kept for later calls.

        For a pool, fit on `pool_mean_subset(pool)`, the rule index builds and the evaluation follow."""
        total, count = None, 0
        encoded = self.encode(samples)
        for start in range(0, len(encoded), batch_size):
            part = [e for e in encoded[start:start + batch_size] if e.n_counted > 0]
            if not part:
                continue
            ro = readout_forward(self.lm, part, self.config)
            source = ro.hs_source(self.config)
            s = source.double().sum(dim=0)
            total = s if total is None else total + s
            count += source.shape[0]
        if total is None:
            raise InputDataError("cannot fit the hidden-state mean: no sample has a counted token")
        self.hidden_mean = (total / count).to(compute_dtype(self.lm))
        return self.hidden_mean

    def pool_mean_subset(self, pool: Sequence[Sample | str | dict]) -> list:
        """The samples of a pool its hidden-state mean is fitted on (a seeded random subset, `mean_fit_rows`)."""
        return [pool[i] for i in mean_fit_rows(len(pool), self.config.seed)]

    def _require_mean(self) -> None:
        if self.config.needs_hidden_mean and self.hidden_mean is None:
            raise InputDataError(
                "this config needs the pool's mean hidden state (center_hidden or hidden_channel); fit it on the pool "
                "first: extractor.fit_hidden_mean(extractor.pool_mean_subset(pool)). (Fitting it on whatever is "
                "extracted first would centre a pool on its queries.)")

    @torch.no_grad()
    def features_from_readout(self, readout: Readout) -> SampleFeatures:
        """Features of a readout computed by `readout_forward` with this extractor's model and config."""
        self._require_mean()
        return features_from_readout(readout, self.lm.readout_weight, self.config, self.sketches, self.hidden_mean)

    @torch.no_grad()
    def features_from_encoded(self, encoded: Sequence[EncodedSample]) -> SampleFeatures:
        """Features for one batch of encoded samples (padding-invariant)."""
        self._require_mean()
        return self.features_from_readout(readout_forward(self.lm, encoded, self.config))

    def extract(self, samples: Sequence[Sample | str | dict], batch_size: int = 8,
                progress: Callable[[int], None] | None = None) -> SampleFeatures:
        """Features for many samples, batched by similar length; results are in input order.

        A config that needs the pool's hidden-state mean refuses to run before `fit_hidden_mean`."""
        if len(samples) == 0:
            raise InputDataError("no samples to extract features from")
        self._require_mean()
        encoded = self.encode(samples)
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i].input_ids))
        parts = []
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            parts.append(self.features_from_encoded([encoded[i] for i in idx]))
            if progress is not None:
                progress(len(idx))
        feats = SampleFeatures.concat(parts)
        inverse = torch.empty(len(order), dtype=torch.long)
        inverse[torch.tensor(order)] = torch.arange(len(order))
        return feats.select(inverse)

    def token_sketches(self, sample: Sample | str | dict) -> TokenSketches:
        """Per-token sketches of one sample (what `aggregate` sums), with the token strings."""
        return self.token_sketches_many([sample])[0]

    @torch.no_grad()
    def token_sketches_many(self, samples: Sequence[Sample | str | dict], max_tokens: int = EXPLAIN_BATCH_TOKENS
                            ) -> list[TokenSketches]:
        """`token_sketches` of several samples, in input order, from forward passes over samples of similar length
        grouped while a pass holds at most `max_tokens` tokens with its padding (right-padded; every sketch is per
        position, so a sample's are its own alone, to float rounding). Short texts share passes; a long one runs
        alone, where padding would cost more than the larger matrix products save."""
        self._require_mean()
        encoded = self.encode(list(samples))
        out: list[TokenSketches | None] = [None] * len(encoded)
        for idx in length_groups([len(e.input_ids) for e in encoded], max_tokens):
            ro = readout_forward(self.lm, [encoded[i] for i in idx], self.config)
            sk = sketch_readout(ro, self.lm.readout_weight, self.config, self.sketches, self.hidden_mean)
            rh, gh = sk.token_features()
            for b, i in enumerate(idx):
                rows = ro.sample_index == b
                hs = None
                if self.config.hidden_channel:
                    hidden = ro.hs_source(self.config)[rows]
                    hs = ((hidden - self.hidden_mean.to(hidden)) / max(hidden.shape[0], 1)).cpu()
                enc = encoded[i]
                out[i] = TokenSketches(tokens=[self.lm.tokenizer.decode([t]) for t in enc.input_ids],
                                       positions=ro.position[rows].cpu(), rh=rh[rows].cpu(), gh=gh[rows].cpu(),
                                       support_size=sk.support_size[rows].cpu(), n_prompt_tokens=enc.n_prompt_tokens,
                                       hs=hs)
        return [s for s in out if s is not None]
