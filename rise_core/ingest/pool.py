"""A pool read whole: `read_pool` maps a table's columns onto `Sample`s with a `FieldMap`, keeps the other columns as
metadata, gives rows without an id a stable content id and reports the rows it cannot use (`PoolData`);
`coerce_pool` does the same for samples given directly; `read_samples` for a quick run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ..errors import InputDataError
from ..samples import Sample, conversation_turns
from .fields import INPUT_SEPARATOR, PLAIN_NAMES, TEXT_NAMES, FieldMap
from .tables import (
    ABSENT,
    COMPRESSIONS,
    EXTENSIONS,
    check_columns,
    decode_utf8,
    detect_format,
    path_format,
    read_bytes,
    read_table,
)
from .values import as_messages, as_text, infer_csv_column, jsonable, normalise_id, stable_id


@dataclass
class PoolData:
    """Samples read from a file, and the rows that could not be used."""

    samples: list[Sample]  # valid rows, in file order; Sample.meta holds the other columns
    skipped: list[tuple[int, str]]  # (row number, reason) for rows that are not usable (empty text, ...)
    rows: list[int] = field(default_factory=list)  # source row number of each sample (1-based)
    n_rows: int = 0  # records in the source
    source: str = ""
    fields: FieldMap | None = None

    def __post_init__(self) -> None:
        if not self.rows:
            self.rows = list(range(1, len(self.samples) + 1))
        self.n_rows = max(self.n_rows, len(self.samples) + len(self.skipped))

    def __len__(self) -> int:
        return len(self.samples)

    def require_samples(self) -> PoolData:
        """Self, or InputDataError when no row is usable (with the first reasons)."""
        if not self.samples:
            raise no_usable_rows(self.source or "the pool", len(self.skipped), self.skipped)
        return self


def first_reasons(skipped: Sequence[tuple[int, str]], n: int = 3) -> str:
    """The first `n` skipped rows as 'row R: reason; ...' (what an error about them quotes)."""
    return "; ".join(f"row {r}: {why}" for r, why in skipped[:n])


def no_usable_rows(source: str, n_skipped: int, skipped: Sequence[tuple[int, str]]) -> InputDataError:
    """The error for a pool with no usable row: `n_skipped` rows skipped, the first reasons quoted from `skipped`."""
    reasons = first_reasons(skipped)
    return InputDataError(f"{source}: no usable rows ({n_skipped} skipped" + (f": {reasons}" if reasons else "") + ")")


def _whitespace(text: str | None) -> str:
    return ", only whitespace" if text else ""


def _no_field(col: str, absent: dict[str, set[int]], columns: list[str], i: int) -> str | None:
    """For record `i` of a JSON file without the key `col`: "no 'col' field (the row has ...)"; None when it has it."""
    if i not in absent.get(col, ()):
        return None
    held = [c for c in columns if i not in absent.get(c, ())]
    return f"no {col!r} field ({'the row has ' + ', '.join(map(repr, held)) if held else 'the row is an empty object'})"


def _mixed(rec: dict, columns: list[str]) -> str:
    """For a conversation file's row without a conversation: what it holds instead (a text, a prompt or completion,
    in `columns`), or ''."""
    held = []
    for col in columns:
        try:
            value = as_text(rec[col])
        except ValueError:  # a list or object: something, if not text
            value = "?"
        if value is not None and value.strip():
            held.append(col)
    if not held:
        return ""
    plain = any(c.lower() in TEXT_NAMES for c in held)
    kind, flags = ("plain-text", "--text-field") if plain else ("prompt + completion", "--prompt-field/--completion-field")
    return (f", but the row has {' and '.join(map(repr, held))}: this file mixes {kind} rows with conversations; give "
            f"them as separate files, or choose the fields to read ({flags})")


def _pair_prompt(prompt: str | None, context: str | None) -> str | None:
    """The prompt of an instruction row: the instruction, then its input after a blank line (either may be empty)."""
    parts = [p for p in (prompt, context) if p is not None and p.strip()]
    return INPUT_SEPARATOR.join(parts) if parts else None


def read_pool(source: str | Path | IO[bytes] | bytes | pd.DataFrame,
              fields: FieldMap | dict[str, str | None] | None = None, fmt: str | None = None, *,
              name: str | None = None, first_row: int = 1) -> PoolData:
    """Read samples from a file (or DataFrame); unusable rows (empty text, ...) are listed in `skipped`.

    `fields`: a FieldMap, or None to guess the fields from the column names, or a dict of some field names
    ({"text": "body"}) with the rest guessed. `name` names the source in messages (default: the path); `first_row`
    is the number of its first row (a chunk of a longer stream, `PoolStream`).

    Raises InputDataError for a missing field, an empty file, bad encoding or duplicate ids."""
    file_name = "<dataframe>" if isinstance(source, pd.DataFrame) else (
        str(source) if isinstance(source, (str, Path)) else getattr(source, "name", "<upload>"))
    name = name or file_name
    if isinstance(source, pd.DataFrame):
        check_columns(source.columns, name)
        df, is_csv = source.astype(object), False
    else:
        named = fmt or (path_format(file_name) if isinstance(source, (str, Path)) else detect_format(file_name))
        is_csv = EXTENSIONS.get("." + named.lower().lstrip("."), fmt) == "csv"
        df = read_table(source, fmt)
    absent = {} if isinstance(source, pd.DataFrame) else df.attrs.get(ABSENT, {})  # JSON records without a key
    columns = [str(c) for c in df.columns]
    df.columns = columns
    fields = FieldMap.for_columns(columns, fields, name)
    used = fields.used()
    meta_cols = [c for c in columns if c not in used]
    # a pair file's row that has a text column instead of a completion is reported by its text
    stray_text = None if not fields.is_pair else next((c for c in meta_cols if c.lower() in TEXT_NAMES), None)
    # a conversation file's row without one but with a text or a prompt + completion is reported by those
    stray_forms = [] if fields.messages is None else [c for c in meta_cols if c.lower() in PLAIN_NAMES]
    if is_csv:
        for col in [*meta_cols, *([fields.label] if fields.label else [])]:
            df[col] = infer_csv_column(df[col])

    samples: list[Sample] = []
    rows: list[int] = []
    skipped: list[tuple[int, str]] = []
    explicit: dict[str, list[int]] = {}
    derived: dict[str, int] = {}
    for i, rec in enumerate(df.to_dict("records")):
        row = first_row + i
        try:
            if fields.text is not None:
                kwargs = {"text": as_text(rec[fields.text])}
                if kwargs["text"] is None or not kwargs["text"].strip():
                    skipped.append((row, _no_field(fields.text, absent, columns, i)
                                    or f"empty text ({fields.text!r}{_whitespace(kwargs['text'])})"))
                    continue
            elif fields.messages is not None:
                messages = as_messages(rec[fields.messages])
                if messages is None:
                    skipped.append((row, f"empty conversation ({fields.messages!r}){_mixed(rec, stray_forms)}"))
                    continue
                try:
                    kwargs = {"messages": conversation_turns(messages, f"the conversation ({fields.messages!r})")}
                except InputDataError as exc:
                    skipped.append((row, str(exc)))
                    continue
            else:
                prompt = as_text(rec[fields.prompt]) if fields.prompt else None
                completion = as_text(rec[fields.completion])
                if completion is None and stray_text is not None and (text := as_text(rec[stray_text])) is not None:
                    skipped.append((row, f"empty text ({stray_text!r}{_whitespace(text)})" if not text.strip() else
                                    f"a {stray_text!r} but no {fields.completion!r}: this file holds prompt + "
                                    "completion rows; give the row a completion, or put plain texts in a file of "
                                    "their own"))
                    continue
                if completion is None or not completion.strip():
                    skipped.append((row, _no_field(fields.completion, absent, columns, i)
                                    or f"empty completion ({fields.completion!r}{_whitespace(completion)})"))
                    continue
                context = as_text(rec[fields.input]) if fields.input else None
                kwargs = {"prompt": _pair_prompt(prompt, context), "completion": completion}
            sample_id = normalise_id(rec[fields.id]) if fields.id else None
        except ValueError as exc:
            skipped.append((row, str(exc)))
            continue
        try:
            label = jsonable(rec[fields.label]) if fields.label else None
            meta = {c: v for c in meta_cols if (v := jsonable(rec[c])) is not None}
            json.dumps([label, meta])  # what the index stores: it must encode too
        except RecursionError:
            skipped.append((row, "a label or metadata value is nested too deeply to store"))
            continue
        sample = with_pool_id(Sample(**kwargs, id=sample_id, label=label, meta=meta), row, explicit, derived, skipped)
        if sample is not None:
            samples.append(sample)
            rows.append(row)
    check_unique(explicit, derived, name)
    return PoolData(samples=samples, skipped=skipped, rows=rows, n_rows=len(df), source=name, fields=fields)


def with_pool_id(sample: Sample, row: int, explicit: dict[str, list[int]], derived: dict[str, int],
                 skipped: list[tuple[int, str]]) -> Sample | None:
    """`sample` with its id in the pool: a given id is noted in `explicit` (checked by `check_unique`); without one
    it gets its content id, and a second row with the same content is noted in `skipped` (None is returned)."""
    if sample.id is not None:
        explicit.setdefault(str(sample.id), []).append(row)
        return sample
    sid = stable_id(sample)
    if sid in derived:
        skipped.append((row, f"duplicate of row {derived[sid]} (same text, no id)"))
        return None
    derived[sid] = row
    return sample.with_id(sid)


def check_unique(explicit: dict[str, list[int]], derived: dict[str, int], name: str) -> None:
    dups = {k: v for k, v in explicit.items() if len(v) > 1}
    clashes = {k: [*explicit[k], derived[k]] for k in explicit.keys() & derived.keys()}
    dups.update(clashes)
    if dups:
        shown = "; ".join(f"{k!r} (rows {', '.join(map(str, sorted(v)))})" for k, v in list(dups.items())[:5])
        more = f" and {len(dups) - 5} more" if len(dups) > 5 else ""
        raise InputDataError(f"{name}: duplicate ids {shown}{more}; ids must be unique")


def _read_cells(item: dict[str, Any]) -> dict[str, Any]:
    """A sample given as a dict, its text fields read as a file's cells are (`as_text`: a number as its text, bytes
    as UTF-8); InputDataError naming the sample for a list or an object."""
    try:
        return {**item, **{k: as_text(item[k], k) for k in ("text", "prompt", "completion") if k in item}}
    except ValueError as exc:
        who = f"sample {item['id']!r}" if item.get("id") is not None else "a sample without an id"
        raise InputDataError(f"{who}: {exc}") from None


def coerce_pool(pool: PoolData | Sequence[Sample | str | dict]) -> PoolData:
    """A PoolData from samples given directly (ids derived where missing; duplicate ids refused)."""
    if isinstance(pool, PoolData):
        items, rows, skipped = list(pool.samples), list(pool.rows), list(pool.skipped)
        source, n_rows, fields = pool.source, pool.n_rows, pool.fields
    else:
        items, rows, skipped = [], [], []
        for row, item in enumerate(pool, 1):
            try:
                items.append(Sample.coerce(_read_cells(item) if isinstance(item, dict) else item))
                rows.append(row)
            except InputDataError as exc:  # empty text: reported like a file's row
                skipped.append((row, str(exc)))
        source, n_rows, fields = "<samples>", len(items) + len(skipped), None
    samples: list[Sample] = []
    kept_rows: list[int] = []
    explicit: dict[str, list[int]] = {}
    derived: dict[str, int] = {}
    for sample, row in zip(items, rows, strict=True):
        try:
            sample_id = normalise_id(sample.id)
        except ValueError as exc:
            skipped.append((row, str(exc)))
            continue
        if sample_id is not None and sample_id != sample.id:
            sample = sample.with_id(sample_id)
        sample = with_pool_id(sample, row, explicit, derived, skipped)
        if sample is not None:
            samples.append(sample)
            kept_rows.append(row)
    check_unique(explicit, derived, source)
    return PoolData(samples=samples, skipped=skipped, rows=kept_rows, n_rows=n_rows, source=source, fields=fields)


def read_samples(path: str | Path) -> list[Sample]:
    """Samples for a quick run (diagnostics, candidates): a pool file (JSONL/JSON/CSV/Parquet, read by `read_pool`,
    every row usable) or, for any other extension (.txt), one plain-text sample per non-empty line."""
    p = Path(path)
    inner = p.with_suffix("") if p.suffix.lower() in COMPRESSIONS else p
    if inner.suffix.lower() in EXTENSIONS:
        data = read_pool(p)
        if data.skipped:
            row, why = data.skipped[0]
            raise InputDataError(f"{p}: row {row}: {why}")
        return data.require_samples().samples
    raw, name = read_bytes(p)
    texts = [line for line in decode_utf8(raw, name).split("\n") if line.strip()]
    if not texts:
        raise InputDataError(f"{name} holds no samples")
    return [Sample(text=t.rstrip("\r")) for t in texts]
