"""Every limit the app reads from the environment (`RISE_MAX_*`, `RISE_CHECK_*`, ...), checked when a page is served:
a value that is not allowed stops the app with one line per variable, before any page runs (a page that read it later
stopped halfway with a ConfigError). Each `EnvLimits` class of the app is listed here; a test keeps the list whole."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from rise_core.env_limits import EnvLimits
from rise_core.errors import ConfigError
from rise_core.ingest_limits import PoolLimits
from rise_core.store.filters import FilterLimits

from .job_queue import QueueLimits
from .request_limits import CheckLimits, ConfigLimits, FeedbackLimits, FinetuneLimits, RequestLimits

APP_LIMITS: tuple[type[EnvLimits], ...] = (RequestLimits, PoolLimits, FilterLimits, QueueLimits, FeedbackLimits,
                                           CheckLimits, ConfigLimits, FinetuneLimits)


def settings_errors(environ: Mapping[str, str] | None = None) -> list[str]:
    """One message for every limit variable set in `environ` (default os.environ) to a value it does not allow."""
    environ = os.environ if environ is None else environ
    errors = []
    for limits in APP_LIMITS:
        for f in dataclasses.fields(limits):  # type: ignore[arg-type]
            env = f.metadata["env"]
            if env in environ:
                try:
                    limits.from_env({env: environ[env]})
                except ConfigError as exc:
                    errors.append(str(exc))
    return errors
