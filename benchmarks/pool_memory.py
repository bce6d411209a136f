"""What a served query holds in memory on a large pool: the work that reads every row's features, against the same
work from one row or from the ANN file's codes.

On an index with an ANN index (a large pool), a query never loads the pool's feature matrix (`attribution.top`
scores through the memory-mapped ANN file), so the process holds a few hundred MB whatever the pool's size. These
steps used to load it (7.3 KB a row at the default dims, held for the process's life once loaded) and now do not:

- `explain`: a hit's features (`RiseIndex.row_features`) against loading the matrix and taking the row;
- `valuation` (Select data, `rise select`) of every row from the ANN codes, first and second call, against the same
  valuation once the matrix is loaded (and the load itself);
- relevance feedback (`top_with_feedback`, 3 marks) streamed from the ANN codes (one pass for the query and the
  marked rows), against the same on a loaded matrix: the memory each takes on top (peak during the calls);
- the Compare page's RISE (`methods.compare_methods`, RISE fixed weights: every row's score) from the ANN codes,
  against the same once the matrix is loaded (peak during the calls); and RISE with RISE fixed weights, which share
  one pass over the codes, against the two computed alone (a pass each, as before they shared it).

Each measurement runs in a fresh process (`harness.in_child`), one thread; memory is the process's anonymous resident
memory (RssAnon: the heap, not the page cache of the memory-mapped ANN file), before and after, and for feedback the
peak during the call (polled every 2 ms). The index: one with an ANN index, e.g. the 100k synthetic pool that
`python -m benchmarks.ann_scale --sizes 100000 --dims default --duckdb-max 100000 --dir D --keep` writes
(D/.../pool.duckdb). The query is a pool row's own features.

    python -m benchmarks.pool_memory --index D/100000_64x24x64/pool.duckdb [--only compare]
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import harness

ROW = 777  # the pool row whose features are the query (and the hit explained)


def anon_mb() -> int:
    """The process's anonymous resident memory (RssAnon), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024
    return -1


def _child(index_path: str, what: str, queue: Any) -> None:
    harness.set_threads(1)
    import torch

    from rise_core.attribution import top_with_feedback, valuation
    from rise_core.config import ScoreOptions
    from rise_core.scoring import FeatureMatrix
    from rise_core.store import RiseIndex

    out: dict[str, Any] = {"what": what}
    with RiseIndex.open(index_path) as index:
        row = index.row_features(ROW)
        query = FeatureMatrix(row.rh.float(), row.gh.float(), torch.ones(1), torch.ones(1),
                              None if row.hs is None else row.hs.float(), torch.ones(1))
        options = ScoreOptions()
        before = anon_mb()

        def timed(fn: Any) -> float:
            start = time.perf_counter()
            fn()
            return round(time.perf_counter() - start, 3)
        if what == "explain: the row alone":
            out["seconds"] = timed(lambda: index.row_features(ROW + 1))
        elif what == "explain: the matrix, then the row":
            out["seconds"] = timed(lambda: index.feature_matrix().select([ROW + 1]))
        elif what == "valuation: from the ANN codes":
            out["seconds"] = timed(lambda: valuation(index, query, options, fraction=1.0))
            out["again_seconds"] = timed(lambda: valuation(index, query, options, fraction=1.0))
            out["matrix_loaded"] = index.features_loaded
        elif what == "valuation: the matrix loaded first":
            out["load_seconds"] = timed(index.feature_matrix)
            out["seconds"] = timed(lambda: valuation(index, query, options, fraction=1.0))
            out["again_seconds"] = timed(lambda: valuation(index, query, options, fraction=1.0))
        elif what.startswith(("feedback, 3 marks", "compare")):
            if what.endswith("on the loaded matrix"):
                index.feature_matrix()
            if what.startswith("compare"):
                from rise_core.methods import RISE, RISE_FIXED, compare_methods
                from rise_core.samples import Sample

                def compared(methods: list[str]) -> Any:
                    return compare_methods(index, [Sample(text="q")], query, options, methods=methods)

                if "each alone" in what:  # as before one pass served both: a pass over the codes for each
                    def work() -> Any:
                        return compared([RISE]), compared([RISE_FIXED])
                elif "together" in what:
                    def work() -> Any:
                        return compared([RISE, RISE_FIXED])
                else:
                    def work() -> Any:
                        return compared([RISE_FIXED])
            else:
                ids = index.rows_frame([ROW, 10, 20])["id"].tolist()

                def work() -> Any:
                    return top_with_feedback(index, query, dict(zip(ids, (True, False, False), strict=True)), options)
            before, peak, stop = anon_mb(), [0], threading.Event()

            def poll() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], anon_mb())
                    time.sleep(0.002)
            watcher = threading.Thread(target=poll)
            watcher.start()
            out["seconds"] = timed(work)
            out["again_seconds"] = timed(work)
            stop.set()
            watcher.join()
            out["peak_extra_mb"] = peak[0] - before
            out["matrix_loaded"] = index.features_loaded
        else:
            raise ValueError(what)
        out["anon_before_mb"], out["anon_after_mb"] = before, anon_mb()
        out["rows"] = len(index)
    queue.put(out)


MEASURES = ("explain: the row alone", "explain: the matrix, then the row", "valuation: from the ANN codes",
            "valuation: the matrix loaded first", "feedback, 3 marks, streamed from the ANN codes",
            "feedback, 3 marks, on the loaded matrix", "compare: RISE from the ANN codes",
            "compare: RISE on the loaded matrix", "compare: RISE and RISE fixed weights, each alone, from the ANN codes",
            "compare: RISE and RISE fixed weights together, from the ANN codes")


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, out="")
    parser.add_argument("--index", required=True, help="an index with an ANN index (rise index-ann)")
    parser.add_argument("--only", default="", help="measure only the steps whose name starts with this, e.g. "
                        "'compare'")
    args = parser.parse_args(argv)
    rows = [harness.in_child(_child, args.index, what) for what in MEASURES if what.startswith(args.only)]
    print(harness.markdown_table(rows))
    alone, together = (next((r for r in rows if tag in r["what"]), None) for tag in ("each alone", "together"))
    if alone and together:
        print(f"\nCompare's RISE and RISE fixed weights together / each alone: "
              f"{together['again_seconds'] / alone['again_seconds']:.2f} (second calls)")
    if args.out:
        harness.write_json(Path(args.out) / "pool_memory.json", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
