"""ANN search at scale: build time, size on disk, memory, query latency (exact scan vs ANN) and recall@10.

Synthetic clustered pools (so that recall means something): each sample has a 16-dim latent position z = mu_t +
N(0, I), its topic t one of max(16, N/1000) centres mu_t ~ N(0, I) (topics overlap: neighbourhoods are continuous,
not separable blobs). Each channel (RH, GH, HS) maps z plus a channel-specific latent part (0.5 N(0, I), so the
channels disagree and the lambdas matter) through a fixed random matrix, is L2-normalised, gets a shared direction
(0.3, the common component real features share) and isotropic noise (0.7), and is L2-normalised again and stored
as float16, as an index stores its unit channels. Queries are fresh samples of the same process. A `topic`-like
metadata value, uniform over 4 values and independent of the features, gives a filter keeping 25% of the rows; a
second one keeps 1%.

The features are written straight to .npy files (one per channel) instead of through DuckDB: inserting 1M rows of
~4 KB through `RiseIndex.add_samples` takes far longer than the measurement. The ANN index is built from those
files by the same streaming code `rise index-ann` runs on an index's rows (`rise_core.ann.train_ivf` + `write_ivf`:
k-means on a bounded sample, rows added a shard at a time and merged on disk), in a child process (its peak RSS is
the build's); with --build-from-duckdb (pools up to --duckdb-max) it is `rise_core.ann.build_ann` itself, reading
the DuckDB index. Queries run in another child: ANN = `rise_core.ann.top_rows` on the
memory-mapped ANN file (faiss search + exact rescoring of the candidates), exact = `attribution.top_rows` (the fp16
scan `rank` runs) on the memory-mapped .npy features. Neither includes the query's forward pass nor fetching the
hits' text from DuckDB (the same for both). Pools up to --duckdb-max rows are also written to a real index and timed
end to end through `attribution.rank(search='ann' / 'exact')`, unfiltered and with the 25% and 1% filters as
`--where` conditions on the stored metadata, with recall@10 against the exact top 10.

    python -m benchmarks.ann_scale                                   # 100k and 1M, default dims and (16, 8, 28)
    python -m benchmarks.ann_scale --sizes 100000 --dims default --queries 50
    python -m benchmarks.ann_scale --sizes 20000 --compare-hnsw 20000  # HNSW build time, for comparison
    python -m benchmarks.ann_scale --sizes 1000000 --dims default --duckdb-max 1000000 --build-from-duckdb

Why IVF with fp16 codes (rise_core.ann): the stored features are fp16 already, so fp16 codes are lossless and the ANN
file doubles as a memory-mapped copy of the features for the exact rescoring; a query reads only its nprobe cells, and
a filter costs an id check per skipped row. HNSW (--compare-hnsw) built at 0.4-0.55 ms a row on 20k rows of 2112
values with 1 thread, and that grows with N: a 1M build would take at least 6-9 minutes (IVF: about 4), its graph walk
touches rows all over the file (no benefit from memory-mapping), and selective filters break its graph search. PQ
codes would shrink the file 8-16x but are lossy: rescoring would need a second copy of the features, and the
fp16 cells already meet the latency target at 1M rows; they are the route for pools much larger than RAM.

Everything runs with 1 thread (torch and faiss). Results: one JSON line per pool in <out>/ann_scale.jsonl and a
Markdown table in <out>/ann_scale.md.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness

LATENT = 16
HIDDEN = 576  # the default model's hidden size: the HS channel's length
CHANNELS = ("rh", "gh", "hs")


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e3
    return float("nan")


def rss_mb() -> dict[str, float]:
    """Resident memory now (MB): total, anonymous (heap) and file-backed (memory-mapped pages: page cache)."""
    return {k: round(_status_mb(f), 0) for k, f in (("total", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile"))}


def peak_rss_mb() -> float:
    """Peak resident memory of this process (VmHWM: unlike ru_maxrss, not inherited across the spawn's exec)."""
    return round(_status_mb("VmHWM"), 0)


def channel_dims(dims: tuple[int, int, int]) -> dict[str, int]:
    k_r, k_h, k_g = dims
    return {"rh": k_r * k_h, "gh": k_g * k_h, "hs": HIDDEN}


class Generator:
    """The synthetic clustered feature process (module docstring); `sample` draws n samples' unit channels."""

    def __init__(self, n_pool: int, dims: dict[str, int]) -> None:
        fixed = np.random.default_rng(12345)
        self.dims = dims
        self.centres = fixed.standard_normal((max(16, n_pool // 1000), LATENT)).astype(np.float32)
        self.maps = {c: fixed.standard_normal((LATENT, d)).astype(np.float32) / np.sqrt(d) for c, d in dims.items()}
        self.shared = {c: self._unit(fixed.standard_normal((1, d)).astype(np.float32))[0] for c, d in dims.items()}

    @staticmethod
    def _unit(x: np.ndarray) -> np.ndarray:
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-30)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray]:
        topic = rng.integers(0, len(self.centres), n)
        z = self.centres[topic] + rng.standard_normal((n, LATENT), dtype=np.float32)
        out = {}
        for c, d in self.dims.items():
            v = self._unit((z + 0.5 * rng.standard_normal((n, LATENT), dtype=np.float32)) @ self.maps[c])
            v = v + 0.3 * self.shared[c] + 0.7 * rng.standard_normal((n, d), dtype=np.float32) / np.sqrt(d)
            out[c] = self._unit(v).astype(np.float16)
        return out, rng.integers(0, 400, n).astype(np.int16)  # meta value: < 100 keeps 25%, < 4 keeps 1%


def generate(directory: Path, n: int, dims: dict[str, int], chunk: int = 50_000) -> float:
    """Write the pool's channels (<c>.npy, float16) and its metadata value (meta.npy); returns seconds."""
    start = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    gen = Generator(n, dims)
    arrays = {c: np.lib.format.open_memmap(directory / f"{c}.npy", mode="w+", dtype=np.float16, shape=(n, d))
              for c, d in dims.items()}
    meta = np.empty(n, dtype=np.int16)
    rng = np.random.default_rng(0)
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        feats, value = gen.sample(m, rng)
        for c in dims:
            arrays[c][s:s + m] = feats[c]
        meta[s:s + m] = value
    for a in arrays.values():
        a.flush()
    np.save(directory / "meta.npy", meta)
    return time.perf_counter() - start


def load_pool(directory: Path) -> dict[str, np.ndarray]:
    return {c: np.load(directory / f"{c}.npy", mmap_mode="r") for c in CHANNELS}


def _one_thread() -> None:
    import faiss
    import torch

    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")


# -- build (child process) ---------------------------------------------------------------------------------------


def build_child(directory: str, nlist: int, nprobe: int, train_per_list: int, queue: Any) -> None:
    _one_thread()
    from rise_core import ann

    pool = load_pool(Path(directory))
    n = len(pool["rh"])
    dims = {c: pool[c].shape[1] for c in CHANNELS}

    def read(start: int, stop: int) -> np.ndarray:
        return np.concatenate([np.asarray(pool[c][start:stop], dtype=np.float32) for c in CHANNELS], axis=1)

    rss0 = rss_mb()
    start = time.perf_counter()
    stages: dict[str, float] = {}
    last = [start]

    peak_anon = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        peak_anon[0] = max(peak_anon[0], _status_mb("RssAnon"))  # once per chunk of rows
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last[0]
        last[0] = now

    # the streaming build `rise index-ann` runs (rise_core.ann.build_ann), on the .npy rows
    faiss_path, meta_path = ann.ann_paths(Path(directory) / "pool")
    tmp, scratch = ann.tmp_paths(faiss_path)
    d = sum(dims.values())
    template, n_train = ann.train_ivf(read, n, d, nlist, train_per_list, 0, progress=progress)
    n_shards = ann.write_ivf(template, read, n, tmp, scratch, progress=progress)
    build_s = time.perf_counter() - start
    meta = ann.AnnMeta(index_uuid="synthetic", config_fingerprint="synthetic", n_rows=n, dims=dims, nlist=nlist,
                       nprobe=nprobe, train_rows=n_train, seed=0, structure=f"IVF{nlist},SQfp16")
    ann.commit_ann(tmp, meta, faiss_path, meta_path)
    queue.put({"build_s": round(build_s, 1), "kmeans_s": round(stages.get("k-means", 0.0), 1),
               "add_s": round(stages.get("add rows", 0.0), 1), "merge_s": round(stages.get("merge shards", 0.0), 1),
               "shards": n_shards, "train_rows": n_train, "ann_mb": round(faiss_path.stat().st_size / 1e6, 1),
               "build_peak_rss_mb": peak_rss_mb(), "build_peak_anon_mb": round(peak_anon[0], 0),
               "build_rss_before_mb": rss0})


# -- queries (child process) -------------------------------------------------------------------------------------


def exact_truth(pool: dict[str, np.ndarray], queries: list[dict[str, np.ndarray]], lam: dict[str, float],
                allowed: np.ndarray | None, k: int, chunk: int = 32768) -> np.ndarray:
    """(Q, k) rows of the exact top-k per query (float32 scores of the fp16 features), one pass over the pool."""
    n = len(pool["rh"])
    qmat = {c: np.stack([q[c] * lam[c] for q in queries], axis=1) for c in CHANNELS if lam[c] != 0}
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        scores = sum(np.asarray(pool[c][s:e], dtype=np.float32) @ qmat[c] for c in qmat).T  # (Q, m)
        if allowed is not None:
            scores[:, ~allowed[s:e]] = -np.inf
        cat_s = np.concatenate([best_s, scores], axis=1)
        cat_i = np.concatenate([best_i, np.broadcast_to(np.arange(s, e), scores.shape)], axis=1)
        top = np.argpartition(-cat_s, min(k, cat_s.shape[1] - 1), axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cat_s, top, 1), np.take_along_axis(cat_i, top, 1)
    return best_i


def query_child(directory: str, n_queries: int, n_exact: int, k: int, nprobes: list[int], repeats: int,
                duckdb_path: str | None, exact_rank_max: int, queue: Any) -> None:
    _one_thread()
    import torch

    from rise_core import ann
    from rise_core.attribution import top_rows
    from rise_core.config import ScoreOptions
    from rise_core.scoring import FeatureMatrix

    d = Path(directory)
    pool = load_pool(d)
    n = len(pool["rh"])
    dims = {c: pool[c].shape[1] for c in CHANNELS}
    gen = Generator(n, dims)
    rng = np.random.default_rng(777)
    queries = []
    for _ in range(n_queries):
        feats, _ = gen.sample(1, rng)
        queries.append({c: feats[c][0].astype(np.float32) for c in CHANNELS})
    qfms = [FeatureMatrix(*(torch.from_numpy(q[c][None].copy()) for c in ("rh", "gh")),
                          torch.ones(1), torch.ones(1), torch.from_numpy(q["hs"][None].copy()), torch.ones(1))
            for q in queries]
    meta_value = np.load(d / "meta.npy")
    filters = {"25%": meta_value < 100, "1%": meta_value < 4}
    out: dict[str, Any] = {"rss_start_mb": rss_mb()}

    faiss_path, meta_path = ann.ann_paths(d / "pool")
    meta = ann.AnnMeta.from_json(meta_path.read_text())
    t = time.perf_counter()
    handle = ann.AnnIndex.read(faiss_path, meta)
    out["ann_open_ms"] = round((time.perf_counter() - t) * 1e3, 1)
    out["rss_after_open_mb"] = rss_mb()

    def timed(fn: Any) -> tuple[float, Any]:
        """Median of `repeats` runs of fn() (the machine is shared: one slow run is not the query's cost)."""
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            res = fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times), res

    def run(options: ScoreOptions, nprobe: int, allowed: np.ndarray | None) -> dict[str, Any]:
        mask = None if allowed is None else torch.from_numpy(allowed)
        times, rows, paths = [], [], set()
        for qfm in qfms:
            sec, (r, _, info) = timed(lambda qfm=qfm: ann.top_rows(handle, qfm, options, k, mask, nprobe=nprobe))
            times.append(sec)
            rows.append(set(r.tolist()))
            paths.add(info["path"])
        return {**harness.latency_ms(times),
                "path": "/".join(sorted(paths)), "nprobe_used": info["nprobe"], "rows": rows}

    def overfetch(options: ScoreOptions, nprobe: int, allowed: np.ndarray) -> dict[str, Any]:
        """The alternative to filtering inside the scan: fetch 2k / (fraction kept) unfiltered, then filter."""
        def one(qfm: FeatureMatrix) -> set[int]:
            qcat, parts = ann.query_parts(qfm, options, meta.dims)
            cand = handle.search(qcat, math.ceil(2 * k / allowed.mean()), nprobe)
            cand = cand[allowed[cand]]
            scores = handle.score_rows(cand, parts)
            return set(cand[torch.topk(scores.total, min(k, len(cand))).indices.numpy()].tolist())

        times, rows = [], []
        for qfm in qfms:
            sec, r = timed(lambda qfm=qfm: one(qfm))
            times.append(sec)
            rows.append(r)
        return {**harness.latency_ms(times),
                "nprobe_used": nprobe, "rows": rows}

    default = ScoreOptions()
    other = ScoreOptions(lambda_rh=0.0, lambda_gh=1.0, lambda_hs=0.5)  # the lambdas are a query-time choice
    nprobe = meta.nprobe
    # every ANN measurement first, so that the RSS below is the ANN path's (the exact truth pages the features in)
    runs = {str(p): run(default, p, None) for p in nprobes}
    runs["lambdas_gh1_hs0.5"] = run(other, nprobe, None)
    for name, allowed in filters.items():
        runs[f"filter_{name}"] = run(default, nprobe, allowed)
    runs["filter_25%_overfetch"] = overfetch(default, nprobe, filters["25%"])
    out["rss_after_ann_queries_mb"] = rss_mb()

    # end to end through a DuckDB index: `attribution.rank`, the hits' rows fetched from DuckDB included
    index = None
    if duckdb_path:
        from rise_core.attribution import rank
        from rise_core.store import RiseIndex

        index = RiseIndex.open(duckdb_path)

        def rank_times(search: str, where: str | None = None, options: ScoreOptions = default,
                       fresh: Any = lambda: None) -> dict[str, Any]:
            """`rank` over the first max(n_exact, 20) queries: p50 / p95 (median of `repeats` runs each), the first
            call (the exact path loads the feature matrix, a filter runs its SQL once), and the rows returned;
            `fresh()` runs before each call."""
            start = time.perf_counter()
            rank(index, qfms[0], options, k, where=where, search=search)
            first = time.perf_counter() - start
            times, rows, paths = [], [], set()
            for qfm in qfms[:max(n_exact, 20)]:
                sec, df = timed(lambda qfm=qfm: (fresh(), rank(index, qfm, options, k, where=where, search=search))[1])
                times.append(sec)
                rows.append({int(i[1:]) for i in df["id"]})  # ids are "s<row>"
                paths.add(df.attrs["search"]["path"])
            return {**harness.latency_ms(times),
                    "path": "/".join(sorted(paths)), "nprobe_used": df.attrs["search"].get("nprobe"),
                    "first_call_s": round(first, 2), "rss_after_mb": rss_mb(), "rows": rows}

        def lifted_times() -> dict[str, Any]:
            """`rank_times` of the default (per-query weights) where the behaviour test fires: synthetic rows share
            no span, so its finding is replaced by one naming a word every row's text holds (the widest lift, 10
            spreads as for a rare span of the prompt); each query a new one (the test's memo cleared)."""
            from unittest import mock

            from rise_core import adaptive, behaviour
            from rise_core.attribution import BEHAVIOUR_MEMO

            found = adaptive.BehaviourEvidence("synthetic", "text", 10, 10, 1.0, 1e-9, 0)
            with mock.patch.object(behaviour, "candidates", lambda *args, **kw: [found]), \
                    mock.patch.object(adaptive.BehaviourEvidence, "lift_spreads", adaptive.PROMPT_SPAN_LIFT):
                BEHAVIOUR_MEMO.clear()
                res = rank_times("ann", options=ScoreOptions.preset("default"), fresh=BEHAVIOUR_MEMO.clear)
            res.pop("rows")  # the lift reorders the top: no recall against the unlifted truth
            return res

        # the metadata value is stored as sample meta: `value < 100` keeps 25% of the rows, `value < 4` 1%
        out["rank_duckdb"] = {"ann": rank_times("ann"), "ann_filter_25%": rank_times("ann", "value < 100"),
                              "ann_filter_1%": rank_times("ann", "value < 4"),
                              # HS weighted 0: 8x the default nprobe (rise_core.ann.probe_factor)
                              "ann_backdoor": rank_times("ann", options=ScoreOptions.preset("backdoor")),
                              # the span lift on the ANN path: its spread from sampled rows, its head widened
                              "ann_lifted": lifted_times()}

    t = time.perf_counter()
    lam = {"rh": default.lambda_rh, "gh": default.lambda_gh, "hs": default.lambda_hs}
    truth = exact_truth(pool, queries, lam, None, k)
    out["truth_s"] = round(time.perf_counter() - t, 1)
    truths = {"": truth, "lambdas_gh1_hs0.5": exact_truth(pool, queries, {"rh": 0.0, "gh": 1.0, "hs": 0.5}, None, k),
              "25%": exact_truth(pool, queries, lam, filters["25%"], k),
              "1%": exact_truth(pool, queries, lam, filters["1%"], k)}
    if "rank_duckdb" in out:
        backdoor = ScoreOptions.preset("backdoor")
        truths["backdoor"] = exact_truth(pool, queries, {"rh": backdoor.lambda_rh, "gh": backdoor.lambda_gh,
                                                         "hs": backdoor.lambda_hs}, None, k)
    for name, res in runs.items():
        key = next((t for t in ("lambdas_gh1_hs0.5", "25%", "1%") if t in name), "")
        rows = res.pop("rows")
        res["recall"] = round(float(np.mean([len(r & set(truths[key][i].tolist())) / k for i, r in enumerate(rows)])),
                              4)
    out["sweep"] = {p: runs.pop(str(p)) for p in map(str, nprobes)}
    out.update(runs)
    for name, res in out.get("rank_duckdb", {}).items():
        key = next((t for t in ("25%", "1%", "backdoor") if t in name), "")
        rows = res.pop("rows", None)
        if rows is None:  # the lifted ranking: no unlifted truth to compare with
            continue
        res["recall"] = round(float(np.mean([len(r & set(truths[key][i].tolist())) / k for i, r in enumerate(rows)])),
                              4)

    # the exact scan `rank` runs, on the memory-mapped fp16 features
    fm = FeatureMatrix(*(torch.from_numpy(pool[c]) for c in ("rh", "gh")), torch.ones(n), torch.ones(n),
                       torch.from_numpy(pool["hs"]), torch.ones(n))
    times, agree = [], []
    top_rows(fm, qfms[0], default, k)  # page the features in
    for i in range(min(n_exact, n_queries)):
        sec, (rows, _) = timed(lambda i=i: top_rows(fm, qfms[i], default, k))
        times.append(sec)
        agree.append(len(set(rows.tolist()) & set(truth[i].tolist())) / k)  # 1.0 but for float32 ties at the cut
    out["exact"] = {**harness.latency_ms(times),
                    "n_queries": len(times), "recall_vs_truth": round(float(np.mean(agree)), 4)}
    out["rss_after_exact_mb"] = rss_mb()
    out["peak_rss_mb"] = peak_rss_mb()

    if index is not None and n <= exact_rank_max:
        out["rank_duckdb"]["exact"] = rank_times("exact")  # loads the whole feature matrix first, as `rank` does
        out["rank_duckdb"]["exact"].pop("rows")
    if index is not None:
        index.close()
    queue.put(out)


# -- the optional end-to-end index and the HNSW comparison ---------------------------------------------------------


def build_from_index_child(path: str, nlist: int, nprobe: int, train_per_list: int, queue: Any) -> None:
    """`rise index-ann`'s build, reading the rows from the DuckDB index (1 thread)."""
    _one_thread()
    from rise_core import ann
    from rise_core.store import RiseIndex

    stages: dict[str, float] = {}
    last = [time.perf_counter()]
    peak_anon = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        peak_anon[0] = max(peak_anon[0], _status_mb("RssAnon"))  # once per block of rows
        now = time.perf_counter()
        stages[stage] = stages.get(stage, 0.0) + now - last[0]
        last[0] = now

    start = time.perf_counter()
    with RiseIndex.open(path) as index:
        meta = ann.build_ann(index, nlist=nlist, nprobe=nprobe, train_per_list=train_per_list, threads=1,
                             progress=progress)
    queue.put({"duckdb_ann_build_s": round(time.perf_counter() - start, 1), "duckdb_ann_build_peak_rss_mb":
               peak_rss_mb(), "duckdb_ann_build_peak_anon_mb": round(peak_anon[0], 0), "duckdb_ann_nlist": meta.nlist,
               "duckdb_ann_stages_s": {k: round(v, 1) for k, v in stages.items()}, "duckdb_ann_shards":
               meta.extra.get("shards"), "duckdb_ann_train_rows": meta.train_rows})


def write_duckdb(directory: Path, dims_k: tuple[int, int, int], chunk: int = 10_000, copy_ann: bool = True
                 ) -> tuple[Path, float]:
    """A real RISE index holding the pool's features, and (copy_ann) its ANN files copied from the synthetic build."""
    import torch

    from rise_core import ann
    from rise_core.config import RiseConfig
    from rise_core.samples import Sample
    from rise_core.scoring import FeatureMatrix
    from rise_core.sketch import SketchSet
    from rise_core.store import RiseIndex

    start = time.perf_counter()
    k_r, k_h, k_g = dims_k
    config = RiseConfig(k_r=k_r, k_h=k_h, k_g=k_g)
    path = directory / "pool.duckdb"
    index = RiseIndex._create_raw(path, config, "synthetic", "synthetic", {"vocab_size": 1024, "hidden_size": HIDDEN},
                                  SketchSet.for_config(1024, HIDDEN, config), overwrite=True)
    index.set_hidden_mean(torch.zeros(HIDDEN))
    pool = load_pool(directory)
    meta_value = np.load(directory / "meta.npy")
    n = len(pool["rh"])
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        parts = {c: torch.from_numpy(np.array(pool[c][s:e])) for c in CHANNELS}
        ones = torch.ones(e - s)
        fm = FeatureMatrix(parts["rh"], parts["gh"], ones, ones, parts["hs"], ones)
        samples = [Sample(text=f"synthetic {i}", id=f"s{i}", meta={"value": int(meta_value[i])}) for i in range(s, e)]
        index.add_samples(samples, fm, [64] * (e - s), [8.0] * (e - s), [2.0] * (e - s), [65] * (e - s),
                          [False] * (e - s))
    index.set_status("complete")
    m = index.manifest
    index.close()
    if not copy_ann:
        return path, time.perf_counter() - start
    faiss_src, meta_src = ann.ann_paths(directory / "pool")
    faiss_dst, meta_dst = ann.ann_paths(path)
    shutil.copy(faiss_src, faiss_dst)
    meta = ann.AnnMeta.from_json(meta_src.read_text())
    meta.index_uuid, meta.config_fingerprint = m.index_uuid, config.fingerprint()
    meta_dst.write_text(meta.to_json())
    return path, time.perf_counter() - start


def compare_hnsw(directory: Path, n: int, queue: Any) -> None:
    """HNSW32 with fp16 codes (efConstruction 40) over the pool's first n rows: build time, recall, latency."""
    _one_thread()
    import faiss

    pool = load_pool(directory)
    x = np.concatenate([np.asarray(pool[c][:n], dtype=np.float32) for c in CHANNELS], axis=1)
    index = faiss.IndexHNSWSQ(x.shape[1], faiss.ScalarQuantizer.QT_fp16, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 40
    start = time.perf_counter()
    index.train(x[:1000])
    index.add(x)
    build_s = time.perf_counter() - start
    queue.put({"hnsw_rows": n, "hnsw_build_s": round(build_s, 1), "hnsw_us_per_row": round(build_s / n * 1e6, 0)})


# -- main -----------------------------------------------------------------------------------------------------------


def measure(n: int, dims_k: tuple[int, int, int], root: Path, args: argparse.Namespace) -> dict[str, Any]:
    from rise_core import ann

    dims = channel_dims(dims_k)
    directory = root / f"pool-{n}-{'x'.join(map(str, dims_k))}"
    res: dict[str, Any] = {"n": n, "dims": list(dims_k), "values_per_sample": sum(dims.values()),
                           "features_mb": round(n * sum(dims.values()) * 2 / 1e6, 1)}
    if args.reuse and (directory / "meta.npy").exists():  # a pool kept by an earlier run (--dir D --keep)
        res["generate_s"] = None
    else:
        res["generate_s"] = round(generate(directory, n, dims), 1)
    nlist = args.nlist or ann.default_nlist(n)
    nprobe = args.nprobe or ann.default_nprobe(nlist)
    res.update(nlist=nlist, nprobe=nprobe)
    from_duckdb = n <= args.duckdb_max and args.build_from_duckdb
    print(f"  [{n} x {res['values_per_sample']}] generated in {res['generate_s']} s", flush=True)
    if not from_duckdb:
        print(f"  building IVF{nlist},SQfp16 from the .npy features", flush=True)
        res.update(harness.in_child(build_child, str(directory), nlist, nprobe, args.train_per_list))
        print(f"  built in {res['build_s']} s", flush=True)
    duckdb_path = None
    if n <= args.duckdb_max:
        if args.reuse and from_duckdb and (directory / "pool.duckdb").exists():
            path, write_s = directory / "pool.duckdb", None
        else:
            path, write_s = write_duckdb(directory, dims_k, copy_ann=not from_duckdb)
        duckdb_path, res["duckdb_write_s"] = str(path), None if write_s is None else round(write_s, 1)
        res["duckdb_mb"] = round(path.stat().st_size / 1e6, 1)
        print(f"  wrote the DuckDB index in {res['duckdb_write_s']} s", flush=True)
        if from_duckdb:  # `rise index-ann`'s own build, reading the DuckDB index
            res.update(harness.in_child(build_from_index_child, duckdb_path, nlist, nprobe, args.train_per_list))
            res.update(build_s=res["duckdb_ann_build_s"], build_peak_rss_mb=res["duckdb_ann_build_peak_rss_mb"],
                       kmeans_s=res["duckdb_ann_stages_s"].get("k-means", 0.0),
                       add_s=res["duckdb_ann_stages_s"].get("add rows", 0.0), train_rows=res["duckdb_ann_train_rows"],
                       ann_mb=round(ann.ann_paths(path)[0].stat().st_size / 1e6, 1))
            print(f"  built from DuckDB in {res['build_s']} s, peak RSS {res['build_peak_rss_mb']} MB", flush=True)
            # the query child reads the synthetic name: a hard link to the index's ANN files (one copy in the page
            # cache); its sidecar says the same rows, cells and nprobe
            pool_faiss, pool_meta = ann.ann_paths(directory / "pool")
            pool_faiss.unlink(missing_ok=True)
            os.link(ann.ann_paths(path)[0], pool_faiss)
            shutil.copy(ann.ann_paths(path)[1], pool_meta)
    print("  querying", flush=True)
    nprobes = sorted({max(1, nprobe // 2), nprobe, min(nlist, 2 * nprobe), min(nlist, 4 * nprobe)})
    res.update(harness.in_child(query_child, str(directory), args.queries, args.exact_queries, args.k, nprobes, args.repeats,
                      duckdb_path, args.exact_rank_max))
    if args.compare_hnsw:
        res.update(harness.in_child(compare_hnsw, directory, min(n, args.compare_hnsw)))
    if not args.keep:
        shutil.rmtree(directory)
    return res


def table(results: list[dict[str, Any]]) -> str:
    head = ("| pool | values/sample | nlist | build (k-means + add) | build peak RSS | ANN file "
            "| RSS open / after queries | exact p50 / p95 | nprobe | ANN p50 / p95 | recall@10 | 25% filter (in scan) "
            "| 1% filter (exact) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in results:
        for p, s in r["sweep"].items():
            lines.append(
                f"| {r['n']:,} ({'x'.join(map(str, r['dims']))}) | {r['values_per_sample']} | {r['nlist']} | "
                f"{r['build_s']} s ({r['kmeans_s']} + {r['add_s']}) | {r['build_peak_rss_mb'] / 1e3:.2f} GB | "
                f"{r['ann_mb'] / 1e3:.2f} GB | "
                f"{r['rss_after_open_mb']['total']:.0f} / {r['rss_after_ann_queries_mb']['total']:.0f} MB | "
                f"{r['exact']['p50_ms']:.0f} / {r['exact']['p95_ms']:.0f} ms | "
                f"{p}{'*' if int(p) == r['nprobe'] else ''}"
                f" | {s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms | {s['recall']:.3f} | "
                + (f"{r['filter_25%']['p50_ms']:.1f} ms, {r['filter_25%']['recall']:.3f} | "
                   f"{r['filter_1%']['p50_ms']:.1f} ms, {r['filter_1%']['recall']:.3f} |" if int(p) == r["nprobe"]
                   else " | |"))
    text = head + "\n".join(lines) + "\n"
    e2e = [r for r in results if "rank_duckdb" in r]
    if e2e:
        text += ("\nEnd to end through DuckDB (`attribution.rank`, hits' rows included), p50 / p95, recall@10:\n\n"
                 "| pool | ANN | ANN, 25% filter | ANN, 1% filter | ANN, backdoor weights | exact |\n"
                 "|---|---|---|---|---|---|\n")
        for r in e2e:
            cells = []
            for name in ("ann", "ann_filter_25%", "ann_filter_1%", "ann_backdoor", "exact"):
                x = r["rank_duckdb"].get(name)
                cells.append("" if x is None else f"{x['p50_ms']:.1f} / {x['p95_ms']:.1f} ms" +
                             (f", {x['recall']:.3f}" if "recall" in x else ""))
            text += f"| {r['n']:,} ({'x'.join(map(str, r['dims']))}) | " + " | ".join(cells) + " |\n"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=3, out="results/ann")
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated pool sizes")
    parser.add_argument("--dims", default="default,16x8x28",
                        help="comma-separated K_r x K_h x K_g triples; 'default' is RiseConfig()'s")
    parser.add_argument("--nlist", type=int, default=None, help="default: rise_core.ann.default_nlist(N)")
    parser.add_argument("--nprobe", type=int, default=None, help="default: rise_core.ann.default_nprobe(nlist)")
    parser.add_argument("--train-per-list", type=int, default=64)
    parser.add_argument("--queries", type=int, default=100, help="queries for latency and recall")
    parser.add_argument("--exact-queries", type=int, default=20, help="of which timed on the exact scan")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--duckdb-max", type=int, default=100_000,
                        help="pools up to this size are also timed end to end through a DuckDB index")
    parser.add_argument("--exact-rank-max", type=int, default=250_000,
                        help="time the exact `rank` through DuckDB only up to this pool size: it loads every feature "
                             "into memory (twice over while it reads them: 15 GB at 1M rows of the default dims)")
    parser.add_argument("--build-from-duckdb", action="store_true",
                        help="with --duckdb-max: also time `rise index-ann`'s build reading the DuckDB index")
    parser.add_argument("--compare-hnsw", type=int, default=0, metavar="ROWS",
                        help="also time an HNSW32,SQfp16 build over this many rows")
    parser.add_argument("--dir", default=None, help="where to write the pools (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="with --dir: keep the generated pools there")
    parser.add_argument("--reuse", action="store_true",
                        help="with --dir D --keep: use the pools an earlier run kept in D (the .npy features and, "
                             "with --build-from-duckdb, the DuckDB index) instead of writing them again")
    args = parser.parse_args(argv)

    from rise_core.config import RiseConfig

    base = RiseConfig()
    triples = [(base.k_r, base.k_h, base.k_g) if d == "default" else tuple(int(x) for x in d.split("x"))
               for d in args.dims.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    keep_dir = Path(args.dir) if args.keep and args.dir else None  # --keep --dir D: the pools stay in D
    with contextlib.nullcontext(str(keep_dir)) if keep_dir else tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for dims_k in triples:
            for n in (int(s) for s in args.sizes.split(",")):
                print(f"pool of {n:,} at dims {dims_k}", flush=True)
                res = measure(n, dims_k, Path(tmp), args)
                results.append(res)
                harness.append_jsonl(out / "ann_scale.jsonl", [res])
                harness.print_json(res)
    md = table(results)
    (out / "ann_scale.md").write_text(md)
    print("\n" + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
