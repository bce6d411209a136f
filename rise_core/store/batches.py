"""The steps of a build that turn samples into stored features: whether and on which rows the hidden-state mean is
fitted, encoding (samples without a counted token are skipped, with the reason), the mean's fit (its forward passes
kept for the features), and one batch's features. `store.build` (one process) and `store.distributed` (Ray) share
them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..config import RiseConfig, mean_fit_rows
from ..engine import Readout, RiseExtractor, readout_forward
from ..errors import IndexStoreError, InputDataError
from ..models import LoadedModel
from ..samples import EncodedSample, Sample
from ..scoring import FeatureMatrix
from .index import RiseIndex

Usable = tuple[Sample, EncodedSample]  # a sample with a counted token and its encoding


def needs_mean_fit(index: RiseIndex, new: Sequence[Any]) -> bool:
    """Whether this build fixes the index's hidden-state mean (first build of a config that needs one)."""
    if not (new and index.config.needs_hidden_mean and index.hidden_mean is None):
        return False
    if len(index) > 0:
        raise IndexStoreError(f"{index.path} is corrupted: its config needs a hidden-state mean but none is stored")
    return True


def split_mean_fit(new: list[tuple[int, Sample]], seed: int
                   ) -> tuple[list[tuple[int, Sample]], list[tuple[int, Sample]]]:
    """(the seeded random subset the mean is fitted on, the rest), both in pool order.

    A random subset, not the first rows: a sorted file would bias the mean."""
    fit_rows = set(mean_fit_rows(len(new), seed))
    return ([item for i, item in enumerate(new) if i in fit_rows],
            [item for i, item in enumerate(new) if i not in fit_rows])


def no_counted_token(seq_len: int) -> str:
    return f"no counted token (needs two or more tokens, or a completion that fits within seq_len={seq_len})"


def encode_usable(extractor: RiseExtractor, part: Sequence[tuple[int, Sample]]
                  ) -> tuple[list[Usable], list[tuple[int, str]]]:
    """The samples of `part` with a counted token, sorted by length (similar lengths share a batch), and the
    (row, reason) of the others: no counted token, or a conversation the model's chat template cannot render (one
    turn's role or order it refuses), a row's own fault like an empty text."""
    usable, skipped = [], []
    for row, sample in part:
        try:
            enc = extractor.encode([sample])[0]
        except InputDataError as exc:
            skipped.append((row, str(exc)))
            continue
        if enc.n_counted == 0:
            skipped.append((row, no_counted_token(extractor.config.seq_len)))
        else:
            usable.append((sample, enc))
    return sorted(usable, key=lambda item: len(item[1].input_ids)), skipped


@torch.no_grad()
def fit_hidden_mean(lm: LoadedModel, config: RiseConfig, fit_usable: list[Usable], batch_size: int,
                    progress: Callable[[int, int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None
                    ) -> tuple[torch.Tensor, list[tuple[list[Usable], Readout]]] | None:
    """The mean final hidden state over the counted positions of `fit_usable`, and each batch's readout (on the
    host): that subset's forward passes give its features once the mean is fixed, so it runs once.
    `progress(done, total)` after each batch (samples of the subset); None when `should_stop()` asked to stop
    between batches (nothing is stored: the next build fits the mean again)."""
    if not fit_usable:
        raise InputDataError("cannot fit the hidden-state mean: no sample of the pool has a counted token")
    batches, total_h, count = [], None, 0
    for b_start in range(0, len(fit_usable), batch_size):
        if progress is not None:
            progress(b_start, len(fit_usable))
        if should_stop is not None and should_stop():
            return None
        batch = fit_usable[b_start:b_start + batch_size]
        readout = readout_forward(lm, [enc for _, enc in batch], config)
        source = readout.hs_source(config)  # the final hidden states, or the HS channel's layer's
        h_sum = source.double().sum(dim=0)
        total_h, count = (h_sum if total_h is None else total_h + h_sum), count + source.shape[0]
        batches.append((batch, to_cpu(readout)))
    if progress is not None:
        progress(len(fit_usable), len(fit_usable))
    return (total_h / count).to(readout.hidden.dtype), batches


@dataclass
class BatchFeatures:
    """One batch's stored features (float16 unit vectors and norms) and per-sample stats, ready to commit."""

    ids: list[str]
    features: FeatureMatrix
    n_counted: list[int]
    mean_support: list[float]
    loss: list[float]
    n_tokens: list[int]
    truncated: list[bool]

    def __len__(self) -> int:
        return len(self.ids)


@torch.no_grad()
def batch_features(extractor: RiseExtractor, batch: list[Usable], readout: Readout | None = None) -> BatchFeatures:
    """The features of one batch (from its readout when the forward pass already ran)."""
    feats = (extractor.features_from_readout(to_device(readout, extractor.lm.device)) if readout is not None
             else extractor.features_from_encoded([enc for _, enc in batch]))
    return BatchFeatures(ids=[str(s.id) for s, _ in batch],
                         features=FeatureMatrix.from_features(feats, dtype=torch.float16),
                         n_counted=feats.n_counted.tolist(), mean_support=feats.mean_support.tolist(),
                         loss=feats.loss.tolist(), n_tokens=[len(e.input_ids) for _, e in batch],
                         truncated=[e.truncated for _, e in batch])


def to_cpu(readout: Readout) -> Readout:
    """A readout's tensors moved to host memory (kept between the mean fit and the feature pass)."""
    return to_device(readout, "cpu")


def to_device(readout: Readout, device: Any) -> Readout:
    return dataclasses.replace(readout, **{f.name: getattr(readout, f.name).to(device)
                                           for f in dataclasses.fields(readout)
                                           if isinstance(getattr(readout, f.name), torch.Tensor)})
