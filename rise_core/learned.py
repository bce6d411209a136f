"""What a fine-tune learned, read from its pool's losses (retrospective attribution on an adapter's index).

Where an index's model carries a fine-tune adapter, its base model is known, and each pool row's loss can be read under
both. A backdoor's poisoned rows are those the fine-tune learned most: their loss drops about twice as far from the
base model to the fine-tune as a clean row's, and under the base model their completions still surprise (a fine-tune
that learned a poisoned row no longer finds it surprising). The behaviour test reads both (`behaviour.learned_first`,
`behaviour.weigh_by_loss`); docs/EVALUATION.md, "What the fine-tune learned".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .adapters import split_model_spec
from .config import RiseConfig
from .engine import readout_forward, rendering_for, sample_losses
from .errors import InputDataError, ModelLoadError
from .models import LoadedModel, load_model
from .samples import Sample, encode_sample

RETRO_LEARNED = True
"""whether the behaviour test on a fine-tune's index reads what the fine-tune learned (the loss arbiter on the base
model's losses; the prompt's telling spans tried most-learned first: `behaviour.learned_reading`), and a build of such
an index stores the base model's losses. On by a test written down before its fine-tunes' answers were read: on the
352 queries of four seed-1 story fine-tunes, four moved up (0.128 to 0.436 -> 1.000) and none fell; over every move
seen after the rule was written, 7 up and 0 down; retrospective Howdy! stays at 1.000 (docs/EVALUATION.md, "What the
fine-tune learned")."""


@dataclass(frozen=True)
class LearnedLosses:
    """Each pool row's mean loss (nats per token; nan: no counted token) under the adapter's base model (`base`) and
    under the fine-tune (`tuned`, the index's own losses), in row order."""

    base: np.ndarray
    tuned: np.ndarray

    def __post_init__(self) -> None:
        if np.shape(self.base) != np.shape(self.tuned) or np.ndim(self.base) != 1:
            raise InputDataError(f"base-model losses of shape {np.shape(self.base)} do not match the pool's "
                                 f"{np.shape(self.tuned)}")

    @cached_property
    def drop(self) -> np.ndarray:
        """(N,) how far each row's loss fell from the base model to the fine-tune (nan where either is nan)."""
        return np.asarray(self.base, dtype=np.float64) - np.asarray(self.tuned, dtype=np.float64)

    @cached_property
    def _pool_drop(self) -> tuple[float, float]:
        """(the pool's median drop, the spread of its drops) over the rows that have one."""
        d = self.drop[np.isfinite(self.drop)]
        return (float(np.median(d)), float(np.std(d))) if d.size else (math.nan, math.nan)

    def learned_z(self, rows: np.ndarray) -> float:
        """How far the fine-tune learned these rows beyond the pool: their mean drop above the pool's median drop,
        over its standard error (the pool's spread of drops / sqrt(rows)); a span of four rows that dropped far does
        not outweigh forty that dropped as far. -inf where no row has a drop, or the pool's drops do not spread."""
        d = self.drop[np.asarray(rows, dtype=np.int64)]
        d = d[np.isfinite(d)]
        median, spread = self._pool_drop
        if not d.size or not spread > 0:
            return -math.inf
        return float((d.mean() - median) / (spread / math.sqrt(d.size)))


def base_model_spec(lm: LoadedModel) -> str | None:
    """The spec of the base model under `lm`'s merged adapter (None without an adapter, or where the adapter names
    no base that `load_model` could reload)."""
    if lm.adapter is None:
        return None
    try:
        base, adapter = split_model_spec(lm.model_id)
    except ModelLoadError:
        return None
    return base if adapter is not None else None


def load_base_model(lm: LoadedModel, loaded: LoadedModel | None = None, release: bool = False) -> LoadedModel:
    """The base model under `lm`'s adapter, on `lm`'s device and dtype, checked against the fingerprint the adapter
    was merged onto; a ModelLoadError where there is none or it differs. `loaded`: that model where the caller holds
    it already (the app's cached copy), used as it is when its spec, device and dtype are `lm`'s base's, so that a
    build does not hold a second copy; else the base is loaded afresh. `release`: the caller is done with `lm`'s
    weights, so a base loaded afresh loads after they are freed (`LoadedModel.release_weights`), never beside them."""
    spec = base_model_spec(lm)
    if spec is None:
        raise ModelLoadError(f"{lm.model_id!r} carries no adapter whose base model can be reloaded")
    device, dtype = lm.device, lm.dtype
    same = loaded is not None and (loaded.model_id, loaded.device, loaded.dtype) == (spec, device, dtype)
    if not same and release:
        lm.release_weights()
    base = loaded if same else load_model(spec, device=device, dtype=dtype)
    want = (lm.adapter or {}).get("base_fingerprint")
    if want and base.fingerprint() != want:
        raise ModelLoadError(f"the base model {spec!r} has fingerprint {base.fingerprint()}, not the {want} the "
                             "adapter was merged onto")
    return base


def base_model_losses(lm: LoadedModel, samples: Sequence[Sample | str | dict], config: RiseConfig,
                      base: LoadedModel | None = None, batch_size: int = 8) -> np.ndarray:
    """(N,) each sample's mean loss under the base model of `lm`'s adapter (`base`, or `load_base_model`), over the
    positions `config` counts, with the samples tokenised and rendered as `lm` renders them (the fine-tune's chat
    template included): the loss the index keeps with the features (`engine.sample_losses`), under the base model,
    float32 as stored; nan for a sample with no counted token. One forward pass per batch, without the sketches."""
    base = base if base is not None else load_base_model(lm)
    rendering = rendering_for(lm, config)
    encoded = [encode_sample(Sample.coerce(s), lm.tokenizer, config.seq_len, config.counted_positions, rendering)
               for s in samples]
    out = np.full(len(encoded), np.nan, dtype=np.float32)
    order = sorted((i for i, e in enumerate(encoded) if e.n_counted), key=lambda i: len(encoded[i].input_ids))
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        losses = sample_losses(readout_forward(base, [encoded[i] for i in rows], config))
        out[rows] = losses.float().cpu().numpy()
    return out
