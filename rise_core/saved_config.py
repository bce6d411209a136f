"""The one base of every settings dataclass that is saved, compared or shown as a form: `SavedConfig`.

A subclass is a frozen dataclass whose fields carry their help text (`field(..., metadata={"help": ...})`); the base
gives it, from the declarations alone:

- `to_dict()`: JSON-ready values (tuples as lists, nested configs as dicts);
- `from_dict(data)`: the strict inverse: an unknown field, or a value of the wrong type, is a ConfigError naming it;
  fields missing from `data` take their `LEGACY_FIELDS` value (what files written before the field existed meant),
  else their default;
- `fingerprint()`: a short stable hash of `to_dict()` (sorted keys, compact JSON, sha256, 16 hex digits);
- `differences(other)`: the dotted names of the fields whose saved values differ (`dict_differences` compares any
  two saved dicts the same way: index configs, fine-tune checkpoints, counterfactual plans);
- `field_help()`, `field_choices()`: help text and `Literal` choices per field, for CLI flags and forms.

A field added later needs nothing beyond its declaration; with `metadata={"fingerprint": "unless-default"}` it also
stays out of the fingerprint while it holds its default, so every config saved before it keeps its fingerprint.

`parse_list` is the one parser of comma-separated lists (CLI options, form fields).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from .errors import ConfigError

T = TypeVar("T")
C = TypeVar("C", bound="SavedConfig")

# metadata value of "fingerprint" that leaves a field out of the fingerprint while it holds its default
UNLESS_DEFAULT = "unless-default"
UNLESS_LEGACY = "unless-legacy"  # left out of the fingerprint while it holds its LEGACY_FIELDS value


class SavedConfig:
    """Mixin of frozen settings dataclasses: saved as dicts, read back strictly, hashed and compared field by field."""

    # values of fields added after the first saved format, for dicts written before them (default: the field's default)
    LEGACY_FIELDS: ClassVar[dict[str, Any]] = {}
    # what error messages call this config ("" : the class name)
    LABEL: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """Every field as a JSON-ready value (tuples as lists, nested configs as dicts)."""
        return {f.name: _saved(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[C], data: dict[str, Any]) -> C:
        """The config `to_dict` saved; a ConfigError naming any unknown field or value of the wrong type."""
        if not isinstance(data, dict):
            raise ConfigError(f"{_label(cls)} must be a mapping of field names to values, got {type(data).__name__}")
        fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise ConfigError(f"unknown {_label(cls)} fields {unknown}; valid fields: {sorted(fields)}")
        hints = typing.get_type_hints(cls)
        values = {**{k: v for k, v in cls.LEGACY_FIELDS.items() if k in fields}, **data}
        return cls(**{name: _loaded(value, hints[name], name, cls) for name, value in values.items()})

    def fingerprint(self) -> str:
        """Stable hash of the saved fields (a field marked "unless-default" counts only when set; one marked
        "unless-legacy" only when it differs from its LEGACY_FIELDS value, the features of before it existed)."""
        saved = self.to_dict()
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            mark = f.metadata.get("fingerprint")
            if (mark == UNLESS_DEFAULT and getattr(self, f.name) == _default(f)) or (
                    mark == UNLESS_LEGACY and f.name in self.LEGACY_FIELDS
                    and getattr(self, f.name) == self.LEGACY_FIELDS[f.name]):
                del saved[f.name]
        payload = json.dumps(saved, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def differences(self, other: SavedConfig) -> list[str]:
        """Dotted names of the fields whose saved values differ from `other`'s, in field order."""
        return dict_differences(self.to_dict(), other.to_dict())

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Help text of each field ("" where none is declared), for CLI flags and form tooltips."""
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def field_choices(cls) -> dict[str, tuple[Any, ...]]:
        """The allowed values of each `Literal`-typed field (optional ones included), for flags and forms."""
        out = {}
        for name, kind in typing.get_type_hints(cls).items():
            args = [a for a in typing.get_args(kind) if a is not type(None)] if _is_union(kind) else [kind]
            if len(args) == 1 and typing.get_origin(args[0]) is typing.Literal:
                out[name] = typing.get_args(args[0])
        return out


def dict_differences(saved: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths at which two saved values (dicts nest) differ: `["config.ks", "recipe.rank"]`; [] when equal."""
    if isinstance(saved, dict) and isinstance(new, dict):
        return [d for k in dict.fromkeys([*saved, *new])
                for d in dict_differences(saved.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if saved == new else [prefix.rstrip(".")]


def parse_list(text: str, item: Callable[[str], T] = str, what: str = "the list") -> tuple[T, ...]:
    """'10, 25' -> (10, 25): the comma- (or semicolon-) separated items of `text`, stripped, empty ones skipped, each
    converted by `item`; a ConfigError naming `what` (a flag or form field) when one does not convert."""
    parts = [p.strip() for p in str(text).replace(";", ",").split(",")]
    out = []
    for part in parts:
        if not part:
            continue
        try:
            out.append(item(part))
        except (TypeError, ValueError):
            kind = {int: "whole numbers", float: "numbers"}.get(item, "values")  # type: ignore[call-overload]
            raise ConfigError(f"{what} expects comma-separated {kind} (e.g. '10, 25'); {part!r} is not one "
                              f"(got {text!r})") from None
    return tuple(out)


# --- conversion between field values and saved values ----------------------------------------------------------------


def _label(cls: type) -> str:
    return getattr(cls, "LABEL", "") or cls.__name__


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING


def _saved(value: Any) -> Any:
    if isinstance(value, SavedConfig):
        return value.to_dict()
    if isinstance(value, (tuple, list)):
        return [_saved(v) for v in value]
    if isinstance(value, dict):
        return {k: _saved(v) for k, v in value.items()}
    return value


def _is_union(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType)


def _loaded(value: Any, kind: Any, name: str, cls: type) -> Any:
    """`value` (from JSON) as a value of type `kind`, unchanged where it already is one (ints stay ints where a float
    is declared: the fingerprint of a saved config must not move); a ConfigError naming the field otherwise."""

    def wrong() -> ConfigError:
        return ConfigError(f"{_label(cls)} field {name!r} expects {_type_name(kind)}, got {value!r}")

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if _is_union(kind):
        if value is None and type(None) in args:
            return None
        for option in (a for a in args if a is not type(None)):
            try:
                return _loaded(value, option, name, cls)
            except ConfigError:
                continue
        raise wrong()
    if origin is typing.Literal:
        if value not in args:
            raise ConfigError(f"{_label(cls)} field {name!r} must be one of {args}, got {value!r}")
        return value
    if isinstance(kind, type) and issubclass(kind, SavedConfig):
        return value if isinstance(value, kind) else kind.from_dict(value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise wrong()
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_loaded(v, args[0], name, cls) for v in value)
        if args and len(args) != len(value):
            raise wrong()
        return tuple(_loaded(v, a, name, cls) for v, a in zip(value, args or [Any] * len(value), strict=True))
    if origin in (list, dict) or kind in (list, dict):
        if not isinstance(value, origin or kind):
            raise wrong()
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise wrong()
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong()
        return value
    if kind in (int, str):
        if isinstance(value, bool) or not isinstance(value, kind):
            raise wrong()
        return value
    return value  # a type the saved form does not constrain


def _type_name(kind: Any) -> str:
    if _is_union(kind):
        return " or ".join(_type_name(a) for a in typing.get_args(kind))
    if typing.get_origin(kind) is typing.Literal:
        return f"one of {typing.get_args(kind)}"
    if kind is type(None):
        return "null"
    if typing.get_origin(kind) is tuple:
        return "a list"
    return {int: "a whole number", float: "a number", bool: "true or false", str: "a string"}.get(
        kind, getattr(kind, "__name__", str(kind)))
