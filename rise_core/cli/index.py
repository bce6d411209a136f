"""`rise build`, `rise query`, `rise select`, `rise info`: RISE indexes from the command line.

Exit codes (see rise_core.cli): 0 success, 1 a user-facing error (message on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputDataError
from ..generation import GenerationSettings
from ..units import format_bytes
from .options import (
    add_config_options,
    add_field_options,
    add_model_options,
    add_score_options,
    config_from_args,
    fields_from_args,
    load_model_from_args,
    model_path,
    read_pool_from_args,
    score_options_from_args,
)

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

EXAMPLES_QUERY = """examples:
  rise query --index pool.duckdb --text "Howdy! Once upon a time a dragon ..."
  rise query --index pool.duckdb --prompt "What is a 401k?" --completion "A retirement account ..." -k 20
  rise query --index pool.duckdb --queries queries.jsonl --where "topic = 'cooking'" --format csv
  rise query --index pool.duckdb --text "..." --explain
  rise query --index pool.duckdb --text "..." --preset backdoor     # scored without HS (lambda_hs 0)"""

EXAMPLES_SELECT = """examples:
  rise select --index pool.duckdb --queries val.jsonl --top-n 1000 --out selected.jsonl
  rise select --index pool.duckdb --queries val.jsonl --fraction 0.1 --out selected.csv --where "n_tokens < 400"
  rise select --index pool.duckdb --queries val.jsonl --top-n 100 --out sel.jsonl --preset backdoor"""


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

    p = sub.add_parser("query", help="rank the pool samples that most influence a query",
                       description="Rank the samples of an index by their RISE influence on a query generation "
                                   "(a query set is scored against the mean of its features).",
                       epilog=EXAMPLES_QUERY, formatter_class=fmt)
    p.add_argument("--index", required=True, help="index file")
    q = p.add_argument_group("query (one of)")
    q.add_argument("--text", default=None, help="plain-text query")
    q.add_argument("--prompt", default=None, help="query prompt (with --completion)")
    q.add_argument("--completion", default=None, help="query completion: the generation to explain")
    q.add_argument("--queries", default=None, metavar="FILE", help="file of queries (.jsonl/.csv/.parquet)")
    p.add_argument("-k", "--top-k", dest="k", type=int, default=10, help="number of samples to show (default 10)")
    p.add_argument("--each", action="store_true", help="with --queries: rank for every query separately")
    p.add_argument("--format", choices=["table", "json", "csv"], default="table", help="output format")
    p.add_argument("--explain", action="store_true",
                   help="token-level explanation of each hit (which tokens carry the RH, GH and HS scores)")
    p.add_argument("--width", type=int, default=80, help="characters of text shown per hit in a table")
    g = p.add_argument_group("generate the query (with --prompt)")
    g.add_argument("--generate", action="store_true",
                   help="let the index's model answer --prompt (streamed to stderr), then attribute its answer: the "
                   "retrospective query of a model fine-tuned on the pool")
    gen, gen_help = GenerationSettings(), GenerationSettings.field_help()
    g.add_argument("--max-new-tokens", type=int, default=gen.max_new_tokens, help=gen_help["max_new_tokens"])
    g.add_argument("--temperature", type=float, default=gen.temperature, help=gen_help["temperature"])
    g.add_argument("--top-p", type=float, default=gen.top_p, help=gen_help["top_p"])
    g.add_argument("--gen-seed", type=int, default=gen.seed, help=gen_help["seed"])
    p.add_argument("--search", choices=["auto", "exact", "ann"], default="auto",
                   help="auto: the ANN index (rise index-ann) when the index has a valid one and is large; exact: "
                   "scan every row; ann: the ANN index whatever the pool size (default auto)")
    add_score_options(p, preset_flag=True)
    add_where_option(p)
    add_model_options(p, "default: the index's model")
    add_field_options(p, prefix="query-")
    p.set_defaults(func=_cmd_query, _parser_error=p.error)

    p = sub.add_parser("select", help="valuation: select the pool samples most useful for a query set",
                       description="Score every pool sample against a query set (mean of the query features) and "
                                   "write the top N, or the top fraction, with their scores.",
                       epilog=EXAMPLES_SELECT, formatter_class=fmt)
    p.add_argument("--index", required=True, help="index file")
    p.add_argument("--queries", required=True, metavar="FILE", help="file of queries (.jsonl/.csv/.parquet)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--top-n", type=int, default=None, help="number of samples to keep")
    size.add_argument("--fraction", type=float, default=None, help="fraction of the pool to keep, in (0, 1]")
    p.add_argument("--out", required=True, help="output file: .jsonl, .csv or .parquet")
    add_score_options(p, preset_flag=True)
    add_where_option(p)
    add_model_options(p, "default: the index's model")
    add_field_options(p, prefix="query-")
    p.set_defaults(func=_cmd_select, _parser_error=p.error)

    p = sub.add_parser("info", help="show an index's manifest, counts and size (or list the indexes in a directory)",
                       description="Show what an index was built with (model, config, sketch seeds), its build "
                                   "status, sample counts and size on disk. Given a directory, list its indexes.")
    p.add_argument("--index", required=True, help="index file, or a directory of *.duckdb indexes")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_info, _parser_error=p.error)


# -- helpers ------------------------------------------------------------------------------------------------------


def add_where_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--where", default=None, metavar="SQL",
                        help="SQL condition over the sample columns (id, text, prompt, completion, label, metadata "
                             "columns, n_counted, loss, n_tokens), e.g. \"topic = 'cooking'\"; rows that fail it are "
                             "not ranked")


def _queries(args: argparse.Namespace) -> list[Any]:
    from ..samples import Sample

    if args.queries is not None:
        data = read_pool_from_args(args.queries, args, prefix="query-")
        reasons = "; ".join(f"query {r} (row {r} of {args.queries}): {why}" for r, why in data.skipped[:3])
        if not data.samples:
            raise InputDataError(f"{args.queries}: no usable queries: {reasons}")
        if data.skipped:
            print(f"note: {len(data.skipped)} of {data.n_rows} queries skipped ({reasons})", file=sys.stderr)
        return data.samples
    if args.text is not None and not args.text.strip():
        raise InputDataError(f"the query given with --text has empty text{' (only whitespace)' if args.text else ''}; "
                             "give the text whose influences are ranked")
    if args.text is not None:
        return [Sample(text=args.text)]
    if args.completion is not None and not args.completion.strip():
        raise InputDataError("the query given with --completion is empty; give the generation whose influences are "
                             "ranked")
    return [Sample(prompt=args.prompt, completion=args.completion)]


def _generated_query(lm: Any, args: argparse.Namespace) -> Any:
    """The model's answer to --prompt, streamed to stderr as it is written, as the query sample."""
    from ..generation import stream
    from ..samples import Sample

    settings = GenerationSettings(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                  top_p=args.top_p, seed=args.gen_seed)
    print("generation: ", end="", file=sys.stderr, flush=True)
    pieces = []
    for piece in stream(lm, args.prompt, settings):
        pieces.append(piece)
        print(piece, end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    completion = "".join(pieces).strip()
    if not completion:
        raise InputDataError("the model generated nothing for this prompt; give --completion yourself")
    return Sample(prompt=args.prompt, completion=completion, id="query")


def _check_query_args(args: argparse.Namespace, parser_error: Any) -> None:
    if getattr(args, "generate", False):
        if args.prompt is None or args.completion is not None or args.text is not None or args.queries is not None:
            parser_error("--generate needs --prompt alone (the model writes the completion)")
        return
    modes = [args.text is not None, args.completion is not None or args.prompt is not None, args.queries is not None]
    if sum(modes) != 1:
        parser_error("give exactly one query: --text, --prompt/--completion, or --queries FILE")
    if args.prompt is not None and args.completion is None:
        parser_error("--prompt needs --completion (the generation whose influences are ranked)")


def _open_for_query(args: argparse.Namespace) -> tuple[Any, Any]:
    from ..store import RiseIndex

    index = RiseIndex.open(args.index, read_only=True)
    try:
        if args.where:  # a filter that is refused, or keeps nothing, is said before the model loads
            kept = int(index.row_mask(args.where).sum())
            if kept == 0:
                raise InputDataError(f"the filter {args.where!r} matches none of the index's {len(index):,} rows; "
                                     "nothing to rank (check the values with `rise info` or drop --where)")
        lm = load_model_from_args(args, args.model or index.manifest.model_id)
    except BaseException:
        index.close()
        raise
    return index, lm


def _short(text: Any, width: int) -> str:
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _hit_text(row: pd.Series) -> str:
    if isinstance(row.get("text"), str):
        return row["text"]
    prompt = row.get("prompt") if isinstance(row.get("prompt"), str) else ""
    return f"{prompt} ⇒ {row.get('completion')}" if prompt else str(row.get("completion"))


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records", force_ascii=False, date_format="iso"))


def _top_tokens(attr: Any, channel: str, n: int = 6) -> str:
    values = getattr(attr, channel)
    order = sorted(range(len(values)), key=lambda i: -abs(values[i]))[:n]
    return "  ".join(f"{attr.tokens[i].strip() or repr(attr.tokens[i])}({values[i]:+.3f})" for i in order
                     if values[i] != 0.0)


def _attr_json(attr: Any) -> dict[str, Any]:
    return {"tokens": attr.tokens, "rh": attr.rh, "gh": attr.gh, "hs": attr.hs, "n_prompt_tokens": attr.n_prompt_tokens}


def _print_table(df: pd.DataFrame, width: int, explanations: dict[str, Any] | None = None) -> None:
    if df.empty:
        print("no samples matched")
        return
    has_query = "query" in df.columns
    has_label = "label" in df.columns and df["label"].notna().any()
    channels = [c for c in ("rh", "gh", "hs") if c in df.columns and (c != "hs" or df[c].abs().sum() > 0)]
    header = (["query"] if has_query else []) + ["rank", "id", "score", *channels] + (["label"] if has_label else [])
    id_width = min(24, max(2, int(df["id"].astype(str).str.len().max())))
    print("  ".join(f"{h:>5}" if h in ("query", "rank") else f"{h:<{id_width}}" if h == "id" else f"{h:>8}"
                    for h in header) + "  text")
    for _, row in df.iterrows():
        cells = ([f"{int(row['query']):>5}"] if has_query else []) + [
            f"{int(row['rank']):>5}", f"{_short(row['id'], id_width):<{id_width}}", f"{row['score']:>8.4f}",
            *(f"{row[c]:>8.4f}" for c in channels)]
        if has_label:
            cells.append(f"{_short(row['label'], 8):>8}")
        print("  ".join(cells) + "  " + _short(_hit_text(row), width))
        if explanations and row["id"] in explanations:
            ex_attr, q_attr = explanations[row["id"]]
            for channel in channels:
                print(f"{'':>7}{channel.upper()} example: {_top_tokens(ex_attr, channel)}")
                print(f"{'':>7}{channel.upper()} query:   {_top_tokens(q_attr, channel)}")


def _check_out(out: str) -> Path:
    path = Path(out)
    if path.suffix.lower() not in (".jsonl", ".csv", ".parquet"):
        raise InputDataError(f"--out {out!r}: use a .jsonl, .csv or .parquet file name")
    if not path.parent.is_dir():
        raise InputDataError(f"--out {out!r}: directory {path.parent} does not exist")
    return path


def _write_frame(df: pd.DataFrame, out: str) -> None:
    path = _check_out(out)
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with open(path, "w", encoding="utf-8") as fh:
                for rec in _records(df):
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        elif suffix == ".csv":
            df.to_csv(path, index=False)
        else:
            df.to_parquet(path, index=False)
    except OSError as exc:
        raise InputDataError(f"cannot write {out!r}: {exc.strerror or exc}") from exc


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

    try:
        if sharded:
            report = build_index_distributed(path, data, model_path(model), config, workers=args.workers,
                                             address=args.ray_address, batch_size=args.batch_size, device=args.device,
                                             dtype=args.dtype, trust_remote_code=args.trust_remote_code,
                                             phase_progress=phase_progress, overwrite=args.overwrite,
                                             preset=args.preset)
        else:
            report = build_index(path, data, lm, config, batch_size=args.batch_size, phase_progress=phase_progress,
                                 overwrite=args.overwrite, preset=args.preset)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()  # before the message, so it does not land on the bar's line
        print("rise build: interrupted; finished batches are saved. Rerun the same command to resume.",
              file=sys.stderr)
        raise
    finally:
        if bar is not None:
            bar.close()
    print(report.summary())
    if report.skipped:
        print(f"skipped {report.n_skipped} rows:")
        for row, why in report.skipped[:20]:
            print(f"  row {row}: {why}")
        if report.n_skipped > 20:
            print(f"  ... and {report.n_skipped - 20} more")
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


def _cmd_query(args: argparse.Namespace) -> int:
    from .. import ann
    from ..attribution import explain, query_features, rank, rank_each

    _check_query_args(args, args._parser_error)
    if args.k < 1:
        args._parser_error("-k must be at least 1")
    if args.each and args.queries is None:
        args._parser_error("--each needs --queries FILE")
    if not args.generate:
        queries = _queries(args)
        if args.explain and len(queries) != 1:
            raise InputDataError("--explain explains the hits of one query; give --text or --prompt/--completion "
                                 "(or a --queries file with one row)")
    index, lm = _open_for_query(args)
    try:
        if args.generate:
            queries = [_generated_query(lm, args)]
        options = score_options_from_args(args, index.config, index.manifest.build_preset)
        qfm = query_features(index, lm, queries)
        df = (rank_each if args.each else rank)(index, qfm, options, k=args.k, where=args.where, search=args.search)
        explanations = shared = None
        if args.explain:
            explanations = {sid: explain(index, lm, sid, queries[0], qfm, options) for sid in df["id"]}
            from ..shared_spans import find_shared_spans  # what the top hits share, weighted by the tokens above

            shared = find_shared_spans(index, df, explanations)
    finally:
        index.close()
    if args.format == "table":
        _print_table(df, args.width, explanations)
        if shared is not None:
            from ..shared_spans import format_table

            print(f"\nWhat the top hits share:\n{format_table(shared)}")
    elif args.format == "json":
        records = _records(df)
        if explanations:
            for rec in records:
                ex_attr, q_attr = explanations[rec["id"]]
                rec["explanation"] = {"example": _attr_json(ex_attr), "query": _attr_json(q_attr)}
        print(json.dumps(records, ensure_ascii=False, indent=1))
    else:
        if explanations:
            raise InputDataError("--explain needs --format table or json")
        df.to_csv(sys.stdout, index=False)
    # which path ranked the query (exact scan or ANN), on stderr: stdout stays the results alone, whatever the format
    print(f"search: {ann.search_summary(df.attrs.get('search'))}", file=sys.stderr)
    return 0


def _cmd_select(args: argparse.Namespace) -> int:
    from ..attribution import query_features, select

    _check_out(args.out)
    queries = _queries(args)
    index, lm = _open_for_query(args)
    try:
        qfm = query_features(index, lm, queries)
        df = select(index, qfm, score_options_from_args(args, index.config, index.manifest.build_preset),
                    top_n=args.top_n, fraction=args.fraction, where=args.where)
        n_pool = len(index) if not args.where else int(index.row_mask(args.where).sum())
    finally:
        index.close()
    _write_frame(df, args.out)
    cut = f" (score >= {df['score'].iloc[-1]:.4f})" if len(df) else ""
    print(f"selected {len(df)} of {n_pool} samples{cut} for {len(queries)} queries -> {args.out}")
    return 0


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
