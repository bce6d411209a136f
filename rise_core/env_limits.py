"""Limits set by environment variables, read one way: `EnvLimits`, the base of every frozen dataclass of limits.

Each field is declared with `env_field` (its default, the variable that sets it, the unit its value counts and the
least value allowed); the base gives the dataclass, from the declarations alone:

- a check on construction: a value of the wrong type or below its least is a ConfigError naming the field's variable;
- `from_env(environ)`: the defaults, replaced by each variable that is set (surrounding blanks ignored), converted to
  the field's type (int or float); a value that does not convert or is not allowed is a ConfigError
  "VARIABLE='value': give a whole number of at least 1 (unit)".

Used by the upload limits (`ingest_limits.PoolLimits`), the filter limits (`store.filters.FilterLimits`), the server's
job queue (`explorer.job_queue.QueueLimits`), the app's counterfactual checks (`explorer.request_limits.CheckLimits`)
the marked words of its relevance feedback (`explorer.request_limits.FeedbackLimits`), and what one page request
may run through the model (`explorer.request_limits.RequestLimits`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from .errors import ConfigError

L = TypeVar("L", bound="EnvLimits")


def env_field(default: int | float, env: str, unit: str = "", minimum: float = 1, above: bool = False) -> Any:
    """A field of an `EnvLimits` dataclass: its `default`, the environment variable `env` that sets it, the `unit` its
    value counts (for messages: 'rows', 'seconds'), and the least value allowed (`above`: the value must exceed
    `minimum`)."""
    return dataclasses.field(default=default, metadata={"env": env, "unit": unit, "minimum": minimum, "above": above})


class EnvLimits:
    """Mixin of frozen dataclasses whose fields are `env_field`s: checked when made, read from the environment by
    `from_env`."""

    def __post_init__(self) -> None:
        kinds = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if not _allowed(value, f, kinds[f.name]):
                raise ConfigError(f"{type(self).__name__}.{f.name} ({f.metadata['env']}) must be "
                                  f"{_wanted(f, kinds[f.name])}, not {value!r}")

    @classmethod
    def from_env(cls: type[L], environ: Mapping[str, str] | None = None) -> L:
        """The limits set in the environment (`environ`, default os.environ); the defaults for variables not set."""
        environ = os.environ if environ is None else environ
        kinds = typing.get_type_hints(cls)
        given: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            env = f.metadata["env"]
            raw = environ.get(env, "").strip()
            if not raw:
                continue
            try:
                value = kinds[f.name](raw)
            except ValueError:
                value = None
            if value is None or not _allowed(value, f, kinds[f.name]):
                raise ConfigError(f"{env}={raw!r}: give {_wanted(f, kinds[f.name])}")
            given[f.name] = value
        return cls(**given)


def _allowed(value: Any, f: dataclasses.Field, kind: type) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        return False
    if not math.isfinite(value):
        return False
    least = f.metadata["minimum"]
    return value > least if f.metadata["above"] else value >= least


def _wanted(f: dataclasses.Field, kind: type) -> str:
    least, unit = f.metadata["minimum"], f.metadata["unit"]
    what = "a whole number" if kind is int else "a number"
    bound = f"above {least:g}" if f.metadata["above"] else f"of at least {least:g}"
    return f"{what} {bound}" + (f" ({unit})" if unit else "")
