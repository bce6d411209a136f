"""How the `rise` commands print a ranking's rows: a hit's text on one line, a table as JSON records."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..errors import InputDataError
from ..store import row_text


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
