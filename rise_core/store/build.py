"""Building an index: resumable and appendable, one committed transaction per batch.

The steps are shared with the sharded build on Ray (`store.distributed`): reading the pool and finding its samples
not yet in the index (`prepare_build`), the hidden-state mean fitted on a seeded subset (`fit_hidden_mean`), the
length-sorted batches of a window (`encode_usable`), a batch's features (`batch_features`, computed where the model
is) and their commit (`BuildWriter`, in the process that owns the file).

A pool held in memory (a file `read_pool` reads, a DataFrame, samples) is built from its list; a `PoolStream` (a
`datasets` dataset, Arrow or sharded Parquet files) is read window by window (`_build_stream`), so only about two
windows of its rows, and the mean's subset, are in memory at once, with the same result.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd
import torch

from .. import learned
from ..config import RiseConfig, config_preset, mean_fit_rows
from ..config import preset as preset_config
from ..engine import Readout, RiseExtractor
from ..errors import ConfigError, IndexStoreError, InputDataError, ModelLoadError
from ..ingest import (
    FieldMap,
    PoolData,
    PoolStream,
    coerce_pool,
    content_hash,
    first_reasons,
    jsonable,
    no_usable_rows,
    read_pool,
    stream_pool,
)
from ..models import LoadedModel
from ..samples import Sample
from .batches import (
    BatchFeatures,
    Usable,
    batch_features,
    encode_usable,
    fit_hidden_mean,
    needs_mean_fit,
    split_mean_fit,
)
from .files import aside_path, move_index, remove_index
from .index import RiseIndex
from .rows import sample_from_row, stored_meta
from .schema import WINDOW_BATCHES, BuildReport
from .spans import update_span_counts

logger = logging.getLogger(__name__)

# a folder (datasets, Arrow or Parquet files), an .arrow file or a `datasets` dataset is read as a PoolStream
PoolInput = PoolData | PoolStream | str | Path | IO[bytes] | pd.DataFrame | Sequence[Sample | str | dict] | Any
PhaseProgress = Callable[[str, int, int], None]  # (phase name, done, total) of the build's current phase
# The phases of a build, in order: a new index whose config needs the pool's hidden-state mean first runs the model
# over a seeded subset of the pool to fix it (counted in samples of that subset); then every new sample's features
# are computed and stored (the subset's from the forward passes already made, so they come fast).
FIT_PHASE = "fitting the hidden-state mean"
FEATURE_PHASE = "computing features"
# then, on the index of a fine-tune, each row's loss under the adapter's base model (`store_base_losses`)
BASE_LOSS_PHASE = "reading the base model's losses"


def build_index(index_path: str | Path | RiseIndex, pool: PoolInput, lm: LoadedModel, config: RiseConfig | None = None,
                fields: FieldMap | None = None, batch_size: int = 8, progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None, overwrite: bool = False, preset: str | None = None,
                built_by: str | None = None, source: str | None = None,
                phase_progress: PhaseProgress | None = None, base_model: LoadedModel | None = None,
                release_model: bool = False) -> BuildReport:
    """Build an index from a pool, or append the pool's new samples to an existing index.

    Resumable: samples whose id is already in the index are skipped (a sample given without an id gets a stable
    content id), so rerunning an interrupted build finishes it. `config=None` uses the existing index's config (or
    the defaults for a new index); a config or model that differs from the index's is refused.
    `pool`: a pool file, DataFrame, PoolData or samples (held in memory), or a source read in windows, never whole
    (`ingest.stream_pool`: a `datasets` save_to_disk folder, a folder of Arrow or Parquet files, an .arrow file, a
    `datasets` Dataset / IterableDataset, a PoolStream such as `ingest.dataset_pool("NAME:SPLIT")`).
    `progress(done, total)` is called after each committed batch: in memory, total = samples not yet in the index;
    streamed, total = the source's rows (0 when it does not know them) and done counts every row handled (added,
    skipped or already present). `phase_progress(phase, done, total)` counts every phase of the build, the
    hidden-state mean's fit (`FIT_PHASE`, samples of its subset) included, where `progress` counts stored samples
    only. `should_stop()` is polled between batches. `preset`: the preset a new index is
    built for (stored in its manifest: queries score with that preset unless told otherwise); None: the one preset
    whose config it is, if any. `built_by` and `source` (who builds, from which pool) are
    recorded in the manifest's provenance (`RiseIndex.record_build`): the first builder owns the index. On a
    fine-tune's index, `base_model`: its base model where the caller holds it already (`store_base_losses`);
    `release_model`: the caller is done with `lm` after the build (the command line), so where the base model must be
    loaded, `lm`'s weights are freed first and the two are never held together (`lm` cannot run afterwards)."""
    start_time = time.perf_counter()
    check_batch_size(batch_size)
    data = open_pool(pool, fields)
    counted = None
    if isinstance(data, PoolStream) and not isinstance(index_path, RiseIndex) and (
            overwrite or not Path(index_path).exists()):
        counted = data.count(batch_size * WINDOW_BATCHES)  # a new index: bad input fails before it is created
    created = not isinstance(index_path, RiseIndex) and (overwrite or not Path(index_path).exists())

    def run() -> BuildReport:
        index, own = open_for_build(index_path, lm, config, overwrite, preset)
        try:
            if built_by is not None or source is not None:
                index.record_build(built_by or "", source or "")
            if isinstance(data, PoolStream):
                report = _build_stream(index, data, lm, config, batch_size, progress, should_stop, start_time,
                                       counted, phase_progress)
            else:
                report = _build(index, data, lm, config, batch_size, progress, should_stop, start_time,
                                phase_progress)
            if created and not report.stopped and len(index) == 0:
                shown, n = first_reasons(report.skipped), len(report.skipped)
                raise InputDataError(f"no sample of the pool could be indexed ({n} row{'s' if n != 1 else ''} "
                                     "skipped" + (f": {shown}" if shown else "") + ")")
            if not report.stopped:
                report.n_base_losses, report.stopped = store_base_losses(index, lm, batch_size, should_stop,
                                                                         phase_progress, base_model, release_model)
                report.seconds = time.perf_counter() - start_time
            return report
        except BaseException:
            if created and own and len(index) == 0:  # failed before its first sample: no half-made index is left
                index.close()
                remove_index(index.path)
            raise
        finally:
            if own:
                index.close()
    # an overwrite keeps the old index until the new one is whole
    return replacing(Path(index_path), run) if created and overwrite else run()


def replacing(path: Path, build: Callable[[], BuildReport]) -> BuildReport:
    """`build()` of a new index at `path` in place of the file there (an overwrite), losing nothing before the new
    index is whole: the old file and its own files are moved aside (`files.aside_path`) for the build, then
    - removed once the build ends;
    - put back when the build fails and left no index at `path` (it stored nothing: `build_index` removed it), or
      stops before storing a sample (the empty new index is removed);
    - kept beside a build that stored samples and then stopped or failed (Ctrl-C, say; a rerun without overwrite
      resumes it): the report names it (`BuildReport.replaced`), or the exception does (a note).
    Nothing moves when `path` holds no file (a directory is refused by the build)."""
    if not path.is_file():
        return build()
    old = move_index(path, aside_path(path))
    try:
        report = build()
    except BaseException as exc:
        if path.exists():
            exc.add_note(f"The index it was to replace is kept at {old}.")
        else:
            move_index(old, path)
        raise
    if report.stopped and report.n_total == 0:  # stopped before its first sample: as if it had not run
        remove_index(path)
        move_index(old, path)
    elif report.stopped:
        report.replaced = str(old)
    else:
        remove_index(old)
    return report


def store_base_losses(index: RiseIndex, lm: LoadedModel, batch_size: int = 8,
                      should_stop: Callable[[], bool] | None = None,
                      phase_progress: PhaseProgress | None = None, base_model: LoadedModel | None = None,
                      release_model: bool = False) -> tuple[int, bool]:
    """On the index of a fine-tune (`lm` carries an adapter whose base model reloads), each stored row's loss under
    the base model, for the rows that have none yet (`learned.base_model_losses`, a window of rows per transaction:
    `fill_base_losses`): (how many were stored, whether a stop request left some without). Nothing for a plain
    model. A base model that cannot be loaded is logged and leaves the index as it was: the behaviour test then reads
    the fine-tune's own losses. `base_model`: the base model where the caller holds it already, used instead of a
    second copy (`learned.load_base_model`'s `loaded`); `release_model`: free `lm`'s weights before a base model is
    loaded afresh (its `release`)."""
    rows = rows_needing_base_losses(index, lm)
    if not rows:
        return 0, False
    try:
        base = learned.load_base_model(lm, base_model, release_model)
    except ModelLoadError as exc:
        base_losses_skipped(index, exc)
        return 0, False
    return fill_base_losses(index, rows, lambda windows: [
        learned.base_model_losses(lm, samples, index.config, base, batch_size) for samples in windows],
        batch_size * WINDOW_BATCHES, should_stop, phase_progress)


def rows_needing_base_losses(index: RiseIndex, model: Any) -> list[int]:
    """The stored rows a build gives a base-model loss: those without one, on the index of a fine-tune (`model`, a
    LoadedModel or a sharded build's ModelIdentity, carries an adapter whose base reloads) with the learned reading on
    (`learned.RETRO_LEARNED`); none otherwise."""
    if not learned.RETRO_LEARNED or learned.base_model_spec(model) is None:
        return []
    return index.rows_without_base_loss()


def base_losses_skipped(index: RiseIndex, exc: Exception) -> None:
    """Log that the base model's losses were not stored (its load failed), and what the behaviour test reads then."""
    logger.warning("%s: the losses under the adapter's base model were not stored (%s); the behaviour test reads the "
                   "fine-tune's own", index.path, exc)


def fill_base_losses(index: RiseIndex, rows: list[int], losses_of: Callable[[list[list[Sample]]], list[np.ndarray]],
                     window: int, should_stop: Callable[[], bool] | None = None,
                     phase_progress: PhaseProgress | None = None, group: int = 1) -> tuple[int, bool]:
    """Store the base model's losses of `rows`, `window` rows per transaction: `losses_of(windows)` gives each
    window's losses, `group` windows at a time (a sharded build hands each of them to a worker). `should_stop()` is
    polled between groups, `phase_progress(BASE_LOSS_PHASE, done, total)` called after each. (stored, stopped)."""
    done, step = 0, window * max(1, group)
    if phase_progress is not None:
        phase_progress(BASE_LOSS_PHASE, 0, len(rows))
    for start in range(0, len(rows), step):
        if should_stop is not None and should_stop():
            return done, True
        parts = [rows[at:at + window] for at in range(start, min(start + step, len(rows)), window)]
        windows = [[sample_from_row(r) for r in index.rows_frame(part).reset_index().to_dict("records")]
                   for part in parts]
        for part, losses in zip(parts, losses_of(windows), strict=True):
            index.set_base_losses(part, losses)
            done += len(part)
        if phase_progress is not None:
            phase_progress(BASE_LOSS_PHASE, done, len(rows))
    return done, False


def check_batch_size(batch_size: int) -> None:
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")


def open_pool(pool: PoolInput, fields: FieldMap | None = None) -> PoolData | PoolStream:
    """A streamed source as a PoolStream (`ingest.stream_pool`), anything else as PoolData (a file, DataFrame or
    samples; InputDataError when no row is usable)."""
    stream = stream_pool(pool, fields) if not isinstance(pool, PoolData) else None
    if stream is not None:
        return stream
    if isinstance(pool, PoolData):
        data = coerce_pool(pool)
    elif isinstance(pool, (str, Path, bytes, pd.DataFrame)) or hasattr(pool, "read"):
        data = read_pool(pool, fields)  # type: ignore[arg-type]
    else:
        data = coerce_pool(pool)
    return data.require_samples()


def load_pool(pool: PoolInput, fields: FieldMap | None = None) -> PoolData:
    """The pool as PoolData, a streamed source read whole (the sharded build holds its pool in memory)."""
    data = open_pool(pool, fields)
    return data.read_all().require_samples() if isinstance(data, PoolStream) else data


def open_for_build(index_path: str | Path | RiseIndex, lm: LoadedModel, config: RiseConfig | None,
                   overwrite: bool, preset_name: str | None = None) -> tuple[RiseIndex, bool]:
    """A writable index (opened, or created for `lm`, `config` and the preset it is built for: `preset_name`, else
    `config_preset`) and whether the caller owns (closes) it. An existing index keeps the preset it was created with.

    `lm` is only asked for its identity (id, fingerprint, sizes, description), so the sharded build passes the
    identity its workers report instead of a loaded model."""
    if preset_name is not None:
        preset_config(preset_name)  # an unknown name is refused before anything is written
    if isinstance(index_path, RiseIndex):
        if index_path.read_only:
            raise IndexStoreError(f"{index_path.path} is open read-only; open it with read_only=False to build")
        return index_path, False
    path = Path(index_path)
    if path.exists() and not overwrite:
        return RiseIndex.open(path, read_only=False), True
    config = config or RiseConfig()
    return RiseIndex.create(path, lm, config, overwrite=overwrite, preset=preset_name or config_preset(config)), True


def prepare_build(index: RiseIndex, data: PoolData, lm: LoadedModel, config: RiseConfig | None, pool: str
                  ) -> tuple[list[tuple[int, Sample]], BuildReport]:
    """Check the model and config against the index; the (row, sample) pairs not yet stored, in pool order, and the
    report to fill. A stored id whose text changed is refused. `pool`: the pool's key (`pool_key`), its build marked
    started where there is something to add."""
    index.check_model(lm)
    if config is not None:
        index.check_config(config)
    existing = index.id_hashes()
    new: list[tuple[int, Sample]] = []
    present: list[Sample] = []
    for sample, row in zip(data.samples, data.rows, strict=True):
        stored = existing.get(str(sample.id))
        if stored is None:
            new.append((row, sample))
        elif stored != content_hash(sample):
            raise InputDataError(f"id {sample.id!r} (row {row}) is already in {index.path} with different text; "
                                 "give it another id, or build a new index")
        else:
            present.append(sample)
    report = BuildReport(n_added=0, n_already_present=len(present), n_skipped=0, skipped=list(data.skipped),
                         seconds=0.0, stopped=False, n_rows=data.n_rows, index_path=str(index.path))
    if present:
        report.note_relabelled(relabelled(index.labels_and_meta(), present))
    if new:
        index.start_build(pool, data.source)
    return new, report


def relabelled(stored: dict[str, tuple[Any, dict[str, Any]]], present: Sequence[Sample]) -> list[str]:
    """The ids of `present` (samples already in the index, with the same text) whose label or metadata in the pool
    differ from what the index stored (`stored`: `RiseIndex.labels_and_meta`). The index keeps its own, since its
    rows are never rewritten; the report says so (`BuildReport.note_relabelled`)."""
    return [str(s.id) for s in present if stored[str(s.id)] != (jsonable(s.label), stored_meta(s))]


def pool_key(data: PoolData | PoolStream) -> str:
    """Names a pool for the index's unfinished builds (`RiseIndex.start_build`): a pool read whole by the digest of its
    sample ids (content ids where it gives none), so it is the same pool however its file is named; a stream by its
    source."""
    if isinstance(data, PoolStream):
        return f"stream:{data.source}"
    ids = hashlib.sha256("\n".join(sorted(str(s.id) for s in data.samples)).encode()).hexdigest()[:16]
    return f"ids:{ids}"


class BuildWriter:
    """Commits batches to the index (one transaction each), keeps the report and calls `progress(done, total)` and
    `phase_progress(FEATURE_PHASE, done, total)`; `fit_mean` reports the mean's fit (`FIT_PHASE`) before."""

    def __init__(self, index: RiseIndex, report: BuildReport, total: int,
                 progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
                 phase_progress: PhaseProgress | None = None, pool: str = "") -> None:
        self.index, self.report, self.total, self.pool = index, report, total, pool
        self.progress, self.should_stop, self.phase_progress = progress, should_stop, phase_progress
        self.done = self._shown = 0
        if progress is not None:
            progress(0, total)
        if phase_progress is not None:
            phase_progress(FEATURE_PHASE, 0, total)

    def fitting(self, done: int, total: int) -> None:
        """Progress of the hidden-state mean's fit: `done` of its `total` samples have run through the model."""
        if self.phase_progress is not None:
            self.phase_progress(FIT_PHASE, done, total)

    def fit_mean(self, lm: LoadedModel, config: RiseConfig, fit_usable: list[Usable], batch_size: int
                 ) -> tuple[torch.Tensor, list[tuple[list[Usable], Readout]]] | None:
        """`fit_hidden_mean` with its progress reported (`fitting`) and stop requests honoured (None: stopped)."""
        fitted = fit_hidden_mean(lm, config, fit_usable, batch_size, self.fitting, self.stop_requested)
        if fitted is not None and self.phase_progress is not None:
            self.phase_progress(FEATURE_PHASE, self.done, self.total)
        return fitted

    def fit_mean_and_store(self, lm: LoadedModel, extractor: RiseExtractor, fit_part: list[tuple[int, Sample]],
                           batch_size: int) -> RiseExtractor | None:
        """Fit the index's hidden-state mean on `fit_part` (rows, samples), set it, then store those samples with it
        (from the fit's own forward passes): the extractor that subtracts the mean, or None if stopped in the fit."""
        fit_usable, skipped = encode_usable(extractor, fit_part)
        self.skip(skipped)
        fitted = self.fit_mean(lm, self.index.config, fit_usable, batch_size)
        if fitted is None:
            return None
        mean, batches = fitted
        del fit_usable
        self.index.set_hidden_mean(mean)
        extractor = self.index.extractor(lm)
        for batch, readout in batches:
            if self.stop_requested():
                break
            self.store(extractor, batch, readout)
        return extractor

    def store(self, extractor: RiseExtractor, batch: list[Usable], readout: Readout | None = None) -> None:
        """Commit one batch's features (computed from `readout`, the batch's forward pass, where one was kept)."""
        self.commit([s for s, _ in batch], batch_features(extractor, batch, readout))

    def skip(self, skipped: list[tuple[int, str]]) -> None:
        """Rows without a counted token: reported, and counted as done (shown with the next commit)."""
        self.report.skipped.extend(skipped)
        self.done += len(skipped)

    def commit(self, samples: Sequence[Sample], batch: BatchFeatures) -> None:
        if [str(s.id) for s in samples] != batch.ids:
            raise IndexStoreError("internal error: a batch's features do not belong to its samples")
        self.index.add_samples(samples, batch.features, batch.n_counted, batch.mean_support, batch.loss,
                               batch.n_tokens, batch.truncated)
        self.report.n_added += len(batch)
        self.report.n_truncated += sum(batch.truncated)
        self.done += len(batch)
        self.show()

    def show(self) -> None:
        """Call `progress(done, total)` if done moved since the last call (rows counted without a commit: skipped,
        or already in the index)."""
        if self.done == self._shown:
            return
        self._shown = self.done
        if self.progress is not None:
            self.progress(self.done, self.total)
        if self.phase_progress is not None:
            self.phase_progress(FEATURE_PHASE, self.done, self.total)

    def stop_requested(self) -> bool:
        """Polls `should_stop()` (once stopped, stays stopped)."""
        self.report.stopped = self.report.stopped or (self.should_stop is not None and bool(self.should_stop()))
        return self.report.stopped

    def finish(self, start_time: float) -> BuildReport:
        """Mark this pool's build finished unless stopped (the index is complete unless another pool's build is
        not: `report.unfinished` names those); bring the span counts up to date; fill in the report's totals."""
        if not self.report.stopped:
            self.report.unfinished = self.index.finish_build(self.pool)
        update_span_counts(self.index)  # from the appended rows alone when the sidecar covers the rows before them
        self.report.n_skipped = len(self.report.skipped)
        self.report.n_total = len(self.index)
        self.report.seconds = time.perf_counter() - start_time
        logger.info(self.report.summary())
        return self.report


def _build(index: RiseIndex, data: PoolData, lm: LoadedModel, config: RiseConfig | None, batch_size: int,
           progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
           start_time: float, phase_progress: PhaseProgress | None = None) -> BuildReport:
    pool = pool_key(data)
    new, report = prepare_build(index, data, lm, config, pool)
    extractor = index.extractor(lm)
    writer = BuildWriter(index, report, len(new), progress, should_stop, phase_progress, pool)
    if needs_mean_fit(index, new):
        fit_part, new = split_mean_fit(new, index.config.seed)
        fitted_extractor = writer.fit_mean_and_store(lm, extractor, fit_part, batch_size)
        if fitted_extractor is None:
            return writer.finish(start_time)
        extractor = fitted_extractor

    window = batch_size * WINDOW_BATCHES
    for w_start in range(0, len(new), window):
        if report.stopped:
            break
        usable, skipped = encode_usable(extractor, new[w_start:w_start + window])
        writer.skip(skipped)
        for b_start in range(0, len(usable), batch_size):
            if writer.stop_requested():
                break
            writer.store(extractor, usable[b_start:b_start + batch_size])
    return writer.finish(start_time)


class _NewRows:
    """The samples of a stream not yet in the index, from its start, as (row, sample); a stored id whose text
    changed is refused. With `tally`, the rows it passes by (skipped by the reader, or already present) go into
    the report and count as done, and `n_samples` / `n_rows` count what was read."""

    def __init__(self, stream: PoolStream, existing: dict[str, str], window: int, index: RiseIndex,
                 writer: BuildWriter | None = None) -> None:
        self.stream, self.existing, self.window, self.index, self.writer = stream, existing, window, index, writer
        self.n_samples = self.n_rows = 0
        self._stored: dict[str, tuple[Any, dict[str, Any]]] | None = None  # labels and metadata, read when needed

    def __iter__(self) -> Iterator[tuple[int, Sample]]:
        for chunk in self.stream.chunks(self.window):
            if self.writer is not None:
                self.n_samples, self.n_rows = self.n_samples + len(chunk), self.n_rows + chunk.n_rows
                self.writer.report.skipped.extend(chunk.skipped)
                self.writer.done += len(chunk.skipped)
            present = []
            for sample, row in zip(chunk.samples, chunk.rows, strict=True):
                stored = self.existing.get(str(sample.id))
                if stored is None:
                    yield row, sample
                elif stored != content_hash(sample):
                    raise InputDataError(f"id {sample.id!r} (row {row}) is already in {self.index.path} with "
                                         "different text; give it another id, or build a new index")
                elif self.writer is not None:
                    self.writer.report.n_already_present += 1
                    self.writer.done += 1
                    present.append(sample)
            if self.writer is not None:
                if present:
                    if self._stored is None:
                        self._stored = self.index.labels_and_meta()
                    self.writer.report.note_relabelled(relabelled(self._stored, present))
                self.writer.show()


def _build_stream(index: RiseIndex, stream: PoolStream, lm: LoadedModel, config: RiseConfig | None, batch_size: int,
                  progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
                  start_time: float, counted: tuple[int, int] | None,
                  phase_progress: PhaseProgress | None = None) -> BuildReport:
    """`_build` over a stream read window by window; the same index as `_build` on the pool read whole.

    The hidden-state mean of a new index is fitted on the seeded subset of its samples that `_build` uses
    (`mean_fit_rows` of their number: `counted`, the (samples, rows) of a read made before the index was created,
    else counted by a read here), gathered by a second read; the last read commits the other samples window by
    window. An append or a resume is one read."""
    index.check_model(lm)
    if config is not None:
        index.check_config(config)
    existing = index.id_hashes()
    window = batch_size * WINDOW_BATCHES
    report = BuildReport(n_added=0, n_already_present=0, n_skipped=0, skipped=[], seconds=0.0, stopped=False,
                         n_rows=stream.n_rows or 0, index_path=str(index.path))
    pool = pool_key(stream)
    writer = BuildWriter(index, report, stream.n_rows or (counted[1] if counted else 0), progress, should_stop,
                         phase_progress, pool)
    extractor = index.extractor(lm)

    def building() -> None:
        index.start_build(pool, stream.source)

    fit_positions: set[int] = set()
    if index.config.needs_hidden_mean and index.hidden_mean is None:
        n_new = counted[0] if counted is not None and len(index) == 0 else sum(
            1 for _ in _NewRows(stream, existing, window, index))
        if needs_mean_fit(index, range(n_new)):
            fit_positions = set(mean_fit_rows(n_new, index.config.seed))
            fit_part = [item for pos, item in enumerate(
                itertools.islice(_NewRows(stream, existing, window, index), max(fit_positions) + 1))
                if pos in fit_positions]
            building()
            fitted_extractor = writer.fit_mean_and_store(lm, extractor, fit_part, batch_size)
            del fit_part
            if fitted_extractor is None:
                return writer.finish(start_time)
            extractor = fitted_extractor

    def commit_window(part: list[tuple[int, Sample]]) -> None:
        building()
        usable, skipped = encode_usable(extractor, part)
        writer.skip(skipped)
        for b_start in range(0, len(usable), batch_size):
            if writer.stop_requested():
                break
            writer.store(extractor, usable[b_start:b_start + batch_size])

    rows = _NewRows(stream, existing, window, index, writer)
    part: list[tuple[int, Sample]] = []
    for pos, item in enumerate(rows):
        if report.stopped:
            break
        if pos not in fit_positions:
            part.append(item)
        if len(part) == window:
            commit_window(part)
            part = []
    if part and not report.stopped:
        commit_window(part)
    if not report.stopped:
        report.n_rows = rows.n_rows
        if rows.n_samples == 0:  # an append of a source with no usable row (a new index was counted before)
            raise no_usable_rows(stream.source, len(report.skipped), report.skipped)
    writer.show()
    return writer.finish(start_time)
