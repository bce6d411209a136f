"""How the `rise` commands print a ranking's rows: a hit's text on one line, a table as JSON records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

import pandas as pd

from ..errors import InputDataError
from ..store import row_text


def print_skipped(skipped: Sequence[tuple[int, str]], heading: str, file: TextIO | None = None, indent: str = "",
                  shown: int = 20) -> None:
    """`heading`, then the first `shown` skipped rows as 'row R: reason' and how many more: how `rise build` and
    `rise evaluate` list the rows they left out."""
    print(f"{indent}{heading}", file=file)
    for row, why in skipped[:shown]:
        print(f"{indent}  row {row}: {why}", file=file)
    if len(skipped) > shown:
        print(f"{indent}  ... and {len(skipped) - shown} more", file=file)


def hit_text(row: pd.Series) -> str:
    """A ranked row's text: its plain text, its prompt and completion joined by ⇒, or a conversation's turns
    (`role: text`) joined by |."""
    if isinstance(row.get("text"), str):
        return row["text"]
    if isinstance(row.get("completion"), str):
        prompt = row.get("prompt") if isinstance(row.get("prompt"), str) else ""
        return f"{prompt} ⇒ {row['completion']}" if prompt else row["completion"]
    try:
        return row_text(row, turn_separator=" | ")
    except InputDataError:  # a row without text (only a hand-made frame lacks all three)
        return ""


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The table as JSON-ready records (NaN as null, dates as ISO strings)."""
    return json.loads(df.to_json(orient="records", force_ascii=False, date_format="iso"))
