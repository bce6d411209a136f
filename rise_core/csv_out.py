"""CSV that reads back as it was written, and a spreadsheet-safe form of it for downloads.

pandas' default quoting leaves a text holding a bare carriage return unquoted, so a reader splits the row there; every
text here is quoted instead (numbers stay bare, so they read back as numbers).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import IO

import pandas as pd

# a text cell starting with one of these is run as a formula by a spreadsheet that opens the file (OWASP, "CSV
# injection"); downloads from a shared server carry texts that other people wrote
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# without the frame's index, every text quoted (numbers bare)
TO_CSV = {"index": False, "quoting": csv.QUOTE_NONNUMERIC}


def _as_text(value: object) -> object:
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose text cells and column names (an uploaded pool's metadata names them) that start like a
    formula start with an apostrophe, so a spreadsheet shows them as text. Numbers and every other cell are
    unchanged."""
    out = df.copy()
    for name in out.columns:
        column = out[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            out[name] = column.map(_as_text)
    out.columns = [_as_text(name) for name in out.columns]
    return out


def csv_text(df: pd.DataFrame, *, for_spreadsheet: bool = False) -> str:
    """`df` as CSV text without its index, every text quoted; `for_spreadsheet` applies `spreadsheet_safe` first."""
    return (spreadsheet_safe(df) if for_spreadsheet else df).to_csv(**TO_CSV)


def write_csv(df: pd.DataFrame, target: str | Path | IO[str]) -> None:
    """Write `df` as CSV (as `csv_text`, texts exact) to a path or an open text stream."""
    df.to_csv(target, **TO_CSV)
