"""Recall@10 of the default ANN index against the exact scan on real RISE features, beside synthetic ones of the same
size: do real features need more probes than the synthetic pools of benchmarks/ann_scale.py?

Features: the default config's (`RiseConfig(seq_len=256)`, the readouts' length), derived from the cached model
readouts of studies/cache_readouts.py (results/readouts/<task>.pt: one forward pass per sample, done once), stored
as an index stores them (float16 unit channels) and indexed by the code `rise index-ann` runs
(`rise_core.ann.train_ivf` + `write_ivf`: an IVF<nlist>,SQfp16 index over [u_rh; u_gh; u_hs]).

Pools:
  - each task's own pool (the bundled howdy / finmed / brainrot, and the real dev-finmed, dev-brainrot, and the
    Alpaca pools of dev-sentiment / dev-refusal), queried with that task's queries;
  - `all-real`: every distinct pool sample of those tasks in one pool, its HS mean fitted on it (as one index of them
    all would), queried with every task's queries;
  - `all-real+prefixes` (--prefixes): also the features of the first 32 / 64 / 128 tokens of every sample longer than
    that, from the same readouts (the model is causal, so a prefix's readout is the full text's first positions).
    Prefixes are real text and make the pool larger, but each lies near its full text, so this pool is more
    clustered than a pool of distinct documents.
Every pool is scored under the "default" (lambda 1.4 / 1.0 / 1.0) and "backdoor" (HS weight 0) presets' weights (and,
with --hs-sweep, other HS weights): one ANN index serves them all (the stored side does not depend on the lambdas).
Each is measured at the swept nprobe values and at the cells the library's rule scans for it
(`rise_core.ann.probe_factor`: more cells when HS has less than its default share of the weights). A synthetic pool of the same size and dims
(benchmarks.ann_scale.Generator, 100 fresh queries) is measured beside each, with the same cells and probes.

nlist and nprobe scale as `rise index-ann` scales them (`rise_core.ann.default_nlist`, `default_nprobe`), and nprobe
is swept over powers of two. Recall@10 = the share of the ANN's 10 rows (exactly rescored) that score at least the
exact scan's 10th best score (ties at the cut count as hits), averaged over queries. Real pools here are small
(hundreds to a few thousand rows), so the default rule's floor of 8 probes scans a large share of their cells:
the share of cells needed (nprobe / nlist for recall >= 0.95) is the figure to compare with larger pools, where
the default scans 1/16.

    python -m studies.ann_recall_real                                 # every task, + all-real
    python -m studies.ann_recall_real --prefixes --out results/ann
    python -m studies.ann_recall_real --prefixes --no-per-task --hs-sweep 0.5,0.25,0.1 --weights '0,0,1;0,1,1'
    python -m studies.ann_recall_real --model tiny-model-dir --forward-missing --tasks howdy   # a smoke run

Results: one JSON line per pool and weighting in <out>/ann_recall_real.jsonl and Markdown tables in
<out>/ann_recall_real.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks import harness
from benchmarks.ann_scale import Generator
from studies import tasks
from studies.cache_readouts import cache_file

TASKS = ("howdy", "finmed", "brainrot", "dev-finmed", "dev-brainrot", "dev-sentiment", "dev-refusal")
WEIGHTINGS = ("default", "backdoor")
PREFIXES = (32, 64, 128)
K = 10
TARGET = 0.95


def load_cache(lm: Any, named: dict[str, Any], readouts: Path, seq_len: int, forward_missing: bool) -> Any:
    """One ReadoutCache holding every task's pool and queries (the files of studies/cache_readouts.py)."""
    from rise_core.readout_cache import ReadoutCache

    cache = ReadoutCache(lm, seq_len=seq_len)
    for path in dict.fromkeys(cache_file(readouts, name) for name in named):  # dev-sentiment, dev-refusal share one
        if path.exists():
            cache.load(path)
    samples = [s for t in named.values() for s in (*t.pool, *t.queries)]
    missing = [s for s in dict.fromkeys(samples) if cache.key(s) not in cache.readouts]
    if missing and not forward_missing:
        raise SystemExit(f"{len(missing)} samples have no cached readout in {readouts} (run `python -m "
                         "studies.cache_readouts`, or pass --forward-missing to run the model on them here)")
    if missing:
        cache.add(missing)
    return cache


def features(cache: Any, samples: list[Any], config: Any, mean: torch.Tensor) -> Any:
    """The samples' features as an index stores them: float16 unit channels (norms beside)."""
    return cache.rise_features(samples, config, mean).to(torch.float16)


def recall_sweep(pool_fm: Any, query_fm: Any, nlist: int, nprobes: list[int], weightings: dict[str, Any],
                 workdir: Path, seed: int = 0) -> dict[str, dict[str, Any]]:
    """{weighting: {"recall": {nprobe: mean recall@10}, "min": {nprobe: worst query}}} of one IVF index over
    pool_fm, built with the streaming build."""
    from rise_core import ann
    from rise_core.scoring import score_pool

    channels = list(pool_fm.channels)
    dims = {c: getattr(pool_fm, c).shape[1] for c in channels}
    n, d = len(pool_fm), sum(dims.values())
    vectors = ann.concat_channels(pool_fm, channels)

    def read(start: int, stop: int) -> np.ndarray:
        return vectors[start:stop]

    template, n_train = ann.train_ivf(read, n, d, nlist, seed=seed)
    path = workdir / "pool.ann.faiss"
    ann.write_ivf(template, read, n, path, workdir / "pool.ann.shards.tmp")
    meta = ann.AnnMeta("real", "real", n, dims, nlist, ann.default_nprobe(nlist), n_train, seed,
                       structure=f"IVF{nlist},SQfp16")
    handle = ann.AnnIndex.read(path, meta)
    exact_fm = pool_fm.to(torch.float32)  # the exact scores, in float32 from the stored float16 values
    out: dict[str, dict[str, Any]] = {}
    for wname, options in weightings.items():
        per_probe: dict[int, list[float]] = {p: [] for p in nprobes}
        rule: list[float] = []
        for i in range(len(query_fm)):
            q = query_fm.select([i]).to(torch.float32)
            exact = score_pool(exact_fm, q, options).total
            kth = torch.topk(exact, min(K, n)).values[-1]
            tol = 1e-5 * max(1.0, abs(float(kth)))
            for p in nprobes:
                rows, _, _ = ann.top_rows(handle, q, options, K, nprobe=p)
                per_probe[p].append(float((exact[rows] >= kth - tol).sum()) / min(K, n))
            rows, _, info = ann.top_rows(handle, q, options, K)  # the cells the library's rule scans
            rule.append(float((exact[rows] >= kth - tol).sum()) / min(K, n))
        out[wname] = {"recall": {p: round(float(np.mean(v)), 4) for p, v in per_probe.items()},
                      "min": {p: round(float(np.min(v)), 2) for p, v in per_probe.items()},
                      "rule_nprobe": info["nprobe"], "rule_recall": round(float(np.mean(rule)), 4)}
    del handle
    path.unlink()
    return out


def needed(recall: dict[int, float]) -> int | None:
    """The smallest nprobe of the sweep whose mean recall@10 reaches TARGET."""
    return next((p for p in sorted(recall) if recall[p] >= TARGET), None)


def synthetic_like(n: int, dims: dict[str, int], n_queries: int = 100) -> tuple[Any, Any]:
    """A synthetic clustered pool of n rows with these channel lengths, and n_queries fresh queries of it."""
    from rise_core.scoring import FeatureMatrix

    gen = Generator(n, dims)
    feats, _ = gen.sample(n, np.random.default_rng(0))
    qfeats, _ = gen.sample(n_queries, np.random.default_rng(777))

    def fm(f: dict[str, np.ndarray], m: int) -> Any:
        ones = torch.ones(m)
        return FeatureMatrix(torch.from_numpy(f["rh"]), torch.from_numpy(f["gh"]), ones, ones,
                             torch.from_numpy(f["hs"]), ones)

    return fm(feats, n), fm(qfeats, n_queries)


def measure(name: str, pool_fm: Any, query_fm: Any, weightings: dict[str, Any], workdir: Path,
            synthetic: bool) -> list[dict[str, Any]]:
    from rise_core import ann

    n = len(pool_fm)
    nlist = ann.default_nlist(n)
    default = ann.default_nprobe(nlist)
    nprobes = sorted({*(2 ** i for i in range(int(np.log2(nlist)) + 1)), default, nlist})
    start = time.perf_counter()
    real = recall_sweep(pool_fm, query_fm, nlist, nprobes, weightings, workdir)
    rows = []
    for wname, res in real.items():
        rows.append({"pool": name, "kind": "real", "weighting": wname, "n": n, "queries": len(query_fm),
                     "nlist": nlist, "default_nprobe": default, **res, "needed": needed(res["recall"])})
    if synthetic:
        dims = {c: getattr(pool_fm, c).shape[1] for c in ("rh", "gh", "hs")}
        spool, squeries = synthetic_like(n, dims)
        for wname, res in recall_sweep(spool, squeries, nlist, nprobes, weightings, workdir).items():
            rows.append({"pool": name, "kind": "synthetic", "weighting": wname, "n": n, "queries": len(squeries),
                         "nlist": nlist, "default_nprobe": default, **res, "needed": needed(res["recall"])})
    for r in rows:
        r["seconds"] = round(time.perf_counter() - start, 1)
        print(f"  {r['pool']:<18} {r['kind']:<9} {r['weighting']:<8} n={n:<6} nlist={nlist:<4} default "
              f"nprobe {default}: recall {r['recall'][default]:.3f} (worst query {r['min'][default]:.1f}); "
              f"needs nprobe {r['needed']} for {TARGET}; the rule's nprobe {r['rule_nprobe']}: "
              f"{r['rule_recall']:.3f}", flush=True)
    return rows


def _needed(r: dict[str, Any]) -> str:
    return f"{r['needed']} ({r['needed'] / r['nlist']:.3f})" if r["needed"] else "none"


def table(rows: list[dict[str, Any]]) -> str:
    """Per pool and weighting: recall@10 at the default nprobe and the probes needed for TARGET, real vs synthetic;
    then the full sweep."""
    head = ("| pool | rows | queries | nlist | weighting | default nprobe | recall@10 real / synthetic (worst real query) "
            f"| nprobe for >= {TARGET} (share of cells) real / synthetic | the rule's nprobe: recall real / synthetic "
            "|\n|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    by = {(r["pool"], r["weighting"], r["kind"]): r for r in rows}
    for (pool, weighting, kind), r in by.items():
        if kind != "real":
            continue
        s = by.get((pool, weighting, "synthetic"))
        p = r["default_nprobe"]
        rec = f"{r['recall'][p]:.3f}" + (f" / {s['recall'][p]:.3f}" if s else "") + f" ({r['min'][p]:.1f})"
        need = _needed(r) + (f" / {_needed(s)}" if s else "")
        ruled = f"{r['rule_nprobe']}: {r['rule_recall']:.3f}" + (f" / {s['rule_recall']:.3f}" if s else "")
        lines.append(f"| {pool} | {r['n']:,} | {r['queries']} | {r['nlist']} | {weighting} | {p} | {rec} | "
                     f"{need} | {ruled} |")
    text = head + "\n".join(lines) + "\n\nFull sweep (mean recall@10 per nprobe):\n\n"
    for r in rows:
        text += (f"- {r['pool']} ({r['kind']}, {r['weighting']}, nlist {r['nlist']}): " +
                 ", ".join(f"{p}: {v:.3f}" for p, v in sorted(r["recall"].items())) + "\n")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, threads=1, out="results/ann")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--readouts", default="results/readouts", help="studies.cache_readouts' folder")
    parser.add_argument("--model", default=None, help="the readouts' model (default: the embedded default)")
    parser.add_argument("--seq-len", type=int, default=256, help="the readouts' seq_len")
    parser.add_argument("--forward-missing", action="store_true",
                        help="run the model on samples the readouts lack (otherwise an error)")
    parser.add_argument("--prefixes", action="store_true",
                        help="also the all-real pool grown by the features of 32/64/128-token prefixes")
    parser.add_argument("--no-synthetic", action="store_true", help="skip the synthetic pools of the same sizes")
    parser.add_argument("--no-per-task", action="store_true", help="only the combined pools")
    parser.add_argument("--hs-sweep", default="",
                        help="comma-separated lambda_hs values to weigh as well (RH and GH at the default's), e.g. "
                             "0.5,0.25,0.1: how recall follows HS's share of the weights")
    parser.add_argument("--weights", default="",
                        help="semicolon-separated lambda_rh,lambda_gh,lambda_hs triples to weigh as well, e.g. "
                             "'0,0,1;0,1,1' (HS alone; RH left out)")
    args = parser.parse_args(argv)

    from rise_core.config import RiseConfig, ScoreOptions
    from rise_core.models import load_model
    from rise_core.scoring import FeatureMatrix

    harness.set_threads(args.threads, faiss=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    weightings = {w: ScoreOptions.preset(w) for w in WEIGHTINGS}
    weightings.update({f"hs{x}": ScoreOptions(lambda_hs=float(x)) for x in filter(None, args.hs_sweep.split(","))})
    for triple in filter(None, args.weights.split(";")):
        rh, gh, hs = (float(x) for x in triple.split(","))
        weightings[f"w{rh:g}/{gh:g}/{hs:g}"] = ScoreOptions(lambda_rh=rh, lambda_gh=gh, lambda_hs=hs)
    config = RiseConfig(seq_len=args.seq_len)
    named = {name: tasks.task(name) for name in args.tasks.split(",")}
    lm = load_model(args.model)
    t0 = time.perf_counter()
    cache = load_cache(lm, named, Path(args.readouts), args.seq_len, args.forward_missing)
    print(f"{len(cache.readouts):,} readouts loaded in {time.perf_counter() - t0:.0f} s", flush=True)

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.no_per_task:
            for name, task in named.items():
                mean = cache.pool_hidden_mean(task.pool, config)
                rows += measure(name, features(cache, task.pool, config, mean),
                                features(cache, task.queries, config, mean), weightings, work,
                                not args.no_synthetic)

        pool = list(dict.fromkeys(s for t in named.values() for s in t.pool))
        queries = list(dict.fromkeys(q for t in named.values() for q in t.queries))
        mean = cache.pool_hidden_mean(pool, config)
        pool_fm, query_fm = features(cache, pool, config, mean), features(cache, queries, config, mean)
        rows += measure("all-real", pool_fm, query_fm, weightings, work, not args.no_synthetic)
        if args.prefixes:
            parts = [pool_fm]
            for length in PREFIXES:
                # a prefix of `length` tokens has length - 1 predicted positions; only samples with more
                longer = [s for s in pool if len(cache.readouts[cache.key(s)].completion) >= length]
                prefix_config = config.replace(seq_len=length)
                parts.append(features(cache, longer, prefix_config, mean))
                print(f"  {len(longer):,} samples longer than {length} tokens", flush=True)
            rows += measure("all-real+prefixes", FeatureMatrix.concat(parts), query_fm, weightings, work,
                            not args.no_synthetic)

    harness.append_jsonl(out / "ann_recall_real.jsonl", rows)
    md = table(rows)
    (out / "ann_recall_real.md").write_text(md)
    print("\n" + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
