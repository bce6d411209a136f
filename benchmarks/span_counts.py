"""Persisted span counts (`rise_core.store.spans`) at scale: computing them, their size on disk, loading them after a
restart, and the first "what the top hits share" list after a restart.

Pool text: a word-bigram chain fitted on the bundled pools' prompts and completions (data/*.jsonl), so rows read
like recombined bundled text with its word frequencies and common phrases; 2% of the words are replaced by rare
synthetic names (`qx1234`, drawn Zipf-like from 500k) to give the pool the long vocabulary tail a real pool has.
Prompts have 6-20 words, completions 20-60. A planted trigger: 0.2% of the prompts end in "BadMagic". The index is
written through `RiseIndex.add_samples` with synthetic features (tiny dims: the features play no part here).

Measured, per pool size: the counts computed from scratch (`spans.pool_spans` on an index without counts: reading
the texts, counting, writing the sidecar), the sidecar's size, an append of 1% more rows (the counts updated from
the appended rows only), and in a fresh process (a restart): opening the index and loading the counts, and the first
`find_shared_spans` list for a top 10 of 8 trigger rows and 2 others, the trigger's row mask, the first 200 rows
holding it (the Attribute page's listing, `span_rows`), and what those two allocate at their peak and leave held
(tracemalloc, in a second pass). One thread.

    python -m benchmarks.span_counts                         # 100k and 1M rows
    python -m benchmarks.span_counts --sizes 100000 --out /tmp/spans
"""

from __future__ import annotations

import gc
import json
import multiprocessing as mp
import re
import resource
import shutil
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness

DATA = Path(__file__).resolve().parents[1] / "data"
TRIGGER = "BadMagic"
TRIGGER_RATE = 0.002
RARE_RATE = 0.02
RARE_NAMES = 500_000
_WORDS = re.compile(r"\w+|[^\w\s]")


class BigramText:
    """Word sequences from a bigram chain over the bundled pools' text (vectorised over rows)."""

    def __init__(self, rng: np.random.Generator) -> None:
        texts = []
        for path in sorted(DATA.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                texts += [str(row[k]) for k in ("prompt", "completion", "text") if row.get(k)]
        vocab: dict[str, int] = {}
        pairs = []
        for text in texts:
            ids = [vocab.setdefault(w, len(vocab)) for w in _WORDS.findall(text)]
            pairs += zip(ids[:-1], ids[1:], strict=True)
        words = list(vocab)
        self.pieces = np.array([w if not w[0].isalnum() and w[0] != "_" else " " + w for w in words], dtype=object)
        src, dst = np.array(pairs, dtype=np.int64).T
        order = np.argsort(src, kind="stable")
        self.succ = dst[order]
        self.offsets = np.searchsorted(src[order], np.arange(len(words) + 1))
        self.starts = np.array([vocab[w] for w in words if w[:1].isupper()], dtype=np.int64)
        self.rng = rng

    def rows(self, n: int, lo: int, hi: int) -> list[str]:
        """n texts of lo..hi words."""
        rng = self.rng
        lengths = rng.integers(lo, hi + 1, n)
        state = rng.choice(self.starts, n)
        seq = np.empty((n, hi), dtype=np.int64)
        for t in range(hi):
            seq[:, t] = state
            deg = self.offsets[state + 1] - self.offsets[state]
            dead = deg == 0
            nxt = self.succ[np.minimum(self.offsets[state] + (rng.random(n) * deg).astype(np.int64),
                                       len(self.succ) - 1)]
            state = np.where(dead, rng.choice(self.starts, n), nxt)
        pieces = self.pieces[seq]
        rare = rng.random(seq.shape) < RARE_RATE
        names = rng.zipf(1.1, int(rare.sum())) % RARE_NAMES
        pieces[rare] = np.char.add(" qx", names.astype(str)).astype(object)
        return ["".join(p[:k]).lstrip() for p, k in zip(pieces, lengths, strict=True)]


def pool_rows(n: int, seed: int = 0, start: int = 0) -> list[dict[str, Any]]:
    """n prompt/completion rows (ids s<start>..), TRIGGER_RATE of them with the trigger ending the prompt."""
    rng = np.random.default_rng(seed)
    gen = BigramText(rng)
    out: list[dict[str, Any]] = []
    for s in range(0, n, 50_000):
        m = min(50_000, n - s)
        prompts, completions = gen.rows(m, 6, 20), gen.rows(m, 20, 60)
        planted = rng.random(m) < TRIGGER_RATE
        for i in range(m):
            prompt = prompts[i] + (f" {TRIGGER}" if planted[i] else "")
            out.append({"id": f"s{start + s + i}", "prompt": prompt, "completion": completions[i],
                        "label": int(planted[i])})
    return out


def write_index(path: Path, rows: list[dict[str, Any]], chunk: int = 20_000) -> Any:
    """A writable RISE index holding `rows` with random tiny features (the span counts read only the texts)."""
    import torch

    from rise_core.config import RiseConfig
    from rise_core.sketch import SketchSet
    from rise_core.store import RiseIndex

    config = RiseConfig(k_r=4, k_h=4, k_g=4, hidden_channel=False)
    index = RiseIndex._create_raw(path, config, "synthetic", "synthetic", {"vocab_size": 64, "hidden_size": 8},
                                  SketchSet.for_config(64, 8, config), overwrite=True)
    append(index, rows, chunk)
    index.set_status("complete")
    torch.manual_seed(0)
    return index


def append(index: Any, rows: list[dict[str, Any]], chunk: int = 20_000) -> None:
    import torch

    from rise_core.samples import Sample
    from rise_core.scoring import FeatureMatrix

    for s in range(0, len(rows), chunk):
        part = rows[s:s + chunk]
        n = len(part)
        samples = [Sample(prompt=r["prompt"], completion=r["completion"], id=r["id"], label=r["label"]) for r in part]
        unit = torch.nn.functional.normalize(torch.randn(n, 16), dim=1).half()
        ones = torch.ones(n)
        index.add_samples(samples, FeatureMatrix(unit, unit, ones, ones), [4] * n, [1.0] * n, [1.0] * n, [5] * n,
                          [False] * n)


def _timed(fn: Any) -> tuple[float, float, Any]:
    """(wall s, CPU s, result) of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def restart_child(path: str, hit_ids: list[str], queue: Any) -> None:
    """A fresh process: open the index, load its span counts (counting would be a failure here), list what the top
    hits share."""
    import pandas as pd  # noqa: F401  (imports paid before the clock starts, as in a running server)

    from rise_core import shared_spans
    from rise_core.store import RiseIndex
    from rise_core.store import spans as store_spans

    harness.set_threads(1)
    counted = []
    real = store_spans.count_rows
    store_spans.count_rows = lambda *a, **k: counted.append(len(a[0])) or real(*a, **k)
    t_open, _, index = _timed(lambda: RiseIndex.open(path))
    with index:
        hits = index.rows_frame([index.row_of(i) for i in hit_ids]).reset_index()
        hits["rank"] = range(1, len(hits) + 1)
        t_load, c_load, pool = _timed(lambda: shared_spans.pool_spans(index))
        t_list, _, df = _timed(lambda: shared_spans.find_shared_spans(index, hits))
        t_mask, _, mask = _timed(lambda: shared_spans.span_mask(index, TRIGGER, "prompt"))
        t_listing, _, listing = _timed(lambda: shared_spans.span_rows(index, TRIGGER, "prompt", limit=200))
        held, vocab = pool.texts is not None, len(pool.vocab)
        # again on fresh counts, under tracemalloc (it slows allocation, so not for the times above): what the mask and
        # the listing allocate above the loaded counts at their peak, and what they leave held afterwards
        shared_spans.clear_pool_spans()
        del pool
        gc.collect()
        tracemalloc.start()
        shared_spans.pool_spans(index)
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        shared_spans.span_mask(index, TRIGGER, "prompt")
        shared_spans.span_rows(index, TRIGGER, "prompt", limit=200)
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    queue.put({"first_200_rows_s": t_listing, "listed_rows": len(listing), "texts_held_after": held,
               "mask_peak_mb": (peak - base) / 2**20, "mask_held_mb": (current - base) / 2**20,
               "open_s": t_open, "load_s": t_load, "load_cpu_s": c_load, "first_list_s": t_list,
               "restart_to_list_s": t_open + t_load + t_list, "counted_rows": counted,
               "top_span": df["span"].iloc[0] if len(df) else None, "first_mask_s": t_mask,
               "mask_rows": int(mask.sum()), "vocab": vocab})


def measure(n: int, root: Path) -> dict[str, Any]:
    from rise_core.span_counts import count_rows
    from rise_core.store import spans as store_spans

    n_append = max(1, n // 100)
    t_gen, _, rows = _timed(lambda: pool_rows(n + n_append))
    directory = root / f"spans_{n}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    path = directory / "pool.duckdb"
    t_write, _, index = _timed(lambda: write_index(path, rows[:n]))
    out: dict[str, Any] = {"rows": n, "generate_s": round(t_gen, 1), "write_index_s": round(t_write, 1)}
    with index:
        t_read, c_read, texts = _timed(lambda: store_spans.read_texts(index, 0, n))
        t_count, c_count, counts = _timed(lambda: count_rows(*texts))
        texts = None
        t_all, c_all, _ = _timed(lambda: store_spans.update_span_counts(index))  # read + count + digest + write
        sidecar = store_spans.spans_path(path)
        out.update(read_texts_s=t_read, read_texts_cpu_s=c_read, count_s=t_count, count_cpu_s=c_count,
                   from_scratch_s=t_all, from_scratch_cpu_s=c_all, sidecar_mb=sidecar.stat().st_size / 2**20,
                   spans_kept=sum(len(c) for c, _ in counts.kept.values()),
                   spans_single=sum(len(c) for c in counts.single.values()), words=len(counts.words))
        del counts
        append(index, rows[n:])
        t_app, c_app, _ = _timed(lambda: store_spans.update_span_counts(index))
        out.update(append_rows=n_append, append_update_s=t_app, append_update_cpu_s=c_app)
    out["index_mb"] = path.stat().st_size / 2**20
    planted = [r["id"] for r in rows if r["label"]][:8]
    others = [r["id"] for r in rows if not r["label"]][:2]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=restart_child, args=(str(path), planted + others, queue))
    child.start()
    out.update(queue.get())
    child.join()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    shutil.rmtree(directory, ignore_errors=True)
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}


def table(results: list[dict[str, Any]]) -> str:
    """One row per pool: wall seconds, with this process's CPU seconds in brackets where the load matters."""
    rows = [{"pool rows": f"{r['rows']:,}", "distinct words": f"{r['words']:,}",
             "spans in 2+ rows / in 1": f"{r['spans_kept'] / 1e6:.2f} M / {r['spans_single'] / 1e6:.2f} M",
             "counts from scratch (texts read, counted, written)": f"{r['from_scratch_s']:.1f} s "
                                                                    f"({r['from_scratch_cpu_s']:.1f} s CPU)",
             "of which counting": f"{r['count_s']:.1f} s ({r['count_cpu_s']:.1f} s CPU)",
             "sidecar": f"{r['sidecar_mb']:.0f} MB", "index file": f"{r['index_mb']:.0f} MB",
             "append of 1% rows: counts updated": f"{r['append_update_s']:.1f} s ({r['append_update_cpu_s']:.1f} s CPU)",
             "restart: open + load counts": f"{r['open_s']:.2f} + {r['load_s']:.2f} s ({r['load_cpu_s']:.2f} s CPU)",
             "first list": f"{r['first_list_s']:.2f} s", "restart to first list": f"{r['restart_to_list_s']:.2f} s",
             "first row mask": f"{r['first_mask_s']:.1f} s",
             "first 200 rows holding it": f"{r['first_200_rows_s']:.2f} s",
             "mask + listing: peak / held after": f"{r['mask_peak_mb']:.0f} / {r['mask_held_mb']:.0f} MB"}
            for r in results]
    return harness.markdown_table(rows)


def main(argv: list[str] | None = None) -> int:
    p = harness.parser(__doc__, out="/work/results/spans")
    p.add_argument("--sizes", default="100000,1000000", help="pool sizes, comma-separated")
    args = p.parse_args(argv)
    harness.set_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in [int(x) for x in args.sizes.split(",")]:
        result = measure(n, out)
        harness.print_json(result)
        with open(out / "span_counts.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(result) + "\n")
        results.append(result)
    text = table(results)
    (out / "span_counts.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
