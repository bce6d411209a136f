"""Option builders shared by every `rise` command, so each option means the same everywhere.

Choices come from the config types (`RiseConfig` field types, `SampleNorm`, `PRESETS`), never from lists written
again here. A RISE config is changed one way on every command: `--preset NAME` then one flag per field
(`--k-r 64 --no-center-hidden ...`); scoring the same way: `--preset NAME` (on `rise query` / `rise select` its scoring
alone: the index fixes the config; without it, the preset the index was built for, said on stderr) then
`--lambda-rh/--lambda-gh/--lambda-hs/--sample-norm`, each defaulting to the preset's. A weight on a channel the index
does not store is dropped with a note on stderr (`ScoreOptions.for_channels`).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import typing
from pathlib import Path
from typing import Any

from ..adaptive import resolve
from ..config import (
    CHANNELS,
    PRESET_SCORING,
    PRESET_TABLE,
    PRESETS,
    RiseConfig,
    ScoreOptions,
    field_choices,
    field_help,
    preset,
    preset_descriptions,
    preset_scoring,
)
from ..ingest import FIELD_NAMES, FORMATS
from ..retrospective import TRIGGER, check_template, trigger_template


def add_model_options(parser: argparse.ArgumentParser, default_help: str = "default: the embedded "
                      "SmolLM2-135M-Instruct") -> None:
    group = parser.add_argument_group("model")
    group.add_argument("--model", default=None, help=f"hub id or local checkpoint directory ({default_help})")
    group.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 or auto (default: auto, cuda if present)")
    group.add_argument("--dtype", default="float32", help="float32, bfloat16, float16 or float64 (default: float32)")
    group.add_argument("--trust-remote-code", action="store_true", help="allow the model's own code (off by default)")
    group.add_argument("--adapter", default=None, metavar="DIR",
                       help="a LoRA adapter directory (e.g. from `rise finetune`) merged into the model; --model DIR "
                       "of an adapter alone loads its base from the adapter's manifest")


def model_path(name: str | None) -> str | None:
    """A local directory as an absolute path (so an index records where it was), anything else unchanged (a name the
    file system cannot look up, e.g. longer than a path may be, too: `load_model` says what is wrong with it)."""
    try:
        if name and Path(name).expanduser().is_dir():
            return str(Path(name).expanduser().resolve())
    except OSError:
        pass
    return name


def load_model_from_args(args: argparse.Namespace, name: str | None = None) -> Any:
    """The model named by `name` (default `--model`) with the device, dtype and trust flags of `args`."""
    from ..models import load_model

    adapter = getattr(args, "adapter", None)
    return load_model(model_path(name if name is not None else args.model), device=args.device, dtype=args.dtype,
                      trust_remote_code=args.trust_remote_code, adapter=model_path(adapter))


def add_config_options(parser: argparse.ArgumentParser, title: str = "RISE config") -> None:
    """`--preset` and one flag per `RiseConfig` field (typed and with choices from the field's type)."""
    group = parser.add_argument_group(title)
    group.add_argument("--preset", choices=sorted(PRESETS), default=None,
                       help="named configuration and scoring to start from (default: 'default'). A new index "
                       "remembers it: `rise query` / `rise select` score with it unless given another --preset. "
                       f"{preset_descriptions()}")
    helps = field_help(RiseConfig)
    hints = typing.get_type_hints(RiseConfig)
    for f in dataclasses.fields(RiseConfig):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        text = f"{helps[f.name]} (default {f.default!r})"
        if kind is bool:
            group.add_argument(flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=text)
        elif typing.get_origin(kind) is typing.Literal:
            group.add_argument(flag, dest=f.name, choices=typing.get_args(kind), default=None, help=text)
        else:
            group.add_argument(flag, dest=f.name, type=kind, default=None, metavar=f.name.upper(), help=text)


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The config fields given on the command line."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(RiseConfig)
            if getattr(args, f.name, None) is not None}


def config_from_args(args: argparse.Namespace, base: RiseConfig | None = None) -> RiseConfig:
    """`--preset` (else `base`, else the default preset) with the field flags applied."""
    start = preset(args.preset) if args.preset else (base or preset("default"))
    return start.replace(**config_overrides(args))


def scoring_preset_help() -> str:
    """One line per scoring preset: its weights and normalisation (for --preset on query and select)."""
    return "; ".join(f"{name}: {p.description} (lambda {p.scoring.lambda_rh:g}/{p.scoring.lambda_gh:g}/"
                     f"{p.scoring.lambda_hs:g} RH/GH/HS, {p.scoring.sample_norm}, {p.scoring.weighting})"
                     for name, p in PRESET_TABLE.items())


def add_score_options(parser: argparse.ArgumentParser, preset_flag: bool = False) -> None:
    """One flag per `ScoreOptions` field (--lambda-rh, --lambda-gh, --lambda-hs, --sample-norm); with `preset_flag`,
    also `--preset` naming the scoring to start from (for commands on an index, whose config is fixed)."""
    group = parser.add_argument_group("scoring (applied at query time; default: the preset's)")
    if preset_flag:
        group.add_argument("--preset", choices=sorted(PRESET_SCORING), default=None,
                           help="named scoring to start from (default: the preset the index was built for, else "
                           "'default'); the flags below override it. "
                           f"{scoring_preset_help()}")
    helps, choices = field_help(ScoreOptions), field_choices(ScoreOptions)
    defaults = ScoreOptions()
    for f in dataclasses.fields(ScoreOptions):
        flag, text = "--" + f.name.replace("_", "-"), f"{helps[f.name]} (default {getattr(defaults, f.name)!r})"
        if f.name in choices:
            group.add_argument(flag, dest=f.name, choices=choices[f.name], default=None, help=text)
        else:
            group.add_argument(flag, dest=f.name, type=float, default=None, metavar=f.name.upper(), help=text)


def score_options_from_args(args: argparse.Namespace, config: RiseConfig | None = None,
                            index_preset: str | None = None) -> ScoreOptions:
    """The preset's scoring (`--preset`, when the command has it; else `index_preset`, the preset the index was built
    for, said in one line on stderr; else 'default') with the scoring flags applied; with the `config` of an index, as
    applied to it: a weight on a channel the index does not store is dropped with a note on stderr, and weights on
    missing channels alone are an error listing the ones it has. All of it is `adaptive.resolve`'s, as on the library
    and page paths (the per-query choice comes later, with the query's loss)."""
    given = {f.name: getattr(args, f.name, None) for f in dataclasses.fields(ScoreOptions)}
    name = getattr(args, "preset", None)
    resolved = resolve(preset_scoring(name) if name else None, CHANNELS if config is None else config.channels,
                       None, lambda: math.nan, index_preset, "--preset", overrides=given)
    if resolved.preset_note:
        print(resolved.preset_note, file=sys.stderr)
    for note in resolved.notes:
        print(f"note: {note}", file=sys.stderr)
    return resolved.applied.options


def add_field_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """Column-name flags of a pool (or, with prefix 'query-', a query) file, and its format."""
    group = parser.add_argument_group(f"{prefix or 'pool '}file columns (default: guessed from the column names)")
    dest = prefix.replace("-", "_")
    for name, what in (("text", "plain text"), ("prompt", "prompt / instruction"),
                       ("completion", "completion / response"),
                       ("messages", "conversation: a list of {role, content} turns (JSON text in a CSV)"),
                       ("input", "instruction's input, appended to the prompt after a blank line (Alpaca)"),
                       ("id", "sample id"), ("label", "label")):
        group.add_argument(f"--{prefix}{name}-field", dest=f"{dest}{name}_field", default=None, metavar="COLUMN",
                           help=f"column holding the {what}")
    group.add_argument(f"--{prefix}format", dest=f"{dest}fmt", choices=FORMATS, default=None,
                       help="file format (default: from the extension)")


def fields_from_args(args: argparse.Namespace, prefix: str = "") -> dict[str, str | None] | None:
    """The field names given under `prefix` (see `add_field_options`), or None when none is (guess them all)."""
    dest = prefix.replace("-", "_")
    given = {name: getattr(args, f"{dest}{name}_field") for name in FIELD_NAMES}
    return None if all(v is None for v in given.values()) else given


def read_pool_from_args(path: str, args: argparse.Namespace, prefix: str = "") -> Any:
    """`read_pool(path)` with the field names and format given under `prefix` (see `add_field_options`)."""
    from ..ingest import read_pool

    return read_pool(path, fields_from_args(args, prefix), getattr(args, f"{prefix.replace('-', '_')}fmt"))


def resolve_trigger(args: argparse.Namespace) -> None:
    """args.trigger_template from --trigger-template, or from --trigger and --trigger-position (checked up front): the
    triggered prompt of `rise evaluate --retrospective` and of `rise counterfactual`."""
    if args.trigger_template is not None:
        if args.trigger is not None or args.trigger_position is not None:
            args._parser_error("give --trigger-template, or --trigger/--trigger-position, not both")
        check_template(args.trigger_template)
    else:
        args.trigger_template = trigger_template(TRIGGER if args.trigger is None else args.trigger,
                                                 args.trigger_position or "prefix")
