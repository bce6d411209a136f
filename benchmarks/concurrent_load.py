"""Under load: concurrent query sessions against one index while a build appends to it, and concurrent app sessions.

Part 1, the Python API (threads in one process, one loaded model, as the app serves its sessions):
  - builds a base index from the first --pool-rows rows of a pool,
  - for each handle mode, `shared` (one read-only `RiseIndex` handle for every session, as the app's registry
    gives) and `separate` (a `RiseIndex.open` per session), on its own copy of the base index:
      * idle: --sessions threads each run --queries-per-session queries (`query_features`, the forward pass, then
        `rank`, the scoring and the hits' rows), with no writer,
      * under a build: the same sessions, and once each has answered one query, `build_index` appends the next
        --append-rows rows of the pool to the same file in this process; sessions keep querying (waiting
        --retry-wait seconds after a failure) until they have run their queries and the build has ended,
      * afterwards: every handle must see the appended rows (its length, and each of a few appended rows ranked
        in the top k for its own text),
  - a separate-process writer: a child process tries to open the index for writing while this one holds readers.
Part 2, the app: --app-sessions Streamlit `AppTest` sessions of the Attribute page in threads of this process (so
they share its `st.cache_resource`, as the sessions of one server do), each attributing --app-queries queries.
AppTest cannot run two scripts at once (it swaps a process-wide Runtime in and out), so the script runs take turns:
this checks that sessions share the model and the index and stay correct when interleaved, not parallel rendering.
Per Attribute click: its run time (forward pass, ranking, the top hit's token explanation) and its wait for a turn;
errors; how often the model and the index were loaded (`explorer.resources.load_model` and
`explorer.jobs.RiseIndex.open` are wrapped with counters).

Reported: p50 / p95 latency of whole queries and of their two parts (the forward pass; the ranking without it),
every error with its type and message (goal: none), calls to the model loader, peak RSS (`getrusage`), whether the
appended rows became visible. A query is "during the build" when it started or ended while the build ran.

    python -m benchmarks.concurrent_load                     # embedded SmolLM2-135M, howdy pool: a few minutes on
                                                             # 2 idle cores (the 256-row base build is most of it)
    python -m benchmarks.concurrent_load --tiny              # tiny random model: a quick check (~1 min)
    python -m benchmarks.concurrent_load --sessions 4 --pool-rows 128 --append-rows 32 --skip-app --json out.json

Threads share the cores: on 2 cores, 8 sessions and a build contend for them, so latencies measure that contention.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from benchmarks import harness
from rise_core import models
from rise_core.attribution import query_features, rank
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.models import LoadedModel
from rise_core.store import RiseIndex, build_index

ROOT = Path(__file__).resolve().parent.parent

TINY_CONFIG = dict(k_r=16, k_h=8, k_g=16, seq_len=128)


# --- bookkeeping ------------------------------------------------------------------------------------------------------


@dataclass
class QueryRecord:
    """One query of one session: timings in seconds, what it returned, or the error it raised."""

    session: int
    number: int
    start: float
    end: float
    features_s: float | None = None  # query_features: the forward pass
    rank_s: float | None = None  # rank: scoring, top-k and the hits' rows (no forward pass)
    n_hits: int | None = None
    n_pool: int | None = None  # rows the ranking scored
    during_build: bool = False
    error: str | None = None  # "Type: message"

    @property
    def total_s(self) -> float:
        return self.end - self.start


class CountingLoader:
    """Wraps a model loader; counts its calls (thread-safe)."""

    def __init__(self, loader: Callable[..., LoadedModel]) -> None:
        self.loader, self.calls, self._lock = loader, [], threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> LoadedModel:
        with self._lock:
            self.calls.append(repr(args[:1]))
        return self.loader(*args, **kwargs)


class BuildWindow:
    """When the appending build ran (monotonic seconds), its report or error."""

    def __init__(self) -> None:
        self.started = self.ended = None
        self.report: Any = None
        self.error: str | None = None

    def overlaps(self, start: float, end: float) -> bool:
        if self.started is None:
            return False
        return start <= (self.ended if self.ended is not None else float("inf")) and end >= self.started


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def latency_summary(records: list[QueryRecord]) -> dict[str, Any]:
    ok = [r for r in records if r.error is None]
    out: dict[str, Any] = {"queries": len(records), "ok": len(ok), "errors": len(records) - len(ok)}
    for name, values in (("total", [r.total_s for r in ok]), ("forward", [r.features_s for r in ok]),
                         ("rank", [r.rank_s for r in ok])):
        out.update({f"{name}_{key}": v for key, v in harness.latency_ms(values).items()})
    return out


def error_counts(records: list[QueryRecord]) -> dict[str, int]:
    return dict(Counter(r.error for r in records if r.error is not None).most_common())


# --- inputs -----------------------------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def split_pool(rows: list[dict], n_base: int, n_append: int) -> tuple[list[dict], list[dict]]:
    if n_base + n_append > len(rows):
        raise SystemExit(f"the pool has {len(rows)} rows; --pool-rows + --append-rows = {n_base + n_append}")
    return rows[:n_base], rows[n_base:n_base + n_append]


def query_rows(queries_path: Path | None, pool: list[dict], n: int) -> list[dict]:
    """n queries (prompt / completion): the query file's, then pool rows, cycled."""
    rows = read_jsonl(queries_path) if queries_path is not None and queries_path.exists() else []
    rows = [{"prompt": r.get("prompt"), "completion": r.get("completion") or r.get("text")} for r in rows + pool]
    return [rows[i % len(rows)] for i in range(n)]


def write_tiny_model(rows: list[dict], out_dir: Path) -> Path:
    """A 2-layer random Llama (hidden 32) and a word-level tokenizer over the pool's words, saved to `out_dir`."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers import models as tok_models
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = sorted({w for r in rows for f in ("prompt", "completion", "text") for w in str(r.get(f) or "").lower()
                    .split()})
    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    tok = Tokenizer(tok_models.WordLevel(vocab={t: i for i, t in enumerate(specials + words)}, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>",
                                        eos_token="<eos>", unk_token="<unk>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)  # peaked predictions: non-trivial supports
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


# --- part 1: the Python API -------------------------------------------------------------------------------------------


def run_sessions(handles: list[RiseIndex], lm: LoadedModel, queries: list[dict], per_session: int, k: int,
                 build: Callable[[], Any] | None = None, retry_wait: float = 0.5
                 ) -> tuple[list[QueryRecord], BuildWindow]:
    """Session i queries through handles[i]; with `build`, it starts once every session has answered (or failed)
    one query, and the sessions keep going until it has ended."""
    n = len(handles)
    records: list[QueryRecord] = []
    lock = threading.Lock()
    window = BuildWindow()
    first_done = threading.Barrier(n + 1) if build is not None else None
    build_done = threading.Event()
    if build is None:
        build_done.set()
    options = ScoreOptions()

    def session(i: int) -> None:
        number = 0
        while number < per_session or not build_done.is_set():
            q = queries[(i * per_session + number) % len(queries)]
            rec = QueryRecord(session=i, number=number, start=time.monotonic(), end=0.0)
            try:
                t0 = time.monotonic()
                qfm = query_features(handles[i], lm, [q])
                t1 = time.monotonic()
                hits = rank(handles[i], qfm, options, k=k, search="exact")
                rec.features_s, rec.rank_s = t1 - t0, time.monotonic() - t1
                rec.n_hits, rec.n_pool = len(hits), int(hits.attrs["search"].get("n_rows", -1))
            except Exception as exc:  # noqa: BLE001 - every error is the measurement
                rec.error = describe(exc)
            rec.end = time.monotonic()
            with lock:
                records.append(rec)
            number += 1
            if number == 1 and first_done is not None:
                first_done.wait()
            if rec.error is not None:
                time.sleep(retry_wait)

    threads = [threading.Thread(target=session, args=(i,), name=f"session-{i}") for i in range(n)]
    for t in threads:
        t.start()
    if build is not None:
        assert first_done is not None
        first_done.wait()
        window.started = time.monotonic()
        try:
            window.report = build()
        except Exception as exc:  # noqa: BLE001 - reported
            window.error = describe(exc)
        window.ended = time.monotonic()
        build_done.set()
    for t in threads:
        t.join()
    for rec in records:
        rec.during_build = window.overlaps(rec.start, rec.end)
    return records, window


def check_visible(handles: list[RiseIndex], lm: LoadedModel, appended: list[dict], n_expected: int, k: int,
                  n_probe: int = 3) -> dict[str, Any]:
    """Whether every handle sees the appended rows: its length, and each probe row in the top k for its own text."""
    probes = appended[:: max(1, len(appended) // n_probe)][:n_probe]
    qfms = [query_features(handles[0], lm, [{"prompt": r.get("prompt"), "completion": r.get("completion")}])
            for r in probes]
    lengths, found, errors = [], 0, []
    for h in handles:
        try:
            lengths.append(len(h))
            for row, qfm in zip(probes, qfms, strict=True):
                ids = list(rank(h, qfm, ScoreOptions(), k=k, search="exact")["id"])
                found += str(row["id"]) in ids
        except Exception as exc:  # noqa: BLE001 - reported
            errors.append(describe(exc))
    return {"expected_rows": n_expected, "rows_seen": sorted(set(lengths)),
            "probes_found": f"{found}/{len(probes) * len(handles)}",
            "visible": not errors and set(lengths) == {n_expected} and found == len(probes) * len(handles),
            "errors": errors}


def cross_process_writer(path: Path) -> str:
    """What a second process gets when it opens the index for writing while this one holds read-only handles."""
    code = ("import sys\nfrom rise_core.store import RiseIndex\n"
            "try:\n    RiseIndex.open(sys.argv[1], read_only=False).close()\n    print('opened for writing')\n"
            "except Exception as exc:\n    print(type(exc).__name__ + ': ' + str(exc).splitlines()[0])\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    lines = (out.stdout.strip() or out.stderr.strip()).splitlines()
    return lines[-1] if lines else f"(no output, exit status {out.returncode})"


def api_part(args: argparse.Namespace, lm: LoadedModel, base_index: Path, appended: list[dict], n_base: int,
             queries: list[dict], work: Path, log: Callable[[str], None]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for mode in args.modes:
        path = work / f"{mode}.duckdb"
        shutil.copy(base_index, path)
        n_handles = 1 if mode == "shared" else args.sessions
        handles = [RiseIndex.open(path) for _ in range(n_handles)]
        per_session = handles * args.sessions if mode == "shared" else handles
        for h in handles:
            h.feature_matrix()  # loaded once per handle before timing (the app's first query pays it)
        log(f"[{mode}] idle: {args.sessions} sessions x {args.queries_per_session} queries")
        idle, _ = run_sessions(per_session, lm, queries, args.queries_per_session, args.k)
        rss_idle = peak_rss_mb()
        log(f"[{mode}] under a build appending {len(appended)} rows")

        def build(path: Path = path) -> Any:
            return build_index(path, appended, lm, batch_size=args.batch_size)

        loaded, window = run_sessions(per_session, lm, queries, args.queries_per_session, args.k, build,
                                      args.retry_wait)
        n_added = window.report.n_added if window.report is not None else 0
        during = [r for r in loaded if r.during_build]
        after = [r for r in loaded if not r.during_build]
        visible = check_visible(handles, lm, appended, n_base + n_added, args.k)
        bad_hits = sum(1 for r in idle + loaded if r.error is None and r.n_hits != args.k)
        results[mode] = {
            "handles": n_handles,
            "idle": {**latency_summary(idle), "error_counts": error_counts(idle)},
            "under_build": {**latency_summary(loaded), "error_counts": error_counts(loaded)},
            "during_build": {**latency_summary(during), "error_counts": error_counts(during),
                             "pool_rows_seen": sorted({r.n_pool for r in during if r.n_pool is not None})},
            "after_build": latency_summary(after),
            "build": {"seconds": None if window.started is None else round(window.ended - window.started, 1),
                      "n_added": n_added, "error": window.error},
            "queries_without_k_hits": bad_hits,
            "visible_after_build": visible,
            "peak_rss_mb_after_idle": round(rss_idle),
            "peak_rss_mb": round(peak_rss_mb()),
        }
        if mode == args.modes[-1] and not args.skip_cross_process:
            results["cross_process_writer"] = cross_process_writer(path)
        for h in handles:
            h.close()
        log(json.dumps(results[mode], default=str))
    return results


# --- part 2: the app --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def app_environment(env: dict[str, str]) -> Iterator[tuple[CountingLoader, list[str]]]:
    """RISE_* variables set, and counters on the app's model loader and index opener."""
    import explorer.jobs
    import explorer.resources

    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    loader = CountingLoader(explorer.resources.load_model)
    opens: list[str] = []
    real_index = explorer.jobs.RiseIndex

    class CountingIndex:
        @staticmethod
        def open(path: str | Path, read_only: bool = True) -> RiseIndex:
            opens.append(str(path))
            return real_index.open(path, read_only=read_only)

    explorer.resources.load_model, explorer.jobs.RiseIndex = loader, CountingIndex
    try:
        yield loader, opens
    finally:
        explorer.resources.load_model, explorer.jobs.RiseIndex = loader.loader, real_index
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# AppTest is not thread-safe: each run installs and tears down a process-wide Runtime singleton, so two runs at once
# fail ("Runtime hasn't been created!", widgets of one session read in another's state). Script runs therefore take
# turns; the sessions (and their session state) are concurrent, and share the process's st.cache_resource.
APPTEST_LOCK = threading.Lock()


def _run(node: Any) -> tuple[Any, float, float]:
    """node.run() (an AppTest or a widget) in its turn; (the AppTest, seconds waited for the turn, seconds run)."""
    t0 = time.monotonic()
    with APPTEST_LOCK:
        t1 = time.monotonic()
        at = node.run()
    return at, t1 - t0, time.monotonic() - t1


def app_session(i: int, queries: list[dict], k: int, timeout: float) -> dict[str, Any]:
    """One AppTest session: open the Attribute page, then attribute each query; the click's run time (forward pass,
    ranking, the top hit's explanation), its wait for a turn, and errors."""
    from streamlit.testing.v1 import AppTest

    out: dict[str, Any] = {"session": i, "run_s": [], "wait_s": [], "errors": [], "rows": []}
    try:
        at = _run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout))[0]
        at = _run(at.switch_page("app_pages/2_Attribute.py"))[0]
        at = _run(at.number_input(key="top_k").set_value(k))[0]
        for q in queries:
            at = _run(at.text_area(key="query_prompt").input(q.get("prompt") or ""))[0]
            at = _run(at.text_area(key="query_completion").input(q["completion"]))[0]
            at, wait, run = _run(at.button(key="attribute").click())
            out["run_s"].append(run)
            out["wait_s"].append(wait)
            out["errors"] += [f"exception: {e.value}" for e in at.exception] + [f"st.error: {e.value}"
                                                                                 for e in at.error]
            tables = [d.value for d in at.dataframe if {"RH", "GH"} <= set(d.value.columns)]
            out["rows"].append(len(tables[0]) if tables else 0)
    except Exception as exc:  # noqa: BLE001 - reported
        out["errors"].append(describe(exc))
    return out


def app_part(args: argparse.Namespace, model_id: str, base_index: Path, queries: list[dict], work: Path,
             log: Callable[[str], None]) -> dict[str, Any]:
    index_dir = work / "app_indexes"
    index_dir.mkdir()
    shutil.copy(base_index, index_dir / "pool.duckdb")
    env = {"RISE_MODEL": model_id, "RISE_INDEX_DIR": str(index_dir)}
    per = args.app_queries
    with app_environment(env) as (loader, opens):
        log(f"[app] {args.app_sessions} AppTest sessions x {per} queries")
        sessions: list[dict[str, Any]] = [{} for _ in range(args.app_sessions)]

        def run(i: int) -> None:
            sessions[i] = app_session(i, queries[i * per:(i + 1) * per] or queries[:per], args.k, args.app_timeout)

        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(args.app_sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
    runs = [x for s in sessions for x in s["run_s"]]
    waits = [x for s in sessions for x in s["wait_s"]]
    return {
        "sessions": [{"session": s["session"], "click_run_s": [round(x, 2) for x in s["run_s"]],
                      "click_wait_s": [round(x, 2) for x in s["wait_s"]], "rows": s["rows"], "errors": s["errors"]}
                     for s in sessions],
        **{f"click_run_{key}": v for key, v in harness.latency_ms(runs).items()},
        **{f"click_wait_{key}": v for key, v in harness.latency_ms(waits).items()}, "wall_s": round(wall, 1),
        "queries_without_k_rows": sum(1 for s in sessions for n in s["rows"] if n != args.k),
        "errors": sum(len(s["errors"]) for s in sessions),
        "model_loads": len(loader.calls), "index_opens": len(opens),
        "peak_rss_mb": round(peak_rss_mb()),
    }


# --- driver -----------------------------------------------------------------------------------------------------------


def run_benchmark(args: argparse.Namespace, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Everything above; returns the results (also written to --json)."""
    harness.set_threads(args.threads)
    pool = read_jsonl(Path(args.pool))
    base_rows, appended = split_pool(pool, args.pool_rows, args.append_rows)
    queries = query_rows(Path(args.queries) if args.queries else None, base_rows,
                         max(args.sessions * args.queries_per_session, args.app_sessions * args.app_queries))
    loader = CountingLoader(models.load_model)
    results: dict[str, Any] = {"args": vars(args).copy(), "torch_threads": torch.get_num_threads(),
                               "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="rise-load-") as tmp:
        work = Path(tmp)
        if args.tiny:
            model_id = str(write_tiny_model(pool, work / "tiny_model"))
            config = RiseConfig(**TINY_CONFIG)
        else:
            model_id, config = args.model, RiseConfig()
        t0 = time.monotonic()
        lm = loader(model_id) if model_id else loader()
        results["model_load_s"] = round(time.monotonic() - t0, 1)
        model_id = model_id or lm.model_id
        base_index = work / "base.duckdb"
        t0 = time.monotonic()
        report = build_index(base_index, base_rows, lm, config, batch_size=args.batch_size)
        results["base_build"] = {"rows": report.n_added, "seconds": round(time.monotonic() - t0, 1)}
        log(f"base index: {report.n_added} rows in {results['base_build']['seconds']} s")
        results["api"] = api_part(args, lm, base_index, appended, report.n_total, queries, work, log)
        results["api_model_loads"] = len(loader.calls)
        if not args.skip_app:
            results["app"] = app_part(args, model_id, base_index, queries, work, log)
    results["peak_rss_mb"] = round(peak_rss_mb())
    if args.json:
        harness.write_json(args.json, results)
    return results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = harness.parser(__doc__, threads=0)
    p.add_argument("--pool", default=str(ROOT / "data" / "howdy_pool.jsonl"), help="JSONL pool (prompt/completion)")
    p.add_argument("--queries", default=str(ROOT / "data" / "howdy_queries.jsonl"),
                   help="JSONL queries, cycled (then pool rows)")
    p.add_argument("--model", default=None, help="model id or path (default: the embedded SmolLM2-135M)")
    p.add_argument("--tiny", action="store_true", help="a tiny random model and small sizes: a quick check")
    p.add_argument("--pool-rows", type=int, default=None, help="rows in the base index (default 256; tiny 48)")
    p.add_argument("--append-rows", type=int, default=None, help="rows the concurrent build appends (default 48; "
                   "tiny 24)")
    p.add_argument("--sessions", type=int, default=8, help="concurrent query sessions (threads)")
    p.add_argument("--queries-per-session", type=int, default=None, help="queries per session (default 4; tiny 4)")
    p.add_argument("--k", type=int, default=10, help="hits per query")
    p.add_argument("--batch-size", type=int, default=8, help="build batch size")
    p.add_argument("--retry-wait", type=float, default=0.5, help="seconds a session waits after a failed query")
    p.add_argument("--modes", default="shared,separate", help="handle modes: shared, separate or both (comma list)")
    p.add_argument("--skip-app", action="store_true", help="skip the AppTest sessions")
    p.add_argument("--skip-cross-process", action="store_true", help="skip the separate-process writer check")
    p.add_argument("--app-sessions", type=int, default=4, help="concurrent AppTest sessions")
    p.add_argument("--app-queries", type=int, default=2, help="queries each AppTest session attributes")
    p.add_argument("--app-timeout", type=float, default=300.0, help="seconds per AppTest script run")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    tiny = args.tiny
    args.pool_rows = args.pool_rows or (48 if tiny else 256)
    args.append_rows = args.append_rows or (24 if tiny else 48)
    args.queries_per_session = args.queries_per_session or 4
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not set(args.modes) <= {"shared", "separate"} or not args.modes:
        p.error(f"--modes: choose from shared, separate (got {args.modes})")
    if args.tiny and args.model:
        p.error("--tiny uses its own random model; drop --model")
    return args


def main(argv: list[str] | None = None) -> None:
    start = time.monotonic()
    results = run_benchmark(parse_args(argv), log=lambda line: print(line, file=sys.stderr, flush=True))
    results["wall_s"] = round(time.monotonic() - start, 1)
    harness.print_json(results, indent=2)


if __name__ == "__main__":
    main()
