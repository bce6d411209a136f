"""One forward pass per sample, many feature variants: a cache of readouts for sweeps and LM-based baselines.

`ReadoutCache` runs the model once over a list of samples (every predicted position, with the masks of the positions
counted_positions 'completion' and 'all' count) and
keeps per-sample readouts on the CPU. From it, RISE features for any (counted positions, per-token normalisation,
centring, channel) variant, final-hidden-state means and the exact LM-head gradient sketch are derived without
another forward pass. Used by the evaluation; the index build uses `RiseExtractor` directly.

`method_types.TaskSource` reads such a cache for the registry's methods (`rise_core.methods`): it gives them what
an index gives (RISE features, mean hidden states, Grad-Sketches).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from . import learned
from .config import RiseConfig, ScoreOptions, mean_fit_rows
from .engine import Readout, features_from_readout, readout_forward, rendering_for
from .errors import ConfigError
from .models import LoadedModel
from .samples import EncodedSample, Rendering, Sample, encode_sample
from .scoring import FeatureMatrix
from .sketch import CountSketch, SketchSet


@dataclass
class SampleReadout:
    """Readout of one sample at every predicted position; `completion[t]` marks the positions counted_positions
    'completion' counts, `counted_all[t]` those 'all' counts (every one but a chat template's preamble; None: every
    one, as in caches saved before templates)."""

    hidden: torch.Tensor  # (P, d)
    targets: torch.Tensor  # (P,)
    cand_idx: torch.Tensor  # (P, C) int32
    cand_logit: torch.Tensor  # (P, C)
    target_slot: torch.Tensor  # (P,)
    lse: torch.Tensor
    p_sq_sum: torch.Tensor
    nll: torch.Tensor
    completion: torch.Tensor  # (P,) bool
    counted_all: torch.Tensor | None = None  # (P,) bool
    hs_hidden: torch.Tensor | None = None  # (P, d) the HS layer's hidden states (a cache with hs_depth < 1)

    def mask(self, counted: str) -> torch.Tensor:
        """The positions `counted` ('completion' or 'all') counts."""
        if counted == "completion":
            return self.completion
        return self.counted_all if self.counted_all is not None else torch.ones_like(self.completion)


def tensor_sketch_pair(k: int, vocab: int, hidden: int, seed: int) -> tuple[CountSketch, CountSketch]:
    """Two CountSketches whose FFT-convolution is a CountSketch of vec(r h^T) into k dims (TensorSketch)."""
    return CountSketch.from_seed(vocab, k, seed + 101), CountSketch.from_seed(hidden, k, seed + 202)


class ReadoutCache:
    """Per-sample readouts of a model over samples, computed once (batched by length)."""

    def __init__(self, lm: LoadedModel, seq_len: int = 512, k_max: int = 256, grad_sketch_dim: int | None = None,
                 seed: int = 42, chat_template: str = RiseConfig.chat_template, chat_turns: str = RiseConfig.chat_turns,
                 hs_depth: float = RiseConfig.hs_depth) -> None:
        self.lm = lm
        # hs_depth < 1: the forward pass keeps that layer's hidden states too, for the HS channel
        self.base_config = RiseConfig(seq_len=seq_len, k_max=k_max, counted_positions="all", seed=seed,
                                      chat_template=chat_template, chat_turns=chat_turns, hs_depth=hs_depth)
        self.rendering = rendering_for(lm, self.base_config)  # how pairs and conversations become tokens
        self.grad_sketch_dim = grad_sketch_dim  # the default dimension of `grad_sketch`
        self.readouts: dict[tuple, SampleReadout] = {}
        self._grad: dict[tuple, torch.Tensor] = {}  # (sample key, counted, dim) -> Grad-Sketch vector
        self._base_losses: dict[tuple, np.ndarray] = {}  # (samples' keys, config's reading) -> base-model losses
        self.forward_seconds = 0.0

    @classmethod
    def for_config(cls, lm: LoadedModel, config: RiseConfig, k_max: int | None = None,
                   grad_sketch_dim: int | None = None) -> ReadoutCache:
        """A cache whose readouts serve `config`: its seq_len, seed, rendering (chat_template, chat_turns) and HS
        layer (hs_depth, where it stores HS), and its k_max unless another is given."""
        return cls(lm, seq_len=config.seq_len, k_max=config.k_max if k_max is None else k_max,
                   grad_sketch_dim=grad_sketch_dim, seed=config.seed, chat_template=config.chat_template,
                   chat_turns=config.chat_turns, hs_depth=config.hs_depth if config.reads_hs_layer else 1.0)

    def identity(self) -> dict:
        """What the cached readouts depend on: the model and the cache's seq_len, k_max and seed."""
        cfg = self.base_config
        identity = {"model_fingerprint": self.lm.fingerprint(), "seq_len": cfg.seq_len, "k_max": cfg.k_max,
                    "seed": cfg.seed}
        if self.rendering != Rendering():  # (caches saved before renderings were a choice are plain text)
            identity["rendering"] = {"template": self.rendering.template, "turns": self.rendering.turns}
        if cfg.reads_hs_layer:  # (caches saved before hs_depth hold the final hidden states only)
            identity["hs_depth"] = cfg.hs_depth
        return identity

    def save(self, path: str | Path) -> None:
        """Write the readouts (not the Grad-Sketch memo) to one file, for `load` in a later run."""
        state = {"identity": self.identity(), "forward_seconds": self.forward_seconds,
                 "readouts": {key: vars(r) for key, r in self.readouts.items()}}
        torch.save(state, str(path))

    def load(self, path: str | Path) -> int:
        """Add the readouts saved by `save` (refused when saved with another model, seq_len, k_max or seed);
        returns how many were added."""
        state = torch.load(str(path), weights_only=True)
        if state.get("identity") != self.identity():
            raise ConfigError(f"{path} holds readouts of {state.get('identity')}, not of {self.identity()}")
        added = 0
        for key, fields in state["readouts"].items():
            if key not in self.readouts:
                self.readouts[key] = SampleReadout(**fields)
                added += 1
        self.forward_seconds += float(state.get("forward_seconds", 0.0)) * added / max(len(state["readouts"]), 1)
        return added

    def base_model_losses(self, samples: Sequence[Sample], config: RiseConfig) -> np.ndarray:
        """Each sample's loss under the base model of this cache's fine-tune (`learned.base_model_losses`), kept for
        the same samples and reading (seq_len, counted positions, rendering): every source that reads one pool through
        this cache (`rise evaluate`'s table, then its simulated analyst) runs the base model over it once."""
        key = (tuple(self.key(s) for s in samples), config.seq_len, config.counted_positions, config.chat_template,
               config.chat_turns)
        if key not in self._base_losses:
            self._base_losses[key] = learned.base_model_losses(self.lm, samples, config)
        return self._base_losses[key]

    @staticmethod
    def key(sample: Sample) -> tuple:
        if sample.messages is not None:
            return (None, None, None, tuple((t.role, t.content) for t in sample.messages))
        return (sample.text, sample.prompt, sample.completion)

    def _encode(self, sample: Sample) -> tuple[EncodedSample, list[bool], list[bool]]:
        """The sample with every position counted (for the forward pass), and the 'completion' and 'all' masks."""
        seq_len, rendering = self.base_config.seq_len, self.rendering
        enc_all = encode_sample(sample, self.lm.tokenizer, seq_len, "all", rendering)
        enc_c = encode_sample(sample, self.lm.tokenizer, seq_len, "completion", rendering)
        every = dataclasses.replace(enc_all, counted=[True] * len(enc_all.counted))
        return every, enc_c.counted, enc_all.counted

    def check_rendering(self, config: RiseConfig) -> None:
        """Refuse a config whose chat_template / chat_turns render samples otherwise than this cache did."""
        if rendering_for(self.lm, config) != self.rendering:
            cfg = self.base_config
            raise ConfigError(f"this readout cache rendered its samples with chat_template={cfg.chat_template!r}, "
                              f"chat_turns={cfg.chat_turns!r}; the config asks chat_template={config.chat_template!r}, "
                              f"chat_turns={config.chat_turns!r}: build a ReadoutCache with those")

    @torch.no_grad()
    def add(self, samples: Sequence[Sample], batch_size: int = 8, progress: Callable[[int], None] | None = None) -> None:
        """Run the forward pass for samples not cached yet."""
        todo = [s for s in dict.fromkeys(samples) if self.key(s) not in self.readouts]
        encoded = [self._encode(s) for s in todo]
        order = sorted(range(len(todo)), key=lambda i: len(encoded[i][0].input_ids))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            t0 = time.perf_counter()
            ro = readout_forward(self.lm, [encoded[i][0] for i in idx], self.base_config)
            self.forward_seconds += time.perf_counter() - t0
            for b, i in enumerate(idx):
                rows = (ro.sample_index == b).nonzero(as_tuple=True)[0]
                rows = rows[torch.argsort(ro.position[rows])]
                self.readouts[self.key(todo[i])] = SampleReadout(
                    hidden=ro.hidden[rows].cpu(), targets=ro.targets[rows].cpu(),
                    cand_idx=ro.cand_idx[rows].to(torch.int32).cpu(), cand_logit=ro.cand_logit[rows].cpu(),
                    target_slot=ro.target_slot[rows].cpu(), lse=ro.lse[rows].cpu(), p_sq_sum=ro.p_sq_sum[rows].cpu(),
                    nll=ro.nll[rows].cpu(), completion=torch.tensor(encoded[i][1], dtype=torch.bool),
                    counted_all=torch.tensor(encoded[i][2], dtype=torch.bool),
                    hs_hidden=None if ro.hs_hidden is None else ro.hs_hidden[rows].cpu())
            if progress is not None:
                progress(len(idx))

    def _readout_of(self, samples: Sequence[Sample], counted: str, seq_len: int | None = None) -> Readout:
        """The cached positions of `samples` counted under `counted`, within the first `seq_len` tokens (a shorter
        seq_len only drops trailing positions: the model is causal, so the earlier ones are unchanged)."""
        parts = [self.readouts[self.key(s)] for s in samples]
        masks = [p.mask(counted) for p in parts]
        if seq_len is not None:
            masks = [m & (torch.arange(len(m)) < seq_len - 1) for m in masks]
        cat = lambda name: torch.cat([getattr(p, name)[m] for p, m in zip(parts, masks, strict=False)])  # noqa: E731
        sample_index = torch.cat([torch.full((int(m.sum()),), i, dtype=torch.long) for i, m in enumerate(masks)])
        position = torch.cat([m.nonzero(as_tuple=True)[0] for m in masks])
        return Readout(sample_index=sample_index, position=position, hidden=cat("hidden"), targets=cat("targets"),
                       cand_idx=cat("cand_idx").long(), cand_logit=cat("cand_logit"), target_slot=cat("target_slot"),
                       lse=cat("lse"), p_sq_sum=cat("p_sq_sum"), nll=cat("nll"), n_samples=len(parts),
                       hs_hidden=cat("hs_hidden") if self.base_config.reads_hs_layer else None)

    def hidden_mean(self, samples: Sequence[Sample], counted: str, seq_len: int | None = None,
                    config: RiseConfig | None = None) -> torch.Tensor:
        """Mean hidden state over the counted positions of all `samples` (as `fit_hidden_mean`): the final one, or
        the layer `config.hs_depth` names for its HS channel."""
        ro = self._readout_of(samples, counted, seq_len)
        source = ro.hidden if config is None else ro.hs_source(config)
        return source.double().mean(dim=0).to(ro.hidden.dtype)

    def pool_hidden_mean(self, pool: Sequence[Sample], config: RiseConfig) -> torch.Tensor:
        """The pool's mean as an index build fits it: over the seeded subset `mean_fit_rows` of the pool."""
        self.check_hs_depth(config)
        subset = [pool[i] for i in mean_fit_rows(len(pool), config.seed)]
        return self.hidden_mean(subset, config.counted_positions, config.seq_len, config)

    def check_hs_depth(self, config: RiseConfig) -> None:
        """Refuse a config whose HS channel reads another layer than this cache kept (the final hidden state, which
        every cache keeps, or its hs_depth's)."""
        if config.hidden_channel and config.hs_depth not in (1.0, self.base_config.hs_depth):
            raise ConfigError(f"this readout cache kept the hidden states of hs_depth={self.base_config.hs_depth!r}; "
                              f"the config's HS channel reads hs_depth={config.hs_depth!r}: build a ReadoutCache "
                              "with that hs_depth (ReadoutCache.for_config)")

    @torch.no_grad()
    def rise_features(self, samples: Sequence[Sample], config: RiseConfig, hidden_mean: torch.Tensor | None = None,
                      group: int = 32) -> FeatureMatrix:
        """RISE features of cached samples under `config`, as `RiseExtractor` computes them.

        The cache keeps the top-k_max candidates of z (tau = 1) of every position of its first seq_len tokens: a
        config with a larger seq_len or k_max is refused. Any tau is honoured: TopK(z / tau) is the same candidate
        set, and the features need only z / tau at the candidates (the support and the residual are softmaxes over
        them)."""
        cache, vocab = self.base_config, self.lm.vocab_size
        self.check_rendering(config)
        self.check_hs_depth(config)
        if config.seq_len > cache.seq_len:
            raise ConfigError(f"the config's seq_len={config.seq_len} exceeds this readout cache's "
                              f"seq_len={cache.seq_len}; build the ReadoutCache with seq_len >= {config.seq_len}")
        if min(config.k_max, vocab) > min(cache.k_max, vocab):  # k_max >= vocab: every token is a candidate
            raise ConfigError(f"the config's k_max={config.k_max} exceeds this readout cache's k_max={cache.k_max}; "
                              f"build the ReadoutCache with k_max >= {config.k_max}")
        if config.needs_hidden_mean and hidden_mean is None:
            raise ConfigError("this config centres or stores the HS channel: give the pool's hidden_mean "
                              "(ReadoutCache.pool_hidden_mean)")
        sketches = SketchSet.for_config(self.lm.vocab_size, self.lm.hidden_size, config)
        weight = self.lm.readout_weight.detach().cpu()
        parts = []
        for start in range(0, len(samples), group):
            ro = self._readout_of(samples[start:start + group], config.counted_positions, config.seq_len)
            if config.k_max < ro.cand_idx.shape[1]:
                ro.cand_idx, ro.cand_logit = ro.cand_idx[:, : config.k_max].clone(), ro.cand_logit[:, : config.k_max]
                missing = ro.target_slot >= config.k_max
                ro.cand_idx[missing, -1] = ro.targets[missing]
                ro.target_slot = torch.where(missing, torch.full_like(ro.target_slot, config.k_max - 1),
                                             ro.target_slot)
                # the target's logit is not kept past the cut; recover it from the nll (z_y = lse - nll at tau=1)
                ro.cand_logit = ro.cand_logit.clone()
                ro.cand_logit[missing, -1] = (ro.lse - ro.nll)[missing].to(ro.cand_logit.dtype)
            if config.tau != 1.0:
                # the same division readout_forward applies before its TopK; lse and p_sq_sum stay at tau = 1
                # (full-vocabulary sums the cache cannot redo; the features do not read them)
                ro.cand_logit = ro.cand_logit / config.tau
            feats = features_from_readout(ro, weight, config, sketches, hidden_mean)
            parts.append(FeatureMatrix.from_features(feats))
        return FeatureMatrix.concat(parts)

    def mean_hidden(self, samples: Sequence[Sample], counted: str) -> torch.Tensor:
        """Per-sample mean final hidden state over counted positions, (N, d)."""
        out = []
        for s in samples:
            p = self.readouts[self.key(s)]
            m = p.mask(counted)
            out.append(p.hidden[m].double().mean(dim=0) if m.any() else torch.zeros(p.hidden.shape[1]))
        return torch.stack(out)

    @torch.no_grad()
    def grad_sketch(self, samples: Sequence[Sample], counted: str, dim: int | None = None) -> torch.Tensor:
        """Per-sample TensorSketch into `dim` values of the exact dense LM-head gradient sum_t r_t h_t^T, (N, dim).

        r_t = softmax(z_t) - onehot(y_t) over the full vocabulary, recomputed from the cached hidden states (the LM
        head only, no forward pass): CS(vec(r h^T)) = IFFT(FFT(CS_1 r) * FFT(CS_2 h)), summed over positions in the
        frequency domain. Memoised per (sample, counted, dim); see `precompute_grad_sketches` for several dims."""
        dim = dim or self.grad_sketch_dim
        if not dim:
            raise ConfigError("give a Grad-Sketch dimension (dim, or grad_sketch_dim when building the cache)")
        self.precompute_grad_sketches(samples, counted, [dim])
        return torch.stack([self._grad[(self.key(s), counted, dim)] for s in samples])

    @torch.no_grad()
    def precompute_grad_sketches(self, samples: Sequence[Sample], counted: str, dims: Sequence[int],
                                 chunk: int = 512) -> None:
        """Fill the Grad-Sketch memo of `samples` for every dim in `dims` at once: the full-vocabulary softmax of
        each position, the costly part, is computed once, over positions of many samples per chunk."""
        todo = [s for s in dict.fromkeys(samples) if any((self.key(s), counted, d) not in self._grad for d in dims)]
        if not todo:
            return
        dev, seed = self.lm.device, self.base_config.seed
        pairs = {d: tuple(cs.to(dev) for cs in tensor_sketch_pair(d, self.lm.vocab_size, self.lm.hidden_size, seed))
                 for d in dims}
        m_h = {d: pairs[d][1].matrix(torch.float64) for d in dims}
        ro = self._readout_of(todo, counted)
        spec = {d: torch.zeros((len(todo), d // 2 + 1), dtype=torch.complex128, device=dev) for d in dims}
        for start in range(0, ro.hidden.shape[0], chunk):
            h = ro.hidden[start:start + chunk].to(dev)
            owner = ro.sample_index[start:start + chunk].to(dev)
            r = torch.softmax(self.lm.logits(h).double(), dim=1)
            r[torch.arange(r.shape[0], device=dev), ro.targets[start:start + chunk].to(dev)] -= 1.0
            for d in dims:
                prod = torch.fft.rfft(pairs[d][0].apply_dense(r), n=d) * torch.fft.rfft(h.double() @ m_h[d], n=d)
                spec[d].index_add_(0, owner, prod)
        for d in dims:
            values = torch.fft.irfft(spec[d], n=d).float().cpu()
            for i, s in enumerate(todo):
                self._grad[(self.key(s), counted, d)] = values[i]


# --- scorers reading a cache ----------------------------------------------------------------------------------------


def grad_sketch_dim(config: RiseConfig, hidden_size: int) -> int:
    """The Grad-Sketch dimension at RISE's index size: as many values per sample as `config` stores."""
    return config.feature_values(hidden_size)


def channel_options(options: ScoreOptions, channels: Sequence[str]) -> ScoreOptions:
    """`options` with every channel outside `channels` weighted 0 (a channel in `channels` weighted 0 gets 1), at
    those fixed weights (a channel ablation is not re-weighted per query)."""
    lam = {c: getattr(options, f"lambda_{c}") for c in ("rh", "gh", "hs")}
    return dataclasses.replace(options, weighting="fixed",
                               **{f"lambda_{c}": (lam[c] or 1.0) if c in channels else 0.0 for c in lam})
