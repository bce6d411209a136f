"""`rise query --compare`: the query ranked by RISE and the baselines side by side, as the Compare page shows it --
each method's agreement with the first, its top k and, on a pool with binary labels, precision@k and AP.

The methods are the registry's (`rise_core.methods`), scored through `methods.compare_methods`: BM25 and MiniLM are
fitted over the pool here (the command line has none of the app's limits), Grad-Sketch (and hidden cosine on an
index without HS) runs the model over the whole pool first, as long as building the index took.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

from ..csv_out import write_csv
from ..errors import ConfigError
from ..units import one_line
from .output import hit_text, records

DEFAULT_COMPARE = "RISE,RISE fixed weights,Hidden cosine,MiniLM embedding,BM25"


def add_compare_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compare", nargs="?", const=DEFAULT_COMPARE, default=None, metavar="METHODS",
                        help="rank the query with RISE and the baselines side by side (the Compare page): each "
                        "method's agreement with the first, its top k and, on a pool with binary labels, precision@k "
                        f"and AP; METHODS is a comma list (default: {DEFAULT_COMPARE}; Grad-Sketch runs the model "
                        "over the whole pool first)")


def compare_methods_of(args: argparse.Namespace) -> list[str]:
    """The methods `--compare` names, checked against the registry (a usage error names the unknown ones)."""
    from ..methods import resolve
    from ..saved_config import parse_list

    names = list(parse_list(args.compare, what="--compare"))
    if not names:
        args._parser_error(f"--compare: name at least one method, or give --compare alone for {DEFAULT_COMPARE}")
    try:
        return [m.name for m in resolve(names)]
    except ConfigError as exc:
        args._parser_error(f"--compare: {exc}")
        raise  # not reached: the parser exits


def run_compare(args: argparse.Namespace, index: Any, lm: Any, queries: list[Any], qfm: Any, options: Any,
                versus: Any, methods: list[str]) -> int:
    """Score `queries` (features `qfm`, a contrast when `versus` is given) with `methods` and print the comparison in
    `args.format`."""
    from ..compare import fit_bm25, fit_embeddings, forward_vectors
    from ..methods import compare_methods, needs_forward_pass
    from ..metrics import binary_labels, label_table

    forward = None
    if needs_forward_pass(methods, index):
        print(f"running {lm.model_id} over the {len(index):,} pool samples (Grad-Sketch, hidden states)",
              file=sys.stderr, flush=True)
        forward = forward_vectors(lm, index.sample_list(), index.config)
    results = compare_methods(index, queries, qfm, options, bm25=lambda: fit_bm25(index),
                              embeddings=lambda: fit_embeddings(index), forward=forward, lm=lm, methods=methods,
                              versus=None if versus is None else [versus])
    ready = {name: r for name, r in results.items() if r.available}
    missing = {name: r.missing for name, r in results.items() if not r.available}
    for name, why in missing.items():
        print(f"{name}: not run ({why})", file=sys.stderr)
    if not ready:
        raise ConfigError("none of the methods could run: " + "; ".join(f"{n}: {w}" for n, w in missing.items()))
    reference = next(iter(ready))
    agreement = _agreement(ready, reference, args.k)
    tops = {name: r.ranking(args.k).to_frame(index) for name, r in ready.items()}
    labels = binary_labels(index.column("label"))
    scored = (label_table({name: r.mean() for name, r in ready.items()}, labels, args.k)
              if labels is not None and labels.any() else None)
    if args.format == "json":
        print(json.dumps({"reference": reference, "agreement": records(agreement.reset_index()),
                          "top": {name: records(_top_columns(df)) for name, df in tops.items()},
                          "labels": None if scored is None else records(scored.reset_index()),
                          "missing": missing}, ensure_ascii=False, indent=1))
    elif args.format == "csv":
        long = pd.concat([_top_columns(df).assign(method=name) for name, df in tops.items()], ignore_index=True)
        write_csv(long[["method", *[c for c in long.columns if c != "method"]]], sys.stdout)
    else:
        _print_compare(agreement, reference, tops, scored, args.k, args.width)
    if versus is not None:
        print("contrast: every method ranks by its score for the query minus its score for the other answer",
              file=sys.stderr)
    return 0


def _agreement(ready: dict[str, Any], reference: str, k: int) -> pd.DataFrame:
    from ..agreement import agreement_table

    if len(ready) < 2:
        return pd.DataFrame(columns=[f"top{k}_overlap", "spearman", "kendall"]).rename_axis("method")
    return agreement_table({name: r.scores for name, r in ready.items()}, reference, k)


def _top_columns(df: pd.DataFrame) -> pd.DataFrame:
    """A method's top k as rank, id, score, label (when the pool has labels) and the sample's text fields."""
    keep = ["rank", "id", "score", *(c for c in ("label", "text", "prompt", "completion") if c in df.columns)]
    return df[keep]


def _print_compare(agreement: pd.DataFrame, reference: str, tops: dict[str, pd.DataFrame],
                   scored: pd.DataFrame | None, k: int, width: int) -> None:
    if len(agreement):
        print(f"Agreement with {reference} (the share of its top {k} each method also ranks in its top {k}; rank "
              "correlations over the whole pool):")
        print(agreement.round(3).to_string())
        print()
    for name, df in tops.items():
        print(f"{name}: top {k}")
        has_label = "label" in df.columns and df["label"].notna().any()
        print(f"{'rank':>5}  {'id':<24}  {'score':>10}" + (f"  {'label':>8}" if has_label else "") + "  text")
        for _, row in df.iterrows():
            label = f"  {one_line(row['label'], 8):>8}" if has_label else ""
            print(f"{int(row['rank']):>5}  {one_line(row['id'], 24):<24}  {row['score']:>10.4f}{label}  "
                  f"{one_line(hit_text(row), width)}")
        print()
    if scored is not None:
        print("Against the pool's labels:")
        print(scored.round(4).to_string())
