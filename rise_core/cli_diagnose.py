"""`rise diagnose`: the paper's diagnostics (layer energy, discriminativeness, sparse support, RH vs GH, sketch
fidelity) written as CSV tables + JSON summaries, cached per model / config / samples / index.

Examples::

    rise diagnose --samples pool.jsonl --which energy,sparsity
    rise diagnose --index pool.rise.duckdb            # samples, config and sketches from the index
    rise diagnose --query "The cat is sleeping." --candidates cands.jsonl --which rhgh
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from .config import RiseConfig, ScoreOptions, preset
from .errors import ConfigError, InputDataError, RiseError
from .samples import Sample


def read_samples(path: str | Path) -> list[Sample]:
    """Samples from a JSONL file (objects with "text" or "prompt" + "completion", or JSON strings) or, for any other
    extension, a text file with one sample per non-empty line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputDataError(f"cannot read samples from {p}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputDataError(f"{p} is not UTF-8 text: {exc}") from exc
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputDataError(f"{p}:{n}: not a JSON object ({exc.msg})") from None
        else:
            item = line
        try:
            out.append(Sample.coerce(item))
        except RiseError as exc:
            raise InputDataError(f"{p}:{n}: {exc}") from None
    if not out:
        raise InputDataError(f"{p} holds no samples")
    return out


def parse_overrides(pairs: list[str] | None) -> dict[str, Any]:
    """KEY=VALUE strings -> typed RiseConfig field values (typed after each field's default)."""
    defaults = {f.name: f.default for f in dataclasses.fields(RiseConfig)}
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in defaults:
            raise ConfigError(f"--set expects KEY=VALUE with KEY one of {sorted(defaults)}, got {pair!r}")
        kind = type(defaults[key])
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ConfigError(f"--set {key} expects true or false, got {raw!r}")
            out[key] = raw.lower() in ("true", "1", "yes", "on")
        else:
            try:
                out[key] = kind(raw)
            except ValueError:
                raise ConfigError(f"--set {key} expects a {kind.__name__}, got {raw!r}") from None
    return out


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{name} expects comma-separated integers, got {text!r}") from None


def _floats(text: str, name: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"{name} expects comma-separated numbers, got {text!r}") from None


def _dims_list(text: str | None) -> tuple[tuple[int, int, int], ...]:
    if not text:
        return ()
    dims = []
    for part in text.split(";"):
        d = _ints(part, "--fidelity-dims")
        if len(d) != 3:
            raise ConfigError(f"--fidelity-dims expects K_r,K_h,K_g triples separated by ';', got {text!r}")
        dims.append(d)
    return tuple(dims)


def _samples_from_index_frame(df: Any) -> list[Sample]:
    out = []
    for row in df.to_dict("records"):
        item = {k: row[k] for k in ("text", "prompt", "completion", "id")
                if k in row and isinstance(row[k], str) and row[k] != ""}
        if "text" in item and ("prompt" in item or "completion" in item):
            item.pop("text")
        try:
            out.append(Sample.coerce(item))
        except RiseError:
            continue
    return out


def _open_index(path: str, lm: Any) -> dict[str, Any]:
    """Config, sketches, hidden mean, identity and samples of an index (checked against the model)."""
    try:
        from .index_store import RiseIndex
    except ImportError as exc:
        raise RiseError(f"--index needs rise_core.index_store, which cannot be imported here ({exc})") from exc
    index = RiseIndex.open(path, read_only=True)
    try:
        extractor = index.extractor(lm)  # raises IndexMismatchError for another model
        m = index.manifest
        identity = {"path": str(Path(path).resolve()), "model_fingerprint": m.model_fingerprint,
                    "config": m.config.fingerprint(), "sketch_digest": m.sketch_digest, "n_samples": m.n_samples,
                    "updated_at": m.updated_at, "index_uuid": getattr(m, "index_uuid", "")}
        samples = _samples_from_index_frame(index.samples())
        return {"config": m.config, "sketches": extractor.sketches, "hidden_mean": extractor.hidden_mean,
                "identity": identity, "samples": samples}
    finally:
        index.close()


def register(sub: argparse._SubParsersAction) -> None:
    from .diagnostics import DIAGNOSTICS, DiagnosticsOptions

    d = DiagnosticsOptions()
    p = sub.add_parser("diagnose", help="layer energy, discriminativeness, sparse support, RH vs GH, sketch fidelity",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="hub id or local path (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--samples", default=None,
                   help="JSONL with 'text' or 'prompt'+'completion' per line, or a .txt with one text per line "
                        "(default: the index's samples, else a built-in set of short texts)")
    p.add_argument("--index", default=None, help="a RISE index: its config, sketches and hidden mean are used")
    p.add_argument("--out", default=None, help="output directory (default: <index>.diagnostics, else "
                                               "./rise-diagnostics)")
    p.add_argument("--which", default="all", help=f"comma-separated subset of {','.join(DIAGNOSTICS)} (default all)")
    p.add_argument("--force", action="store_true", help="recompute even when cached results match")
    p.add_argument("--n-samples", type=int, default=d.n_samples, help="use at most this many samples (seeded subset)")
    p.add_argument("--sample-seed", type=int, default=d.sample_seed)
    p.add_argument("--preset", default="default", help="RISE config preset (ignored with --index)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a RISE config field (repeatable)")
    p.add_argument("--lambda-rh", type=float, default=ScoreOptions.lambda_rh)
    p.add_argument("--lambda-gh", type=float, default=ScoreOptions.lambda_gh)
    p.add_argument("--sample-norm", default=ScoreOptions.sample_norm, choices=["channel", "joint", "none"])
    p.add_argument("--n-tokens", type=int, default=d.n_tokens, help="discriminativeness: tokens drawn")
    p.add_argument("--k-values", default=",".join(map(str, d.k_values)), help="sparsity: K of the TopK sweep")
    p.add_argument("--tau-values", default=",".join(map(str, d.tau_values)), help="sparsity: tau of the tau sweep")
    p.add_argument("--tau-sweep-k", type=int, default=d.tau_sweep_k, help="sparsity: fixed K of the tau sweep")
    p.add_argument("--seeds", type=int, default=d.n_seeds, help="fidelity: number of sketch seeds")
    p.add_argument("--fidelity-dims", default=None, help="fidelity: 'K_r,K_h,K_g;...' (default: the config's)")
    p.add_argument("--top-k", default=",".join(map(str, d.top_k)), help="fidelity: k of the top-k overlaps")
    p.add_argument("--query", default=None, help="rhgh: a query text to rank --candidates for")
    p.add_argument("--candidates", default=None, help="rhgh: candidates file (JSONL or one text per line)")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--json", action="store_true", help="print the summaries as one JSON object")
    p.set_defaults(func=_cmd_diagnose)


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
    from .diagnostics import DiagnosticsOptions, default_output_dir, parse_which, run_diagnostics
    from .models import load_model

    which = parse_which(args.which)
    options = DiagnosticsOptions(
        n_samples=args.n_samples, sample_seed=args.sample_seed, n_tokens=args.n_tokens,
        k_values=_ints(args.k_values, "--k-values"), tau_values=_floats(args.tau_values, "--tau-values"),
        tau_sweep_k=args.tau_sweep_k, n_seeds=args.seeds, fidelity_dims=_dims_list(args.fidelity_dims),
        top_k=_ints(args.top_k, "--top-k"), batch_size=args.batch_size)
    score_options = ScoreOptions(lambda_rh=args.lambda_rh, lambda_gh=args.lambda_gh, sample_norm=args.sample_norm)
    if (args.query is None) != (args.candidates is None):
        raise InputDataError("--query and --candidates go together")
    lm = load_model(args.model, device=args.device, dtype=args.dtype)
    samples = read_samples(args.samples) if args.samples else None
    sketches = hidden_mean = identity = None
    if args.index:
        if args.set:
            raise ConfigError("--set cannot change the config of an existing index; drop --set or --index")
        ctx = _open_index(args.index, lm)
        config, sketches, hidden_mean, identity = ctx["config"], ctx["sketches"], ctx["hidden_mean"], ctx["identity"]
        if samples is None:
            samples = ctx["samples"] or None
    else:
        config = preset(args.preset).replace(**parse_overrides(args.set))
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
