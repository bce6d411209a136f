"""`rise query`, `rise select`: rank an index's pool for a query, or select from it for a query set (registered
by `cli.index`, between build and info).

Exit codes (see rise_core.cli): 0 success, 1 a user-facing error (message on stderr), 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from ..csv_out import write_csv
from ..errors import InputDataError
from ..generation import GenerationSettings
from ..ranking import EXTRA_PARTS
from ..units import one_line
from .compare import add_compare_option, compare_methods_of, run_compare
from .options import (
    add_field_options,
    add_model_options,
    add_score_options,
    load_model_from_args,
    read_pool_from_args,
    score_options_from_args,
)
from .output import hit_text, records

EXAMPLES_QUERY = """examples:
  rise query --index pool.duckdb --text "Howdy! Once upon a time a dragon ..."
  rise query --index pool.duckdb --prompt "What is a 401k?" --completion "A retirement account ..." -k 20
  rise query --index pool.duckdb --queries queries.jsonl --where "topic = 'cooking'" --format csv
  rise query --index pool.duckdb --text "..." --explain
  rise query --index pool.duckdb --text "..." --preset backdoor     # scored without HS (lambda_hs 0)
  rise query --index pool.duckdb --prompt "Howdy! Why is the sky blue?" --completion "Once upon a time ..." \\
      --versus-prompt "Why is the sky blue?" --versus-completion "Sunlight scatters ..."   # why this, not that
  rise query --index pool.duckdb --prompt "Howdy! Why is the sky blue?" --generate \\
      --versus-prompt "Why is the sky blue?" --versus-generate   # the model answers both, then the contrast
  rise query --index pool.duckdb --text "..." --compare               # RISE beside BM25, MiniLM, hidden cosine
  rise query --index pool.duckdb --text "..." --compare "RISE,BM25" --format json"""

EXAMPLES_SELECT = """examples:
  rise select --index pool.duckdb --queries val.jsonl --top-n 1000 --out selected.jsonl
  rise select --index pool.duckdb --queries val.jsonl --fraction 0.1 --out selected.csv --where "n_tokens < 400"
  rise select --index pool.duckdb --queries val.jsonl --top-n 100 --out sel.jsonl --preset backdoor
  rise select --index pool.duckdb --queries triggered.jsonl --versus-queries clean.jsonl --top-n 50 \\
      --out behind_the_trigger.jsonl   # the rows behind each triggered answer and not its clean answer"""


def register(sub: argparse._SubParsersAction) -> None:
    fmt = argparse.RawDescriptionHelpFormatter

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
    p.add_argument("--marks", default=None, metavar="FILE",
                   help="relevance feedback: a JSON object {sample id: true (this is it) / false (not this)} (or "
                        "{\"marks\": {...}, \"not_words\": [...]} with words refused), as the Attribute page's "
                        "'Download marks' writes it; ranks the one query again with the marks "
                        "(Rocchio per channel, channel re-weighting, and the query's words the yes-marks hold, by "
                        "BM25 over the pool's texts, fitted here)")
    p.add_argument("--not-word", action="append", default=None, metavar="WORD", dest="not_words",
                   help=NOT_WORD_HELP)
    p.add_argument("--search", choices=["auto", "exact", "ann"], default="auto",
                   help="auto: the ANN index (rise index-ann) when the index has a valid one and is large; exact: "
                   "scan every row; ann: the ANN index whatever the pool size (default auto)")
    add_compare_option(p)
    v = add_versus_options(p, "query", "the query")
    v.add_argument("--versus-generate", action="store_true",
                   help="let the index's model answer --versus-prompt (e.g. the prompt without the trigger; streamed "
                   "to stderr, with the generation settings above) and contrast the query with that answer")
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
    p.add_argument("--marks", default=None, metavar="FILE",
                   help="relevance feedback on the selection: a JSON object {sample id: true (keep rows like this) / "
                        "false (not this)}; scores the pool again with the marks (Rocchio per channel, channel "
                        "re-weighting, and the queries' words the yes-marks hold, by BM25 over the pool's texts) "
                        "and keeps the top N or fraction of that")
    p.add_argument("--not-word", action="append", default=None, metavar="WORD", dest="not_words",
                   help=NOT_WORD_HELP)
    v = add_versus_options(p, "query set", "each query")
    v.add_argument("--versus-queries", default=None, metavar="FILE",
                   help="one other answer per query, in the order of --queries (same file format and columns): e.g. "
                   "the model's answers to the same prompts without the trigger")
    add_score_options(p, preset_flag=True)
    add_where_option(p)
    add_model_options(p, "default: the index's model")
    add_field_options(p, prefix="query-")
    p.set_defaults(func=_cmd_select, _parser_error=p.error)


# -- helpers ------------------------------------------------------------------------------------------------------


def add_versus_options(parser: argparse.ArgumentParser, what: str, each: str) -> argparse._ArgumentGroup:
    """The contrast's options (`--versus-text`, `--versus-completion`, `--versus-prompt`) of `rise query` and `rise
    select`, in a group of their own (returned, for the command's own additions)."""
    v = parser.add_argument_group(
        "contrast: why this answer and not that one",
        f"Score the {what} against another answer B: each example's score is its score for {each} minus its score "
        "for B (per channel, with the weights chosen for the query), so the examples behind this answer and not B "
        "rank first. B is one text, or a prompt and completion (e.g. the model's answer to the prompt without the "
        "trigger); every query of a --queries file is contrasted with it"
        + (", or each with its own (--versus-queries)." if what != "query" else "."))
    v.add_argument("--versus-text", default=None, metavar="TEXT", help="the other answer B as plain text")
    v.add_argument("--versus-completion", default=None, metavar="TEXT", help="the other answer B's completion")
    v.add_argument("--versus-prompt", default=None, metavar="TEXT",
                   help="the other answer B's prompt (with --versus-completion"
                   + (", default: the query's --prompt; or with --versus-generate)" if what == "query" else ")"))
    return v


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


def _versus(args: argparse.Namespace, parser_error: Any) -> Any:
    """The contrast's other answer B from --versus-text / --versus-prompt / --versus-completion (None: no contrast)."""
    from ..samples import Sample

    text, prompt, completion = args.versus_text, args.versus_prompt, args.versus_completion
    paired = getattr(args, "versus_queries", None)
    if paired is not None:
        if text is not None or prompt is not None or completion is not None:
            parser_error("give the other answers as --versus-queries FILE, or one as --versus-text / "
                         "--versus-completion, not both")
        return _paired_versus(args, paired)
    if getattr(args, "versus_generate", False):
        if prompt is None or text is not None or completion is not None:
            parser_error("--versus-generate needs --versus-prompt alone (the model writes the other answer)")
        if not prompt.strip():
            raise InputDataError("the prompt given with --versus-prompt is empty; give the prompt the model answers "
                                 "for the other answer (e.g. the query's prompt without the trigger)")
        return None  # the model writes it once loaded (`_generated`)
    if text is None and prompt is None and completion is None:
        return None
    if text is not None and (prompt is not None or completion is not None):
        parser_error("give the other answer as --versus-text, or as --versus-completion (with --versus-prompt), not "
                     "both")
    if prompt is not None and completion is None:
        parser_error("--versus-prompt needs --versus-completion (the other answer to contrast the query with)")
    if text is not None:
        if not text.strip():
            raise InputDataError("the other answer given with --versus-text is empty; give the answer to contrast "
                                 "the query with")
        return Sample(text=text, id="versus")
    if not completion.strip():
        raise InputDataError("the other answer given with --versus-completion is empty; give the answer to contrast "
                             "the query with")
    prompt = prompt if prompt is not None else getattr(args, "prompt", None)
    return Sample(prompt=prompt if prompt and prompt.strip() else None, completion=completion, id="versus")


def _paired_versus(args: argparse.Namespace, path: str) -> list[Any]:
    """The other answers of --versus-queries FILE, one per query (read like --queries, every row usable)."""
    data = read_pool_from_args(path, args, prefix="query-")
    if data.skipped:
        r, why = data.skipped[0]
        raise InputDataError(f"--versus-queries {path}: row {r} cannot be used ({why}); every query needs its other "
                             "answer")
    return data.samples


def _generated(lm: Any, args: argparse.Namespace, prompt: str, sample_id: str = "query") -> Any:
    """The model's answer to `prompt` (the generation settings of `args`), streamed to stderr as it is written, as a
    sample: the query (sample_id "query", from --generate) or the contrast's other answer ("versus")."""
    from ..generation import stream
    from ..samples import Sample

    settings = GenerationSettings(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                  top_p=args.top_p, seed=args.gen_seed)
    print("generation: " if sample_id == "query" else "the other answer: ", end="", file=sys.stderr, flush=True)
    pieces = []
    for piece in stream(lm, prompt, settings):
        pieces.append(piece)
        print(piece, end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    completion = "".join(pieces).strip()
    if not completion:
        raise InputDataError("the model generated nothing for this prompt; give "
                             + ("--completion" if sample_id == "query" else "--versus-completion") + " yourself")
    return Sample(prompt=prompt, completion=completion, id=sample_id)


def _versus_label(args: argparse.Namespace) -> str:
    """How the contrast's other answer was given, for its errors."""
    if getattr(args, "versus_queries", None) is not None:
        return f"the other answers (--versus-queries {args.versus_queries})"
    if getattr(args, "versus_generate", False):
        return "the other answer (the model's answer to --versus-prompt)"
    return "the other answer (--versus-" + ("text)" if args.versus_text is not None else "prompt/--versus-completion)")


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


def note_unfinished(index: Any) -> None:
    """A line on stderr when the index's build is not complete (stopped or interrupted): a ranking covers the samples
    stored so far."""
    m = index.manifest
    if m.status == "complete" or len(index) == 0:  # an empty index is refused with its own message
        return
    which = "the build of " + ", ".join(m.unfinished_sources) if m.unfinished else "its build"
    print(f"note: {index.path} is not complete ({which} was stopped or interrupted): rankings cover the "
          f"{len(index):,} samples stored so far; run the build again to finish it", file=sys.stderr)


def _open_for_query(args: argparse.Namespace) -> tuple[Any, Any]:
    from ..store import RiseIndex

    index = RiseIndex.open(args.index, read_only=True)
    try:
        note_unfinished(index)
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


NEGLIGIBLE_SHARE = 1e-3  # a channel whose strongest token is below this share of the hit's strongest is summed up


def _top_tokens(attr: Any, channel: str, n: int = 6) -> str:
    """The `n` tokens of `attr` that move the channel's score most, each with its contribution to 3 significant
    digits (a channel the query's weights leave small, e.g. RH at 4e-4, would print +0.000 at fixed decimals)."""
    values = getattr(attr, channel)
    order = sorted(range(len(values)), key=lambda i: -abs(values[i]))[:n]
    return "  ".join(f"{attr.tokens[i].strip() or repr(attr.tokens[i])}({values[i]:+.3g})" for i in order
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
    numbers = [*channels, *(c for c in EXTRA_PARTS if c in df.columns)]
    has_mark = "mark" in df.columns
    header = ((["query"] if has_query else []) + ["rank"] + (["mark"] if has_mark else []) + ["id", "score", *numbers]
              + (["label"] if has_label else []))
    id_width = min(24, max(2, int(df["id"].astype(str).str.len().max())))
    print("  ".join(f"{h:>5}" if h in ("query", "rank") else f"{h:<4}" if h == "mark" else f"{h:<{id_width}}"
                    if h == "id" else f"{h:>8}" for h in header) + "  text")
    for _, row in df.iterrows():
        cells = ([f"{int(row['query']):>5}"] if has_query else []) + [f"{int(row['rank']):>5}"] + (
            [f"{row['mark']:<4}"] if has_mark else []) + [
            f"{one_line(row['id'], id_width):<{id_width}}", f"{row['score']:>8.4f}", *(f"{row[c]:>8.4f}" for c in numbers)]
        if has_label:
            cells.append(f"{one_line(row['label'], 8):>8}")
        print("  ".join(cells) + "  " + one_line(hit_text(row), width))
        if explanations and row["id"] in explanations:
            attrs = explanations[row["id"]]
            strongest = {c: max((abs(v) for a in attrs for v in getattr(a, c)), default=0.0) for c in channels}
            top = max(strongest.values(), default=0.0)
            ex_attr, q_attr, *versus = attrs
            for channel in channels:
                if strongest[channel] < NEGLIGIBLE_SHARE * top:  # its weight is near 0 for this query
                    print(f"{'':>7}{channel.upper()}: adds little here (its largest token contribution "
                          f"{strongest[channel]:.2g}, against {top:.2g} in another channel)")
                    continue
                print(f"{'':>7}{channel.upper()} example: {_top_tokens(ex_attr, channel)}")
                print(f"{'':>7}{channel.upper()} query:   {_top_tokens(q_attr, channel)}")
                if versus:  # the contrast's other answer: its tokens pull the score down
                    print(f"{'':>7}{channel.upper()} versus:  {_top_tokens(versus[0], channel)}")


def _check_out(out: str, inputs: dict[str, str | None] | None = None) -> Path:
    """The output file `out`, refused with what to do when its type or folder is wrong, or when it is one of the
    command's `inputs` ({option: file it reads}): the selection would replace the file it was read from."""
    path = Path(out)
    if path.suffix.lower() not in (".jsonl", ".csv", ".parquet"):
        raise InputDataError(f"--out {out!r}: use a .jsonl, .csv or .parquet file name")
    if not path.parent.is_dir():
        raise InputDataError(f"--out {out!r}: directory {path.parent} does not exist")
    for option, given in (inputs or {}).items():
        if given and path.exists() and Path(given).exists() and path.samefile(given):
            raise InputDataError(f"--out {out!r} is the file given to {option}, which this command reads: write the "
                                 "selection to another file")
    return path


def _write_frame(df: pd.DataFrame, out: str) -> None:
    """Write `df` to `out` (.jsonl, .csv or .parquet) whole or not at all: into a file beside it, then moved in, so
    an error or a Ctrl-C midway leaves what was at `out` as it was."""
    path = _check_out(out)
    suffix = path.suffix.lower()
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        if suffix == ".jsonl":
            with open(part, "w", encoding="utf-8") as fh:
                for rec in records(df):
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        elif suffix == ".csv":
            write_csv(df, part)
        else:
            df.to_parquet(part, index=False)
        os.replace(part, path)
    except OSError as exc:
        raise InputDataError(f"cannot write {out!r}: {exc.strerror or exc}") from exc
    finally:
        part.unlink(missing_ok=True)


# -- commands -----------------------------------------------------------------------------------------------------


def _cmd_query(args: argparse.Namespace) -> int:
    from .. import ann
    from ..attribution import explain_many, explain_versus, query_features, rank, rank_each

    _check_query_args(args, args._parser_error)
    versus = _versus(args, args._parser_error)
    if args.k < 1:
        args._parser_error("-k must be at least 1")
    if args.each and args.queries is None:
        args._parser_error("--each needs --queries FILE")
    marks, from_file = _marks(args.marks) if args.marks is not None else (None, [])
    not_words = _not_words(args, from_file)
    if marks is not None and (args.each or args.explain or versus is not None or args.versus_generate):
        args._parser_error("--marks ranks one query again with its marks; it does not go with --each, --explain or "
                           "--versus-*")
    compared = None
    if args.compare is not None:
        if marks is not None or args.each or args.explain or args.where:
            args._parser_error("--compare ranks the whole pool with every method for the query (or the query set); "
                               "it does not go with --marks, --each, --explain or --where")
        compared = compare_methods_of(args)
    if not args.generate:
        queries = _queries(args)
        if args.explain and len(queries) != 1:
            raise InputDataError("--explain explains the hits of one query; give --text or --prompt/--completion "
                                 "(or a --queries file with one row)")
    index, lm = _open_for_query(args)
    try:
        if args.generate:
            queries = [_generated(lm, args, args.prompt)]
        if args.versus_generate:
            versus = _generated(lm, args, args.versus_prompt, "versus")
        options = score_options_from_args(args, index.config, index.manifest.build_preset)
        qfm = query_features(index, lm, queries, versus=versus, versus_label=_versus_label(args))
        if compared is not None:
            return run_compare(args, index, lm, queries, qfm, options, versus, compared)
        if marks is not None:
            if len(queries) != 1:
                raise InputDataError(f"--marks are one query's: give one query, not {len(queries)}")
            df = _rank_with_marks(index, qfm, queries[0], marks, options, args.k, args.where, not_words)
        else:
            df = (rank_each if args.each else rank)(index, qfm, options, k=args.k, where=args.where,
                                                    search=args.search)
        explanations = shared = None
        if args.explain:
            explained = explain_many(index, lm, list(df["id"]), queries[0], qfm, options)
            explanations = {sid: explained[str(sid)]
                            + ((explain_versus(index, lm, sid, versus, qfm, options),) if versus else ())
                            for sid in df["id"]}
            from ..behaviour import shared_table  # what the top hits share, weighted by the tokens above
            from ..shared_spans import pool_spans

            shared = shared_table(pool_spans(index), df, queries[0], explanations=explanations, limit=20)
    finally:
        index.close()
    if args.format == "table":
        _print_table(df, args.width, explanations)
        if shared is not None:
            from ..shared_spans import format_table

            print(f"\nWhat the top hits share:\n{format_table(shared)}")
    elif args.format == "json":
        hits = records(df)
        if explanations:
            for rec in hits:
                ex_attr, q_attr, *versus_attr = explanations[rec["id"]]
                rec["explanation"] = {"example": _attr_json(ex_attr), "query": _attr_json(q_attr)}
                if versus_attr:
                    rec["explanation"]["versus"] = _attr_json(versus_attr[0])
        print(json.dumps(hits, ensure_ascii=False, indent=1))
    else:
        if explanations:
            raise InputDataError("--explain needs --format table or json")
        write_csv(df, sys.stdout)
    # which path ranked the query (exact scan or ANN), on stderr: stdout stays the results alone, whatever the format
    print(f"search: {ann.search_summary(df.attrs.get('search'))}", file=sys.stderr)
    if df.attrs.get("contrast"):
        print(df.attrs["contrast"], file=sys.stderr)
    return 0


ALL_MISSES_CLI = ("your marks all say \"not this\": they keep the view this ranking chose (turning by itself lost "
                  "more than it found on the tune sets); for the other view rank again with --preset backdoor (what "
                  "taught this behaviour: RH + GH) or --weighting fixed --lambda-rh 0 --lambda-gh 0 --lambda-hs 1 "
                  "(examples like this one: HS)")
ALL_MISSES_CLI_NO_HS = ("your marks all say \"not this\"; this index stores no HS channel, so there is no other view "
                        "to try (--lambda-rh / --lambda-gh weigh RH against GH)")
NOT_WORD_HELP = ("with --marks: a word of the query not to lift, however the yes-marks hold it (a word they share "
                 "with the query by chance, as stderr's 'lifted' line names it); repeat for more; added to the "
                 "marks file's own \"not_words\" (the Attribute page's download holds the words refused there)")


def _not_words(args: argparse.Namespace, from_file: list[str]) -> list[str]:
    """The marks file's refused words and --not-word's, checked before any model or BM25 work: --not-word without
    --marks is a usage error, more than MAX_REFUSED_WORDS in all a clear one."""
    from ..feedback import bounded_refusals

    words = args.not_words or []
    if words and args.marks is None:
        args._parser_error("--not-word refuses a word the marks would lift; it needs --marks FILE")
    words = [*from_file, *words]
    bounded_refusals(words, " (--marks file and --not-word)")
    return words


MAX_MARKS_FILE_BYTES = 1 << 20  # a marks file is a few ids; more is not a marks file
MAX_MARKS = 1000


def _marks(path: str) -> tuple[dict[str, bool], list[str]]:
    """The marks of a JSON file and the words it refuses: {sample id: true/false}, or, as the Attribute page writes
    it once a word is refused, {"marks": {sample id: true/false}, "not_words": [word, ...]}; a clear error for
    anything else."""
    file = Path(path)
    if not file.is_file():
        raise InputDataError(f"--marks {path}: no such file")
    if file.stat().st_size > MAX_MARKS_FILE_BYTES:
        raise InputDataError(f"--marks {path}: {file.stat().st_size:,} bytes; a marks file holds at most "
                             f"{MAX_MARKS:,} ids (up to {MAX_MARKS_FILE_BYTES:,} bytes)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputDataError(f"--marks {path}: not JSON ({exc})") from None
    except RecursionError:
        raise InputDataError(f"--marks {path}: nested too deeply to be a marks file") from None
    words: Any = []
    if isinstance(data, dict) and isinstance(data.get("marks"), dict):  # an id's mark is a bool, never an object
        unknown = sorted(set(data) - {"marks", "not_words"})
        if unknown:
            raise InputDataError(f"--marks {path}: unknown keys {unknown} beside \"marks\"; expected "
                                 '{"marks": {...}, "not_words": [...]}')
        data, words = data["marks"], data.get("not_words", [])
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise InputDataError(f"--marks {path}: \"not_words\" must be a list of words")
    if not isinstance(data, dict) or not data:
        raise InputDataError(f"--marks {path}: expected a JSON object of sample id -> true/false, e.g. "
                             '{"row-17": true, "row-3": false}')
    bad = [k for k, v in data.items() if not isinstance(v, bool)]
    if bad:
        raise InputDataError(f"--marks {path}: the mark of {bad[0]!r} is {data[bad[0]]!r}; marks are true or false")
    if len(data) > MAX_MARKS:
        raise InputDataError(f"--marks {path}: {len(data):,} marks; at most {MAX_MARKS:,}")
    return {str(k): v for k, v in data.items()}, words


def _rank_with_marks(index: Any, qfm: Any, query: Any, marks: dict[str, bool], options: Any, k: int,
                     where: str | None, not_words: list[str] = ()) -> pd.DataFrame:
    """The query (or query set) ranked again with its marks, its best k (the marked words from BM25 over the pool
    when any mark is yes, less `not_words`); what the marks chose, on stderr."""
    from ..attribution import marked_words, rank_with_feedback
    from ..compare import fit_bm25
    from ..feedback import all_misses, chosen_view, lift_lines

    words = marked_words(index, query, fit_bm25(index), not_words) if any(marks.values()) else None
    df = rank_with_feedback(index, qfm, marks, options, k=k, where=where, words=words)
    fb = df.attrs["feedback"]
    print(f"feedback: {fb['n_relevant']} marked yes, {fb['n_irrelevant']} no; the marks chose "
          f"{chosen_view(fb['weights'])}", file=sys.stderr)
    if fb.get("words"):
        print("marked words: " + ", ".join(f"{w} ({v:.2f})" for w, v in list(fb["words"].items())[:12]),
              file=sys.stderr)
    for line in lift_lines(fb, len(index)):
        print(line, file=sys.stderr)
    if all_misses(marks) and not fb.get("turned"):
        print(ALL_MISSES_CLI if index.config.hidden_channel else ALL_MISSES_CLI_NO_HS, file=sys.stderr)
    return df


def _cmd_select(args: argparse.Namespace) -> int:
    from ..attribution import query_features, select, selection_size
    from ..samples import Sample

    _check_out(args.out, {"--queries": args.queries, "--marks": args.marks, "--versus-queries": args.versus_queries,
                          "--index": args.index})
    queries = _queries(args)
    versus = _versus(args, args._parser_error)
    marks, from_file = _marks(args.marks) if args.marks is not None else (None, [])
    not_words = _not_words(args, from_file)
    if marks is not None and versus is not None:
        args._parser_error("--marks scores the query set again with its marks; it does not go with a contrast "
                           "(--versus-*)")
    index, lm = _open_for_query(args)
    try:
        qfm = query_features(index, lm, queries, versus=versus, versus_label=_versus_label(args))
        options = score_options_from_args(args, index.config, index.manifest.build_preset)
        n_pool = len(index) if not args.where else int(index.row_mask(args.where).sum())
        if marks is None:
            df = select(index, qfm, options, top_n=args.top_n, fraction=args.fraction, where=args.where)
        else:  # the queries' words, as one text, for the words the yes-marks hold
            words_of = Sample(text="\n".join(q.full_text for q in queries), id="queries")
            n_keep = selection_size(n_pool, args.top_n, args.fraction)
            ranked = _rank_with_marks(index, qfm, words_of, marks, options, n_keep, args.where, not_words)
            # the rows marked yes are selected, those marked no are not, and the best unmarked rows fill the rest
            df = ranked[ranked["mark"] != "no"].head(n_keep)
            df.attrs = ranked.attrs
    finally:
        index.close()
    _write_frame(df, args.out)
    unmarked = df[df["mark"] == ""] if "mark" in df else df
    cut = f" (score >= {unmarked['score'].iloc[-1]:.4f})" if len(unmarked) else ""
    if "mark" in df:
        cut += f", with {int((df['mark'] == 'yes').sum())} marked yes"
    print(f"selected {len(df)} of {n_pool} samples{cut} for {len(queries)} queries -> {args.out}")
    if df.attrs.get("contrast"):
        print(df.attrs["contrast"], file=sys.stderr)
    return 0
