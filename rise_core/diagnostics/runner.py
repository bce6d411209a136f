"""Running several diagnostics at once, with results cached on disk as Parquet tables (a CSV copy of each beside it)
+ a JSON summary.

Layout of an output directory (by default `<index file>.diagnostics/`, next to the index)::

    manifest.json                  {"format", "diagnostics": {name: {key, created_at, seconds, summary}}}
    <name>/result.json             name, key, params, summary, table names, context, created_at, seconds
    <name>/<table>.parquet         one file per table, read back exactly (a pool text "NA" stays "NA")
    <name>/<table>.csv             the same table for a spreadsheet (`csv_out.spreadsheet_safe`; never read back)

Each diagnostic's cache key hashes what its result depends on: the model fingerprint, the RISE config, the score
options, the samples, the sketch and hidden mean in use, the index identity and the diagnostic's own parameters.
A second run with the same inputs loads the tables instead of recomputing; `force=True` recomputes. A result
directory is written aside and renamed into place, so a reader never sees a half-written one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import re
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from pyarrow import ArrowException

from ..config import RiseConfig, ScoreOptions
from ..csv_out import csv_text
from ..errors import ConfigError, InputDataError
from ..ingest import jsonable
from ..models import LoadedModel
from ..samples import Sample
from ..saved_config import SavedConfig, parse_list
from ..sketch import SketchSet
from ._common import DiagnosticResult, coerce_samples
from .energy import layer_energy
from .fidelity import sketch_fidelity
from .hidden import discriminativeness
from .ranking import rh_gh_examples, rh_gh_ranking
from .sparsity import DEFAULT_K_VALUES, DEFAULT_TAU_VALUES, sparsity

logger = logging.getLogger(__name__)

DIAGNOSTICS = ("energy", "discriminativeness", "sparsity", "rhgh", "fidelity")
CACHE_FORMAT = 2
"""2: tables read back from Parquet (1: from CSV, where a pool text such as "NA" or "null" came back as a missing
value and a numeric-looking one as a number)."""
TABLE_NAME = re.compile(r"\w+", re.ASCII)
"""what a cached table may be called: its file is <name>.parquet in the result's own folder."""
MANIFEST = "manifest.json"
RESULT = "result.json"

# A few short, varied texts so the diagnostics run with no data at hand.
DEFAULT_TEXTS = [
    "The cat is sleeping on the blanket while the rain taps on the window.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "To reset your password, open the settings page and choose 'Forgot password'.",
    "The central bank raised interest rates by a quarter point to curb inflation.",
    "Once upon a time, a dragon lived on the moon and collected lost socks.",
    "def add(a, b):\n    return a + b",
    "Take two tablets every six hours with water; do not exceed eight in a day.",
    "The match ended in a draw after a late penalty in the ninety-third minute.",
    "Paris is the capital of France, and Berlin is the capital of Germany.",
    "Mix the flour, sugar and butter, then bake for twenty minutes at 180 degrees.",
    "The mitochondria is the powerhouse of the cell.",
    "She opened the old letter and recognised her grandmother's handwriting.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Our quarterly revenue grew 12% year over year, driven by cloud services.",
    "The patient reported a mild fever and a persistent dry cough for three days.",
    "In 1969, Apollo 11 landed the first humans on the Moon.",
]


@dataclass(frozen=True)
class DiagnosticsOptions(SavedConfig):
    """Parameters of the diagnostics (the RISE configuration and score options are passed separately)."""

    LABEL = "diagnostics options"

    n_samples: int = field(default=32, metadata={"help": "Use at most this many samples (a seeded subset)."})
    sample_seed: int = field(default=0, metadata={"help": "Seed of the sample subset and the token draw."})
    n_tokens: int = field(default=1000, metadata={"help": "Discriminativeness: token hidden states drawn."})
    k_values: tuple[int, ...] = field(default=DEFAULT_K_VALUES, metadata={"help": "Sparsity: K of the TopK sweep."})
    tau_values: tuple[float, ...] = field(default=DEFAULT_TAU_VALUES,
                                          metadata={"help": "Sparsity: temperatures of the tau sweep."})
    tau_sweep_k: int = field(default=128, metadata={"help": "Sparsity: fixed K of the tau sweep."})
    n_seeds: int = field(default=5, metadata={"help": "Fidelity: number of sketch seeds."})
    fidelity_dims: tuple[tuple[int, int, int], ...] = field(
        default=(), metadata={"help": "Fidelity: sketch dims (K_r, K_h, K_g) to test; empty = the config's."})
    top_k: tuple[int, ...] = field(default=(1, 5, 10), metadata={"help": "Fidelity: k of the top-k overlaps."})
    batch_size: int = field(default=8, metadata={"help": "Samples per forward pass."})

    def __post_init__(self) -> None:
        for name in ("n_samples", "n_tokens", "tau_sweep_k", "n_seeds", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not self.k_values or min(self.k_values) < 1:
            raise ConfigError(f"k_values must be positive integers, got {self.k_values!r}")
        if not self.tau_values or min(self.tau_values) <= 0:
            raise ConfigError(f"tau_values must be > 0, got {self.tau_values!r}")
        if any(len(d) != 3 or min(d) < 1 for d in self.fidelity_dims):
            raise ConfigError(f"fidelity_dims must be (K_r, K_h, K_g) triples, got {self.fidelity_dims!r}")


def select_samples(samples: Sequence[Sample | str | dict], n: int, seed: int = 0) -> list[Sample]:
    """At most n samples: a seeded random subset in the original order (all of them when there are fewer)."""
    items = coerce_samples(samples)
    if len(items) <= n:
        return items
    gen = torch.Generator().manual_seed(seed)
    keep = sorted(torch.randperm(len(items), generator=gen)[:n].tolist())
    return [items[i] for i in keep]


def default_output_dir(index_path: str | Path) -> Path:
    """`<index>.diagnostics` beside the index file."""
    p = Path(index_path)
    return p.with_name(p.name + ".diagnostics")


def _digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def samples_digest(samples: Sequence[Sample]) -> str:
    return _digest([[s.text, s.prompt, s.completion, *([[t.to_dict() for t in s.messages]] if s.messages else [])]
                    for s in samples])


def tensor_digest(t: torch.Tensor | None) -> str | None:
    if t is None:
        return None
    return hashlib.sha256(t.detach().double().cpu().numpy().tobytes()).hexdigest()[:16]


def save_result(result: DiagnosticResult, directory: str | Path, key: str, context: dict[str, Any] | None = None,
                seconds: float | None = None) -> Path:
    """Write one result as `<directory>/<name>/` (atomically) and record it in the directory's manifest."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    target = root / result.name
    tmp = root / f".{result.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        for table, df in result.tables.items():
            df.to_parquet(tmp / f"{table}.parquet", index=False)
            (tmp / f"{table}.csv").write_text(csv_text(df, for_spreadsheet=True), encoding="utf-8")
        created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        record = {"name": result.name, "key": key, "format": CACHE_FORMAT, "params": result.params,
                  "summary": result.summary, "tables": list(result.tables), "context": context or {},
                  "created_at": created, "seconds": seconds}
        (tmp / RESULT).write_text(json.dumps(jsonable(record), indent=2, default=str))
        if target.exists():
            old = root / f".{result.name}.old-{uuid.uuid4().hex[:8]}"
            target.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    manifest_path = root / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    except (OSError, json.JSONDecodeError):
        manifest = {}
    manifest["format"] = CACHE_FORMAT  # the format of the results written last (each result.json names its own)
    manifest.setdefault("diagnostics", {})[result.name] = jsonable(
        {"key": key, "created_at": record["created_at"], "seconds": seconds, "summary": result.summary})
    tmp_manifest = root / f".{MANIFEST}.tmp-{uuid.uuid4().hex[:8]}"
    tmp_manifest.write_text(json.dumps(manifest, indent=2, default=str))
    tmp_manifest.replace(manifest_path)
    return target


def load_result(directory: str | Path, name: str, key: str | None = None) -> DiagnosticResult | None:
    """A stored result, or None if absent, unreadable, of another format or (when given) another key."""
    folder = Path(directory) / name
    try:
        record = json.loads((folder / RESULT).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if record.get("format") != CACHE_FORMAT or (key is not None and record.get("key") != key):
        return None
    names = record.get("tables", [])
    if not isinstance(names, list) or not all(isinstance(t, str) and TABLE_NAME.fullmatch(t) for t in names):
        return None  # a table is a file of this folder, never a path elsewhere (a result.json edited by hand)
    try:
        tables = {t: pd.read_parquet(folder / f"{t}.parquet") for t in names}
    except (OSError, ValueError, ArrowException):
        return None
    return DiagnosticResult(name, tables, record.get("summary") or {}, record.get("params") or {})


def load_results(directory: str | Path) -> dict[str, DiagnosticResult]:
    """Every stored result in an output directory (for a page that shows cached diagnostics)."""
    out = {}
    for name in DIAGNOSTICS:
        res = load_result(directory, name)
        if res is not None:
            out[name] = res
    return out


def load_provenance(directory: str | Path) -> dict[str, dict[str, Any]]:
    """For each stored result in an output directory: created_at, seconds, n_samples, model_id and index (the
    `RiseIndex.identity()` it was computed against, or None); unreadable entries are left out."""
    out: dict[str, dict[str, Any]] = {}
    for name in DIAGNOSTICS:
        try:
            record = json.loads((Path(directory) / name / RESULT).read_text())
        except (OSError, ValueError):
            continue
        context = record.get("context") or {}
        out[name] = {"created_at": record.get("created_at"), "seconds": record.get("seconds"),
                     "n_samples": context.get("n_samples"), "model_id": context.get("model_id"),
                     "index": context.get("index")}
    return out


def parse_which(which: str | Sequence[str] | None) -> list[str]:
    """Validate diagnostic names ('all' or None = every one), keeping the canonical order."""
    if which is None:
        return list(DIAGNOSTICS)
    names = list(parse_list(which)) if isinstance(which, str) else [w.strip() for w in which if w.strip()]
    if not names or "all" in names:
        return list(DIAGNOSTICS)
    unknown = sorted(set(names) - set(DIAGNOSTICS))
    if unknown:
        raise ConfigError(f"unknown diagnostics {unknown}; choose from {list(DIAGNOSTICS)} or 'all'")
    return [d for d in DIAGNOSTICS if d in names]


def run_diagnostics(
    lm: LoadedModel,
    samples: Sequence[Sample | str | dict] | None = None,
    config: RiseConfig | None = None,
    score_options: ScoreOptions | None = None,
    options: DiagnosticsOptions | None = None,
    which: str | Sequence[str] | None = None,
    out_dir: str | Path | None = None,
    force: bool = False,
    sketches: SketchSet | None = None,
    hidden_mean: torch.Tensor | None = None,
    index_identity: dict[str, Any] | None = None,
    query: Sample | str | dict | None = None,
    candidates: Sequence[Sample | str | dict] | None = None,
    progress: Callable[[str, str], None] | None = None,
) -> dict[str, DiagnosticResult]:
    """Run (or load from `out_dir`) the selected diagnostics; returns {name: DiagnosticResult} in canonical order.

    `samples` default to a built-in set of short texts. `sketches` / `hidden_mean` are an index's (used by rhgh and
    fidelity). The rhgh result holds the built-in cat/blanket set as table `examples` and, when `query` and
    `candidates` are given, their ranking as table `custom`. `progress(name, status)` is called with status
    "cached", "running" or "done".
    """
    config = config or RiseConfig()
    score_options = score_options or ScoreOptions()
    options = options or DiagnosticsOptions()
    names = parse_which(which)
    chosen = select_samples(samples if samples is not None else DEFAULT_TEXTS, options.n_samples, options.sample_seed)
    if candidates is not None and query is None:
        raise InputDataError("candidates were given without a query")
    context = {
        "model_id": lm.model_id, "model": lm.fingerprint(), "config": config.to_dict(),
        "score_options": score_options.to_dict(), "samples": samples_digest(chosen),
        "n_samples": len(chosen), "sketch": sketches.digest() if sketches is not None else None,
        "hidden_mean": tensor_digest(hidden_mean), "index": index_identity,
    }
    custom = None
    if query is not None:
        if not candidates:
            raise InputDataError("a query was given without candidates")
        custom = coerce_samples([query, *candidates])
    opts = options.to_dict()
    own_params = {
        "energy": {},
        "discriminativeness": {"n_tokens": opts["n_tokens"], "sample_seed": opts["sample_seed"]},
        "sparsity": {k: opts[k] for k in ("k_values", "tau_values", "tau_sweep_k")},
        "rhgh": {"custom": samples_digest(custom) if custom else None},
        "fidelity": {k: opts[k] for k in ("n_seeds", "fidelity_dims", "top_k")},
    }
    results: dict[str, DiagnosticResult] = {}
    for name in names:
        key = _digest({"name": name, "format": CACHE_FORMAT, "context": context, "params": own_params[name]})
        if out_dir is not None and not force:
            cached = load_result(out_dir, name, key)
            if cached is not None:
                logger.info("%s: loaded from %s", name, out_dir)
                if progress is not None:
                    progress(name, "cached")
                results[name] = cached
                continue
        if progress is not None:
            progress(name, "running")
        start = time.perf_counter()
        result = _run_one(name, lm, chosen, config, score_options, options, sketches, hidden_mean, custom)
        seconds = round(time.perf_counter() - start, 2)
        result.params = {**result.params, "seconds": seconds}
        if out_dir is not None:
            save_result(result, out_dir, key, context, seconds)
        if progress is not None:
            progress(name, "done")
        results[name] = result
    return results


def _run_one(name: str, lm: LoadedModel, samples: list[Sample], config: RiseConfig, score_options: ScoreOptions,
             options: DiagnosticsOptions, sketches: SketchSet | None, hidden_mean: torch.Tensor | None,
             custom: list[Sample] | None) -> DiagnosticResult:
    if name == "energy":
        return layer_energy(lm, samples, config)
    if name == "discriminativeness":
        return discriminativeness(lm, samples, config, n_tokens=options.n_tokens, seed=options.sample_seed,
                                  batch_size=options.batch_size)
    if name == "sparsity":
        return sparsity(lm, samples, config, k_values=options.k_values, tau_values=options.tau_values,
                        tau_sweep_k=options.tau_sweep_k, batch_size=options.batch_size)
    if name == "rhgh":
        base = rh_gh_examples(lm, config, score_options, sketches=sketches, hidden_mean=hidden_mean)
        tables = {"examples": base["ranking"]}
        summary = dict(base.summary)
        params = dict(base.params)
        if custom is not None:
            mine = rh_gh_ranking(lm, custom[0], custom[1:], config, score_options, sketches=sketches,
                                 hidden_mean=hidden_mean)
            tables["custom"] = mine["ranking"]
            summary.update({f"custom_{k}": v for k, v in mine.summary.items()})
            params["custom_query"] = mine.params["query"]
        return DiagnosticResult("rhgh", tables, summary, params)
    if name == "fidelity":
        return sketch_fidelity(lm, samples, config, score_options, n_seeds=options.n_seeds,
                               dims=list(options.fidelity_dims) or None, top_k=options.top_k, sketches=sketches,
                               hidden_mean=hidden_mean, batch_size=options.batch_size)
    raise ConfigError(f"unknown diagnostic {name!r}; choose from {list(DIAGNOSTICS)}")
