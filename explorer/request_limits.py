"""What one page request may ask of the model on a shared server: how long a typed text is, and how many queries or
samples one click runs through the model.

The queries a page scores (Select data's query set, the diagnostics' samples and candidates) run in the request, one
forward pass each: a pasted list of a hundred thousand one-line queries, or an uploaded file of as many rows (the upload
limits allow 100,000), would hold the machine for hours. Typed texts are bounded where they are typed (`max_chars`,
which Streamlit also enforces on the server) at the length of a pool cell.

Settings (environment variables): RISE_MAX_TEXT_CHARS, RISE_MAX_QUERIES. The CLI and the Python API have no such
limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from rise_core.env_limits import EnvLimits, env_field
from rise_core.errors import InputDataError

T = TypeVar("T")


@dataclass(frozen=True)
class RequestLimits(EnvLimits):
    """- 100,000 characters a typed text: a pool cell's limit (`ingest_limits.PoolLimits.max_cell_chars`); the index
      reads the first `seq_len` tokens (a few thousand characters) of a query.
    - 500 queries or samples a click: at the default model's 436 tokens/s on this 2-core machine (docs/PERFORMANCE.md)
      and 256 tokens each, about 5 minutes of the machine; larger query sets are for `rise select`."""

    max_text_chars: int = env_field(100_000, "RISE_MAX_TEXT_CHARS", "characters a typed text")
    max_queries: int = env_field(500, "RISE_MAX_QUERIES", "queries or samples a click")

    def check_count(self, items: Sequence[T], what: str) -> Sequence[T]:
        """`items` (queries, samples) when there are at most `max_queries` of them, else an InputDataError that names
        the limit and its variable."""
        if len(items) > self.max_queries:
            raise InputDataError(f"{len(items):,} {what} in one request; the limit is {self.max_queries:,} "
                                 f"(RISE_MAX_QUERIES). Use fewer, or the command line (`rise select`, `rise diagnose`) for a "
                                 "large set")
        return items


def request_limits() -> RequestLimits:
    """The limits set where the app was started (`RequestLimits.from_env`)."""
    return RequestLimits.from_env()
