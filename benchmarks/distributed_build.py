"""Index build throughput: the one-process build against the sharded build on Ray at 1 and 2 workers, one run.

Every variant appends the same rows of a pool to a copy of the same seed index (a few rows, which fix the hidden-state
mean), so each measures the steady state of a large build: on a 1M-sample pool the mean fit (256 samples, on one
worker) is negligible. For each variant it prints the tokens per second of the build itself (from its first
`progress` call, i.e. workers started and model loaded, to its end) and end to end (the whole call, worker start and
model loading included), and their ratios to the one-process build at the same threads per model copy. It also
checks that every variant stored the same features (the sharded build forms the one-process build's batches).

    python -m benchmarks.distributed_build                                   # howdy pool, embedded SmolLM2-135M
    python -m benchmarks.distributed_build --rows 512 --threads 2 --workers 1,2,4 --json

Give each model copy `--threads` cores and keep workers x threads within the machine's cores (and OMP_NUM_THREADS
set to --threads): oversubscribed cores measure contention, not the build. On a machine shared with other busy
processes the absolute figures are noisy; the ratios, measured in one run, are the result.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks import harness
from rise_core.ingest import read_pool
from rise_core.models import load_model
from rise_core.store import RiseIndex, build_index, build_index_distributed
from rise_core.store.schema import WINDOW_BATCHES


def _timed(run: Any) -> dict[str, float]:
    """Run `run(progress)`; seconds end to end and from the first progress call (the build itself)."""
    marks: dict[str, float] = {}

    def progress(done: int, total: int) -> None:
        marks.setdefault("first", time.perf_counter())

    start = time.perf_counter()
    run(progress)
    end = time.perf_counter()
    return {"total_s": end - start, "build_s": end - marks.get("first", start)}


def _tokens_added(path: Path, seed_tokens: int) -> int:
    with RiseIndex.open(path) as index:
        return int(index.info()["n_tokens"]) - seed_tokens


def _features(path: Path) -> dict[str, torch.Tensor]:
    with RiseIndex.open(path) as index:
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
        rows = torch.cat([fm.rh.float(), fm.gh.float()] + ([fm.hs.float()] if fm.hs is not None else []), dim=1)
        return dict(zip(ids, rows, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, threads=1, json_flag=True, out="")
    parser.add_argument("--pool", default="data/howdy_pool.jsonl", help="pool file (default: the howdy demo pool)")
    parser.add_argument("--rows", type=int, default=256, help="rows appended by every variant (default 256)")
    parser.add_argument("--seed-rows", type=int, default=8, help="rows of the seed index (fix the mean; default 8)")
    parser.add_argument("--model", default=None, help="hub id or checkpoint (default: the embedded SmolLM2-135M)")
    parser.add_argument("--batch-size", type=int, default=4, help="samples per forward pass (default 4)")
    parser.add_argument("--shard-size", type=int, default=None,
                        help="samples per shard (default: one window, batch_size x WINDOW_BATCHES)")
    parser.add_argument("--workers", default="1,2", help="Ray worker counts to run (default 1,2)")
    parser.add_argument("--no-threaded", action="store_true",
                        help="skip the one-process build with max(workers) x threads threads")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads: at least 1 (the threads of each model copy)")
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    shard_size = args.shard_size or args.batch_size * WINDOW_BATCHES

    import ray

    data = read_pool(args.pool)
    if len(data.samples) < args.seed_rows + args.rows:
        parser.error(f"{args.pool} has {len(data.samples)} usable rows; need --seed-rows + --rows")
    seed, rows = data.samples[:args.seed_rows], data.samples[args.seed_rows:args.seed_rows + args.rows]
    harness.set_threads(args.threads)
    t0 = time.perf_counter()
    lm = load_model(args.model, dtype="float32")
    load_s = time.perf_counter() - t0
    spec = args.model  # what the workers load
    print(f"model {lm.model_id} (loaded in {load_s:.1f} s); {len(rows)} rows appended to a {len(seed)}-row seed "
          f"index; batch {args.batch_size}, shards of {shard_size}; {os.cpu_count()} cores, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        seed_path = Path(tmp) / "seed.duckdb"
        build_index(seed_path, seed, lm, batch_size=args.batch_size)
        with RiseIndex.open(seed_path) as index:
            seed_tokens = int(index.info()["n_tokens"])

        def copy(name: str) -> Path:
            path = Path(tmp) / f"{name}.duckdb"
            shutil.copy(seed_path, path)
            return path

        variants: list[tuple[str, int, int, Path]] = []  # name, workers (0: one process), threads, index

        def one_process(threads: int) -> None:
            path = copy(f"one-{threads}t")
            torch.set_num_threads(threads)
            timing = _timed(lambda p: build_index(path, rows, lm, batch_size=args.batch_size, progress=p))
            torch.set_num_threads(args.threads)
            timing["total_s"] += load_s  # end to end includes loading the model, as a worker's does
            results.append({"variant": f"one process, {threads} thread(s)", "workers": 0, "threads": threads,
                            "load_s": load_s, **timing})
            variants.append((results[-1]["variant"], 0, threads, path))

        one_process(args.threads)
        if not args.no_threaded and max(worker_counts) > 1:
            one_process(args.threads * max(worker_counts))

        t0 = time.perf_counter()
        ray.init(address="local", num_cpus=max(worker_counts) * args.threads, include_dashboard=False,
                 logging_level="WARNING")
        ray_init_s = time.perf_counter() - t0
        try:
            for w in worker_counts:
                path = copy(f"ray-{w}w")
                timing = _timed(lambda p, path=path, w=w: build_index_distributed(
                    path, rows, spec, workers=w, batch_size=args.batch_size, shard_size=shard_size, device="cpu",
                    cpus_per_worker=args.threads, progress=p))
                results.append({"variant": f"Ray, {w} worker(s) x {args.threads} thread(s)", "workers": w,
                                "threads": args.threads, "ray_init_s": ray_init_s, **timing})
                variants.append((results[-1]["variant"], w, args.threads, path))
        finally:
            ray.shutdown()

        reference = _features(variants[0][3])
        for result, (_, _, _, path) in zip(results, variants, strict=True):
            tokens = _tokens_added(path, seed_tokens)
            feats = _features(path)
            result["tokens"] = tokens
            result["max_feature_diff"] = max(float((feats[i] - reference[i]).abs().max()) for i in reference)
            result["build_tok_s"] = tokens / result["build_s"]
            result["total_tok_s"] = tokens / result["total_s"]

    for kind in ("build", "total"):  # each variant's tokens/s over the first row's, measured in this run
        speed = harness.ratios({r["variant"]: r[f"{kind}_tok_s"] for r in results}, results[0]["variant"], digits=4)
        for r in results:
            r[f"{kind}_ratio"] = speed[r["variant"]]
    print(f"Ray start: {ray_init_s:.1f} s (once; not in the figures)\n")
    print(harness.markdown_table(
        ({"variant": r["variant"], "tokens": r["tokens"], "build s": round(r["build_s"], 1),
          "build tok/s": round(r["build_tok_s"], 1), "build ratio": f"{r['build_ratio']:.2f}x",
          "total s": round(r["total_s"], 1), "total tok/s": round(r["total_tok_s"], 1),
          "total ratio": f"{r['total_ratio']:.2f}x", "max feature diff": f"{r['max_feature_diff']:.2e}"}
         for r in results), floatfmt="g"))
    print("\nbuild: from the first progress call (workers up, model loaded) to the end; total: the whole call, "
          "model loading included. Ratios: to the first row.")
    if args.json:
        harness.print_json(results, indent=1)
    if args.out:
        harness.write_json(Path(args.out) / "distributed_build.json",
                           {"args": vars(args), "ray_init_s": ray_init_s, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
