"""Building an index: resumable and appendable, one committed transaction per batch."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd
import torch

from ..config import RiseConfig, mean_fit_rows
from ..engine import RiseExtractor, readout_forward
from ..errors import ConfigError, IndexStoreError, InputDataError
from ..ingest import FieldMap, PoolData, coerce_pool, content_hash, read_pool
from ..models import LoadedModel
from ..samples import Sample
from ..scoring import FeatureMatrix
from .index import RiseIndex
from .schema import WINDOW_BATCHES, BuildReport

logger = logging.getLogger(__name__)


def build_index(index_path: str | Path | RiseIndex,
                pool: PoolData | str | Path | IO[bytes] | pd.DataFrame | Sequence[Sample | str | dict],
                lm: LoadedModel, config: RiseConfig | None = None, fields: FieldMap | None = None,
                batch_size: int = 8, progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None, overwrite: bool = False) -> BuildReport:
    """Build an index from a pool, or append the pool's new samples to an existing index.

    Resumable: samples whose id is already in the index are skipped (a sample given without an id gets a stable
    content id), so rerunning an interrupted build finishes it. `config=None` uses the existing index's config (or
    the defaults for a new index); a config or model that differs from the index's is refused.
    `progress(done, total)` is called after each committed batch (total = samples not yet in the index);
    `should_stop()` is polled between batches."""
    start_time = time.perf_counter()
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    if isinstance(pool, PoolData):
        data = coerce_pool(pool)
    elif isinstance(pool, (str, Path, bytes, pd.DataFrame)) or hasattr(pool, "read"):
        data = read_pool(pool, fields)  # type: ignore[arg-type]
    else:
        data = coerce_pool(pool)
    data.require_samples()

    own = not isinstance(index_path, RiseIndex)
    if isinstance(index_path, RiseIndex):
        index = index_path
        if index.read_only:
            raise IndexStoreError(f"{index.path} is open read-only; open it with read_only=False to build")
    else:
        path = Path(index_path)
        if path.exists() and not overwrite:
            index = RiseIndex.open(path, read_only=False)
        else:
            index = RiseIndex.create(path, lm, config or RiseConfig(), overwrite=overwrite)
    try:
        return _build(index, data, lm, config, batch_size, progress, should_stop, start_time)
    finally:
        if own:
            index.close()


def _build(index: RiseIndex, data: PoolData, lm: LoadedModel, config: RiseConfig | None, batch_size: int,
           progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
           start_time: float) -> BuildReport:
    index.check_model(lm)
    if config is not None:
        index.check_config(config)
    cfg = index.config
    existing = index.id_hashes()
    new: list[tuple[int, Sample]] = []
    n_present = 0
    for sample, row in zip(data.samples, data.rows, strict=True):
        stored = existing.get(str(sample.id))
        if stored is None:
            new.append((row, sample))
        elif stored != content_hash(sample):
            raise InputDataError(f"id {sample.id!r} (row {row}) is already in {index.path} with different text; "
                                 "give it another id, or build a new index")
        else:
            n_present += 1
    skipped = list(data.skipped)
    report = BuildReport(n_added=0, n_already_present=n_present, n_skipped=0, skipped=skipped, seconds=0.0,
                         stopped=False, n_rows=data.n_rows, index_path=str(index.path))
    extractor = index.extractor(lm)
    if new and index.status != "building":
        index.set_status("building")

    total = len(new)
    if progress is not None:
        progress(0, total)
    state = {"done": 0}

    def usable_of(part: list[tuple[int, Sample]]) -> list[tuple[Sample, Any]]:
        """The samples of `part` with a counted token, sorted by length (similar lengths share a batch)."""
        usable = []
        for (row, sample), enc in zip(part, extractor.encode([s for _, s in part]), strict=True):
            if enc.n_counted == 0:
                skipped.append((row, "no counted token (needs two or more tokens, or a completion that fits "
                                     f"within seq_len={cfg.seq_len})"))
                state["done"] += 1
            else:
                usable.append((sample, enc))
        return sorted(usable, key=lambda item: len(item[1].input_ids))

    def store(ex: RiseExtractor, batch: list[tuple[Sample, Any]], readout: Any = None) -> None:
        feats = (ex.features_from_readout(readout) if readout is not None
                 else ex.features_from_encoded([enc for _, enc in batch]))
        fm = FeatureMatrix.from_features(feats, dtype=torch.float16)
        index.add_samples([s for s, _ in batch], fm, feats.n_counted.tolist(), feats.mean_support.tolist(),
                          feats.loss.tolist(), [len(e.input_ids) for _, e in batch], [e.truncated for _, e in batch])
        report.n_added += len(batch)
        report.n_truncated += sum(e.truncated for _, e in batch)
        state["done"] += len(batch)
        if progress is not None:
            progress(state["done"], total)

    def stop_requested() -> bool:
        report.stopped = report.stopped or (should_stop is not None and should_stop())
        return report.stopped

    if new and cfg.needs_hidden_mean and index.hidden_mean is None:
        if len(index) > 0:
            raise IndexStoreError(f"{index.path} is corrupted: its config needs a hidden-state mean but none is stored")
        # the mean of a seeded random subset of the pool (not its first rows: a sorted file would bias it); that
        # subset's forward passes are kept and give its features once the mean is fixed, so it runs once
        fit_rows = set(mean_fit_rows(len(new), cfg.seed))
        fit_part = [item for i, item in enumerate(new) if i in fit_rows]
        new = [item for i, item in enumerate(new) if i not in fit_rows]
        fit_usable = usable_of(fit_part)
        if not fit_usable:
            raise InputDataError("cannot fit the hidden-state mean: no sample of the pool has a counted token")
        batches, total_h, count = [], None, 0
        for b_start in range(0, len(fit_usable), batch_size):
            batch = fit_usable[b_start:b_start + batch_size]
            readout = readout_forward(lm, [enc for _, enc in batch], cfg)
            h_sum = readout.hidden.double().sum(dim=0)
            total_h, count = (h_sum if total_h is None else total_h + h_sum), count + readout.hidden.shape[0]
            batches.append((batch, _to_cpu(readout)))
        index.set_hidden_mean((total_h / count).to(readout.hidden.dtype))
        extractor = index.extractor(lm)
        for batch, readout in batches:
            if stop_requested():
                break
            store(extractor, batch, _to_device(readout, lm.device))
        del batches

    window = batch_size * WINDOW_BATCHES
    for w_start in range(0, len(new), window):
        if report.stopped:
            break
        usable = usable_of(new[w_start:w_start + window])
        for b_start in range(0, len(usable), batch_size):
            if stop_requested():
                break
            store(extractor, usable[b_start:b_start + batch_size])
    if not report.stopped and index.status != "complete":
        index.set_status("complete")
    report.n_skipped = len(skipped)
    report.n_total = len(index)
    report.seconds = time.perf_counter() - start_time
    logger.info(report.summary())
    return report



def _to_cpu(readout: Any) -> Any:
    """A readout's tensors moved to host memory (kept between the mean fit and the feature pass)."""
    return _moved(readout, "cpu")


def _to_device(readout: Any, device: Any) -> Any:
    return _moved(readout, device)


def _moved(readout: Any, device: Any) -> Any:
    import dataclasses

    return dataclasses.replace(readout, **{f.name: getattr(readout, f.name).to(device)
                                           for f in dataclasses.fields(readout)
                                           if isinstance(getattr(readout, f.name), torch.Tensor)})
