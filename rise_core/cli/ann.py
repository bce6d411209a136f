"""`rise index-ann`: build, update, tune or inspect the approximate-nearest-neighbour (ANN) index beside a RISE index.

With one, `rise query` and the explorer rank pools of a million samples in milliseconds (see rise_core.ann); run
`rise -v query ...` to see which path ranked a query.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXAMPLES = """examples:
  rise index-ann --index pool.duckdb                     # build (nlist ~ 2 sqrt(N), nprobe nlist/16)
  rise index-ann --index pool.duckdb --nlist 4096 --nprobe 96 --threads 2
  rise index-ann --index pool.duckdb --update            # add the samples appended since (no retraining)
  rise index-ann --index pool.duckdb --set-nprobe 128    # more recall, slower queries (no rebuild)
  rise index-ann --index pool.duckdb --status

Files: <index>.ann.faiss (the features again, as fp16 codes in k-means cells) and <index>.ann.json (sidecar). Queries
use it automatically for pools of at least 50,000 samples under sample_norm 'channel'; hits are rescored exactly.

Memory: the build streams the samples and adds them a shard at a time, merged on disk: it holds about 2 GB whatever
the pool's size, and the disk needs room for the ANN file twice while it runs. Queries memory-map the file."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index-ann", help="build the ANN index that makes queries over large pools fast",
                       description="Build (or rebuild) a faiss IVF index over an index's stored features, so "
                                   "queries scan a few k-means cells instead of every sample; returned scores stay "
                                   "exact, only recall is approximate.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", required=True, help="index file (e.g. pool.duckdb)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--update", action="store_true",
                      help="add the samples appended since the ANN build to it (keeps its cells)")
    mode.add_argument("--status", action="store_true", help="show whether the index has a usable ANN index")
    mode.add_argument("--set-nprobe", type=int, default=None, metavar="N",
                      help="change the cells a query scans by default, without rebuilding")
    p.add_argument("--nlist", type=int, default=None,
                   help="k-means cells (default: the power of two nearest 2 sqrt(N): 2048 for 1M samples)")
    p.add_argument("--nprobe", type=int, default=None,
                   help="cells scanned per query by default (default: nlist/16, at least 8)")
    p.add_argument("--train-per-list", type=int, default=None, metavar="N",
                   help="k-means training samples per cell (default 64)")
    p.add_argument("--seed", type=int, default=0, help="seed of the k-means training subset and initialisation")
    p.add_argument("--shard-rows", type=int, default=None, metavar="N",
                   help="samples added in memory before they are written out (default: 512 MiB of codes, about "
                        "73,000 samples at the default dims); the result does not depend on it")
    p.add_argument("--threads", type=int, default=None, help="faiss threads for the build (default: all cores)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the sidecar (or status) as JSON")
    p.set_defaults(func=_cmd_index_ann, _parser_error=p.error)


def _progress(quiet: bool) -> tuple[Any, Any]:
    if quiet:
        return None, None
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="row" if total > 1 else "step", file=sys.stderr,
                                     mininterval=0.5, dynamic_ncols=True)
        bar.update(done - bar.n)

    def close() -> None:
        for bar in bars.values():
            bar.close()

    return progress, close


def _cmd_index_ann(args: argparse.Namespace) -> int:
    from .. import ann
    from ..store import RiseIndex

    building = not (args.status or args.update or args.set_nprobe is not None)
    if args.shard_rows is not None and args.shard_rows < 1:
        args._parser_error(f"--shard-rows must be at least 1, got {args.shard_rows}")
    if not building and (args.nlist is not None or args.nprobe is not None or args.train_per_list is not None):
        args._parser_error("--nlist, --nprobe and --train-per-list set up a new build; leave out --status, "
                           "--update and --set-nprobe")
    with RiseIndex.open(args.index, read_only=True) as index:
        if args.status:
            status = ann.ann_status(index)
            if args.json:
                print(json.dumps(status.to_dict()))
            else:
                print(f"{status.state}: {status.reason}")
                if status.valid:
                    print(f"queries use it under sample_norm 'channel' for pools of at least {ann.ANN_MIN_ROWS:,} "
                          "samples (search='auto'); others are scanned exactly")
            return 0
        if args.set_nprobe is not None:
            meta = ann.set_nprobe(index, args.set_nprobe)
            print(json.dumps(json.loads(meta.to_json())) if args.json else
                  f"{index.path}: queries now scan {meta.nprobe} of {meta.nlist} cells")
            return 0
        progress, close = _progress(args.quiet)
        try:
            if args.update:
                meta, added = ann.update_ann(index, threads=args.threads, shard_rows=args.shard_rows,
                                             progress=progress)
                summary = (f"added {added:,} rows" if added else "already up to date") + f"; {meta.n_rows:,} rows"
            else:
                meta = ann.build_ann(index, nlist=args.nlist, nprobe=args.nprobe,
                                     train_per_list=args.train_per_list or ann.TRAIN_PER_LIST, seed=args.seed,
                                     threads=args.threads, shard_rows=args.shard_rows, progress=progress)
                summary = (f"built {meta.structure} over {meta.n_rows:,} rows in {meta.build_seconds:.1f} s "
                           f"(k-means on {meta.train_rows:,} rows; queries scan {meta.nprobe} cells)")
        finally:
            if close is not None:
                close()
    if args.json:
        print(json.dumps(json.loads(meta.to_json())))
    else:
        from ..units import format_bytes

        faiss_path, _ = ann.ann_paths(args.index)
        print(f"{faiss_path}: {summary}; {format_bytes(meta.faiss_bytes)}")
    return 0
