"""A query end to end, from its text to the hits' text, on a large index (1M rows by default) with an ANN index: tokenise, the model's
forward pass, sketching the query, the ANN search with exact rescoring, and fetching the hits' rows from DuckDB;
each stage timed, and recall@10 against the exact scan of all rows.

What is real and what is not:
  - The model, the queries and the first B rows are real: the embedded SmolLM2-135M (`load_model(None)`), every
    query of the seven real tasks (howdy, finmed, brainrot, dev-finmed, dev-brainrot, dev-sentiment, dev-refusal:
    their query texts, run through the model at query time), and every distinct pool sample of those tasks (B =
    3,494 rows) with its features as an index built from them stores them (the default config at seq_len 256, from
    the cached readouts of studies/cache_readouts.py, its HS mean fitted on them) and its real text.
  - The other rows (up to --rows) are synthetic, drawn to follow the real rows: row i takes a real row j and one of
    j's 10 nearest real neighbours m (fused default-weight score), interpolates (1 - t) u_j + t u_m with t ~ U(0,
    0.5) per channel, adds isotropic Gaussian noise and re-normalises each channel. The noise on channel c is set so
    that a synthetic row lies as far from its interpolated source as a real row's nearest real neighbour does on
    that channel (the median over the real rows of cos(u_j, u_nn(j)) on c): synthetic rows fill the real rows'
    neighbourhoods at the real density of topics, lengths and channel geometry, but they are not text the model
    read. Their stored text is their source row's real text (so the fetched rows have real sizes), their loss and
    counts the source's. Rows are drawn per block of 16,384 from a fixed seed, so the same rows come back each time
    they are read (the ANN build and the exact scan read them again instead of a copy on disk).
  - The index is a real RISE index (`RiseIndex.create` with the model, its sketches and the fitted HS mean), its
    ANN index built by `rise index-ann`'s code (`rise_core.ann.train_ivf` + `write_ivf`, the default nlist and
    nprobe for the pool's size) reading the same rows, with a sidecar naming the index as `rise index-ann` writes
    it. A query is what `rise query --index I --text T` runs: `attribution.query_features` then `attribution.rank`
    under the index's scoring (the default preset: weights chosen per query), so the ANN path is the library's.

    python -m benchmarks.text_query build --rows 1000000 --dir /work/results/scale/text1m    # ~ 15 GB on disk
    python -m benchmarks.text_query query --dir /work/results/scale/text1m --repeats 3
    python -m benchmarks.text_query query --dir D --nprobe 64          # the ANN sidecar's nprobe set to 64 first

Results: one JSON line per run in <out>/text_query.jsonl. The stage times are the median over --repeats runs of
each query; p50 / p95 over the queries. Threads: --threads (default 1; the machine this ran on is shared).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import harness

BLOCK = 16384
NEIGHBOURS = 10
PENDING = "pending"  # the ANN sidecar's index_uuid when it was built while the index was still being written
TASKS = ("howdy", "finmed", "brainrot", "dev-finmed", "dev-brainrot", "dev-sentiment", "dev-refusal")


def real_base(readouts: Path, seq_len: int, task_names: tuple[str, ...] = TASKS,
              query_tasks: tuple[str, ...] = TASKS) -> dict[str, Any]:
    """The real rows (the pools of `task_names`: samples, features as float32 unit channels, losses, counts) and the
    real queries (of `query_tasks`: their texts only, run through the model at query time), the HS mean, config and
    model."""
    from rise_core.config import RiseConfig
    from rise_core.models import load_model
    from studies import tasks
    from studies.ann_recall_real import load_cache

    config = RiseConfig(seq_len=seq_len)
    named = {name: tasks.task(name) for name in task_names}
    lm = load_model(None)
    cache = load_cache(lm, named, readouts, seq_len, forward_missing=False)
    pool = list(dict.fromkeys(s for t in named.values() for s in t.pool))
    queries = list(dict.fromkeys(q for name in query_tasks for q in tasks.task(name).queries))
    mean = cache.pool_hidden_mean(pool, config)
    fm = cache.rise_features(pool, config, mean)
    counts = [int(cache.readouts[cache.key(s)].mask(config.counted_positions)[: seq_len - 1].sum()) for s in pool]
    return {"lm": lm, "config": config, "pool": pool, "queries": queries, "mean": mean, "counts": counts,
            "feats": {c: getattr(fm, c).float().numpy() for c in ("rh", "gh", "hs")},
            "loss": fm.loss.float().numpy() if fm.loss is not None else np.full(len(pool), 2.0, dtype=np.float32)}


class Model:
    """The fitted generative model of the rows: real rows first, then interpolated + perturbed ones (module doc)."""

    def __init__(self, feats: dict[str, np.ndarray], n: int) -> None:
        self.feats, self.n, self.b = feats, n, len(feats["rh"])
        fused = sum(w * feats[c] @ feats[c].T for c, w in (("rh", 1.4), ("gh", 1.0), ("hs", 1.0)))
        np.fill_diagonal(fused, -np.inf)
        self.neighbours = np.argsort(-fused, axis=1)[:, :NEIGHBOURS]
        nn = self.neighbours[:, 0]
        self.nn_cos = {c: float(np.median(np.sum(feats[c] * feats[c][nn], axis=1))) for c in feats}
        # |noise| = sigma a unit row: cos(source, source + noise) ~ 1 / sqrt(1 + sigma^2) = the real 1-NN cosine
        self.sigma = {c: float(np.sqrt(max(1.0 / cos**2 - 1.0, 0.0))) for c, cos in self.nn_cos.items()}
        self._cached: tuple[int, dict[str, np.ndarray], np.ndarray] | None = None

    def block(self, b: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Block b's rows: float16 unit channels and each row's source (real) row."""
        if self._cached is not None and self._cached[0] == b:
            return self._cached[1], self._cached[2]
        lo, hi = b * BLOCK, min(self.n, (b + 1) * BLOCK)
        real = np.arange(lo, min(hi, self.b))
        m = hi - lo - len(real)
        rng = np.random.default_rng([11, b])
        src = rng.integers(0, self.b, m)
        other = self.neighbours[src, rng.integers(0, NEIGHBOURS, m)]
        t = rng.uniform(0.0, 0.5, (m, 1)).astype(np.float32)
        out = {}
        for c, x in self.feats.items():
            v = (1 - t) * x[src] + t * x[other]
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            v += self.sigma[c] / np.sqrt(x.shape[1]) * rng.standard_normal(v.shape, dtype=np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            out[c] = np.concatenate([x[real], v]).astype(np.float16)
        sources = np.concatenate([real, src])
        self._cached = (b, out, sources)
        return out, sources

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows start..stop-1 as float32 [u_rh; u_gh; u_hs] (the float16 values the index stores)."""
        parts = []
        for b in range(start // BLOCK, (stop - 1) // BLOCK + 1):
            feats, _ = self.block(b)
            lo, hi = max(start, b * BLOCK) - b * BLOCK, min(stop, (b + 1) * BLOCK) - b * BLOCK
            parts.append(np.concatenate([feats[c][lo:hi].astype(np.float32) for c in ("rh", "gh", "hs")], axis=1))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def index_path(directory: Path) -> Path:
    return directory / "pool.duckdb"


def build(args: argparse.Namespace) -> dict[str, Any]:
    from rise_core.scoring import FeatureMatrix
    from rise_core.store import RiseIndex

    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    base = real_base(Path(args.readouts), args.seq_len, tuple(args.tasks.split(",")),
                         tuple(args.query_tasks.split(",")))
    model = Model(base["feats"], args.rows)
    res: dict[str, Any] = {"rows": args.rows, "real_rows": model.b, "nn_cos": model.nn_cos, "sigma": model.sigma}
    print(json.dumps(res), flush=True)
    t0 = time.perf_counter()
    index = RiseIndex.create(index_path(directory), base["lm"], base["config"], overwrite=True)
    index.set_hidden_mean(base["mean"])
    pool = base["pool"]
    for b in range(0, (args.rows - 1) // BLOCK + 1):
        feats, src = model.block(b)
        lo = b * BLOCK
        samples = [dataclasses.replace(pool[j], id=(f"r{j}" if lo + i < model.b else f"s{lo + i}"), label=None,
                                       meta={}) for i, j in enumerate(src.tolist())]
        ones = torch.ones(len(src))
        fm = FeatureMatrix(*(torch.from_numpy(feats[c]) for c in ("rh", "gh")), ones, ones,
                           torch.from_numpy(feats["hs"]), ones)
        counts = [base["counts"][j] for j in src]
        index.add_samples(samples, fm, counts, [8.0] * len(src), base["loss"][src].tolist(),
                          [c + 1 for c in counts], [False] * len(src))
        if b % 10 == 0:
            print(f"  wrote {lo + len(src):,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    index.set_status("complete")
    index.close()
    res["duckdb_write_s"] = round(time.perf_counter() - t0, 1)
    res["duckdb_gb"] = round(index_path(directory).stat().st_size / 1e9, 2)
    if not args.skip_ann:
        res.update(build_ann(args, model, base))
    return res


def build_ann(args: argparse.Namespace, model: Model | None = None, base: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    """The ANN index beside the index, built by `rise index-ann`'s code from the same rows (the generator, not a
    second read of the DuckDB file), with the sidecar `rise index-ann` writes."""
    from rise_core import ann
    from rise_core.errors import IndexStoreError
    from rise_core.store import RiseIndex

    directory = Path(args.dir)
    if base is None:
        base = real_base(Path(args.readouts), args.seq_len, tuple(args.tasks.split(",")),
                         tuple(args.query_tasks.split(",")))
    try:
        with RiseIndex.open(index_path(directory)) as index:
            uuid, dims, n = index.manifest.index_uuid, ann.index_dims(index), index.manifest.n_samples
    except IndexStoreError:  # `build --skip-ann` is still writing it: `query` fills the uuid in when it opens it
        d_rh, d_gh = base["config"].feature_dims
        uuid, dims, n = PENDING, {"rh": d_rh, "gh": d_gh, "hs": int(base["mean"].numel())}, args.rows
    model = model or Model(base["feats"], n)
    t0 = time.perf_counter()
    faiss_path, meta_path = ann.ann_paths(index_path(directory))
    tmp, scratch = ann.tmp_paths(faiss_path)
    d, nlist = sum(dims.values()), ann.default_nlist(n)
    template, n_train = ann.train_ivf(model.read, n, d, nlist)
    shards = ann.write_ivf(template, model.read, n, tmp, scratch)
    meta = ann.AnnMeta(index_uuid=uuid, config_fingerprint=base["config"].fingerprint(), n_rows=n,
                       dims=dims, nlist=nlist, nprobe=ann.default_nprobe(nlist), train_rows=n_train, seed=0,
                       structure=f"IVF{nlist},SQfp16", extra={"shards": shards})
    ann.commit_ann(tmp, meta, faiss_path, meta_path)
    return {"ann_build_s": round(time.perf_counter() - t0, 1), "ann_gb": round(faiss_path.stat().st_size / 1e9, 2),
            "nlist": nlist, "nprobe": meta.nprobe}


def exact_truth(model: Model, qcats: np.ndarray, k: int) -> np.ndarray:
    """(Q, k) exact top-k rows of each weighted concatenated query over every row (one pass, regenerated)."""
    best_s = np.full((len(qcats), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(qcats), 0), dtype=np.int64)
    qt = np.ascontiguousarray(qcats.T, dtype=np.float32)
    for s in range(0, model.n, BLOCK * 4):
        e = min(model.n, s + BLOCK * 4)
        scores = (model.read(s, e) @ qt).T
        cat_s = np.concatenate([best_s, scores], axis=1)
        cat_i = np.concatenate([best_i, np.broadcast_to(np.arange(s, e), scores.shape)], axis=1)
        top = np.argpartition(-cat_s, k, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cat_s, top, 1), np.take_along_axis(cat_i, top, 1)
    return best_i


def query(args: argparse.Namespace) -> dict[str, Any]:
    """Every query once through tokenise / forward / sketch (timed), then its search and fetch `repeats` times (the
    median counts); recall@10 of the default path and of fixed nprobe values against the exact scan."""
    import os

    from rise_core import ann
    from rise_core.attribution import index_weighting, query_features, rank, top
    from rise_core.engine import SampleFeatures, readout_forward
    from rise_core.scoring import FeatureMatrix
    from rise_core.store import RiseIndex

    directory = Path(args.dir)
    base = real_base(Path(args.readouts), args.seq_len, tuple(args.tasks.split(",")),
                         tuple(args.query_tasks.split(",")))
    lm, texts = base["lm"], base["queries"][: args.queries or None]
    faiss_path, meta_path = ann.ann_paths(index_path(directory))
    meta = ann.AnnMeta.from_json(meta_path.read_text())
    if meta.index_uuid == PENDING:
        with RiseIndex.open(index_path(directory)) as opened:
            meta.index_uuid = opened.manifest.index_uuid
        meta_path.write_text(meta.to_json())
    index = RiseIndex.open(index_path(directory))
    if args.nprobe:
        ann.set_nprobe(index, args.nprobe)  # as `rise index-ann --set-nprobe`
    n = index.manifest.n_samples
    model = Model(base["feats"], n)
    dims = ann.index_dims(index)
    for start in (0, n // 2, n - 100):  # the regenerated rows (the exact scan's) are the stored ones, bit for bit
        stored = ann.concat_channels(index.load_features(start, start + 100), list(dims))
        if not np.array_equal(stored, model.read(start, start + 100)):
            raise SystemExit(f"rows {start}..{start + 99} of the index are not the generator's: rebuild it")
    load_before = [round(x, 2) for x in os.getloadavg()]
    stages: dict[str, list[float]] = {s: [] for s in ("tokenise", "forward", "sketch", "search", "fetch")}
    tokens, qcats, rows_at, infos = [], [], [], []
    sweep = sorted({int(p) for p in args.sweep.split(",") if p})
    extractor = index.extractor(lm)
    first = rank(index, query_features(index, lm, texts[0], truncate=True), k=args.k)  # open, page in, warm caches
    same_as_api = 0
    cpu: dict[str, list[float]] = {s: [] for s in stages}

    def now() -> tuple[float, float]:
        return time.perf_counter(), time.thread_time()  # wall, and this thread's CPU time (all the work is on it)

    for qi, text in enumerate(texts):
        t = [now()]
        encoded = extractor.encode([text])
        t.append(now())
        readout = readout_forward(lm, encoded, extractor.config)
        t.append(now())
        qfm = FeatureMatrix.from_features(SampleFeatures.concat([extractor.features_from_readout(readout)]),
                                          dtype=torch.float32)
        t.append(now())
        for name, a, b in zip(("tokenise", "forward", "sketch"), t, t[1:], strict=False):
            stages[name].append(b[0] - a[0])
            cpu[name].append(b[1] - a[1])
        search, fetch = [], []
        for _ in range(args.repeats):
            s0 = now()
            ranking = top(index, qfm, None, args.k)  # the index's preset (default: weights chosen per query)
            s1 = now()
            frame = ranking.to_frame(index)
            s2 = now()
            search.append((s1[0] - s0[0], s1[1] - s0[1]))
            fetch.append((s2[0] - s1[0], s2[1] - s1[1]))
        for name, v in (("search", search), ("fetch", fetch)):
            stages[name].append(statistics.median(x[0] for x in v))
            cpu[name].append(statistics.median(x[1] for x in v))
        if qi < args.api_check:  # `rise query`'s own calls give the same hits
            api = rank(index, query_features(index, lm, text, truncate=True), k=args.k)
            same_as_api += int(api["id"].tolist() == frame["id"].tolist())
        assert (frame["text"].notna() | frame["completion"].notna()).all() and len(frame) == args.k
        tokens.append(len(encoded[0].input_ids))
        resolved = index_weighting(index, qfm, None)
        qcat, _ = ann.query_parts(qfm, resolved.options, dims)
        qcats.append(qcat)
        handle = ann.load_ann(index)
        at = {"rule": set(ranking.rows.tolist())}
        for p in sweep:
            r, _, _ = ann.top_rows(handle, qfm, resolved.options, args.k, nprobe=p)
            at[p] = set(r.tolist())
        rows_at.append(at)
        infos.append({**ranking.search, "lambda_hs": resolved.options.lambda_hs})
    t0 = time.perf_counter()
    truth = exact_truth(model, np.stack(qcats), args.k)
    truth_s = time.perf_counter() - t0

    def recall(key: Any) -> list[float]:
        return [len(r[key] & set(truth[i].tolist())) / args.k for i, r in enumerate(rows_at)]

    total = [sum(v[i] for v in stages.values()) for i in range(len(texts))]
    after_forward = [stages["sketch"][i] + stages["search"][i] + stages["fetch"][i] for i in range(len(texts))]
    total_cpu = [sum(v[i] for v in cpu.values()) for i in range(len(texts))]
    after_cpu = [cpu["sketch"][i] + cpu["search"][i] + cpu["fetch"][i] for i in range(len(texts))]
    nprobes = [i["nprobe"] for i in infos]
    res = {"rows": n, "queries": len(texts), "repeats": args.repeats, "threads": torch.get_num_threads(),
           "tokens_p50": statistics.median(tokens), "tokens_min_max": [min(tokens), max(tokens)],
           "paths": sorted({i["path"] for i in infos}), "nprobe_p50": statistics.median(nprobes),
           "nprobe_max": max(nprobes), "queries_scanning_more_cells": sum(p > min(nprobes) for p in nprobes),
           "recall@10": round(float(np.mean(recall("rule"))), 4), "recall@10_min": round(min(recall("rule")), 2),
           "recall@10_at_nprobe": {p: round(float(np.mean(recall(p))), 4) for p in sweep},
           "text_in_ms": harness.latency_ms(total), "after_forward_ms": harness.latency_ms(after_forward),
           **{f"{s}_ms": harness.latency_ms(v) for s, v in stages.items()},
           # CPU time of the query's thread: what the stages take on a core of their own (wall time above is at the
           # machine's load)
           "text_in_cpu_ms": harness.latency_ms(total_cpu), "after_forward_cpu_ms": harness.latency_ms(after_cpu),
           **{f"{s}_cpu_ms": harness.latency_ms(v) for s, v in cpu.items()},
           "same_hits_as_rise_query": f"{same_as_api}/{min(args.api_check, len(texts))}",
           "first_query_paths": first.attrs["search"]["path"], "truth_s": round(truth_s, 1),
           "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()]}
    index.close()
    return res


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=3, threads=1, out="/work/results/scale")
    parser.add_argument("what", choices=("build", "ann", "query"),
                        help="build: the index (and its ANN unless --skip-ann); ann: its ANN only; query")
    parser.add_argument("--skip-ann", action="store_true", help="build: leave the ANN index for `ann`")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--readouts", default="/work/results/readouts", help="studies.cache_readouts' folder")
    parser.add_argument("--seq-len", type=int, default=256, help="the readouts' seq_len (the index's)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="the real tasks whose rows and queries to use")
    parser.add_argument("--query-tasks", default=",".join(TASKS), help="the real tasks whose queries to run")
    parser.add_argument("--queries", type=int, default=0, help="the first this many queries (0: all)")
    parser.add_argument("--nprobe", type=int, default=0, help="set the ANN sidecar's nprobe first (0: keep)")
    parser.add_argument("--sweep", default="32,64,128,256", help="nprobe values whose recall@10 is measured too")
    parser.add_argument("--api-check", type=int, default=5,
                        help="for the first this many queries, check that `rise query`'s calls give the same hits")
    parser.add_argument("-k", type=int, default=10)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads, faiss=True)
    res = {"build": build, "ann": build_ann, "query": query}[args.what](args)
    res = {"what": args.what, **res}
    harness.print_json(res)
    if args.out:
        harness.append_jsonl(Path(args.out) / "text_query.jsonl", [res])
    return 0


if __name__ == "__main__":
    sys.exit(main())
