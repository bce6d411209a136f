"""The product benchmarks' one harness: interleaved timing, ratios measured in one run, latency percentiles, a
Markdown table, JSON output and the command-line options they share.

Timing is `rise_core.bench.interleaved_times`, the loop `rise bench` runs: the variants run alternately (a, b, a, b,
...) after one warm-up each, so load from other processes hits every variant alike. Absolute times move with the
machine's load; the ratio of two variants timed in the same run is the figure to report (`ratios`).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from rise_core.bench import interleaved_times

CPU = torch.device("cpu")


def parser(doc: str, *, repeats: int | None = None, threads: int | None = None, json_flag: bool = False,
           out: str | None = None) -> argparse.ArgumentParser:
    """A parser showing `doc`, with the shared options asked for: --repeats (default `repeats`), --threads (default
    `threads`; 0: torch's choice), --json (print the results as JSON) and --out (default `out`; "": none)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if repeats is not None:
        p.add_argument("--repeats", type=int, default=repeats, help=f"timed repeats; their median counts "
                       f"(default {repeats})")
    if threads is not None:
        p.add_argument("--threads", type=int, default=threads, help=f"torch threads, 0 for torch's choice (default "
                       f"{threads}); on a machine shared with busy processes, 1 measures the work, not the contention")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print the results as JSON")
    if out is not None:
        p.add_argument("--out", default=out or None, help=f"folder for the results (default {out or 'none'})")
    return p


def set_threads(n: int | None, faiss: bool = False) -> int:
    """torch's threads (and faiss's) set to `n` when it is positive; the threads torch uses now."""
    if n:
        torch.set_num_threads(n)
        if faiss:
            import faiss as faiss_lib

            faiss_lib.omp_set_num_threads(n)
    return torch.get_num_threads()


def timed(variants: Mapping[str, Callable[[], Any]], repeats: int, device: torch.device = CPU) -> dict[str, float]:
    """Median seconds of each variant, run interleaved after one warm-up each."""
    return dict(zip(variants, interleaved_times(list(variants.values()), device, repeats), strict=True))


def median_seconds(fn: Callable[[], Any], repeats: int, device: torch.device = CPU) -> float:
    """Median seconds of `fn` over `repeats` runs after one warm-up."""
    return timed({"fn": fn}, repeats, device)["fn"]


def ratios(values: Mapping[str, float], base: str, digits: int = 3) -> dict[str, float]:
    """Each value over `values[base]`: a ratio of figures measured in the same run."""
    return {name: round(v / values[base], digits) for name, v in values.items()}


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank q-quantile (the smallest value with a share q of the values at or below it); None when
    there are none."""
    return float(np.quantile(values, q, method="inverted_cdf")) if len(values) else None


def latency_ms(seconds: Sequence[float], digits: int = 2) -> dict[str, float | None]:
    """p50 (the median) and p95 (nearest rank) of latencies given in seconds, in milliseconds."""
    if not seconds:
        return {"p50_ms": None, "p95_ms": None}
    return {"p50_ms": round(statistics.median(seconds) * 1e3, digits),
            "p95_ms": round(percentile(seconds, 0.95) * 1e3, digits)}


def markdown_table(rows: Iterable[Mapping[str, Any]] | pd.DataFrame, floatfmt: str = ".3f") -> str:
    """Rows (dicts with the same keys, or a frame) as a Markdown table."""
    return pd.DataFrame(rows).to_markdown(index=False, floatfmt=floatfmt)


def in_child(target: Callable[..., None], *args: Any) -> dict[str, Any]:
    """Run `target(*args, queue)` in a fresh (spawned) process and return what it put on the queue: a measurement
    whose peak memory, threads or imports must not be the parent's."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def print_json(results: Any, indent: int | None = None) -> None:
    print(json.dumps(results, indent=indent, default=str), flush=True)


def write_json(path: str | Path, results: Any) -> Path:
    """`results` as indented JSON at `path` (its folder made)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    return path


def append_jsonl(path: str | Path, rows: Iterable[Any]) -> Path:
    """One JSON line per row appended to `path` (its folder made), so reruns accumulate."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r, default=str) + "\n" for r in rows)
    return path
