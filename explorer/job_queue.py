"""One queue for everything heavy the explorer runs, shared by every session of the server.

Builds, fine-tunes, counterfactual checks (background jobs) and the heavy work a page runs in its own thread (peer
builds, evaluations, diagnostics, a forward pass over the pool) all take a place in this queue: at most
`max_running` of them run at once (1 by default: a small machine has the cores for one), each user may hold at most
`max_per_user` places (running or waiting), and at most `max_waiting` wait. Jobs start in the order they were
submitted; Start and Resume both go through `submit`, so no button skips the line.

Settings (environment variables): RISE_MAX_JOBS, RISE_MAX_JOBS_PER_USER, RISE_MAX_WAITING_JOBS.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from rise_core.env_limits import EnvLimits, env_field
from rise_core.errors import RiseError


class QueuedJob(Protocol):
    """What the queue needs of a background job (`explorer.jobs.BackgroundJob` is one): told its place when queued,
    launched when its turn comes. Declared here, below the jobs, so that the queue imports nothing of them."""

    def queued(self, queue: JobQueue, place: Place) -> None: ...

    def launch(self) -> Any: ...


J = TypeVar("J", bound=QueuedJob)


class ServerBusyError(RiseError):
    """The queue refused a job: the user holds too many places, the queue is full, or the same job is queued."""


@dataclass(frozen=True)
class QueueLimits(EnvLimits):
    """How much heavy work the server takes at once (`from_env` reads the variables). The defaults suit a small shared
    machine (2 cores): one job uses the cores, so a second one running beside it would only halve both
    (docs/PERFORMANCE.md)."""

    max_running: int = env_field(1, "RISE_MAX_JOBS", "jobs running at once")
    max_per_user: int = env_field(2, "RISE_MAX_JOBS_PER_USER", "jobs a user holds")
    max_waiting: int = env_field(16, "RISE_MAX_WAITING_JOBS", "jobs waiting", minimum=0)


@dataclass
class Place:
    """A place in the queue: a background job, or a page's own work waiting for its turn (`job` None)."""

    number: int
    owner: str
    kind: str  # "build", "fine-tune", "check", "evaluation", ...
    label: str
    key: str  # two places with the same key may not be in the queue at once (e.g. two builds of one index)
    job: QueuedJob | None = None
    state: str = "waiting"  # waiting, running
    submitted_at: float = 0.0


class JobQueue:
    """The server's queue (see the module doc). Thread-safe; `explorer.resources.job_queue()` holds the one the
    pages share."""

    def __init__(self, limits: QueueLimits | None = None) -> None:
        self.limits = limits or QueueLimits.from_env()
        self._cond = threading.Condition(threading.RLock())
        self._places: list[Place] = []
        self._numbers = itertools.count(1)

    # --- taking a place -------------------------------------------------------------------------------------------

    def _admit(self, owner: str, kind: str, label: str, key: str, job: QueuedJob | None) -> Place:
        held = sum(1 for p in self._places if p.owner == owner)
        if any(p.key == key for p in self._places):
            raise ServerBusyError(f"this {kind} ({label}) is already queued or running; wait for it or stop it")
        if held >= self.limits.max_per_user:
            raise ServerBusyError(
                f"you already have {held} jobs queued or running (the limit per user is {self.limits.max_per_user}, "
                "RISE_MAX_JOBS_PER_USER); wait for one to finish or stop one")
        waiting = sum(1 for p in self._places if p.state == "waiting")
        if waiting >= self.limits.max_waiting and self._running() >= self.limits.max_running:
            raise ServerBusyError(f"the server's queue is full ({waiting} jobs waiting, RISE_MAX_WAITING_JOBS); "
                                  "try again later")
        place = Place(next(self._numbers), owner, kind, label, key, job, submitted_at=time.monotonic())
        self._places.append(place)
        return place

    def submit(self, job: J, *, owner: str, kind: str, label: str, key: str) -> J:
        """Queue a background job; it starts when a running slot is free and every job before it has started.
        ServerBusyError when the queue refuses it (same key queued, per-user limit, queue full)."""
        with self._cond:
            place = self._admit(owner, kind, label, key, job)
            job.queued(self, place)
            self._dispatch()
        return job

    @contextmanager
    def slot(self, *, owner: str, kind: str, label: str, key: str, timeout_s: float = 900.0,
             waiting: Callable[[int], None] | None = None) -> Iterator[Place]:
        """Run a page's own heavy work in the queue's order: blocks until its turn (calling `waiting(position)` when
        it must wait), yields, and frees the place afterwards. ServerBusyError when refused or after `timeout_s`."""
        with self._cond:
            place = self._admit(owner, kind, label, key, None)
            self._dispatch()
            deadline = time.monotonic() + timeout_s
            told = None
            while place.state != "running":
                position = self.position_of(place)
                if waiting is not None and position != told:
                    waiting(position)
                    told = position
                left = deadline - time.monotonic()
                if left <= 0:
                    self._places.remove(place)
                    self._dispatch()
                    raise ServerBusyError(f"the server was busy for {timeout_s:.0f} s with other jobs; try again later")
                self._cond.wait(min(left, 1.0))
        try:
            yield place
        finally:
            self.finished(place)

    # --- the queue's state ----------------------------------------------------------------------------------------

    def _running(self) -> int:
        return sum(1 for p in self._places if p.state == "running")

    def _dispatch(self) -> None:
        """Start waiting places in order while a running slot is free (the caller holds the lock)."""
        for place in self._places:
            if self._running() >= self.limits.max_running:
                break
            if place.state != "waiting":
                continue
            place.state = "running"
            if place.job is not None:
                place.job.launch()
        self._cond.notify_all()

    def finished(self, place: Place) -> None:
        """A place's work ended (or was cancelled): free it and start the next."""
        with self._cond:
            if place in self._places:
                self._places.remove(place)
            self._dispatch()

    def cancel(self, place: Place) -> bool:
        """Take a waiting place out of the queue; False if it already runs (stop the job instead)."""
        with self._cond:
            if place.state != "waiting" or place not in self._places:
                return False
            self._places.remove(place)
            self._dispatch()
            return True

    def position_of(self, place: Place) -> int:
        """0 while it runs; else how many places wait before it, plus one (1: next to start)."""
        with self._cond:
            if place.state == "running":
                return 0
            waiting = [p for p in self._places if p.state == "waiting"]
            return waiting.index(place) + 1 if place in waiting else 0

    def snapshot(self) -> list[dict[str, Any]]:
        """One row per place, in order, for the pages' queue view."""
        with self._cond:
            now = time.monotonic()
            return [{"#": p.number, "what": p.kind, "label": p.label, "user": p.owner, "state": p.state,
                     "waiting for (s)": round(now - p.submitted_at) if p.state == "waiting" else None}
                    for p in self._places]
