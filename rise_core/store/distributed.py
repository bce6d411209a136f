"""Sharded index builds on Ray: workers extract features, this process (the coordinator) is the only writer.

The coordinator reads the pool and skips the ids already stored, as `build_index` does. On a first build of a config
that centres hidden states, one worker fits the mean on the same seeded subset as `build_index` and returns that
subset's features with it. The other samples are cut into shards of whole length-sorting windows
(`batch_size * WINDOW_BATCHES` samples), so each worker forms exactly the batches the one-process build forms. Workers
are Ray actors (one per GPU, else one per group of CPUs) that load the model once from its hub id or path and return
each shard's per-batch features. The coordinator commits them in pool order (shards that finish early wait in a
reorder buffer), one transaction per batch: the index is the one `build_index` writes, same rows in the same order
with the same features.

On the index of a fine-tune, the rows' losses under the adapter's base model follow the features, as in `build_index`:
each worker loads the base once and computes the losses of a window of rows at a time (`store_base_losses`).

Failures: Ray restarts a worker that dies and reruns its shards (`max_retries`); only the coordinator writes, once
per shard and in order, so nothing is stored twice. A killed coordinator leaves whole batches, and running the same
build again skips the stored ids and finishes, as with `build_index`.

Ray is optional (`pip install "rise-core[distributed]"`): it is imported here, and only when a sharded build runs.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..config import RiseConfig
from ..errors import ConfigError, DistributedBuildError, IndexMismatchError, ModelLoadError, RiseError
from ..ingest import FieldMap
from ..models import LoadedModel
from ..samples import Sample
from .batches import BatchFeatures, encode_usable, needs_mean_fit, split_mean_fit
from .build import (
    BuildWriter,
    PhaseProgress,
    PoolInput,
    base_losses_skipped,
    check_batch_size,
    fill_base_losses,
    load_pool,
    open_for_build,
    pool_key,
    prepare_build,
    replacing,
    rows_needing_base_losses,
)
from .files import check_new_location
from .index import RiseIndex
from .schema import WINDOW_BATCHES, BuildReport

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install \"ray>=2.30\" (or pip install \"rise-core[distributed]\")"
# Test hook: when this variable names a file in a worker's environment, the first worker to claim the file (by
# deleting it) dies in the middle of its shard, as a killed or out-of-memory worker would.
CRASH_FLAG_ENV = "RISE_DISTRIBUTED_CRASH_FLAG"
POLL_SECONDS = 0.5  # how often should_stop() is polled while waiting for workers
SHARDS_PER_WORKER = 2  # shards queued on each worker, so it never waits for the coordinator
BUFFERED_PER_WORKER = 4  # shards submitted but not yet committed, per worker (bounds the reorder buffer)


def import_ray() -> Any:
    """The `ray` module, or a DistributedBuildError saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise DistributedBuildError(f"a sharded build (--workers N or --ray-address) needs Ray, which is not "
                                    f"installed: {INSTALL_HINT}. Without it, build with one process (--workers 1)."
                                    ) from exc
    return ray


def build_index_distributed(index_path: str | Path, pool: PoolInput, model: str | Path | None = None,
                            config: RiseConfig | None = None, workers: int = 2, address: str | None = None,
                            shard_size: int | None = None, fields: FieldMap | None = None, batch_size: int = 8,
                            device: str = "auto", dtype: str = "float32", trust_remote_code: bool = False,
                            cpus_per_worker: int | None = None, max_retries: int = 3,
                            progress: Callable[[int, int], None] | None = None,
                            should_stop: Callable[[], bool] | None = None, overwrite: bool = False,
                            preset: str | None = None, phase_progress: PhaseProgress | None = None) -> BuildReport:
    """`build_index` with the features computed by `workers` Ray actors; this process alone writes the index.

    `model` is a hub id or checkpoint path that every worker loads (None: the existing index's model, else the
    embedded default). `address`: None starts a local Ray (or uses the one this process already joined), "auto" or
    "ray://host:10001" joins a running cluster. Each worker takes one GPU when the cluster has GPUs and `device` is
    "auto" or "cuda", else `cpus_per_worker` CPUs (default: the cluster's CPUs shared out). `shard_size` (samples per
    task, default two windows) is rounded up to whole windows of `batch_size * WINDOW_BATCHES` samples. A worker that
    dies is restarted and its shard rerun up to `max_retries` times. Progress, stopping, resuming, appending and the
    report are those of `build_index` (`preset` and `phase_progress` too: the mean's fit runs on one worker, so its
    phase is counted at its start and end only), and the index holds the same rows in the same order."""
    start_time = time.perf_counter()
    check_batch_size(batch_size)
    if isinstance(model, LoadedModel):
        raise ConfigError("build_index_distributed loads the model on each worker: pass its hub id or checkpoint "
                          f"path (e.g. {model.model_id!r}), not a loaded model")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(f"max_retries must be a non-negative integer, got {max_retries!r}")
    window = batch_size * WINDOW_BATCHES
    if shard_size is not None and (not isinstance(shard_size, int) or shard_size < 1):
        raise ConfigError(f"shard_size must be a positive integer, got {shard_size!r}")
    shard_size = window * max(1, -(-(shard_size or 2 * window) // window))
    ray = import_ray()
    data = load_pool(pool, fields)  # bad input fails before Ray starts or the index is touched
    path = Path(index_path)
    if path.exists() and not overwrite:
        if model is None:
            with RiseIndex.open(path, read_only=True) as existing:
                model = existing.manifest.model_id
    else:
        check_new_location(path, overwrite)
    spec = str(model) if isinstance(model, Path) else model

    started = _connect(ray, address, workers, cpus_per_worker)
    actors: list[Any] = []
    try:
        actors = _start_workers(ray, spec, workers, device, dtype, trust_remote_code, cpus_per_worker, max_retries)
        identity = _identity(ray, actors, spec)

        def build() -> BuildReport:
            index, own = open_for_build(path, identity, config, overwrite, preset)  # type: ignore[arg-type]
            try:
                run = _Coordinator(ray, actors, index, batch_size, window, max_retries)
                report = run.build(data, identity, config, shard_size, progress, should_stop, start_time,
                                   phase_progress)
                if not report.stopped:
                    report.n_base_losses, report.stopped = run.store_base_losses(identity, should_stop,
                                                                                 phase_progress)
                    report.seconds = time.perf_counter() - start_time
                return report
            finally:
                if own:
                    index.close()
        return replacing(path, build) if overwrite else build()  # an overwrite keeps the old index until the end
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()


# -- Ray session and workers ------------------------------------------------------------------------------------------


def _connect(ray: Any, address: str | None, workers: int, cpus_per_worker: int | None) -> bool:
    """Join or start Ray; True when this call started it (and so shuts it down)."""
    if ray.is_initialized():
        return False
    if address is None:
        cpus = max(os.cpu_count() or 1, workers * (cpus_per_worker or 1))
        # "local": a new Ray for this build, even when `ray start` runs on this machine (join that with "auto")
        ray.init(address="local", num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING)
        return True
    try:
        ray.init(address=address, logging_level=logging.WARNING)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise DistributedBuildError(f"cannot join the Ray cluster at {address!r} ({exc}). Start one first: "
                                    "`ray start --head` on the head node, `ray start --address HEAD:6379` on the "
                                    "others; or leave out --ray-address to start a local Ray.") from exc
    return True


def _start_workers(ray: Any, spec: str | None, workers: int, device: str, dtype: str, trust_remote_code: bool,
                   cpus_per_worker: int | None, max_retries: int) -> list[Any]:
    """The worker actors (not yet started): one GPU each when the cluster has GPUs and `device` allows, else
    `cpus_per_worker` CPUs each (default: the cluster's CPUs shared out)."""
    resources = ray.cluster_resources()
    n_gpus, n_cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    device = device or "auto"
    if device.startswith("cuda") and n_gpus == 0:
        raise ConfigError(f"--device {device} was asked for but the Ray cluster has no GPU; use --device cpu or auto")
    use_gpu = n_gpus > 0 and device != "cpu"
    if use_gpu and workers > n_gpus:
        raise ConfigError(f"{workers} workers asked for, but the Ray cluster has {n_gpus} GPU(s) and a worker takes "
                          f"one: use --workers {n_gpus}, or --device cpu")
    cpus = cpus_per_worker or (1 if use_gpu else max(1, n_cpus // workers))
    if workers * cpus > n_cpus:
        raise ConfigError(f"{workers} workers x {cpus} CPUs asked for, but the Ray cluster has {n_cpus} CPUs: use "
                          f"--workers {max(1, n_cpus // cpus)} or fewer")
    logger.info("starting %d workers (%s each)", workers, "1 GPU" if use_gpu else f"{cpus} CPUs")
    remote = ray.remote(ShardWorker).options(num_cpus=cpus, num_gpus=1 if use_gpu else 0, max_restarts=max_retries,
                                            max_task_retries=max_retries)
    return [remote.remote(spec, "cuda" if use_gpu else "cpu", dtype, trust_remote_code, cpus)
            for _ in range(workers)]


@dataclass(frozen=True)
class ModelIdentity:
    """A model as its workers report it (`LoadedModel.describe()`): what creating and checking an index needs, so the
    coordinator never loads the model itself."""

    model_id: str
    info: dict[str, Any]

    def fingerprint(self) -> str:
        return str(self.info["fingerprint"])

    def describe(self) -> dict[str, Any]:
        return dict(self.info)

    @property
    def adapter(self) -> dict[str, Any] | None:
        """The merged adapter's record, as the workers' model carries it (`learned.base_model_spec` reads it)."""
        return self.info.get("adapter")

    @property
    def vocab_size(self) -> int:
        return int(self.info["vocab_size"])

    @property
    def hidden_size(self) -> int:
        return int(self.info["hidden_size"])

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, self.info["dtype"])


def _identity(ray: Any, actors: list[Any], spec: str | None) -> ModelIdentity:
    """The model every worker loaded; refuses workers that loaded different weights (another checkpoint under the
    same path on another node)."""
    infos = _get(ray, [actor.identity.remote() for actor in actors], "load the model")
    prints = {info["fingerprint"] for info in infos}
    if len(prints) > 1:
        raise DistributedBuildError(f"the workers loaded different models for {spec!r} (fingerprints "
                                    f"{sorted(prints)}): give every node the same checkpoint")
    return ModelIdentity(model_id=infos[0]["model_id"], info=infos[0])


def _get(ray: Any, refs: Any, what: str) -> Any:
    """`ray.get`, with a worker's RiseError raised as itself and a worker that kept dying as DistributedBuildError."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, RiseError):
            raise cause from None
        raise DistributedBuildError(f"a worker failed to {what}: {cause!r}") from exc
    except ray.exceptions.RayActorError as exc:
        raise DistributedBuildError(f"a worker died and could not be restarted while trying to {what} ({exc}). "
                                    "The batches committed so far are kept: run the same build again to resume."
                                    ) from exc


@dataclass
class WorkSetup:
    """What a worker needs besides the model: the index's config, its CountSketch hashes and (once fixed) the mean.
    Sent with every call (as one Ray object), so a restarted worker needs no state."""

    config: RiseConfig
    sketches: dict[str, torch.Tensor]
    hidden_mean: torch.Tensor | None
    key: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class ShardResult:
    """A shard's features, batch by batch in the one-process build's order, and its rows without a counted token."""

    fingerprint: str
    batches: list[BatchFeatures]
    skipped: list[tuple[int, str]]
    hidden_mean: torch.Tensor | None = None  # the mean fitted by `fit_mean`


class ShardWorker:
    """A Ray actor: loads the model once and computes the features of shards. Stateless between calls (the setup
    comes with each one), so Ray can restart it and rerun any shard."""

    def __init__(self, model: str | None, device: str, dtype: str, trust_remote_code: bool, threads: int) -> None:
        from transformers.utils import logging as hf_logging

        from ..models import load_model

        torch.set_num_threads(max(1, int(threads)))
        hf_logging.disable_progress_bar()  # one bar per worker would land on the coordinator's terminal
        self._error: RiseError | None = None
        self._extractor: Any = None
        self._key = ""
        self._base: LoadedModel | None = None  # the fine-tune's base model, loaded when first asked for
        try:
            self.lm: LoadedModel | None = load_model(model, device=device, dtype=dtype,
                                                     trust_remote_code=trust_remote_code)
        except RiseError as exc:  # raised by identity(), so the coordinator shows it as itself
            self.lm, self._error = None, exc

    def _model(self) -> LoadedModel:
        if self._error is not None:
            raise self._error
        assert self.lm is not None
        return self.lm

    def identity(self) -> dict[str, Any]:
        return self._model().describe()

    def _extractor_for(self, setup: WorkSetup) -> Any:
        from ..engine import RiseExtractor
        from ..sketch import SketchSet

        if setup.key != self._key:
            self._extractor = RiseExtractor(self._model(), setup.config, SketchSet.from_state_dict(setup.sketches),
                                            setup.hidden_mean)
            self._key = setup.key
        return self._extractor

    def fit_mean(self, setup: WorkSetup, items: list[tuple[int, Sample]], batch_size: int) -> ShardResult:
        """The mean fitted on `items` (the pool's mean-fit subset) and their features, as `build_index` computes
        them."""
        from ..engine import RiseExtractor
        from ..sketch import SketchSet
        from .batches import batch_features, fit_hidden_mean

        lm = self._model()
        sketches = SketchSet.from_state_dict(setup.sketches)
        usable, skipped = encode_usable(RiseExtractor(lm, setup.config, sketches), items)
        fitted = fit_hidden_mean(lm, setup.config, usable, batch_size)
        assert fitted is not None, "a fit without should_stop runs to its end"
        mean, batches = fitted
        # features with the mean as the index stores it (float64) and gives it back to `build_index`'s extractor
        extractor = RiseExtractor(lm, setup.config, sketches, mean.detach().cpu().double())
        out = [batch_features(extractor, batch, readout) for batch, readout in batches]
        return ShardResult(lm.fingerprint(), out, skipped, hidden_mean=mean.detach().cpu())

    def run_shard(self, setup: WorkSetup, items: list[tuple[int, Sample]], batch_size: int,
                  window: int) -> ShardResult:
        """The features of a shard: its windows length-sorted and batched exactly as `build_index` does."""
        from .batches import batch_features

        extractor = self._extractor_for(setup)
        batches, skipped = [], []
        for w_start in range(0, len(items), window):
            usable, sk = encode_usable(extractor, items[w_start:w_start + window])
            skipped.extend(sk)
            for b_start in range(0, len(usable), batch_size):
                batches.append(batch_features(extractor, usable[b_start:b_start + batch_size]))
                _crash_if_flagged()
        return ShardResult(self._model().fingerprint(), batches, skipped)


    def base_ready(self) -> str | None:
        """Load the base model under this worker's fine-tune (once); None when loaded, else why it cannot be."""
        from .. import learned

        if self._base is None:
            try:
                self._base = learned.load_base_model(self._model())
            except ModelLoadError as exc:
                return str(exc)
        return None

    def base_losses(self, samples: list[Sample], config: RiseConfig, batch_size: int) -> Any:
        """Each sample's loss under the base model (`learned.base_model_losses`), as `build_index` computes it."""
        from .. import learned

        problem = self.base_ready()
        if problem is not None:
            raise ModelLoadError(problem)
        return learned.base_model_losses(self._model(), samples, config, self._base, batch_size)


def _crash_if_flagged() -> None:
    """The test hook of CRASH_FLAG_ENV: die at once if this worker is the first to claim the flag file."""
    flag = os.environ.get(CRASH_FLAG_ENV)
    if not flag:
        return
    try:
        os.unlink(flag)
    except FileNotFoundError:
        return
    os._exit(1)


# -- the coordinator ----------------------------------------------------------------------------------------------


class _Coordinator:
    """Hands shards to the workers and commits their features in pool order; the only writer of the index."""

    def __init__(self, ray: Any, actors: list[Any], index: RiseIndex, batch_size: int, window: int,
                 max_retries: int) -> None:
        self.ray, self.actors, self.index = ray, actors, index
        self.batch_size, self.window, self.max_retries = batch_size, window, max_retries

    def build(self, data: Any, identity: ModelIdentity, config: RiseConfig | None, shard_size: int,
              progress: Callable[[int, int], None] | None, should_stop: Callable[[], bool] | None,
              start_time: float, phase_progress: PhaseProgress | None = None) -> BuildReport:
        pool = pool_key(data)
        new, report = prepare_build(self.index, data, identity, config, pool)  # type: ignore[arg-type]
        writer = BuildWriter(self.index, report, len(new), progress, should_stop, phase_progress, pool)
        cfg = self.index.config
        sketches = self.index.sketches.state_dict()
        self.fingerprint = self.index.manifest.model_fingerprint
        if needs_mean_fit(self.index, new):
            fit_part, new = split_mean_fit(new, cfg.seed)
            setup = self.ray.put(WorkSetup(cfg, sketches, None))
            writer.fitting(0, len(fit_part))
            result = self._wait_for(self.actors[0].fit_mean.remote(setup, fit_part, self.batch_size), writer,
                                    "fit the hidden-state mean")
            if result is None:
                return writer.finish(start_time)
            assert result.hidden_mean is not None
            fitted_on = len(fit_part) - len(result.skipped)  # the samples the fit ran, as `build_index` counts them
            writer.fitting(fitted_on, fitted_on)
            self.index.set_hidden_mean(result.hidden_mean)
            self._commit(writer, fit_part, result)
        if not report.stopped and new:
            setup = self.ray.put(WorkSetup(cfg, sketches, self.index.hidden_mean))
            self._run_shards(writer, setup, [new[i:i + shard_size] for i in range(0, len(new), shard_size)])
        return writer.finish(start_time)

    def store_base_losses(self, identity: ModelIdentity, should_stop: Callable[[], bool] | None,
                          phase_progress: PhaseProgress | None) -> tuple[int, bool]:
        """`build.store_base_losses` with the workers computing: one window of rows per worker at a time, committed
        in order. Nothing for a plain model; a base no worker can load is logged, as `build_index` does."""
        rows = rows_needing_base_losses(self.index, identity)
        if not rows:
            return 0, False
        problem = _get(self.ray, self.actors[0].base_ready.remote(), "load the base model")
        if problem is not None:
            base_losses_skipped(self.index, ModelLoadError(problem))
            return 0, False
        cfg = self.index.config

        def losses_of(windows: list[list[Sample]]) -> list[Any]:
            refs = [self.actors[i % len(self.actors)].base_losses.remote(w, cfg, self.batch_size)
                    for i, w in enumerate(windows)]
            return _get(self.ray, refs, "compute the base model's losses")

        try:
            return fill_base_losses(self.index, rows, losses_of, self.window, should_stop, phase_progress,
                                    group=len(self.actors))
        except ModelLoadError as exc:  # another worker (another node) could not load it: the windows stored stay
            base_losses_skipped(self.index, exc)
            return len(rows) - len(self.index.rows_without_base_loss()), False

    def _wait_for(self, ref: Any, writer: BuildWriter, what: str) -> ShardResult | None:
        """One call's result, or None when should_stop() asked to stop first."""
        while True:
            ready, _ = self.ray.wait([ref], num_returns=1, timeout=POLL_SECONDS)
            if ready:
                return _get(self.ray, ready[0], what)
            if writer.stop_requested():
                return None

    def _run_shards(self, writer: BuildWriter, setup: Any, shards: list[list[tuple[int, Sample]]]) -> None:
        """Keep every worker busy (SHARDS_PER_WORKER queued each) and commit finished shards in order; a shard that
        finishes before those ahead of it waits in `finished` (at most BUFFERED_PER_WORKER per worker in all)."""
        pending: dict[Any, tuple[int, int]] = {}  # ref -> (shard, worker)
        finished: dict[int, ShardResult] = {}
        load = [0] * len(self.actors)
        next_submit = next_commit = 0
        max_ahead = BUFFERED_PER_WORKER * len(self.actors)
        while next_commit < len(shards):
            while next_submit < len(shards) and next_submit - next_commit < max_ahead:
                worker = min(range(len(self.actors)), key=load.__getitem__)
                if load[worker] >= SHARDS_PER_WORKER:
                    break
                ref = self.actors[worker].run_shard.remote(setup, shards[next_submit], self.batch_size, self.window)
                pending[ref] = (next_submit, worker)
                load[worker] += 1
                next_submit += 1
            if next_commit in finished:
                self._commit(writer, shards[next_commit], finished.pop(next_commit))
                if writer.report.stopped:
                    return
                next_commit += 1
                continue
            ready, _ = self.ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                shard, worker = pending.pop(ref)
                load[worker] -= 1
                finished[shard] = _get(self.ray, ref, f"compute shard {shard + 1} of {len(shards)}")
            if not ready and writer.stop_requested():
                return

    def _commit(self, writer: BuildWriter, items: Sequence[tuple[int, Sample]], result: ShardResult) -> None:
        """Commit a shard batch by batch (polling should_stop() before each, as `build_index` does)."""
        if result.fingerprint != self.fingerprint:
            raise IndexMismatchError(f"a worker's model (fingerprint {result.fingerprint}) is not the index's "
                                  f"({self.fingerprint}): did the checkpoint change during the build?")
        writer.skip(result.skipped)
        by_id = {str(s.id): s for _, s in items}
        for batch in result.batches:
            if writer.stop_requested():
                return
            writer.commit([by_id[i] for i in batch.ids], batch)
