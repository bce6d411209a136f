"""The server's one queue of heavy work (explorer.job_queue): the global running limit, submission order, the
per-user limit, duplicates, a full queue, cancelling a waiting job, and page work (`slot`) waiting its turn."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from explorer.job_queue import JobQueue, QueueLimits, ServerBusyError
from explorer.jobs import BackgroundJob
from rise_core.errors import ConfigError


@dataclass
class GatedJob(BackgroundJob):
    """A job that runs until its gate opens, noting the order jobs started in."""

    name: str = ""
    log: list = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)

    def _work(self) -> str:
        self.log.append(self.name)
        self.gate.wait(10)
        return "stopped" if self._stop.is_set() else "done"

    def message(self) -> str:
        return self.queued_message() or self.status


def submit(queue: JobQueue, name: str, owner: str, log: list) -> GatedJob:
    return queue.submit(GatedJob(name=name, log=log), owner=owner, kind="build", label=name, key=name)


def test_one_runs_at_a_time_in_submission_order():
    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=3, max_waiting=8)), []
    a, b, c = submit(queue, "a", "ann", log), submit(queue, "b", "bob", log), submit(queue, "c", "cy", log)
    assert a.running and a.queue_position == 0
    assert (b.status, b.queue_position, c.status, c.queue_position) == ("queued", 1, "queued", 2)
    assert "it starts next" in b.message() and "1 jobs wait before it" in c.message()
    a.gate.set()
    assert a.wait(5) and a.status == "done"
    assert _wait_for(lambda: b._thread is not None)
    assert c.status == "queued" and c.queue_position == 1  # b runs now, c is next
    b.gate.set()
    assert b.wait(5)
    assert _wait_for(lambda: c._thread is not None)
    c.gate.set()
    assert c.wait(5)
    assert log == ["a", "b", "c"]
    assert queue.snapshot() == []


def _wait_for(condition, timeout: float = 5.0) -> bool:
    event = threading.Event()
    end = threading.Timer(timeout, event.set)
    end.start()
    try:
        while not condition():
            if event.wait(0.01):
                return condition()
        return True
    finally:
        end.cancel()


def test_two_running_slots_start_two_jobs_at_once():
    queue, log = JobQueue(QueueLimits(max_running=2, max_per_user=3, max_waiting=8)), []
    jobs = [submit(queue, n, n, log) for n in "abc"]
    assert [j.status for j in jobs] == ["running", "running", "queued"]
    for j in jobs:
        j.gate.set()
    assert all(j.wait(5) for j in jobs[:2]) and _wait_for(lambda: jobs[2]._thread is not None) and jobs[2].wait(5)


def test_per_user_limit_duplicates_and_a_full_queue_are_refused():
    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=2, max_waiting=2)), []
    first = submit(queue, "a1", "ann", log)
    submit(queue, "a2", "ann", log)
    with pytest.raises(ServerBusyError, match="limit per user is 2.*RISE_MAX_JOBS_PER_USER"):
        submit(queue, "a3", "ann", log)
    with pytest.raises(ServerBusyError, match="already queued or running"):
        submit(queue, "a1", "bob", log)  # the same index, by anyone
    submit(queue, "b1", "bob", log)  # waiting: a2, b1 -> full
    with pytest.raises(ServerBusyError, match="queue is full"):
        submit(queue, "c1", "cy", log)
    for place in list(queue._places):
        place.job.gate.set()
    first.wait(5)


def test_stop_takes_a_waiting_job_out_of_the_queue_and_the_next_one_moves_up():
    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=3, max_waiting=8)), []
    a, b, c = (submit(queue, n, n, log) for n in "abc")
    b.stop()
    assert b.status == "cancelled" and not b.running and b.message() == "Cancelled before it started."
    assert c.queue_position == 1
    a.gate.set()
    c.gate.set()
    assert a.wait(5) and _wait_for(lambda: c._thread is not None) and c.wait(5)
    assert log == ["a", "c"]


def test_a_failing_job_frees_its_slot():
    @dataclass
    class Failing(BackgroundJob):
        def _work(self) -> str:
            raise RuntimeError("boom")

    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=3, max_waiting=8)), []
    bad = queue.submit(Failing(), owner="ann", kind="build", label="bad", key="bad")
    nxt = submit(queue, "next", "bob", log)
    assert bad.wait(5) and bad.status == "failed"
    assert _wait_for(lambda: nxt._thread is not None)
    nxt.gate.set()
    assert nxt.wait(5) and log == ["next"]


def test_page_work_waits_for_its_turn_behind_a_running_job():
    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=3, max_waiting=8)), []
    build = submit(queue, "build", "ann", log)
    positions, entered = [], threading.Event()

    def page() -> None:
        with queue.slot(owner="bob", kind="evaluation", label="howdy", key="eval", waiting=positions.append):
            log.append("evaluation")
            entered.set()

    thread = threading.Thread(target=page)
    thread.start()
    assert not entered.wait(0.3)  # still queued behind the build
    assert positions == [1]
    build.gate.set()
    assert entered.wait(5)
    thread.join(5)
    assert log == ["build", "evaluation"] and queue.snapshot() == []


def test_page_work_gives_up_after_its_timeout_and_leaves_the_queue():
    queue, log = JobQueue(QueueLimits(max_running=1, max_per_user=3, max_waiting=8)), []
    build = submit(queue, "build", "ann", log)
    with pytest.raises(ServerBusyError, match="busy"), queue.slot(owner="bob", kind="evaluation", label="x",
                                                                  key="x", timeout_s=0.2):
        pass
    assert [p["label"] for p in queue.snapshot()] == ["build"]
    build.gate.set()
    build.wait(5)


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("RISE_MAX_JOBS", "2")
    monkeypatch.setenv("RISE_MAX_JOBS_PER_USER", "5")
    assert QueueLimits.from_env() == QueueLimits(max_running=2, max_per_user=5, max_waiting=16)
    monkeypatch.setenv("RISE_MAX_JOBS", "0")  # a settings mistake: ConfigError (as every limit read from the env)
    with pytest.raises(ConfigError, match="RISE_MAX_JOBS='0': give a whole number of at least 1"):
        QueueLimits.from_env()
    monkeypatch.setenv("RISE_MAX_JOBS", "many")
    with pytest.raises(ConfigError, match="RISE_MAX_JOBS='many': give a whole number"):
        QueueLimits.from_env()
    monkeypatch.setenv("RISE_MAX_JOBS", "1")
    monkeypatch.setenv("RISE_MAX_WAITING_JOBS", "0")  # no waiting place: allowed
    assert QueueLimits.from_env().max_waiting == 0
