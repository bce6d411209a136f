"""A pool too large for the default dims on one disk: the ANN build and query of a 10M-row pool at a preset's dims
(default: the `compact` preset's, 352 values a sample), with synthetic features.

The rows are never written out as features: each block of 16,384 rows is drawn from benchmarks/ann_scale.py's
synthetic clustered process (`Generator`, the preset's channel lengths, seeded per block so any range of rows is the
same whenever it is read), so the disk holds only what `rise index-ann` writes: the ANN file and, while building,
its scratch shards. The build is `rise index-ann`'s own code (`rise_core.ann.train_ivf` + `write_ivf`: k-means on a
bounded sample, rows added a shard at a time and merged on disk) reading those rows, in a child process whose peak
RSS is the build's. Queries run in another child on the memory-mapped ANN file (`rise_core.ann.top_rows`: faiss
search + exact rescoring), timed at the default nprobe and twice it, with recall@10 against an exact scan of every
row (regenerated block by block). Neither includes the query's forward pass or fetching the hits' text (both are
measured end to end at 1M rows by benchmarks/text_query.py; a fetch by row id does not grow with the pool).

    python -m benchmarks.large_pool --rows 10000000 --nlist 2048 --dir /work/results/scale/pool10m  # docs/SCALE.md
    python -m benchmarks.large_pool --rows 200000 --queries 20                            # a quick check

Everything runs with 1 thread unless --threads. Results: one JSON line in <out>/large_pool.jsonl.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness
from benchmarks.ann_scale import Generator, _status_mb, peak_rss_mb

BLOCK = 16384


class Rows:
    """Rows start..stop-1 of the synthetic pool as float32 [u_rh; u_gh(; u_hs)], each block drawn from its own seed."""

    def __init__(self, n: int, dims: dict[str, int]) -> None:
        self.n, self.dims, self.gen = n, dims, Generator(n, dims)
        self._cached: tuple[int, np.ndarray] | None = None

    def block(self, b: int) -> np.ndarray:
        if self._cached is not None and self._cached[0] == b:
            return self._cached[1]
        m = min(BLOCK, self.n - b * BLOCK)
        feats, _ = self.gen.sample(m, np.random.default_rng([7, b]))
        x = np.concatenate([feats[c].astype(np.float32) for c in self.dims], axis=1)
        self._cached = (b, x)
        return x

    def __call__(self, start: int, stop: int) -> np.ndarray:
        parts = []
        for b in range(start // BLOCK, (stop - 1) // BLOCK + 1):
            lo, hi = max(start, b * BLOCK) - b * BLOCK, min(stop, (b + 1) * BLOCK) - b * BLOCK
            parts.append(self.block(b)[lo:hi])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _threads(n: int) -> None:
    import faiss
    import torch

    torch.set_num_threads(n)
    faiss.omp_set_num_threads(n)


def build_child(directory: str, n: int, dims: dict[str, int], threads: int, nlist: int, queue: Any) -> None:
    _threads(threads)
    from rise_core import ann

    read = Rows(n, dims)
    d = sum(dims.values())
    nlist = nlist or ann.default_nlist(n)
    stages: dict[str, float] = {}
    last = [time.perf_counter()]
    peak = {"anon": 0.0, "disk": 0.0}
    faiss_path, meta_path = ann.ann_paths(Path(directory) / "pool")
    tmp, scratch = ann.tmp_paths(faiss_path)

    def progress(stage: str, done: int, total: int) -> None:
        peak["anon"] = max(peak["anon"], _status_mb("RssAnon"))
        peak["disk"] = max(peak["disk"], sum(p.stat().st_size for p in (tmp, scratch) if p.exists()) / 1e6)
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last[0]
        last[0] = now

    start = time.perf_counter()
    template, n_train = ann.train_ivf(read, n, d, nlist, ann.TRAIN_PER_LIST, 0, progress=progress)
    shards = ann.write_ivf(template, read, n, tmp, scratch, progress=progress)
    build_s = time.perf_counter() - start
    meta = ann.AnnMeta(index_uuid="synthetic", config_fingerprint="synthetic", n_rows=n, dims=dims, nlist=nlist,
                       nprobe=ann.default_nprobe(nlist), train_rows=n_train, seed=0,
                       structure=f"IVF{nlist},SQfp16")
    ann.commit_ann(tmp, meta, faiss_path, meta_path)
    queue.put({"build_s": round(build_s, 1), "stages_s": {k: round(v, 1) for k, v in stages.items()},
               "shards": shards, "train_rows": n_train, "nlist": nlist, "nprobe": meta.nprobe,
               "ann_gb": round(faiss_path.stat().st_size / 1e9, 2), "build_peak_rss_mb": peak_rss_mb(),
               "build_peak_anon_mb": round(peak["anon"]), "build_peak_disk_gb": round(peak["disk"] / 1e3, 2)})


def exact_truth(read: Rows, queries: np.ndarray, k: int) -> np.ndarray:
    """(Q, k) rows of the exact top k of each (weighted, concatenated) query, one pass over the regenerated rows."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    qt = queries.T.astype(np.float32)
    for s in range(0, read.n, BLOCK * 8):
        e = min(read.n, s + BLOCK * 8)
        scores = (read(s, e) @ qt).T
        cat_s = np.concatenate([best_s, scores], axis=1)
        cat_i = np.concatenate([best_i, np.broadcast_to(np.arange(s, e), scores.shape)], axis=1)
        top = np.argpartition(-cat_s, k, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cat_s, top, 1), np.take_along_axis(cat_i, top, 1)
    return best_i


def query_child(directory: str, n: int, dims: dict[str, int], n_queries: int, repeats: int, k: int, threads: int,
                queue: Any) -> None:
    _threads(threads)
    import torch

    from rise_core import ann
    from rise_core.config import ScoreOptions
    from rise_core.scoring import FeatureMatrix

    faiss_path, meta_path = ann.ann_paths(Path(directory) / "pool")
    meta = ann.AnnMeta.from_json(meta_path.read_text())
    t = time.perf_counter()
    handle = ann.AnnIndex.read(faiss_path, meta)
    out: dict[str, Any] = {"open_ms": round((time.perf_counter() - t) * 1e3, 1)}
    feats, _ = Rows(n, dims).gen.sample(n_queries, np.random.default_rng(777))
    options = ScoreOptions(lambda_hs=0.0) if "hs" not in dims else ScoreOptions()
    ones = torch.ones(1)
    qfms, qcats = [], []
    for i in range(n_queries):
        part = {c: torch.from_numpy(feats[c][i:i + 1].astype(np.float32)) for c in dims}
        qfms.append(FeatureMatrix(part["rh"], part["gh"], ones, ones, part.get("hs"), ones))
        qcats.append(ann.query_parts(qfms[-1], options, dims)[0])
    runs = {}
    for nprobe in (meta.nprobe // 2, meta.nprobe, 2 * meta.nprobe):
        times, rows = [], []
        for qfm in qfms:
            best = []
            for _ in range(repeats):
                s = time.perf_counter()
                r, _, _ = ann.top_rows(handle, qfm, options, k, nprobe=nprobe)
                best.append(time.perf_counter() - s)
            times.append(statistics.median(best))
            rows.append(set(r.tolist()))
        runs[nprobe] = {**harness.latency_ms(times), "rows": rows}
    t = time.perf_counter()
    truth = exact_truth(Rows(n, dims), np.stack(qcats), k)
    out["exact_scan_s_all_queries"] = round(time.perf_counter() - t, 1)
    for res in runs.values():
        res["recall"] = round(float(np.mean([len(r & set(truth[i].tolist())) / k
                                             for i, r in enumerate(res.pop("rows"))])), 4)
    out["sweep"] = runs
    out["query_peak_rss_mb"] = peak_rss_mb()
    queue.put(out)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=3, threads=1, out="/work/results/scale")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--preset", default="compact", help="the preset whose dims the rows have")
    parser.add_argument("--hidden-size", type=int, default=576, help="the HS channel's length, when the preset has it")
    parser.add_argument("--nlist", type=int, default=0, help="k-means cells (0: rise_core.ann.default_nlist, 8192 at "
                        "10M), as `rise index-ann --nlist`; the default nprobe is nlist/16 either way")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--dir", required=True, help="where the ANN files go (removed after unless --keep)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--skip-build", action="store_true", help="query the ANN files a --keep run left in --dir")
    args = parser.parse_args(argv)
    from rise_core.config import preset

    config = preset(args.preset)
    d_rh, d_gh = config.feature_dims
    dims = {"rh": d_rh, "gh": d_gh, **({"hs": args.hidden_size} if config.hidden_channel else {})}
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {"rows": args.rows, "preset": args.preset, "dims": dims, "values": sum(dims.values()),
                           "threads": args.threads}
    if not args.skip_build:
        print(f"building over {args.rows:,} rows of {res['values']} values", flush=True)
        res.update(harness.in_child(build_child, str(directory), args.rows, dims, args.threads, args.nlist))
        harness.print_json(res)
    res.update(harness.in_child(query_child, str(directory), args.rows, dims, args.queries, args.repeats, args.k, args.threads))
    harness.print_json(res)
    if args.out:
        harness.append_jsonl(Path(args.out) / "large_pool.jsonl", [res])
    if not args.keep:
        shutil.rmtree(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
