"""`rise diagnose`: the paper's diagnostics (layer energy, discriminativeness, sparse support, RH vs GH, sketch
fidelity) written as CSV tables + JSON summaries, cached per model / config / samples / index.

Examples::

    rise diagnose --samples pool.jsonl --which energy,sparsity
    rise diagnose --index pool.rise.duckdb            # samples, config and sketches from the index
    rise diagnose --query "The cat is sleeping." --candidates cands.jsonl --which rhgh
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputDataError
from ..saved_config import parse_list
from .options import (
    add_config_options,
    add_model_options,
    add_score_options,
    config_from_args,
    config_overrides,
    load_model_from_args,
    score_options_from_args,
)


def _dims_list(text: str | None) -> tuple[tuple[int, int, int], ...]:
    if not text:
        return ()
    dims = []
    for part in text.split(";"):
        d = parse_list(part, int, "--fidelity-dims")
        if len(d) != 3:
            raise ConfigError(f"--fidelity-dims expects K_r,K_h,K_g triples separated by ';', got {text!r}")
        dims.append(d)
    return tuple(dims)


def _open_index(path: str, lm: Any) -> dict[str, Any]:
    """Config, sketches, hidden mean, identity and samples of an index (checked against the model)."""
    from ..store import RiseIndex

    with RiseIndex.open(path, read_only=True) as index:
        extractor = index.extractor(lm)  # raises IndexMismatchError for another model
        return {"config": index.config, "sketches": extractor.sketches, "hidden_mean": extractor.hidden_mean,
                "identity": index.identity(), "samples": index.sample_list()}


def register(sub: argparse._SubParsersAction) -> None:
    from ..diagnostics import DIAGNOSTICS, DiagnosticsOptions

    d = DiagnosticsOptions()
    p = sub.add_parser("diagnose", help="layer energy, discriminativeness, sparse support, RH vs GH, sketch fidelity",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--samples", default=None,
                   help="JSONL with 'text' or 'prompt'+'completion' per line, or a .txt with one text per line "
                        "(default: the index's samples, else a built-in set of short texts)")
    p.add_argument("--index", default=None, help="a RISE index: its config, sketches and hidden mean are used")
    p.add_argument("--out", default=None, help="output directory (default: <index>.diagnostics, else "
                                               "./rise-diagnostics)")
    p.add_argument("--which", default="all", help=f"comma-separated subset of {','.join(DIAGNOSTICS)} (default all)")
    p.add_argument("--force", action="store_true", help="recompute even when cached results match")
    helps = DiagnosticsOptions.field_help()
    p.add_argument("--n-samples", type=int, default=d.n_samples, help=helps["n_samples"])
    p.add_argument("--sample-seed", type=int, default=d.sample_seed, help=helps["sample_seed"])
    p.add_argument("--n-tokens", type=int, default=d.n_tokens, help=helps["n_tokens"])
    p.add_argument("--k-values", default=",".join(map(str, d.k_values)), help=helps["k_values"])
    p.add_argument("--tau-values", default=",".join(map(str, d.tau_values)), help=helps["tau_values"])
    p.add_argument("--tau-sweep-k", type=int, default=d.tau_sweep_k, help=helps["tau_sweep_k"])
    p.add_argument("--seeds", type=int, default=d.n_seeds, help=helps["n_seeds"])
    p.add_argument("--fidelity-dims", default=None, help="fidelity: 'K_r,K_h,K_g;...' (default: the config's)")
    p.add_argument("--top-k", default=",".join(map(str, d.top_k)), help="fidelity: k of the top-k overlaps")
    p.add_argument("--query", default=None, help="rhgh: a query text to rank --candidates for")
    p.add_argument("--candidates", default=None, help="rhgh: candidates file (JSONL or one text per line)")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--json", action="store_true", help="print the summaries as one JSON object")
    add_model_options(p)
    add_config_options(p, "RISE config (ignored with --index, which fixes it)")
    add_score_options(p)
    p.set_defaults(func=_cmd_diagnose, _parser_error=p.error)


def _headline(results: dict[str, Any]) -> list[str]:
    lines = []
    if "energy" in results:
        s = results["energy"].summary
        lines.append(f"energy: head share {s['head_share']:.3f}, head/avg-block ratio {s['head_to_avg_ratio']:.2f} "
                     f"({s['n_blocks']} blocks{', tied head split' if s['tied'] else ''})")
    if "discriminativeness" in results:
        s = results["discriminativeness"].summary
        lines.append(f"discriminativeness: final {s['final_var']:.4g}, min {s['min_var']:.4g} at layer "
                     f"{s['min_layer']}/{s['n_layers']}, U-shape {s['u_shape']}")
    if "sparsity" in results:
        s = results["sparsity"].summary
        lines.append(f"sparsity: adaptive |S| mean {s['adaptive_support_size']:.1f}, energy kept "
                     f"{s['adaptive_e_full']:.4f}, GH cos {s['adaptive_gh_cos']:.4f}; K={int(s['k128_k'])}: mass "
                     f"{s['k128_mass']:.3f}, energy {s['k128_e_full']:.4f}, tail {s['k128_e_tail']:.3f}, "
                     f"GH cos {s['k128_gh_cos']:.4f}")
    if "rhgh" in results:
        df = results["rhgh"]["examples"]
        order = ", ".join(f"{r.rank_rh}/{r.rank_gh}/{r.rank_rh_gh}" for r in df.itertuples())
        lines.append(f"rhgh (ranks RH/GH/RH+GH by RH order): {order}")
    if "fidelity" in results:
        s = results["fidelity"].summary
        lines.append(f"fidelity ({s['dims']}, {s['n_seeds']} seeds, {s['n_pairs']} pairs): pearson RH "
                     f"{s['rh_pearson']:.3f}, GH {s['gh_pearson']:.3f}, RH+GH {s['rh_gh_pearson']:.3f}")
    return lines


def _cmd_diagnose(args: argparse.Namespace) -> int:
    from ..diagnostics import DiagnosticsOptions, default_output_dir, parse_which, run_diagnostics
    from ..ingest import read_samples

    which = parse_which(args.which)
    options = DiagnosticsOptions(
        n_samples=args.n_samples, sample_seed=args.sample_seed, n_tokens=args.n_tokens,
        k_values=parse_list(args.k_values, int, "--k-values"),
        tau_values=parse_list(args.tau_values, float, "--tau-values"),
        tau_sweep_k=args.tau_sweep_k, n_seeds=args.seeds, fidelity_dims=_dims_list(args.fidelity_dims),
        top_k=parse_list(args.top_k, int, "--top-k"), batch_size=args.batch_size)
    score_options = score_options_from_args(args)
    if (args.query is None) != (args.candidates is None):
        raise InputDataError("--query and --candidates go together")
    lm = load_model_from_args(args)
    samples = read_samples(args.samples) if args.samples else None
    sketches = hidden_mean = identity = None
    if args.index:
        if args.preset or config_overrides(args):
            raise ConfigError("an index fixes the RISE config: drop --preset and the config flags, or --index")
        ctx = _open_index(args.index, lm)
        config, sketches, hidden_mean, identity = ctx["config"], ctx["sketches"], ctx["hidden_mean"], ctx["identity"]
        if samples is None:
            samples = ctx["samples"] or None
    else:
        config = config_from_args(args)
    out_dir = Path(args.out) if args.out else (default_output_dir(args.index) if args.index
                                               else Path("rise-diagnostics"))
    candidates = read_samples(args.candidates) if args.candidates else None

    def progress(name: str, status: str) -> None:
        if not args.json:
            print(f"  {name}: {status}", file=sys.stderr, flush=True)

    results = run_diagnostics(lm, samples, config, score_options, options, which, out_dir, args.force,
                              sketches=sketches, hidden_mean=hidden_mean, index_identity=identity,
                              query=args.query, candidates=candidates, progress=progress)
    if args.json:
        print(json.dumps({"out_dir": str(out_dir), **{k: r.summary for k, r in results.items()}}, default=str))
    else:
        for line in _headline(results):
            print(line)
        print(f"tables written to {out_dir}/")
    return 0
