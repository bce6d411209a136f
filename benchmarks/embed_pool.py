"""What the Compare page's text baselines cost to fit on a pool: MiniLM's embedding of every pool text against
BM25's index of the same texts, timed interleaved in one run, as texts per second and their ratio.

The app embeds a pool of up to `RISE_MAX_INLINE_EMBED_ROWS` rows in the request and a larger one only when asked,
in the server's queue (`explorer.resources.embeddings_for`); its estimate of how long that takes is
`explorer.request_limits.MINILM_TEXTS_PER_S`, this benchmark's figure.

BM25 is also timed on a pool `--bm25-scale` times larger (the rows repeated, each copy with its own id: the
tokenising and indexing cost of that many texts), in a fresh process, with the memory it adds
(`RISE_MAX_INLINE_BM25_ROWS`, `explorer.request_limits.BM25_TEXTS_PER_S`).

    python -m benchmarks.embed_pool --pool ../shared/data/dev/alpaca_clean_sample.jsonl --repeats 3 --bm25-scale 100
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import harness


def _anon_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024
    return -1


def _bm25_at_scale(pool_path: str, rows: int, scale: int, threads: int, queue: Any) -> None:
    import time

    harness.set_threads(threads)
    from rise_core.baselines import BM25Scorer
    from rise_core.ingest import read_pool
    from rise_core.samples import Sample

    base = read_pool(pool_path).samples[:rows]
    pool = [Sample(prompt=s.prompt, completion=s.completion, text=s.text, id=f"{s.id}-{i}")
            for i in range(scale) for s in base]
    before = _anon_mb()
    start = time.perf_counter()
    scorer = BM25Scorer()
    scorer.fit(pool)
    seconds = time.perf_counter() - start
    queue.put({"rows": len(pool), "seconds": round(seconds, 2), "texts_per_s": round(len(pool) / seconds),
               "added_mb": _anon_mb() - before})


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=1, threads=0, json_flag=True)
    parser.add_argument("--pool", required=True, help="a pool file (JSONL, CSV, Parquet, ...)")
    parser.add_argument("--rows", type=int, default=1000, help="first rows of the pool timed (default 1000)")
    parser.add_argument("--bm25-scale", type=int, default=0, help="also fit BM25 on the rows repeated this many times")
    args = parser.parse_args(argv)
    threads = harness.set_threads(args.threads)

    from rise_core.baselines import BM25Scorer, EmbeddingScorer
    from rise_core.ingest import read_pool

    pool = read_pool(args.pool).samples[:args.rows]
    minilm = EmbeddingScorer()
    minilm.fit(pool[:8])  # the model loads outside the timing
    seconds = harness.timed({"MiniLM": lambda: minilm.fit(pool), "BM25": lambda: BM25Scorer().fit(pool)},
                            args.repeats)
    per_s = {name: len(pool) / s for name, s in seconds.items()}
    results = {"rows": len(pool), "threads": threads, "seconds": seconds, "texts_per_s": per_s,
               "MiniLM / BM25 time": harness.ratios(seconds, "BM25")["MiniLM"],
               "mean_chars": sum(len(s.full_text) for s in pool) / max(1, len(pool))}
    if args.bm25_scale:
        results["bm25_at_scale"] = harness.in_child(_bm25_at_scale, args.pool, args.rows, args.bm25_scale, threads)
    if args.json:
        harness.print_json(results, indent=1)
    else:
        print(harness.markdown_table([{"method": m, "seconds": seconds[m], "texts/s": per_s[m]} for m in seconds]))
        print(f"{len(pool)} rows of {results['mean_chars']:.0f} characters, {threads} threads; MiniLM takes "
              f"{results['MiniLM / BM25 time']:.0f}x BM25's time")
        if args.bm25_scale:
            big = results["bm25_at_scale"]
            print(f"BM25 on {big['rows']:,} rows: {big['seconds']} s ({big['texts_per_s']:,} texts/s), "
                  f"+{big['added_mb']:,} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
