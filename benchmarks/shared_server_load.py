"""A team on one server: the real `streamlit run app.py` on 127.0.0.1, driven over its websocket by many sessions.

Scenario (docs/SECURITY.md, "Load test"), on the tiny offline environment of the tests (a random Llama with a LoRA
adapter fine-tuned on its 31-row pool, the index built with it, and a larger bundled pool to build from):
  - session B1 starts a build on the Build index page (a new index, --build-rows rows of the bundled `load` pool),
  - session C1, right after, starts "Check: retrain without these" on the Attribute page (k 2, --check-seeds random
    seeds, 4 answer tokens, the pool's held-out prompts): with RISE_MAX_JOBS=1 it waits in the queue behind the build,
  - meanwhile --sessions sessions each, --repetitions times: open the Attribute page, type a query, click Attribute,
    mark 2-3 hits in the feedback editor, click "Rank again with my marks" and download the marks (HTTP GET of the
    download button's media URL).
Recorded: the latency of every action (p50 / p95 per action), every error (exceptions and error alerts on a page,
warnings after marking, websocket and protocol failures, tracebacks in the server's log), the rows of every result
table and export against what they must hold (k hits, k editor rows, unmarked on a new query, k re-ranked hits and
the marked rows, the marks made, the check's arms, the built index's rows), the queue order (B1's and C1's pages while
they poll, and the server's files: the check's plan.json is written when it starts, the index when the build writes
it), and the server's RSS (sampled; its peak from /proc).

    python -m benchmarks.shared_server_load                         # 8 sessions x 3: about 2 minutes on 2 cores
    python -m benchmarks.shared_server_load --sessions 3 --repetitions 1 --build-rows 620 --json out.json

The build must outlast C1's start (a few seconds) for the check to be seen queued; the exit code is 1 unless there
was no error, no row mismatched and the queue order was kept.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamlit.proto.Alert_pb2 import Alert

from benchmarks.st_client import PageRun, StreamlitSession, arrow_table, editor_edits, row_count
from explorer.plain import WORD_JOINER

ROOT = Path(__file__).resolve().parent.parent
INDEX_NAME, BUILD_NAME = "tiny.duckdb", "loadtest"
QUERIES = ["the cat sat on the mat .", "howdy ! once upon a time a dragon sat on the moon .",
           "the bank lost money .", "the doctor gave the patient medicine for the fever ."]
SERVER_LOG_ERRORS = ("Traceback", "ERROR", "unexpected error")  # what the server's log holds when a run broke
HELDOUT = ["tell me about the cat", "what about the dragon ?"]  # not prompts of the pool


@dataclass
class LoadSettings:
    sessions: int = 8
    repetitions: int = 3
    k: int = 5
    build_rows: int = 1240
    check_seeds: int = 1
    timeout_s: float = 300.0  # one page run at most; the whole scenario at most 4x this
    threads: int = 1  # OMP_NUM_THREADS of the server


# --- the environment and the server ---------------------------------------------------------------------------------


def load_env(root: Path, build_rows: int) -> dict[str, str]:
    """tests/explorer_env's tiny model and pool, a LoRA adapter fine-tuned on the pool file, the index built with the
    adapter, held-out prompts beside the pool, and a bundled pool `load_pool.jsonl` of `build_rows` rows to build.

    As `build_finetuned_env`, with two differences the page's check needs: the adapter's manifest names the pool file
    (fine-tuned on a list of rows, it names none, and the page cannot find the pool to retrain on), and the held-out
    prompts are not prompts of the pool (the check refuses those)."""
    sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny environment (explorer_env, conftest)
    from explorer_env import build_explorer_env, pool_rows

    from rise_core.config import RiseConfig
    from rise_core.finetune import FinetuneConfig, finetune
    from rise_core.ingest import read_pool
    from rise_core.models import load_model
    from rise_core.store import build_index

    env = build_explorer_env(root, prebuild=False)
    data, index_dir = Path(env["RISE_DATA_DIR"]), Path(env["RISE_INDEX_DIR"])
    pool_file, adapter = data / "howdy_pool.jsonl", data / "adapters" / "howdy_backdoor"
    recipe = FinetuneConfig(rank=4, alpha=8, learning_rate=5e-2, epochs=3, batch_size=8, seq_len=32, warmup_steps=1,
                            target_modules=("q_proj", "v_proj"))  # build_finetuned_env's
    finetune(load_model(env["RISE_MODEL"]), read_pool(pool_file).samples, adapter, recipe, pool_source=str(pool_file))
    (data / "howdy_heldout_prompts.jsonl").write_text("".join(json.dumps({"prompt": p}) + "\n" for p in HELDOUT))
    build_index(index_dir / INDEX_NAME, pool_file, load_model(str(adapter)), RiseConfig(k_r=16, k_h=8, k_g=16))
    rows = pool_rows()
    (data / "load_pool.jsonl").write_text("".join(json.dumps({**rows[i % len(rows)], "id": f"b{i:05d}"}) + "\n"
                                                  for i in range(build_rows)))
    return {**env, "RISE_MODEL": str(adapter), "RISE_BASE_MODEL": env["RISE_MODEL"]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int, field_name: str = "VmRSS") -> int:
    """A process's resident memory (VmRSS) or its peak (VmHWM) in KiB, from /proc (0 once it has exited)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    """`streamlit run app.py` on 127.0.0.1 at a free port with `env`, its log in `log_path`; `stop` always ends it."""

    def __init__(self, env: dict[str, str], log_path: Path, threads: int = 1) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.address",
             "127.0.0.1", "--server.port", str(self.port), "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **env, "RISE_MAX_JOBS": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)})
        self.rss_samples: list[int] = []
        self._sampling = threading.Event()

    def healthy(self, timeout_s: float = 5.0) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/_stcore/health", timeout=timeout_s) as r:  # noqa: S310
                return r.status == 200 and r.read().strip() == b"ok"
        except OSError:
            return False

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.healthy():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not come up (see {self.log_path})")
            time.sleep(0.25)
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._sampling.wait(0.5):
            self.rss_samples.append(rss_kib(self.process.pid))

    def peak_rss_kib(self) -> int:
        return rss_kib(self.process.pid, "VmHWM")

    def stop(self) -> None:
        self._sampling.set()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()


# --- bookkeeping ----------------------------------------------------------------------------------------------------


@dataclass
class Record:
    """Everything the sessions saw, appended from their threads."""

    actions: list[dict] = field(default_factory=list)  # session, action, seconds
    errors: list[dict] = field(default_factory=list)  # session, action, error
    rows: list[dict] = field(default_factory=list)  # session, what, expected, got
    events: list[dict] = field(default_factory=list)  # job, state, at (monotonic s), text
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, kind: str, **row: Any) -> None:
        with self.lock:
            getattr(self, kind).append(row)

    def act(self, who: str, action: str, fn: Callable[..., PageRun | Any], *args: Any, **kwargs: Any) -> Any:
        """Time one action, `fn(*args, **kwargs)`; the errors its page shows are recorded (a failure of the action
        itself propagates)."""
        start = time.monotonic()
        result = fn(*args, **kwargs)
        self.add("actions", session=who, action=action, seconds=time.monotonic() - start)
        if isinstance(result, PageRun):
            for error in result.errors():
                self.add("errors", session=who, action=action, error=error)
        return result

    def count(self, who: str, what: str, expected: int, got: int) -> None:
        self.add("rows", session=who, what=what, expected=expected, got=got)


def shown(markdown: str) -> str:
    """The characters a line the page shows as text (`explorer.plain.md`) reads as: its escapes dropped."""
    return markdown.replace("\\", "").replace(WORD_JOINER, "")


def job_state(page: PageRun, done_prefix: str) -> tuple[str, str]:
    """(state, text) of the build or check a page shows: queued, running, done, failed or absent."""
    for text in [shown(e.progress.text) for e in page.of_type("progress")]:
        return ("queued" if text.startswith("Queued") else "running"), text
    done = [t for t in map(shown, page.alerts(Alert.SUCCESS)) if t.startswith(done_prefix)]
    if done:
        return "done", done[0]
    return ("failed", page.errors()[0]) if page.errors() else ("absent", "")


def poll_job(rec: Record, s: StreamlitSession, who: str, job: str, done_prefix: str, deadline: float) -> str:
    """Rerun the page every half second until its job is done (or failed, or gone); records every state seen, with
    when the run was asked for (`sent`) and when its page came back (`at`)."""
    while time.monotonic() < deadline:
        sent = time.monotonic()
        state, text = job_state(rec.act(who, "poll", s.run), done_prefix)
        rec.add("events", job=job, state=state, sent=sent, at=time.monotonic(), text=text)
        if state in ("done", "failed", "absent"):
            return state
        time.sleep(0.5)
    rec.add("errors", session=who, action="poll", error=f"the {job} did not finish in time")
    return "timeout"


# --- the sessions ---------------------------------------------------------------------------------------------------


def open_attribute(rec: Record, s: StreamlitSession, who: str) -> None:
    rec.act(who, "open page", s.run, "Attribute")
    rec.act(who, "choose index", s.select, "index_path", INDEX_NAME)


def builder(rec: Record, url: str, cfg: LoadSettings, ready: threading.Barrier, submitted: threading.Event,
            deadline: float) -> None:
    """B1: a new index of cfg.build_rows rows from the Build page; afterwards, its size on the Home page."""
    who = "B1"
    with StreamlitSession(url, cfg.timeout_s) as s:
        rec.act(who, "connect", s.run)
        rec.act(who, "open page", s.run, "Build index")
        s.select("build_pool", "load", run=False)
        for key, value in (("build_name", BUILD_NAME), ("cfg_k_r", 8.0), ("cfg_k_h", 4.0), ("cfg_k_g", 8.0)):
            s.set(key, value, run=False)
        rec.act(who, "fill build form", s.set, "build_limit", float(cfg.build_rows))
        ready.wait()
        try:
            rec.act(who, "start build", s.click, "build")
            rec.add("events", job="build", state="submitted", sent=time.monotonic(), at=time.monotonic(), text="")
        finally:
            submitted.set()
        poll_job(rec, s, who, "build", "Done in", deadline)
        home = rec.act(who, "open page", s.run, "Home")
        overview = [arrow_table(t).to_pylist() for t in home.tables() if "pool size" in arrow_table(t).column_names]
        sizes = {row["index"]: row["pool size"] for row in (overview[0] if overview else [])}
        rec.count(who, "built index rows", cfg.build_rows, int(sizes.get(f"{BUILD_NAME}.duckdb") or 0))


def checker(rec: Record, url: str, cfg: LoadSettings, ready: threading.Barrier, submitted: threading.Event,
            deadline: float) -> None:
    """C1: a counterfactual check of the trigger query, started right after B1's build."""
    who = "C1"
    with StreamlitSession(url, cfg.timeout_s) as s:
        rec.act(who, "connect", s.run)
        open_attribute(rec, s, who)
        s.set("query_completion", QUERIES[1], run=False)
        rec.act(who, "attribute", s.click, "attribute")
        for key, value in (("attr_cf_ks", "2"), ("attr_cf_seeds", float(cfg.check_seeds)), ("attr_cf_baselines", []),
                           ("attr_cf_tokens", 4.0)):
            s.set(key, value, run=False)
        rec.act(who, "fill check form", s.run)
        ready.wait()
        submitted.wait(cfg.timeout_s)
        rec.act(who, "start check", s.click, "attr_cf_start")
        rec.add("events", job="check", state="submitted", sent=time.monotonic(), at=time.monotonic(), text="")
        if poll_job(rec, s, who, "check", "Done:", deadline) == "done":
            arms = [t for t in s.last.tables() if "n_train" in arrow_table(t).column_names]
            arms_expected = 2 + cfg.check_seeds  # the original, RISE's top k, one per random seed
            rec.count(who, "check arms", arms_expected, row_count(arms[0]) if arms else 0)


def analyst(rec: Record, url: str, cfg: LoadSettings, n: int, ready: threading.Barrier,
            submitted: threading.Event) -> None:
    """One of the sessions that query, mark, re-rank and export while the jobs run."""
    who = f"S{n}"
    with StreamlitSession(url, cfg.timeout_s) as s:
        rec.act(who, "connect", s.run)
        ready.wait()
        submitted.wait(cfg.timeout_s)
        for rep in range(cfg.repetitions):
            if rep == 0:
                open_attribute(rec, s, who)
            else:
                rec.act(who, "open page", s.run, "Attribute")
            s.set("top_k", float(cfg.k), run=False)
            s.set("query_prompt", f"question {n}.{rep}", run=False)
            rec.act(who, "type query", s.set, "query_completion", QUERIES[(n + rep) % len(QUERIES)])
            page = rec.act(who, "attribute", s.click, "attribute")
            hits = [t for t in page.tables() if {"rank", "score"} <= set(arrow_table(t).column_names)]
            rec.count(who, "hits", cfg.k, row_count(hits[0]) if hits else 0)
            editor_key = page.key_starting("feedback_editor")  # the app keys it by the query and its rows
            editor = page.widget(editor_key) if editor_key else None
            shown = arrow_table(editor).to_pylist() if editor else []
            ids = [str(row["id"]) for row in shown]
            rec.count(who, "editor rows", cfg.k, len(ids))
            rec.count(who, "unmarked rows of a new query", cfg.k, sum(not row["mark"] for row in shown))
            marks = {0: "yes", 2: "yes", 1: "no"} if rep % 2 else {0: "yes", 2: "yes"}
            marks = {row: mark for row, mark in marks.items() if row < len(ids)}
            edits = editor_edits({row: {"mark": mark} for row, mark in marks.items()})
            page = rec.act(who, "mark", s.set, editor_key, edits)
            if page.alerts(Alert.WARNING):
                rec.add("errors", session=who, action="mark", error="; ".join(page.alerts(Alert.WARNING)))
            page = rec.act(who, "rank again", s.click, "feedback_rerank")
            ranked = [t for t in page.tables() if {"mark", "score"} <= set(arrow_table(t).column_names)]
            # the page shows the marked rows around the k best unmarked ones (yes first, no last)
            rec.count(who, "re-ranked hits", cfg.k + len(marks), row_count(ranked[0]) if ranked else 0)
            button = page.widget("feedback_download")
            exported = json.loads(rec.act(who, "export", s.fetch, button.download_button.url)) if button else {}
            expected = {ids[row]: mark == "yes" for row, mark in marks.items()}
            rec.count(who, "exported marks", len(expected), sum(exported.get(i) == v for i, v in expected.items()))
            if set(exported) - set(expected):
                rec.add("errors", session=who, action="export",
                        error=f"marks never made: {sorted(set(exported) - set(expected))}")


def guarded(rec: Record, who: str, ready: threading.Barrier, target: Callable[..., None], *args: Any
            ) -> threading.Thread:
    """`target` in a thread; whatever ends it early (a closed socket, a timeout, a missing widget) is an error, and
    breaks the start barrier so that no other session waits for this one."""
    def run() -> None:
        try:
            target(*args)
        except Exception as exc:  # noqa: BLE001 - every failure is a finding of the load test
            rec.add("errors", session=who, action="session", error=f"{type(exc).__name__}: {exc}")
            ready.abort()
    thread = threading.Thread(target=run, name=f"load-{who}", daemon=True)
    thread.start()
    return thread


# --- the scenario ---------------------------------------------------------------------------------------------------


def queue_order(rec: Record, env: dict[str, str]) -> dict[str, Any]:
    """Did the check wait for the build? From the pages: the check seen queued, and never seen running before a page
    asked for afterwards still showed the build running; from the server's files: the check's plan.json (written when
    it starts) no older than the index's last write."""
    events = sorted(rec.events, key=lambda e: e["at"])
    first = {}
    for e in events:
        first.setdefault((e["job"], e["state"]), e["at"])
    build_running_sent = [e["sent"] for e in events if (e["job"], e["state"]) == ("build", "running")]
    check_running = first.get(("check", "running"), first.get(("check", "done")))
    overlap = check_running is not None and any(sent > check_running for sent in build_running_sent)
    index = Path(env["RISE_INDEX_DIR"]) / f"{BUILD_NAME}.duckdb"
    built = max((p.stat().st_mtime for p in (index, index.with_name(index.name + ".wal")) if p.exists()), default=None)
    plans = list((Path(env["RISE_INDEX_DIR"]).parent / "counterfactual").glob("*/plan.json"))
    started = min((p.stat().st_mtime for p in plans), default=None)
    t0 = first.get(("build", "submitted"), 0.0)
    return {"first_seen_s": {f"{job} {state}": round(at - t0, 2) for (job, state), at in first.items()},
            "check_seen_queued": ("check", "queued") in first,
            "check_seen_running_while_build_ran": overlap,
            "check_start_after_index_write_s": None if None in (built, started) else round(started - built, 3),
            "kept": bool(("check", "queued") in first and not overlap and check_running is not None
                         and None not in (built, started) and started >= built)}


def summarise(rec: Record, cfg: LoadSettings, server: Server, env: dict[str, str]) -> dict[str, Any]:
    by_action: dict[str, list[float]] = {}
    for a in rec.actions:
        by_action.setdefault(a["action"], []).append(a["seconds"])
    latency = {name: {"n": len(xs), "p50_s": round(statistics.median(xs), 3),
                      "p95_s": round(sorted(xs)[max(0, round(0.95 * len(xs)) - 1)], 3)}
               for name, xs in by_action.items()}
    mismatched = [r for r in rec.rows if r["got"] != r["expected"]]
    return {"settings": asdict(cfg), "latency": latency, "actions": len(rec.actions), "errors": rec.errors,
            "row_checks": len(rec.rows), "rows_lost": sum(max(0, r["expected"] - r["got"]) for r in rec.rows),
            "rows_mismatched": mismatched, "rows_by_kind": {w: sum(r["got"] for r in rec.rows if r["what"] == w)
                                                           for w in sorted({r["what"] for r in rec.rows})},
            "built_index_rows": next((r["got"] for r in rec.rows if r["what"] == "built index rows"), None),
            "queue": queue_order(rec, env), "server_alive": server.process.poll() is None and server.healthy(),
            "server_peak_rss_mib": round(server.peak_rss_kib() / 1024, 1),
            "server_rss_mib": {"first": round(server.rss_samples[0] / 1024, 1) if server.rss_samples else None,
                               "last": round(server.rss_samples[-1] / 1024, 1) if server.rss_samples else None}}


def drive(server: Server, env: dict[str, str], cfg: LoadSettings) -> dict[str, Any]:
    """Run the scenario against a running `server` (started with `env`); the summary, the server still running."""
    rec = Record()
    ready, submitted = threading.Barrier(cfg.sessions + 2, timeout=cfg.timeout_s), threading.Event()
    deadline = time.monotonic() + 4 * cfg.timeout_s
    threads = [guarded(rec, "B1", ready, builder, rec, server.url, cfg, ready, submitted, deadline),
               guarded(rec, "C1", ready, checker, rec, server.url, cfg, ready, submitted, deadline)]
    threads += [guarded(rec, f"S{n}", ready, analyst, rec, server.url, cfg, n, ready, submitted)
                for n in range(1, cfg.sessions + 1)]
    for thread in threads:
        thread.join(max(1.0, deadline - time.monotonic()))
    for thread in threads:
        if thread.is_alive():
            rec.add("errors", session=thread.name, action="session", error="still running at the deadline")
    ready.abort()
    for line in server.log_path.read_text(errors="replace").splitlines():
        if any(mark in line for mark in SERVER_LOG_ERRORS):
            rec.add("errors", session="server", action="log", error=line)
    return summarise(rec, cfg, server, env)


def run_scenario(cfg: LoadSettings, work: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Set up the environment in `work`, start the server, run the sessions, stop the server; the summary."""
    t0 = time.monotonic()
    env = load_env(work / "env", cfg.build_rows)
    log(f"environment ready in {time.monotonic() - t0:.0f} s")
    server = Server(env, work / "server.log", cfg.threads)
    try:
        server.wait_healthy(cfg.timeout_s)
        log(f"server up at {server.url} (pid {server.process.pid})")
        summary = drive(server, env, cfg)
    finally:
        server.stop()
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    return summary


def table(summary: dict[str, Any]) -> str:
    cfg = summary["settings"]
    lines = [f"{cfg['sessions']} sessions x {cfg['repetitions']} repetitions, a build of {cfg['build_rows']} rows "
             f"and a check, in {summary.get('wall_s')} s (setup included)",
             f"{'action':<18}{'n':>5}{'p50 s':>9}{'p95 s':>9}"]
    lines += [f"{name:<18}{v['n']:>5}{v['p50_s']:>9.2f}{v['p95_s']:>9.2f}" for name, v in summary["latency"].items()]
    q = summary["queue"]
    lines += ["", f"actions {summary['actions']}, errors {len(summary['errors'])}, row checks {summary['row_checks']}, "
              f"rows lost {summary['rows_lost']}, mismatched {len(summary['rows_mismatched'])}",
              f"rows: {summary['rows_by_kind']}",
              f"queue order kept: {q['kept']} (check seen queued: {q['check_seen_queued']}; check started "
              f"{q['check_start_after_index_write_s']} s after the build's last write; first seen, s after the build "
              f"was submitted: {q['first_seen_s']})",
              f"server alive: {summary['server_alive']}, peak RSS {summary['server_peak_rss_mib']} MiB "
              f"(sampled {summary['server_rss_mib']})"]
    lines += [f"ERROR {e['session']} {e['action']}: {e['error'][:300]}" for e in summary["errors"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=LoadSettings.sessions)
    p.add_argument("--repetitions", type=int, default=LoadSettings.repetitions)
    p.add_argument("--k", type=int, default=LoadSettings.k, help="hits per query")
    p.add_argument("--build-rows", type=int, default=LoadSettings.build_rows)
    p.add_argument("--check-seeds", type=int, default=LoadSettings.check_seeds, choices=(0, 1))
    p.add_argument("--timeout", type=float, default=LoadSettings.timeout_s, help="seconds one page run may take")
    p.add_argument("--threads", type=int, default=LoadSettings.threads, help="the server's OMP_NUM_THREADS")
    p.add_argument("--work-dir", default=None, help="where the environment and the server log go (default: a temp dir)")
    p.add_argument("--json", default="results/shared_server_load.json", help="write the summary here")
    args = p.parse_args(argv)
    cfg = LoadSettings(args.sessions, args.repetitions, args.k, args.build_rows, args.check_seeds, args.timeout,
                       args.threads)
    with tempfile.TemporaryDirectory(prefix="rise-load-") as tmp:
        summary = run_scenario(cfg, Path(args.work_dir or tmp))
    print(table(summary))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0 if not summary["errors"] and not summary["rows_mismatched"] and summary["queue"]["kept"] else 1


if __name__ == "__main__":
    sys.exit(main())
