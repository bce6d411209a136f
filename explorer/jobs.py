"""Index builds in background threads, and the read-only indexes shared by the server's sessions.

A build runs in a thread so that its page can show progress, the user can switch pages and stop it; the registry
makes sure that a build and the readers of the same DuckDB file never hold it open at once.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from rise_core.errors import IndexStoreError, RiseError
from rise_core.store import RiseIndex
from rise_core.units import format_seconds

from .job_queue import JobQueue, Place

if TYPE_CHECKING:
    from rise_core.config import RiseConfig
    from rise_core.ingest import PoolData
    from rise_core.models import LoadedModel
    from rise_core.store import BuildReport


@dataclass(kw_only=True)
class BackgroundJob:
    """Work in a daemon thread that a page polls: its status, error, timing and a stop flag.

    Subclasses implement `_work` (returns the final status: "done" or "stopped") and may set `first_status`."""

    status: str = "pending"
    error: BaseException | None = None
    started_at: float = 0.0
    finished_at: float = 0.0
    owner: str = ""  # who started it (the queue's place says, when submitted): they may stop it (`may_stop`)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _queue: JobQueue | None = field(default=None, repr=False)
    _place: Place | None = field(default=None, repr=False)

    first_status = "running"  # the status while the thread starts its work
    active_statuses = ("pending", "queued", "running")
    editors_may_stop = False  # whether an editor may stop another user's job of this kind (`may_stop`)

    def _work(self) -> str:
        raise NotImplementedError

    def _thread_name(self) -> str:
        return f"rise-{type(self).__name__}"

    def start(self):  # noqa: ANN201 - returns the subclass
        """Start now, outside any queue (scripts and tests; the pages submit to `JobQueue`)."""
        return self.launch()

    def queued(self, queue: JobQueue, place: Place) -> None:
        """Called by `JobQueue.submit`: the job waits for its turn; the queue calls `launch` then."""
        self._queue, self._place, self.status = queue, place, "queued"
        self.owner = self.owner or place.owner

    def may_stop(self, user: str, can_edit: bool) -> bool:
        """Whether `user` may stop (or cancel) this job: whoever started it, and an editor where the kind allows
        (`editors_may_stop`: work over a shared pool, not what one user builds). A job started outside the queue
        (scripts, tests) names no owner, and anyone may stop it."""
        return not self.owner or user == self.owner or (self.editors_may_stop and can_edit)

    def launch(self):  # noqa: ANN201 - returns the subclass
        self.status, self.started_at = self.first_status, time.monotonic()
        self._thread = threading.Thread(target=self._run, name=self._thread_name(), daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self.status = self._work()
        except BaseException as exc:  # reported to the page; the thread must not die silently
            self.error, self.status = exc, "failed"
        finally:
            self.finished_at = time.monotonic()
            if self._queue is not None and self._place is not None:
                self._queue.finished(self._place)

    def stop(self) -> None:
        """Ask the work to stop after the batch (build) or step (fine-tune) in progress; a job still waiting in the
        queue leaves it ("cancelled")."""
        self._stop.set()
        if self.status == "queued" and self._queue is not None and self._place is not None:
            if self._queue.cancel(self._place):
                self.status, self.finished_at = "cancelled", time.monotonic()

    @property
    def queue_position(self) -> int:
        """How many jobs start before this one, plus one, while it waits in the queue; 0 otherwise."""
        if self.status != "queued" or self._queue is None or self._place is None:
            return 0
        return self._queue.position_of(self._place)

    def queued_message(self) -> str:
        """The page's line for a job still waiting (empty once it runs)."""
        if self.status == "cancelled":
            return "Cancelled before it started."
        position = self.queue_position
        if not position:
            return ""
        ahead = "it starts next" if position == 1 else f"{position - 1} jobs wait before it"
        return (f"Queued: the server runs {self._queue.limits.max_running if self._queue else 1} heavy job(s) at a "
                f"time and one is running; {ahead}. Stop takes it out of the queue.")

    @property
    def running(self) -> bool:
        return self.status in self.active_statuses

    @property
    def elapsed(self) -> float:
        """Seconds since the work started (until it ended); 0 before it starts."""
        end = self.finished_at if not self.running else time.monotonic()
        return max(0.0, end - self.started_at) if self.started_at else 0.0

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (tests, scripts); True if it has ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running


def machine_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


def build_threads(max_running: int, cores: int | None = None) -> int:
    """Torch threads for one build: the machine's cores shared out among the heavy jobs the queue runs at once
    (`RISE_MAX_JOBS`, 1 by default: a build then has every core), at least one."""
    return max(1, (cores or machine_cores()) // max(1, max_running))


@dataclass
class BuildJob(BackgroundJob):
    """An index build running in a background thread, so the page can show progress, switch pages and stop it.

    The thread calls `rise_core.store.build_index` with progress callbacks (every phase counted: `phase`,
    `phase_done` of `phase_total`) and a `should_stop` that reads this job's stop flag; a stopped build leaves
    finished samples in the index and a later build resumes. It runs torch on `threads` threads (`build_threads`).
    """

    index_path: Path
    pool: PoolData
    lm: LoadedModel
    config: RiseConfig
    batch_size: int = 8
    replace: bool = False  # start from scratch: when the job runs, the index at index_path is set aside (kept)
    label: str = ""  # the pool's name, recorded in the index's provenance
    built_by: str = ""  # who builds it, recorded in the index's provenance (the first builder owns the index)
    preset: str | None = None  # the preset a new index is built for (build_index's `preset`)
    base_model: LoadedModel | None = None  # a fine-tune's base model, held already (build_index's `base_model`)
    done: int = 0  # samples stored
    total: int = 0
    phase: str = ""  # the build's current phase (`rise_core.store.build.FIT_PHASE`, `FEATURE_PHASE`) and its count
    phase_done: int = 0
    phase_total: int = 0
    threads: int = 0  # torch threads the build ran on (set when it starts)
    max_running: int = 1  # the heavy jobs the queue runs at once, among which the cores are shared
    report: BuildReport | None = None
    kept: Path | None = None  # where a replaced index was set aside
    _first: tuple[float, int] | None = field(default=None, repr=False)

    def _thread_name(self) -> str:
        return f"rise-build-{self.index_path.name}"

    def _progress(self, done: int, total: int) -> None:
        self.done, self.total = int(done), int(total)

    def _phase_progress(self, phase: str, done: int, total: int) -> None:
        if phase != self.phase or self._first is None:  # the rate (ETA) of each phase is its own
            self._first = (time.monotonic(), int(done))
        self.phase, self.phase_done, self.phase_total = phase, int(done), int(total)

    def _work(self) -> str:
        from rise_core.store import build_index  # looked up at run time: tests swap it for a slow or failing one
        from rise_core.store.files import set_aside

        if self.replace and self.index_path.exists():  # only now, when its turn comes: a refused job moves nothing
            self.kept = set_aside(self.index_path)
        self.max_running = self._queue.limits.max_running if self._queue is not None else 1
        self.threads = build_threads(self.max_running)
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            self.report = build_index(self.index_path, self.pool, self.lm, self.config, batch_size=self.batch_size,
                                      progress=self._progress, should_stop=self._stop.is_set, overwrite=False,
                                      built_by=self.built_by or None, source=self.label or None, preset=self.preset,
                                      phase_progress=self._phase_progress, base_model=self.base_model)
        finally:
            torch.set_num_threads(before)
        return "stopped" if self.report.stopped else "done"

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() and self.running

    @property
    def fraction(self) -> float:
        """Of the current phase (the bar restarts with each phase; the message names it)."""
        if self.status == "done":
            return 1.0
        return min(1.0, self.phase_done / self.phase_total) if self.phase_total else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Remaining time of the current phase from its rate since its first report (None until there is a rate)."""
        if self._first is None or not self.phase_total:
            return None
        t0, d0 = self._first
        rate = (self.phase_done - d0) / max(1e-9, time.monotonic() - t0)
        return (self.phase_total - self.phase_done) / rate if rate > 0 else None

    def message(self) -> str:
        """One line for the page: queue position, progress, ETA, or the outcome."""
        if self.status in ("queued", "cancelled"):
            return self.queued_message()
        if self.running:
            eta = self.eta_seconds
            verb = "Stopping after this batch" if self.stopping else "Building"
            if not self.phase:
                return f"{verb}: reading the pool (elapsed {format_seconds(self.elapsed)})."
            tail = f", about {format_seconds(eta)} left in this step" if eta is not None else ""
            threads = f"; {self.threads_note}" if self.threads else ""
            return (f"{verb}, {self.phase}: {self.phase_done}/{self.phase_total or '?'} samples{tail} "
                    f"(elapsed {format_seconds(self.elapsed)}{threads}).")
        if self.status == "failed":
            return f"The build failed: {self.error}"
        r = self.report
        assert r is not None, "a build that ended without failing has its report"
        extra = ((f", {r.n_already_present} already in the index" if r.n_already_present else "")
                 + (f", {r.n_skipped} rows skipped" if r.n_skipped else ""))
        if self.status == "stopped":
            return (f"Stopped after {format_seconds(self.elapsed)}: {r.n_added} samples added{extra}. "
                    "Start the build again to resume where it stopped.")
        kept = f" The old index is kept as {self.kept.name}." if self.kept else ""
        threads = f" ({self.threads_note})" if self.threads else ""
        left = (f" The index is not complete: the build of {', '.join(r.unfinished)} was not finished; build it again "
                "to finish it." if r.unfinished else "")
        relabelled = f" {r.relabelled_note}." if r.n_relabelled else ""
        return (f"Done in {format_seconds(self.elapsed)}{threads}: {r.n_added} samples added{extra}.{kept}{left}"
                f"{relabelled}")

    @property
    def threads_note(self) -> str:
        """How many threads the build ran on, and why."""
        return (f"{self.threads} threads: {machine_cores()} cores shared by {self.max_running} job(s) at a time, "
                "RISE_MAX_JOBS")

    @property
    def friendly_error(self) -> bool:
        return isinstance(self.error, RiseError)


def _stamp(path: Path) -> float:
    """Last modification time of an index (a file, or the newest file of a directory); 0 if it is missing."""
    if path.is_dir():
        return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)
    stamps = [p.stat().st_mtime for p in (path, path.with_name(path.name + ".wal")) if p.exists()]
    return max(stamps, default=0.0)


class IndexRegistry:
    """Read-only indexes opened once per process and the builds running on them.

    DuckDB allows one writer per file, and a process may not hold the same file open read-only and read-write at
    once, so a build first closes the readers of its index and the index cannot be opened until the build ends.
    An index modified on disk since it was opened is reopened on the next `open`.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._open: dict[str, tuple[float, RiseIndex]] = {}
        self._jobs: dict[str, BuildJob] = {}
        atexit.register(self.close_all)  # close the DuckDB connections before the interpreter tears down

    @staticmethod
    def key(path: str | Path) -> str:
        return str(Path(path).expanduser().resolve())

    def job(self, path: str | Path) -> BuildJob | None:
        return self._jobs.get(self.key(path))

    def open(self, path: str | Path) -> RiseIndex:
        key = self.key(path)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.running:
                raise IndexStoreError(f"the index {Path(key).name} is being built; wait for the build to finish or "
                                      "stop it on the Build index page")
            stamp = _stamp(Path(key))
            cached = self._open.get(key)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if cached is not None:
                self._close(cached[1])
            index = RiseIndex.open(key, read_only=True)
            self._open[key] = (stamp, index)
            return index

    def release(self, path: str | Path) -> None:
        """Close the shared reader of an index (before writing to it)."""
        with self._lock:
            cached = self._open.pop(self.key(path), None)
            if cached is not None:
                self._close(cached[1])

    def start_build(self, job: BuildJob, queue: JobQueue | None = None, owner: str = "local") -> BuildJob:
        """Start a build of `job.index_path` (through `queue` when given: it waits for its turn there). The index's
        readers are closed, and it cannot be opened, until the build ends."""
        key = self.key(job.index_path)
        with self._lock:
            current = self._jobs.get(key)
            if current is not None and current.running:
                raise IndexStoreError(f"a build of {Path(key).name} is already running or queued; stop it or wait "
                                      "for it")
            self.release(key)  # before the job can start (submit may start it at once)
            if queue is None:
                job.start()
            else:
                queue.submit(job, owner=owner, kind="build", label=Path(key).name, key=f"build:{key}")
            self._jobs[key] = job
            return job

    def close_all(self) -> None:
        with self._lock:
            for _, index in self._open.values():
                self._close(index)
            self._open.clear()

    @staticmethod
    def _close(index: RiseIndex) -> None:
        try:
            index.close()
        except Exception:  # noqa: BLE001 - closing a stale reader must never break the page
            pass


@dataclass
class FinetuneJob(BackgroundJob):
    """A LoRA fine-tune (`rise_core.finetune.finetune`) in a background thread, with its loss curve for the page.

    It loads its own copy of the base model: the cached one serves queries meanwhile and must not grow LoRA layers.
    Stopping checkpoints after the step in progress; starting the same fine-tune again resumes it."""

    model_id: str
    samples: list
    out_dir: Path
    recipe: object  # rise_core.finetune.FinetuneConfig
    label: str = ""
    steps: list = field(default_factory=list)  # FinetuneProgress of every step so far
    manifest: dict = field(default_factory=dict)

    first_status = "loading"
    active_statuses = ("pending", "queued", "loading", "running")

    def _thread_name(self) -> str:
        return f"rise-finetune-{self.out_dir.name}"

    def _work(self) -> str:
        from rise_core.finetune import finetune
        from rise_core.models import load_model

        lm = load_model(self.model_id)
        self.status = "running"
        result = finetune(lm, self.samples, self.out_dir, self.recipe, progress=self.steps.append,
                          should_stop=self._stop.is_set, pool_source=self.label)
        self.manifest = result.manifest
        return "stopped" if result.stopped else "done"

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        last = self.steps[-1] if self.steps else None
        return last.step / last.total_steps if last else 0.0

    def message(self) -> str:
        """One line for the page: queue position, step, loss, speed and ETA, or the outcome."""
        if self.status in ("queued", "cancelled"):
            return self.queued_message()
        if self.status == "loading":
            return "Loading a copy of the model to fine-tune…"
        if self.running:
            if not self.steps:
                return "Starting…"
            p = self.steps[-1]
            verb = "Stopping after this step" if self._stop.is_set() else "Fine-tuning"
            return (f"{verb}: step {p.step}/{p.total_steps} (epoch {p.epoch}), loss {p.loss:.3f}, "
                    f"{p.tokens_per_s:.0f} tokens/s, about {format_seconds(p.eta_s)} left.")
        if self.status == "failed":
            return f"The fine-tune failed: {self.error}"
        if self.status == "stopped":
            return (f"Stopped at step {self.steps[-1].step if self.steps else 0}: a checkpoint is saved in "
                    f"{self.out_dir}; start the fine-tune again to resume.")
        m = self.manifest
        return (f"Done: final epoch loss {m.get('final_loss', float('nan')):.3f}, {m.get('tokens_per_s')} tokens/s. "
                f"The adapter is in {self.out_dir}.")


class _PassStopped(Exception):
    """Raised from a pool pass's progress callback when its job was asked to stop."""


@dataclass
class PoolPassJob(BackgroundJob):
    """One pass over every sample of an index's pool in a background thread, its result kept by the server when it
    is done (`keep`): a text baseline fitted on a pool too large for a request (MiniLM's embeddings, BM25's index) or
    the model's forward pass for Grad-Sketch. The page that started it may rerun or be left meanwhile (a pass in the
    request was lost to any click); stopping ends it at the next batch that reports progress."""

    what: str  # "MiniLM embeddings", "forward pass"
    n_rows: int
    run: Callable[[Callable[[int, int], None]], Any]  # progress(done, total) -> the result
    keep: Callable[[Any], None]
    done_rows: int = 0

    editors_may_stop = True  # a pass over a shared pool: whoever started it, or an editor

    def _thread_name(self) -> str:
        return f"rise-pass-{self.what.replace(' ', '-')}"

    def _work(self) -> str:
        def progress(done: int, total: int) -> None:
            if self._stop.is_set():
                raise _PassStopped
            self.done_rows = done

        try:
            result = self.run(progress)
        except _PassStopped:
            return "stopped"
        self.keep(result)
        self.done_rows = self.n_rows
        return "done"

    @property
    def fraction(self) -> float:
        return 1.0 if self.status == "done" else min(1.0, self.done_rows / self.n_rows) if self.n_rows else 0.0

    def message(self) -> str:
        """One line for the page: the queue position, the rows done so far, or the outcome."""
        if self.status in ("queued", "cancelled"):
            return self.queued_message()
        if self.running:
            verb = "Stopping" if self._stop.is_set() else "Running"
            return (f"{verb}: the {self.what} over {self.n_rows:,} pool samples, {self.done_rows:,} done "
                    f"(elapsed {format_seconds(self.elapsed)}).")
        if self.status == "failed":
            return f"The {self.what} failed: {self.error}"
        if self.status == "stopped":
            return f"The {self.what} was stopped after {format_seconds(self.elapsed)}; start it again to rerun it."
        return f"The {self.what} over {self.n_rows:,} pool samples is done ({format_seconds(self.elapsed)})."
