"""RISE against Bergson (EleutherAI's gradient-index attribution library) on the same model, pool and queries, in one
run: build tokens/s, index bytes per sample, query latency and auPRC@10.

Per task, both build an index of the pool on disk from the same tokens (`samples.encode_sample`: the RISE config's
seq_len, counted positions and rendering, `engine.rendering_for`: the chat template on an instruct model such as the
default), with the same model, dtype, batch size and torch threads:
  - RISE: `store.build_index` (DuckDB): one forward pass per batch, sketches, one transaction per batch;
  - Bergson: `bergson_method.build` (Bergson's `collect_gradients`, as `bergson build` runs it): a forward and a
    backward pass per batch, every linear layer's per-example gradient projected to 16 x 16 (`gradients.bin`).
Then every query is scored against the whole pool one at a time, timed from its text to the pool's scores (RISE: the
query's features and `compare.rise_scores`; Bergson: `Attributor.trace` around the query's loss, unit-normalised),
after each index is loaded once (timed apart). The rankings are scored with `metrics.evaluate_rankings`.

Times are wall-clock and this process's CPU time (`time.process_time`): on a machine shared with other jobs the wall
times of two builds run one after the other see different loads, while with --threads 1 the CPU times measure the
work each did; the summary gives the build speed-up both ways and the load average at each build's end.

Bytes per sample: "features" is what each stores per sample for scoring (RISE: its fp16 features; Bergson: its
gradient rows at the model's dtype); "disk" is the whole index on disk over the pool size (RISE: the DuckDB file with
the texts; Bergson: its directory, gradients plus its dataset copy and configs).

    python -m benchmarks.bergson_compare --tasks finmed --out results/bergson   # bundled: runs from a fresh clone
    python -m benchmarks.bergson_compare --tasks howdy,finmed,brainrot,dev-finmed,dev-brainrot,dev-sentiment,dev-refusal

Needs the optional `bergson` package (docs/BERGSON.md). On a machine shared with other work, run it under `nice`
and keep --threads fixed: both builds are CPU-bound and the ratio is only fair when they get the same cores.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from benchmarks import harness
from rise_core.attribution import query_features
from rise_core.bergson_method import BergsonOptions, build, encode_rows, installed
from rise_core.compare import rise_scores
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import rendering_for
from rise_core.evaluation import Task
from rise_core.metrics import evaluate_rankings
from rise_core.models import LoadedModel, load_model
from rise_core.store import RiseIndex, build_index
from studies import tasks

K = 10


def _dir_bytes(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _metrics(scores: np.ndarray, task: Task) -> dict[str, float]:
    table = evaluate_rankings(scores, task.labels, tuple(dict.fromkeys((K, *task.ks))))
    at_k = table.loc[table["K"] == K]
    return {f"auPRC@{K}": float(at_k["auPRC"].iloc[0]), "AP": float(table["AP"].iloc[0])}


def run_rise(lm: LoadedModel, task: Task, config: RiseConfig, batch_size: int, work: Path) -> dict[str, Any]:
    path = work / "rise.duckdb"
    cpu0 = time.process_time()
    report = build_index(path, task.pool, lm, config, batch_size=batch_size, overwrite=True)
    build_cpu = time.process_time() - cpu0
    options = ScoreOptions()
    t0 = time.perf_counter()
    index = RiseIndex.open(path)
    index.feature_matrix()
    load = time.perf_counter() - t0
    try:
        position = {str(s.id): j for j, s in enumerate(task.pool)}
        columns = np.array([position[str(i)] for i in index.samples()["id"]])
        scores = np.full((len(task.queries), len(task.pool)), -np.inf)
        seconds, cpu = [], []
        for q, query in enumerate(task.queries):
            t0, c0 = time.perf_counter(), time.process_time()
            row = rise_scores(index, query_features(index, lm, [query], truncate=True), options)[0]  # as Bergson's
            seconds.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            scores[q, columns] = row
        n_stored = len(index)
    finally:
        index.close()
    scores[np.isinf(scores)] = np.nanmin(scores[np.isfinite(scores)]) - 1  # samples RISE skipped: ranked last
    return {"build_s": report.seconds, "build_cpu_s": build_cpu,
            "features_B": config.bytes_per_sample(lm.hidden_size), "disk_B": _dir_bytes(path) / max(n_stored, 1),
            "load_s": load,
            "query_s": statistics.median(seconds), "query_cpu_s": statistics.median(cpu), **_metrics(scores, task)}


def run_bergson(lm: LoadedModel, task: Task, config: RiseConfig, batch_size: int, work: Path,
                options: BergsonOptions) -> dict[str, Any]:
    cpu0 = time.process_time()
    index = build(lm, task.pool, work / "bergson", config.seq_len, config.counted_positions, options, batch_size,
                  overwrite=True, rendering=rendering_for(lm, config))
    build_cpu = time.process_time() - cpu0
    t0 = time.perf_counter()
    index.attributor(lm)
    load = time.perf_counter() - t0
    scores, seconds, cpu = [], [], []
    for query in task.queries:
        t0, c0 = time.perf_counter(), time.process_time()
        scores.append(index.scores(lm, [query], batch_size=1)[0])
        seconds.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"build_s": index.seconds, "build_cpu_s": build_cpu, "features_B": index.gradient_bytes / index.n,
            "disk_B": index.disk_bytes / index.n, "load_s": load, "query_s": statistics.median(seconds),
            "query_cpu_s": statistics.median(cpu), **_metrics(np.stack(scores), task)}


def warm_up(lm: LoadedModel, task_name: str, config: RiseConfig, batch_size: int, work: Path,
            variants: dict[str, BergsonOptions]) -> None:
    """Both methods once on a few samples, untimed: whichever ran first would otherwise pay the process's first-use
    costs (imports, allocator, DuckDB) in its build and first query."""
    task = tasks.task(task_name, max_queries=1)
    pool, queries = task.pool[:2 * batch_size], task.queries
    work.mkdir(parents=True, exist_ok=True)
    for method, opts in [("RISE", None), *variants.items()]:
        if opts is None:
            build_index(work / "rise.duckdb", pool, lm, config, batch_size=batch_size, overwrite=True)
            with RiseIndex.open(work / "rise.duckdb") as opened:
                rise_scores(opened, query_features(opened, lm, queries, truncate=True))  # as the timed queries
        else:
            build(lm, pool, work / "bergson", config.seq_len, config.counted_positions, opts, batch_size,
                  overwrite=True, rendering=rendering_for(lm, config)).scores(lm, queries, batch_size=1)
        print(f"  warm-up: {method} done", file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per task: RISE's build speed-up over Bergson, Bergson's bytes over RISE's, both auPRC@10."""
    out = []
    for task, group in rows.groupby("task", sort=False):
        rise = group.loc[group["method"] == "RISE"].iloc[0]
        for _, other in group.loc[group["method"] != "RISE"].iterrows():
            out.append({"task": task, "vs": other["method"], "n_pool": rise["n_pool"],
                        "RISE tok/s": rise["tokens_per_s"], "Bergson tok/s": other["tokens_per_s"],
                        "build speed-up": rise["tokens_per_s"] / other["tokens_per_s"],
                        "build speed-up (CPU time)": other["build_cpu_s"] / rise["build_cpu_s"],
                        "RISE B/sample": rise["features_B"], "Bergson B/sample": other["features_B"],
                        "size ratio": other["features_B"] / rise["features_B"],
                        "RISE disk B/sample": rise["disk_B"], "Bergson disk B/sample": other["disk_B"],
                        "RISE query ms": 1000 * rise["query_s"], "Bergson query ms": 1000 * other["query_s"],
                        "RISE query CPU ms": 1000 * rise["query_cpu_s"],
                        "Bergson query CPU ms": 1000 * other["query_cpu_s"],
                        f"RISE auPRC@{K}": rise[f"auPRC@{K}"], f"Bergson auPRC@{K}": other[f"auPRC@{K}"]})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, threads=0, out="results/bergson")
    ap.add_argument("--tasks", default="finmed", help="comma-separated: howdy, finmed, brainrot (bundled) and "
                    "dev-finmed, dev-brainrot, dev-sentiment, dev-refusal (studies.tasks: read from ../shared/data/dev)")
    ap.add_argument("--model", default=None, help="model id or path (default: the embedded SmolLM2-135M-Instruct)")
    ap.add_argument("--dtype", default="float32", help="the model's dtype, for both (default float32)")
    ap.add_argument("--limit-pool", type=int, default=None, help="a stratified subset of N pool samples (seeded)")
    ap.add_argument("--limit-queries", type=int, default=None, help="the first N queries")
    ap.add_argument("--seq-len", type=int, default=256, help="tokens per sample, for both (default 256, as the dev "
                    "evaluation)")
    ap.add_argument("--batch-size", type=int, default=8, help="samples per batch, for both")
    ap.add_argument("--projection-dim", type=int, default=BergsonOptions().projection_dim,
                    help="Bergson's per-module projection (default 16, its quickstart's and TrackStar's)")
    ap.add_argument("--precondition", action="store_true", help="also run Bergson with TrackStar's autocorrelation "
                    "preconditioner fitted on the pool (a second backward pass over it)")
    ap.add_argument("--work", default=None, help="where the indexes are built (default: a temporary directory, "
                    "removed afterwards)")
    args = ap.parse_args(argv)
    if not installed():
        raise SystemExit("bergson is not installed; see docs/BERGSON.md for the install commands")
    harness.set_threads(args.threads)  # for both
    lm = load_model(args.model, dtype=args.dtype)
    config = RiseConfig(seq_len=args.seq_len)
    variants = {"Bergson": BergsonOptions(projection_dim=args.projection_dim)}
    if args.precondition:
        variants["Bergson (TrackStar preconditioner)"] = BergsonOptions(projection_dim=args.projection_dim,
                                                                       precondition=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    setting = {"model": lm.model_id, "dtype": str(lm.dtype).replace("torch.", ""), "threads": torch.get_num_threads(),
               "batch_size": args.batch_size, "seq_len": args.seq_len, "counted": config.counted_positions,
               "chat_template": rendering_for(lm, config).template}
    print(f"setting: {setting}", file=sys.stderr, flush=True)
    rows, md = [], ""
    work_root = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bergson-compare-"))
    try:
        warm_up(lm, [t.strip() for t in args.tasks.split(",") if t.strip()][0], config, args.batch_size,
                work_root / "warm-up", variants)
        for name in [t.strip() for t in args.tasks.split(",") if t.strip()]:
            task = tasks.task(name, args.limit_pool, args.limit_queries)
            tokens = sum(r["length"] for r in encode_rows(task.pool, lm.tokenizer, config.seq_len,
                                                          config.counted_positions, rendering_for(lm, config)))
            base = {"task": task.name, "n_pool": len(task.pool), "n_positive": int(task.labels.sum()),
                    "n_queries": len(task.queries), "tokens": tokens, **setting}
            print(f"[{task.name}] pool {len(task.pool)}, {tokens} tokens, {len(task.queries)} queries",
                  file=sys.stderr, flush=True)
            work = work_root / task.name
            work.mkdir(parents=True, exist_ok=True)
            runs = {"RISE": lambda task=task, work=work: run_rise(lm, task, config, args.batch_size, work)}
            for label, opts in variants.items():
                runs[label] = (lambda task=task, work=work, opts=opts:
                               run_bergson(lm, task, config, args.batch_size, work, opts))
            for label, run in runs.items():
                result = run()
                rows.append({**base, "method": label, **result, "tokens_per_s": tokens / result["build_s"],
                             "tokens_per_cpu_s": tokens / result["build_cpu_s"], "load_avg": os.getloadavg()[0]})
                print(f"  {label}: build {result['build_s']:.1f} s ({tokens / result['build_s']:.0f} tok/s; CPU "
                      f"{result['build_cpu_s']:.1f} s), "
                      f"{result['features_B']:.0f} B/sample, query {1000 * result['query_s']:.0f} ms, "
                      f"auPRC@{K} {result[f'auPRC@{K}']:.3f}", file=sys.stderr, flush=True)
            shutil.rmtree(work, ignore_errors=True)
            md = write_tables(rows, setting, out)  # after every task, so a stopped run keeps what it measured
    finally:
        if not args.work:
            shutil.rmtree(work_root, ignore_errors=True)
    print(md)
    return 0


def write_tables(rows: list[dict[str, Any]], setting: dict[str, Any], out: Path) -> str:
    """bergson_compare.csv (one row per task and method) and .md (the per-task summary, then every row)."""
    table = pd.DataFrame(rows)
    table.to_csv(out / "bergson_compare.csv", index=False)
    md = "\n".join([f"Setting: {setting}", "", summary(table).round(3).to_markdown(index=False), "",
                     table.drop(columns=list(setting)).round(4).to_markdown(index=False)])
    (out / "bergson_compare.md").write_text(md + "\n")
    return md


if __name__ == "__main__":
    sys.exit(main())
