"""`rise build`, `rise query`, `rise select`, `rise info`: RISE indexes from the command line. This module holds
building and inspecting an index (build, info); querying one (query, select) is `cli.query`'s, registered between
them so that `rise --help` lists the four in that order.

Exit codes (see rise_core.cli): 0 success, 1 a user-facing error (message on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..units import format_bytes
from . import query
from .options import (
    add_config_options,
    add_field_options,
    add_model_options,
    config_from_args,
    fields_from_args,
    load_model_from_args,
    model_path,
    read_pool_from_args,
)
from .output import print_skipped

EXAMPLES_BUILD = """examples:
  rise build pool.jsonl --index pool.duckdb                       # text or prompt/completion columns guessed
  rise build shards/ --index pool.duckdb                          # a folder of Parquet or Arrow files, or one
                                                                  # written by datasets' save_to_disk: streamed
  rise build --dataset tatsu-lab/alpaca:train --index alpaca.duckdb   # datasets.load_dataset(NAME, split=SPLIT)
  rise build pool.csv --index pool.duckdb --text-field body --id-field doc_id
  rise build more.jsonl --index pool.duckdb                       # append new samples (same model and config)
  rise build pool.jsonl --index p.duckdb --model ./my-checkpoint --preset paper --k-r 128 --k-h 24 --k-g 128
  rise build pool.jsonl --index pool.duckdb --workers 4           # 4 local Ray workers (one per GPU when present)
  rise build pool.jsonl --index pool.duckdb --ray-address auto --workers 8   # on a running Ray cluster

An interrupted build resumes where it stopped when the same command is run again (with or without --workers)."""


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("build", help="build or extend a RISE index from a pool (file, folder or datasets dataset)",
                       description="Compute RISE features of every sample of a pool and store them in a DuckDB "
                                   "index. Samples already in the index (same id) are skipped, so this both resumes "
                                   "an interrupted build and appends new samples. A folder or a --dataset is read "
                                   "in windows, never whole.",
                       epilog=EXAMPLES_BUILD, formatter_class=fmt)
    p.add_argument("pool", nargs="?", default=None,
                   help="pool file (.jsonl, .json, .csv, .parquet, .arrow), or a folder: one written by datasets' "
                   "save_to_disk, or of Parquet (sharded) or Arrow files")
    p.add_argument("--dataset", default=None, metavar="NAME[:SPLIT]",
                   help="instead of a pool path: datasets.load_dataset(NAME, split=SPLIT) (SPLIT default 'train'; "
                   "NAME a hub id, or a local folder or script load_dataset takes)")
    p.add_argument("--dataset-config", default=None, metavar="CONFIG", help="with --dataset: the dataset's config name")
    p.add_argument("--streaming", action="store_true",
                   help="with --dataset: stream it from its source on every read instead of preparing it once in the "
                   "datasets cache (no local copy; a new index reads it three times)")
    p.add_argument("--index", required=True, help="index file to create or extend (e.g. pool.duckdb)")
    p.add_argument("--batch-size", type=int, default=8, help="samples per forward pass and per commit (default 8)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing file at --index")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_model_options(p, "default: the index's model when it exists, else the embedded SmolLM2-135M-Instruct")
    add_field_options(p)
    add_config_options(p, "RISE config (default: the existing index's config, else --preset)")
    cluster = p.add_argument_group("sharded build on Ray (needs pip install \"rise-core[distributed]\")")
    cluster.add_argument("--workers", type=int, default=1, metavar="N",
                     help="Ray workers computing features, each loading --model (one GPU each when the cluster has "
                          "GPUs, else a share of its CPUs); this process alone writes the index. Default 1: one "
                          "process, no Ray")
    cluster.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="build on a running Ray cluster: 'auto' on one of its nodes, or ray://HEAD:10001 (default: "
                          "--workers N > 1 starts a local Ray)")
    p.set_defaults(func=_cmd_build, _parser_error=p.error)

    query.register(sub)  # query, select

    p = sub.add_parser("info", help="show an index's manifest, counts and size (or list the indexes in a directory)",
                       description="Show what an index was built with (model, config, sketch seeds), its build "
                                   "status, sample counts and size on disk. Given a directory, list its indexes.")
    p.add_argument("--index", required=True, help="index file, or a directory of *.duckdb indexes")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_info, _parser_error=p.error)


# -- commands -----------------------------------------------------------------------------------------------------


def _cmd_build(args: argparse.Namespace) -> int:
    from ..store import RiseIndex, build_index, build_index_distributed, check_new_location
    from ..store.distributed import import_ray

    if args.workers < 1:
        args._parser_error(f"--workers must be at least 1, got {args.workers}")
    sharded = args.workers > 1 or args.ray_address is not None
    if sharded:
        import_ray()  # a missing Ray fails at once, with the command that installs it
    data = _pool_from_args(args)  # bad input fails before the index is touched
    path = Path(args.index)
    exists = path.exists() and not args.overwrite
    model = args.model
    if exists:
        with RiseIndex.open(path, read_only=True) as existing:
            config = config_from_args(args, base=existing.config)
            model = model or existing.manifest.model_id
            existing.check_config(config)
    else:
        check_new_location(path, args.overwrite)
        config = config_from_args(args)
    lm = None if sharded else load_model_from_args(args, model)  # sharded: each worker loads it

    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=0, unit="sample", desc="reading the pool", file=sys.stderr, mininterval=0.5, dynamic_ncols=True)

    def phase_progress(phase: str, done: int, total: int) -> None:
        """One bar, restarted at each phase of the build and named after it (the mean's fit, then the features)."""
        if bar is not None:
            if bar.desc != phase or bar.total != total:
                bar.set_description_str(phase, refresh=False)
                bar.reset(total=total)
            bar.update(done - bar.n)

    replaces = args.overwrite and path.is_file()  # the build keeps the old index until the new one is whole
    try:
        if sharded:
            report = build_index_distributed(path, data, model_path(model), config, workers=args.workers,
                                             address=args.ray_address, batch_size=args.batch_size, device=args.device,
                                             dtype=args.dtype, trust_remote_code=args.trust_remote_code,
                                             phase_progress=phase_progress, overwrite=args.overwrite,
                                             preset=args.preset)
        else:
            # the command ends with the build: a fine-tune's weights are freed before its base model loads
            report = build_index(path, data, lm, config, batch_size=args.batch_size, phase_progress=phase_progress,
                                 overwrite=args.overwrite, preset=args.preset, release_model=True)
    except KeyboardInterrupt as exc:
        if bar is not None:
            bar.close()  # before the message, so it does not land on the bar's line
        kept = "".join(f" {note}" for note in getattr(exc, "__notes__", ()))  # where an overwritten index is kept
        if replaces and not kept:  # nothing was stored: `replacing` put the old index back
            said = f"nothing was stored, and {path} is as it was before the build."
        else:
            said = ("finished batches are saved. "
                    + ("Rerun it without --overwrite to resume." if args.overwrite else "Rerun the same command to "
                       "resume.") + kept)
        print(f"rise build: interrupted; {said}", file=sys.stderr)
        raise
    finally:
        if bar is not None:
            bar.close()
    print(report.summary())
    if report.skipped:
        print_skipped(report.skipped, f"skipped {report.n_skipped} rows:")
    return 0


def _pool_from_args(args: argparse.Namespace) -> Any:
    """The pool of `rise build`: a file read whole (PoolData), or a folder, .arrow file or --dataset read as a
    PoolStream (its columns checked and fields resolved now; its rows when the build reads them)."""
    from ..ingest import dataset_pool, stream_pool

    if (args.pool is None) == (args.dataset is None):
        args._parser_error("give a pool path or --dataset NAME[:SPLIT] (one of them)")
    if args.dataset is None and (args.dataset_config is not None or args.streaming):
        args._parser_error("--dataset-config and --streaming go with --dataset")
    fields = fields_from_args(args)
    if args.dataset is not None:
        data = dataset_pool(args.dataset, fields, config_name=args.dataset_config, streaming=args.streaming)
    else:
        data = stream_pool(args.pool, fields)
    if data is None:
        return read_pool_from_args(args.pool, args).require_samples()
    if args.fmt is not None:
        args._parser_error(f"--format names a pool file's format; {data.source} is read as a folder or dataset")
    return data


def _cmd_info(args: argparse.Namespace) -> int:
    from .. import ann
    from ..store import RiseIndex, list_indexes

    path = Path(args.index)
    if path.is_dir():
        rows = list_indexes(path)
        if args.json:
            print(json.dumps(rows, indent=1))
        elif not rows:
            print(f"no *.duckdb indexes in {path}")
        for row in rows if not args.json else []:
            if "error" in row:
                print(f"{row['path']}: {row['error']}")
            else:
                print(f"{row['path']}: {row['n_samples']} samples, {row['model_id']}, dims {row['dims']}, "
                      f"{format_bytes(row['size_bytes'])}, {row['status']}")
        return 0
    with RiseIndex.open(path, read_only=True) as index:
        info = index.info()
        ann_status = ann.ann_status(index)
    info["ann"] = ann_status.to_dict()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    status = info["status"] + ("" if info["status"] == "complete" else
                               f" (the build of {', '.join(info['unfinished'])} was interrupted or stopped: run it "
                               "again to finish)" if info["unfinished"] else
                               " (interrupted or stopped: rerun `rise build` with the same pool to finish)")
    mi = info["model_info"]
    lines = [
        ("index", info["path"]), ("status", status),
        ("samples", f"{info['n_samples']} ({info['n_labelled']} labelled, {info['n_truncated']} truncated to "
                    f"seq_len)"),
        ("tokens", f"{info['n_tokens']} ({info['n_counted_tokens']} counted)"),
        ("model", f"{info['model_id']} (fingerprint {info['model_fingerprint']}; {mi.get('architecture', '?')}, "
                  f"vocab {mi.get('vocab_size', '?')}, hidden {mi.get('hidden_size', '?')}, {mi.get('dtype', '?')})"),
        ("dims", "K_r={}, K_h={}, K_g={}".format(*info["dims"]) +
                 f" -> {info['feature_bytes_per_sample']} bytes/sample (fp16)"),
        ("config", ", ".join(f"{k}={v}" for k, v in info["config"].items())),
        ("preset", f"{info['build_preset']} (queries score with it unless given --preset)" if info["build_preset"]
                   else "none recorded (queries score with --preset, default 'default')"),
        ("sketch seeds", f"{info['seeds']} (digest {info['sketch_digest']})"),
        ("centring mean", "stored" if info["has_hidden_mean"] else "none"),
        ("base-model losses", "stored for every row: the behaviour test reads what the fine-tune learned"
         if info["base_model_losses"] else "none (a fine-tune's index keeps them; `rise build` again fills them)"),
        ("columns", ", ".join(f"{k} ({v.lower()})" for k, v in info["columns"].items()) or "none"),
        ("size on disk", format_bytes(info["size_bytes"])),
        ("ANN index", ann.status_summary(ann_status, info["path"])),
        ("created", info["created_at"]), ("updated", info["updated_at"]),
        ("library", f"rise-core {info['library_version']}, index format {info['format_version']}"),
    ]
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        print(f"{key:<{width}}  {value}")
    return 0
