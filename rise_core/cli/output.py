"""How the `rise` commands print a ranking's rows: a hit's text on one line, a table as JSON records."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd


def hit_text(row: pd.Series) -> str:
    """A ranked row's text: its plain text, or its prompt and completion joined by ⇒."""
    if isinstance(row.get("text"), str):
        return row["text"]
    prompt = row.get("prompt") if isinstance(row.get("prompt"), str) else ""
    return f"{prompt} ⇒ {row.get('completion')}" if prompt else str(row.get("completion"))


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """The table as JSON-ready records (NaN as null, dates as ISO strings)."""
    return json.loads(df.to_json(orient="records", force_ascii=False, date_format="iso"))
