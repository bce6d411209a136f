"""Human-readable sizes, durations and one-line texts, for the command line and the explorer alike."""

from __future__ import annotations

import math


def format_bytes(n: float | None) -> str:
    """512 -> '512 B', 2048 -> '2.0 KB', ...; '?' for None or NaN."""
    if n is None or n != n:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def format_seconds(seconds: float | None) -> str:
    """42 -> '42 s', 125 -> '2 min 05 s', 7300 -> '2 h 01 min'; '?' for None, NaN or infinity."""
    if seconds is None or seconds != seconds or seconds == math.inf:
        return "?"
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def one_line(text: object, width: int) -> str:
    """`text` on one line (every run of whitespace one space), cut to `width` characters with "…"; '' for None or
    NaN."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"
