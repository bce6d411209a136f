"""Cell values: missing values, JSON-safe metadata, CSV metadata columns' types, text and conversation cells, ids and
content hashes."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from typing import Any

import pandas as pd

from ..samples import Sample


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict)) else False
    except (TypeError, ValueError):
        return False


def jsonable(value: Any) -> Any:
    """A JSON-serialisable version of a cell value (numpy scalars, timestamps, arrays, bytes); None for missing."""
    if _is_missing(value):
        return None
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time, pd.Timestamp)):
        return value.isoformat()
    if hasattr(value, "tolist"):  # numpy scalar or array
        return jsonable(value.tolist())
    return str(value)


def _nan_cell(cell: str) -> bool:
    return cell.strip().lower().lstrip("+-") == "nan"


def infer_csv_column(values: pd.Series) -> pd.Series:
    """Numbers and booleans in a CSV metadata column, when every non-empty cell parses; else the text. A 'NaN' cell
    among numbers is missing, as an empty one is (it does not make the other cells floats)."""
    cells = [v for v in values if v != ""]
    if not cells:
        return pd.Series([None] * len(values), index=values.index, dtype=object)
    lowered = {c.strip().lower() for c in cells}
    if lowered <= {"true", "false"}:
        return pd.Series([None if v == "" else v.strip().lower() == "true" for v in values], index=values.index,
                         dtype=object)
    numbers = [c for c in cells if not _nan_cell(c)]
    try:
        ints = [int(c) for c in numbers]
        if all(str(i) == c.strip().lstrip("+") for i, c in zip(ints, numbers, strict=True)):  # "007" stays text
            return pd.Series([None if v == "" or _nan_cell(v) else int(v) for v in values], index=values.index,
                             dtype=object)
    except ValueError:
        pass
    try:
        [float(c) for c in cells]
        return pd.Series([None if v == "" else float(v) for v in values], index=values.index, dtype=object)
    except ValueError:
        return values.where(values != "", None)


def content_hash(sample: Sample) -> str:
    """sha1 of a sample's text fields (what the model reads); identifies duplicates and content changes."""
    fields: list[Any] = [sample.text, sample.prompt, sample.completion]
    if sample.messages is not None:  # (the hashes of the other forms are as they were before conversations)
        fields.append([[t.role, t.content] for t in sample.messages])
    payload = json.dumps(fields, ensure_ascii=False)
    return hashlib.sha1(payload.encode()).hexdigest()


def stable_id(sample: Sample) -> str:
    """Id of a sample given without one: the first 16 hex digits of `content_hash`."""
    return content_hash(sample)[:16]


def normalise_id(value: Any) -> str | None:
    """An id cell as text (1.0 -> '1', surrounding spaces dropped), or None when missing or blank; ValueError for a
    list or an object (its Python spelling is no id anyone gave)."""
    if _is_missing(value):
        return None
    if isinstance(value, (dict, list, tuple, set)):
        raise ValueError(f"id is a {type(value).__name__}, not a text or a number")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def as_text(value: Any, what: str = "text") -> str | None:
    """A text cell as a string (a number as written, bytes decoded as UTF-8), or None when missing; ValueError for a
    nested value (its message names the field as `what`)."""
    if _is_missing(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{what} is not valid UTF-8") from None
    if isinstance(value, (dict, list, tuple, set)):
        raise ValueError(f"{what} is a {type(value).__name__}, not a string")
    return str(value)


def as_messages(value: Any) -> Any:
    """A conversation cell as a list of turns: as read (JSONL, Parquet), or parsed from its JSON text (CSV)."""
    if _is_missing(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        value = as_text(value)
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise ValueError("the conversation is text but not a JSON list of {role, content} turns") from None
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):  # a numpy array of turns
        value = value.tolist()
    return value
