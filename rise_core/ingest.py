"""Reading a pool of samples from JSONL, JSON, CSV or Parquet, with configurable field names.

`read_table` turns a file (or uploaded bytes) into a DataFrame; `read_pool` maps its columns onto `Sample`s with a
`FieldMap` (text; prompt + completion, with an optional input column appended to the prompt as Alpaca rows have it;
or a conversation, `messages`; optional id and label), keeps every other column as metadata, gives rows
without an id a stable content id, and reports the rows it cannot use instead of dropping them silently.

Row numbers in messages and reports are 1-based positions among the file's records (JSONL: non-blank lines;
CSV: data rows after the header).

A pool too large to read whole is a `PoolStream` (`stream_pool`, `dataset_pool`): a `datasets` dataset, Arrow or
sharded Parquet files, or any re-readable batches, read chunk by chunk, each chunk by `read_pool`.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import itertools
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from .errors import InputDataError
from .samples import Sample, conversation_turns

FORMATS = ("jsonl", "json", "csv", "parquet")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet",
               ".pq": "parquet"}

# candidate column names for FieldMap.guess, in order of preference (matched case-insensitively)
_TEXT_NAMES = ("text", "content", "document", "passage", "sentence", "body")
_PROMPT_NAMES = ("prompt", "instruction", "question", "query", "input")
_COMPLETION_NAMES = ("completion", "response", "output", "answer", "generation", "target")
_MESSAGES_NAMES = ("messages",)
# the context column of instruction datasets (Alpaca's `input`, Dolly's `context`), appended to an `instruction`
_INPUT_NAMES = ("input", "context")
INPUT_SEPARATOR = "\n\n"
FIELD_NAMES = ("text", "prompt", "completion", "messages", "input", "id", "label")
_ID_NAMES = ("id", "sample_id", "uid", "idx", "_id")
_LABEL_NAMES = ("label", "labels", "is_positive")


@dataclass(frozen=True)
class FieldMap:
    """Column names in the user's file: `text`; or `prompt` + `completion` (prompt optional; `input`, optional, is
    appended to the prompt after a blank line, as Alpaca's instruction + input); or `messages`, a conversation (a
    list of {role, content} turns, or its JSON text in a CSV cell); `id`, `label` optional.

    When `text` is set, prompt/completion are ignored; `messages` excludes text, prompt and completion. The default
    names "prompt", "id" and "label" are used only when the file has such a column; any other name that is set must
    exist in the file.
    """

    text: str | None = None
    prompt: str | None = "prompt"
    completion: str | None = "completion"
    id: str | None = "id"
    label: str | None = "label"
    messages: str | None = None
    input: str | None = None

    @classmethod
    def guess(cls, columns: Sequence[str], **given: str | None) -> FieldMap:
        """Pick fields from common names (text/content, prompt/instruction/question, completion/response/output,
        messages, id, label; an `instruction` column's `input` or `context` column is appended to it, as Alpaca and
        Dolly rows mean it); names in `given` win (a given text field means plain text, a given completion or prompt
        field means pairs, a given messages field conversations). A `messages` column is read as conversations
        unless a text, prompt or completion field is given. Raises InputDataError listing the columns when no text
        column can be found."""
        cols = [str(c) for c in columns]
        given = {k: v for k, v in given.items() if v is not None}
        unknown = set(given) - set(FIELD_NAMES)
        if unknown:
            raise InputDataError(f"unknown field names {sorted(unknown)}; use {', '.join(FIELD_NAMES)}")

        def find(names: Iterable[str]) -> str | None:
            lower = {c.lower(): c for c in reversed(cols)}
            for name in names:
                if name in lower:
                    return lower[name]
            return None

        extra = {"id": given.get("id", find(_ID_NAMES)), "label": given.get("label", find(_LABEL_NAMES))}
        completion, text = given.get("completion", find(_COMPLETION_NAMES)), find(_TEXT_NAMES)
        if "text" in given:
            return cls(text=given["text"], prompt=None, completion=None, **extra)
        messages = given.get("messages", find(_MESSAGES_NAMES))
        if messages is not None and ("messages" in given or not {"prompt", "completion"} & set(given)):
            return cls(text=None, prompt=None, completion=None, messages=messages, **extra)
        pair = "completion" in given or "prompt" in given or (
            completion is not None and (text is None or find(_PROMPT_NAMES) is not None))
        if pair and completion is not None:
            prompt = given.get("prompt", find(n for n in _PROMPT_NAMES if n != completion.lower()))
            context = given.get("input")
            if context is None and prompt is not None and prompt.lower() == "instruction":
                context = find(n for n in _INPUT_NAMES if n != completion.lower())
            return cls(text=None, prompt=prompt, completion=completion, input=context, **extra)
        if text is not None and not pair:
            return cls(text=text, prompt=None, completion=None, **extra)
        raise InputDataError(
            f"cannot tell which column holds the text among {cols}; name it with --text-field (plain text), "
            "--prompt-field/--completion-field (instruction -> response) or --messages-field (conversations)"
        )

    @property
    def is_pair(self) -> bool:
        return self.text is None and self.messages is None

    def used(self) -> set[str]:
        """Column names mapped onto Sample fields (the rest become metadata)."""
        if self.text is not None:
            names = [self.text]
        elif self.messages is not None:
            names = [self.messages]
        else:
            names = [self.prompt, self.completion, self.input]
        return {n for n in [*names, self.id, self.label] if n is not None}

    def resolve(self, columns: Sequence[str]) -> FieldMap:
        """This map with optional default-named fields (prompt, id, label) that the file lacks set to None; raises
        for any other named field that is missing, listing the file's columns."""
        cols = set(map(str, columns))
        if self.text is not None:
            out = {"text": self.text, "prompt": None, "completion": None, "id": self.id, "label": self.label}
        elif self.messages is not None:
            if self.completion not in (None, FieldMap.completion) or self.prompt not in (None, FieldMap.prompt):
                raise InputDataError("the field map names a messages field and a prompt or completion field; a "
                                     "conversation holds its own turns: give one or the other")
            out = {"text": None, "prompt": None, "completion": None, "messages": self.messages, "id": self.id,
                   "label": self.label}
        elif self.completion is not None:
            out = {"text": None, "prompt": self.prompt, "completion": self.completion, "input": self.input,
                   "id": self.id, "label": self.label}
        else:
            raise InputDataError("the field map names neither a text field, a completion field nor a messages "
                                 "field")
        defaults = FieldMap()
        for name, col in list(out.items()):
            if col is None or col in cols:
                continue
            if name in ("prompt", "id", "label") and col == getattr(defaults, name):
                out[name] = None
                continue
            raise InputDataError(f"missing field {col!r} ({name}); the file's columns are {sorted(cols)}; "
                                 f"choose another with --{name}-field")
        return FieldMap(**out)


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
            reasons = "; ".join(f"row {r}: {why}" for r, why in self.skipped[:3])
            raise InputDataError(f"{self.source or 'the pool'}: no usable rows ({len(self.skipped)} skipped"
                                 + (f": {reasons}" if reasons else "") + ")")
        return self


def detect_format(name: str | Path) -> str:
    suffix = Path(str(name)).suffix.lower()
    try:
        return _EXTENSIONS[suffix]
    except KeyError:
        raise InputDataError(f"cannot tell the format of {str(name)!r} from its extension; use one of "
                             f"{sorted(_EXTENSIONS)} or give the format ({', '.join(FORMATS)})") from None


def _read_bytes(source: str | Path | IO[bytes] | bytes) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), "<bytes>"
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise InputDataError(f"no such file: {str(path)!r}")
        if path.is_dir():
            raise InputDataError(f"{str(path)!r} is a directory, not a data file")
        try:
            return path.read_bytes(), str(path)
        except OSError as exc:
            raise InputDataError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from exc
    data = source.read()
    if isinstance(data, str):
        data = data.encode()
    return data, getattr(source, "name", "<upload>")


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputDataError(
            f"{name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line}); "
            "re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 IN > OUT`"
        ) from None


def _check_columns(names: Iterable[Any], name: str) -> None:
    """Refuse a table with two columns of one name: a reader would keep one, or rename the other ('label.1')
    where neither a field map nor a filter would look for it."""
    seen: dict[str, int] = {}
    for i, col in enumerate(map(str, names), 1):
        if col in seen:
            raise InputDataError(f"{name}: column {col!r} appears twice (columns {seen[col]} and {i}); rename or "
                                 "remove one, so that every column has its own name")
        seen[col] = i


class _DuplicateKey(ValueError):
    """A JSON object with one key twice (json.loads would keep the last value silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        counts = Counter(k for k, _ in pairs)
        raise _DuplicateKey(next(k for k, _ in pairs if counts[k] > 1))
    return obj


def _records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    # object dtype keeps ints as ints (no float upcast where a key is missing) and strings verbatim
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    return pd.DataFrame({c: [rec.get(c) for rec in records] for c in columns}, dtype=object)


def read_table(source: str | Path | IO[bytes] | bytes, fmt: str | None = None) -> pd.DataFrame:
    """Read a JSONL / JSON / CSV / Parquet file (path, file object or bytes) into a DataFrame.

    CSV cells are read as text (so an id "007" or a text "42" stays verbatim); `read_pool` infers numeric
    metadata columns. Raises InputDataError for an empty or malformed file."""
    name = str(source) if isinstance(source, (str, Path)) else getattr(source, "name", "<upload>")
    fmt = (fmt or detect_format(name)).lower().lstrip(".")
    fmt = _EXTENSIONS.get(f".{fmt}", fmt)  # an extension ("ndjson", "pq") names its format
    if fmt not in FORMATS:
        raise InputDataError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    data, name = _read_bytes(source)
    if not data.strip():
        raise InputDataError(f"{name}: the file is empty")
    if fmt == "parquet":
        return _read_parquet(data, name)
    text = _decode(data, name)
    if fmt == "csv":
        _check_columns(next(csv.reader(io.StringIO(text)), []), name)
        try:
            df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False)
        except (pd.errors.ParserError, csv.Error, ValueError) as exc:
            raise InputDataError(f"{name}: not a readable CSV file: {exc}") from exc
        df.columns = [str(c) for c in df.columns]
    else:
        records = _parse_json(text, name, lines=(fmt == "jsonl"))
        df = _records_frame(records)
    if len(df) == 0:
        raise InputDataError(f"{name}: the file has no rows")
    return df


def _loads(text: str, name: str, where: str) -> Any:
    """json.loads, with every failure (malformed text, nesting deeper than the decoder's recursion limit) an
    InputDataError naming the file and `where` ("line 3")."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise InputDataError(f"{name}: {'an object in the file' if where == 'the file' else where} has the key "
                             f"{exc.args[0]!r} twice; keep one, so that no value is dropped silently") from None
    except json.JSONDecodeError as exc:
        if where == "the file":
            raise InputDataError(f"{name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        raise InputDataError(f"{name}: {where} is not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise InputDataError(f"{name}: {where} is nested too deeply to read (more than a few hundred levels of "
                             "arrays or objects)") from None


def _parse_json(text: str, name: str, lines: bool) -> list[dict[str, Any]]:
    stripped = text.lstrip()
    if not lines and stripped.startswith("["):
        records = _loads(text, name, "the file")
        bad = next((i for i, r in enumerate(records, 1) if not isinstance(r, dict)), None)
        if bad is not None:
            raise InputDataError(f"{name}: item {bad} of the JSON array is not an object")
        return records
    records = []
    # split on "\n" only: JSON strings may hold U+2028, U+0085 and other characters str.splitlines breaks at
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        rec = _loads(line, name, f"line {lineno}")
        if not isinstance(rec, dict):
            raise InputDataError(f"{name}: line {lineno} is a JSON {type(rec).__name__}, expected an object")
        records.append(rec)
    return records


def _read_parquet(data: bytes, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        _check_columns(pq.read_schema(pa.BufferReader(data)).names, name)  # read_table fails on a repeated name
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{name}: not a readable Parquet file: {exc}") from exc
    columns = {}
    for col_name, col in zip(table.column_names, table.columns, strict=True):
        try:
            columns[str(col_name)] = pd.Series(col.to_pylist(), dtype=object)
        except (pa.ArrowException, UnicodeDecodeError) as exc:
            raise InputDataError(f"{name}: column {col_name!r} cannot be decoded: {exc}") from exc
    df = pd.DataFrame(columns, dtype=object)
    if len(df) == 0:
        raise InputDataError(f"{name}: the file has no rows")
    return df


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


def _infer_csv_column(values: pd.Series) -> pd.Series:
    """Numbers and booleans in a CSV metadata column, when every non-empty cell parses; else the text."""
    cells = [v for v in values if v != ""]
    if not cells:
        return pd.Series([None] * len(values), index=values.index, dtype=object)
    lowered = {c.strip().lower() for c in cells}
    if lowered <= {"true", "false"}:
        return pd.Series([None if v == "" else v.strip().lower() == "true" for v in values], index=values.index,
                         dtype=object)
    try:
        ints = [int(c) for c in cells]
        if all(str(i) == c.strip().lstrip("+") for i, c in zip(ints, cells, strict=True)):  # "007" stays text
            return pd.Series([None if v == "" else int(v) for v in values], index=values.index, dtype=object)
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


def _normalise_id(value: Any) -> str | None:
    if _is_missing(value):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def _whitespace(text: str | None) -> str:
    return ", only whitespace" if text else ""


def _as_text(value: Any) -> str | None:
    if _is_missing(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("text is not valid UTF-8") from None
    if isinstance(value, (dict, list, tuple)):
        raise ValueError(f"text is a {type(value).__name__}, not a string")
    return str(value)


def _as_messages(value: Any) -> Any:
    """A conversation cell as a list of turns: as read (JSONL, Parquet), or parsed from its JSON text (CSV)."""
    if _is_missing(value):
        return None
    if isinstance(value, (bytes, bytearray)):
        value = _as_text(value)
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
        _check_columns(source.columns, name)
        df, is_csv = source.astype(object), False
    else:
        is_csv = _EXTENSIONS.get("." + (fmt or detect_format(file_name)).lower().lstrip("."), fmt) == "csv"
        df = read_table(source, fmt)
    columns = [str(c) for c in df.columns]
    df.columns = columns
    try:
        if fields is None or isinstance(fields, dict):
            fields = FieldMap.guess(columns, **(fields or {}))
        fields = fields.resolve(columns)
    except InputDataError as exc:
        raise InputDataError(f"{name}: {exc}") from None
    used = fields.used()
    meta_cols = [c for c in columns if c not in used]
    # a pair file's row that has a text column instead of a completion is reported by its text
    stray_text = None if not fields.is_pair else next((c for c in meta_cols if c.lower() in _TEXT_NAMES), None)
    if is_csv:
        for col in [*meta_cols, *([fields.label] if fields.label else [])]:
            df[col] = _infer_csv_column(df[col])

    samples: list[Sample] = []
    rows: list[int] = []
    skipped: list[tuple[int, str]] = []
    explicit: dict[str, list[int]] = {}
    derived: dict[str, int] = {}
    for row, rec in enumerate(df.to_dict("records"), first_row):
        try:
            if fields.text is not None:
                kwargs = {"text": _as_text(rec[fields.text])}
                if kwargs["text"] is None or not kwargs["text"].strip():
                    skipped.append((row, f"empty text ({fields.text!r}{_whitespace(kwargs['text'])})"))
                    continue
            elif fields.messages is not None:
                messages = _as_messages(rec[fields.messages])
                if messages is None:
                    skipped.append((row, f"empty conversation ({fields.messages!r})"))
                    continue
                try:
                    kwargs = {"messages": conversation_turns(messages, f"the conversation ({fields.messages!r})")}
                except InputDataError as exc:
                    skipped.append((row, str(exc)))
                    continue
            else:
                prompt = _as_text(rec[fields.prompt]) if fields.prompt else None
                completion = _as_text(rec[fields.completion])
                if completion is None and stray_text is not None and (text := _as_text(rec[stray_text])) is not None:
                    skipped.append((row, f"empty text ({stray_text!r}{_whitespace(text)})" if not text.strip() else
                                    f"a {stray_text!r} but no {fields.completion!r}: this file holds prompt + "
                                    "completion rows; give the row a completion, or put plain texts in a file of "
                                    "their own"))
                    continue
                if completion is None or not completion.strip():
                    skipped.append((row, f"empty completion ({fields.completion!r}{_whitespace(completion)})"))
                    continue
                context = _as_text(rec[fields.input]) if fields.input else None
                kwargs = {"prompt": _pair_prompt(prompt, context), "completion": completion}
        except ValueError as exc:
            skipped.append((row, str(exc)))
            continue
        sample_id = _normalise_id(rec[fields.id]) if fields.id else None
        try:
            label = jsonable(rec[fields.label]) if fields.label else None
            meta = {c: v for c in meta_cols if (v := jsonable(rec[c])) is not None}
            json.dumps([label, meta])  # what the index stores: it must encode too
        except RecursionError:
            skipped.append((row, "a label or metadata value is nested too deeply to store"))
            continue
        sample = Sample(**kwargs, id=sample_id, label=label, meta=meta)
        if sample_id is None:
            sid = stable_id(sample)
            if sid in derived:
                skipped.append((row, f"duplicate of row {derived[sid]} (same text, no id)"))
                continue
            derived[sid] = row
            sample = sample.with_id(sid)
        else:
            explicit.setdefault(sample_id, []).append(row)
        samples.append(sample)
        rows.append(row)
    _check_unique(explicit, derived, name)
    return PoolData(samples=samples, skipped=skipped, rows=rows, n_rows=len(df), source=name, fields=fields)


def _check_unique(explicit: dict[str, list[int]], derived: dict[str, int], name: str) -> None:
    dups = {k: v for k, v in explicit.items() if len(v) > 1}
    clashes = {k: [*explicit[k], derived[k]] for k in explicit.keys() & derived.keys()}
    dups.update(clashes)
    if dups:
        shown = "; ".join(f"{k!r} (rows {', '.join(map(str, sorted(v)))})" for k, v in list(dups.items())[:5])
        more = f" and {len(dups) - 5} more" if len(dups) > 5 else ""
        raise InputDataError(f"{name}: duplicate ids {shown}{more}; ids must be unique")


def coerce_pool(pool: PoolData | Sequence[Sample | str | dict]) -> PoolData:
    """A PoolData from samples given directly (ids derived where missing; duplicate ids refused)."""
    if isinstance(pool, PoolData):
        items, rows, skipped = list(pool.samples), list(pool.rows), list(pool.skipped)
        source, n_rows, fields = pool.source, pool.n_rows, pool.fields
    else:
        items, rows, skipped = [], [], []
        for row, item in enumerate(pool, 1):
            try:
                items.append(Sample.coerce(item))
                rows.append(row)
            except InputDataError as exc:  # empty text: reported like a file's row
                skipped.append((row, str(exc)))
        source, n_rows, fields = "<samples>", len(items) + len(skipped), None
    samples: list[Sample] = []
    kept_rows: list[int] = []
    explicit: dict[str, list[int]] = {}
    derived: dict[str, int] = {}
    for sample, row in zip(items, rows, strict=True):
        sample_id = _normalise_id(sample.id)
        if sample_id is not None and sample_id != sample.id:
            sample = sample.with_id(sample_id)
        if sample.id is None:
            sid = stable_id(sample)
            if sid in derived:
                skipped.append((row, f"duplicate of row {derived[sid]} (same text, no id)"))
                continue
            derived[sid] = row
            sample = sample.with_id(sid)
        else:
            explicit.setdefault(str(sample.id), []).append(row)
        samples.append(sample)
        kept_rows.append(row)
    _check_unique(explicit, derived, source)
    return PoolData(samples=samples, skipped=skipped, rows=kept_rows, n_rows=n_rows, source=source, fields=fields)


def read_samples(path: str | Path) -> list[Sample]:
    """Samples for a quick run (diagnostics, candidates): a pool file (JSONL/JSON/CSV/Parquet, read by `read_pool`,
    every row usable) or, for any other extension (.txt), one plain-text sample per non-empty line."""
    p = Path(path)
    if p.suffix.lower() in _EXTENSIONS:
        data = read_pool(p)
        if data.skipped:
            row, why = data.skipped[0]
            raise InputDataError(f"{p}: row {row}: {why}")
        return data.require_samples().samples
    raw, name = _read_bytes(p)
    texts = [line for line in _decode(raw, name).split("\n") if line.strip()]
    if not texts:
        raise InputDataError(f"{name} holds no samples")
    return [Sample(text=t.rstrip("\r")) for t in texts]


# ---------------------------------------------------------------------------------------------------------------------
# pools read chunk by chunk, never whole: a Hugging Face `datasets` dataset, Arrow or (sharded) Parquet files, any
# source of batches that can be read again

STREAM_CHUNK_ROWS = 1024  # rows per chunk when the reader does not say
_DATASET_FOLDER_FILES = ("state.json", "dataset_info.json")  # what `Dataset.save_to_disk` writes beside its Arrow files


@dataclass
class PoolStream:
    """A pool read chunk by chunk, so a large one never sits in memory whole.

    Each `chunks()` call reads the source again from its start (a build reads it once more to fit the hidden-state
    mean of a new index). Every chunk is made by `read_pool` with one field map, resolved once against `columns`;
    its rows are numbered in the whole stream, and ids are checked unique across chunks as `read_pool` checks them
    within a file (a repeated id is an error; a repeated text without an id is skipped as a duplicate)."""

    source: str  # names the pool in messages
    columns: list[str]
    fields: FieldMap
    n_rows: int | None  # records in the source when it knows without reading them all, else None
    open_batches: Callable[[int], Iterable[Any]] = field(repr=False)
    """rows -> a fresh iterable of batches of about that many records: Arrow tables or record batches, DataFrames,
    dicts of columns or lists of records"""

    @classmethod
    def from_batches(cls, open_batches: Callable[[int], Iterable[Any]], source: str = "<batches>",
                     fields: FieldMap | dict[str, str | None] | None = None, n_rows: int | None = None,
                     columns: Sequence[str] | None = None) -> PoolStream:
        """A stream over any re-readable source of batches (see `open_batches`); `columns` default to the first
        batch's. `fields` as in `read_pool`: a FieldMap, some field names, or None to guess them from the columns."""
        if columns is None:
            first = next(iter(open_batches(1)), None)
            columns = [] if first is None else list(_batch_frame(first, [], source).columns)
        columns = [str(c) for c in columns]
        _check_columns(columns, source)
        try:
            if fields is None or isinstance(fields, dict):
                fields = FieldMap.guess(columns, **(fields or {}))
            fields = fields.resolve(columns)
        except InputDataError as exc:
            raise InputDataError(f"{source}: {exc}") from None
        return cls(source=source, columns=columns, fields=fields, n_rows=n_rows, open_batches=open_batches)

    @classmethod
    def from_records(cls, open_records: Callable[[], Iterable[dict[str, Any]]], source: str = "<records>",
                     fields: FieldMap | dict[str, str | None] | None = None, n_rows: int | None = None,
                     columns: Sequence[str] | None = None) -> PoolStream:
        """A stream over records (dicts) from `open_records()`, called again for every read, e.g. a generator
        function; only one chunk of them is held at a time."""

        def open_batches(rows: int) -> Iterator[list[dict[str, Any]]]:
            records = iter(open_records())
            while batch := list(itertools.islice(records, rows)):
                yield batch

        return cls.from_batches(open_batches, source, fields, n_rows, columns)

    def chunks(self, rows: int = STREAM_CHUNK_ROWS) -> Iterator[PoolData]:
        """The pool from its start, as PoolData chunks of at most `rows` records (rows numbered in the stream)."""
        if rows < 1:
            raise InputDataError(f"rows per chunk must be at least 1, got {rows}")
        explicit: dict[str, int] = {}
        derived: dict[str, int] = {}
        first = 1
        for batch in self.open_batches(rows):
            frame = _batch_frame(batch, self.columns, self.source)
            for start in range(0, len(frame), rows):
                part = frame.iloc[start:start + rows].reset_index(drop=True)
                data = read_pool(part, self.fields, name=self.source, first_row=first)
                first += len(part)
                yield self._unique_across_chunks(data, explicit, derived)

    def _unique_across_chunks(self, data: PoolData, explicit: dict[str, int], derived: dict[str, int]) -> PoolData:
        """`data` less the rows whose derived id an earlier chunk has (skipped as duplicates); an id given twice is an
        error naming both rows, as in `read_pool`. `explicit` / `derived`: id -> row, of the chunks read so far."""
        samples, rows, skipped = [], [], list(data.skipped)
        for sample, row in zip(data.samples, data.rows, strict=True):
            sid = str(sample.id)
            if sid == stable_id(sample):  # given without an id: its content id
                if sid in derived:
                    skipped.append((row, f"duplicate of row {derived[sid]} (same text, no id)"))
                    continue
                if sid in explicit:
                    _check_unique({sid: [explicit[sid]]}, {sid: row}, self.source)
                derived[sid] = row
            else:
                if sid in explicit:
                    _check_unique({sid: [explicit[sid], row]}, {}, self.source)
                if sid in derived:
                    _check_unique({sid: [row]}, {sid: derived[sid]}, self.source)
                explicit[sid] = row
            samples.append(sample)
            rows.append(row)
        return PoolData(samples=samples, skipped=sorted(skipped), rows=rows, n_rows=data.n_rows, source=self.source,
                        fields=self.fields)

    def count(self, rows: int = STREAM_CHUNK_ROWS) -> tuple[int, int]:
        """(usable samples, records) of the whole source, reading it once (ids checked unique); InputDataError, with
        the first reasons, when no row is usable."""
        n_samples = n_rows = n_skipped = 0
        first: list[tuple[int, str]] = []
        for chunk in self.chunks(rows):
            n_samples, n_rows, n_skipped = n_samples + len(chunk), n_rows + chunk.n_rows, n_skipped + len(chunk.skipped)
            first.extend(chunk.skipped[:3 - len(first)])
        if n_samples == 0:
            reasons = "; ".join(f"row {r}: {why}" for r, why in first)
            raise InputDataError(f"{self.source}: no usable rows ({n_skipped} skipped" + (f": {reasons}" if reasons
                                                                                         else "") + ")")
        return n_samples, n_rows

    def read_all(self) -> PoolData:
        """The whole pool in memory (for the sharded build, or a small pool)."""
        samples, rows, skipped, n_rows = [], [], [], 0
        for chunk in self.chunks():
            samples += chunk.samples
            rows += chunk.rows
            skipped += chunk.skipped
            n_rows += chunk.n_rows
        return PoolData(samples=samples, skipped=skipped, rows=rows, n_rows=n_rows, source=self.source,
                        fields=self.fields)


def _batch_frame(batch: Any, columns: Sequence[str], source: str) -> pd.DataFrame:
    """One batch as an object-dtype DataFrame with every column of `columns` (None where the batch lacks one); cells
    hold Python values, as `read_table` gives them."""
    import pyarrow as pa

    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        _check_columns(batch.schema.names, source)
        data = {}
        for name, col in zip(batch.schema.names, batch.columns, strict=True):
            try:
                data[str(name)] = pd.Series(col.to_pylist(), dtype=object)
            except (pa.ArrowException, UnicodeDecodeError) as exc:
                raise InputDataError(f"{source}: column {name!r} cannot be decoded: {exc}") from exc
        frame = pd.DataFrame(data, dtype=object)
    elif isinstance(batch, pd.DataFrame):
        _check_columns(batch.columns, source)
        frame = batch.astype(object)
        frame.columns = [str(c) for c in frame.columns]
    elif isinstance(batch, dict):
        lengths = {len(v) for v in batch.values()}
        if len(lengths) > 1:
            raise InputDataError(f"{source}: a batch's columns have different lengths {sorted(lengths)}")
        frame = pd.DataFrame({str(k): pd.Series(list(v), dtype=object) for k, v in batch.items()}, dtype=object)
    elif isinstance(batch, list) and all(isinstance(r, dict) for r in batch):
        frame = _records_frame(batch)
    else:
        raise InputDataError(f"{source}: a batch must be an Arrow table, a DataFrame, a dict of columns or a list of "
                             f"records (dicts), got {type(batch).__name__}")
    for name in columns:
        if name not in frame.columns:
            frame[name] = pd.Series([None] * len(frame), dtype=object)
    return frame


def stream_pool(source: Any, fields: FieldMap | dict[str, str | None] | None = None) -> PoolStream | None:
    """A PoolStream over a pool held where people keep large ones, or None for anything else (a file `read_pool`
    reads whole, a DataFrame, samples):

    - a folder written by `datasets`' `Dataset.save_to_disk` (memory-mapped by `datasets.load_from_disk`);
    - a folder of Arrow files (IPC file or stream format) or of Parquet files (sharded; subfolders included, names
      starting with '.' or '_' left out), read in file-name order; an `.arrow` file;
    - a `datasets.Dataset` or `IterableDataset` (a DatasetDict: pick a split first);
    - a PoolStream (returned as it is)."""
    if isinstance(source, PoolStream):
        return source
    if _is_datasets_object(source):
        return dataset_stream(source, fields)
    if not isinstance(source, (str, Path)):
        return None
    path = Path(source).expanduser()
    if path.is_dir():
        return _folder_stream(path, fields)
    if path.suffix.lower() == ".arrow":
        if not path.is_file():
            raise InputDataError(f"no such file: {str(path)!r}")
        return _arrow_stream([path], str(path), fields)
    return None


def _is_datasets_object(obj: Any) -> bool:
    import sys

    ds = sys.modules.get("datasets")  # an object of `datasets` exists only once the module is imported
    return ds is not None and isinstance(obj, (ds.Dataset, ds.IterableDataset, ds.DatasetDict, ds.IterableDatasetDict))


def _folder_stream(path: Path, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    if (path / "dataset_dict.json").is_file():
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
        raise InputDataError(f"{path} holds a `datasets` DatasetDict with the splits {splits}: give one split's folder"
                             + (f", e.g. {path / splits[0]}" if splits else ""))
    if all((path / name).is_file() for name in _DATASET_FOLDER_FILES):
        import datasets

        try:
            ds = datasets.load_from_disk(str(path))
        except (OSError, ValueError, KeyError, datasets.exceptions.DatasetsError) as exc:
            raise InputDataError(f"{path}: not a readable `datasets` folder: {exc}") from exc
        return dataset_stream(ds, fields, str(path))
    files = sorted(f for f in path.rglob("*") if f.is_file() and not any(
        part.startswith((".", "_")) for part in f.relative_to(path).parts))
    parquet = [f for f in files if f.suffix.lower() in (".parquet", ".pq")]
    arrow = [f for f in files if f.suffix.lower() == ".arrow"]
    if parquet and arrow:
        raise InputDataError(f"{path} holds both Parquet and Arrow files; give a folder of one kind")
    if parquet:
        return _parquet_stream(parquet, str(path), fields)
    if arrow:
        return _arrow_stream(arrow, str(path), fields)
    raise InputDataError(f"{path} is a folder without .parquet or .arrow files (nor a `datasets` save_to_disk folder); "
                         "give a pool file (.jsonl, .json, .csv, .parquet) or such a folder")


def _union_columns(schemas: Iterable[tuple[Path, Sequence[str]]]) -> list[str]:
    columns: dict[str, None] = {}
    for file, names in schemas:
        _check_columns(names, str(file))
        columns.update(dict.fromkeys(map(str, names)))
    return list(columns)


def _parquet_stream(files: list[Path], source: str, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas, n_rows = [], 0
    for file in files:
        try:
            meta = pq.read_metadata(file)
        except (pa.ArrowException, OSError) as exc:
            raise InputDataError(f"{file}: not a readable Parquet file: {exc}") from exc
        schemas.append((file, meta.schema.to_arrow_schema().names))
        n_rows += meta.num_rows

    def open_batches(rows: int) -> Iterator[Any]:
        for file in files:
            try:
                reader = pq.ParquetFile(file)
            except (pa.ArrowException, OSError) as exc:
                raise InputDataError(f"{file}: not a readable Parquet file: {exc}") from exc
            try:
                yield from _checked(reader.iter_batches(batch_size=rows), file, "Parquet")
            finally:
                reader.close()

    return PoolStream.from_batches(open_batches, source, fields, n_rows, _union_columns(schemas))


def _checked(batches: Iterable[Any], file: Path, kind: str) -> Iterator[Any]:
    """`batches`, with a read error an InputDataError naming the file."""
    import pyarrow as pa

    try:
        yield from batches
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{file}: not a readable {kind} file: {exc}") from exc


def _arrow_batches(file: Path) -> tuple[Any, Iterator[Any]]:
    """(schema, record batches) of an Arrow IPC file, in the file or the stream format (`datasets` writes the
    latter), memory-mapped: a batch is read from the disk when it is used."""
    import pyarrow as pa

    try:
        source = pa.memory_map(str(file))
        try:
            reader = pa.ipc.open_file(source)
            return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:
            source.seek(0)
            reader = pa.ipc.open_stream(source)
            return reader.schema, iter(reader)
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{file}: not a readable Arrow file: {exc}") from exc


def _arrow_stream(files: list[Path], source: str, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    schemas, n_rows = [], 0
    for file in files:  # counting reads only the batches' headers: their buffers stay on disk, mapped
        schema, batches = _arrow_batches(file)
        schemas.append((file, schema.names))
        n_rows += sum(b.num_rows for b in _checked(batches, file, "Arrow"))

    def open_batches(rows: int) -> Iterator[Any]:
        for file in files:
            for batch in _checked(_arrow_batches(file)[1], file, "Arrow"):
                for start in range(0, batch.num_rows, rows):
                    yield batch.slice(start, rows)

    return PoolStream.from_batches(open_batches, source, fields, n_rows, _union_columns(schemas))


def dataset_stream(dataset: Any, fields: FieldMap | dict[str, str | None] | None = None,
                   source: str | None = None) -> PoolStream:
    """A PoolStream over a `datasets.Dataset` (memory-mapped; its row count known) or `IterableDataset` (streamed;
    its row count when the split's info has it), read as Arrow batches."""
    import datasets

    name = source or "<dataset>"
    if isinstance(dataset, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        raise InputDataError(f"{name}: a dataset with the splits {sorted(dataset)}; pick one (dataset['train'], or "
                             "--dataset NAME:SPLIT)")
    n_rows: int | None
    if isinstance(dataset, datasets.Dataset):
        n_rows, columns = dataset.num_rows, list(dataset.column_names)
    elif isinstance(dataset, datasets.IterableDataset):
        columns = list(dataset.column_names) if dataset.column_names is not None else None
        splits = getattr(dataset.info, "splits", None)
        split = str(dataset.split) if dataset.split is not None else None
        n_rows = splits[split].num_examples if splits and split in splits else None
    else:
        raise InputDataError(f"{name}: not a `datasets` dataset ({type(dataset).__name__})")
    arrow = dataset.with_format("arrow")
    return PoolStream.from_batches(lambda rows: arrow.iter(batch_size=rows), name, fields, n_rows, columns)


def parse_dataset_spec(spec: str) -> tuple[str, str]:
    """'NAME[:SPLIT]' -> (NAME, SPLIT), the split 'train' when none is given; NAME is a hub id or a local folder or
    script `datasets.load_dataset` takes."""
    name, _, split = spec.partition(":")
    name, split = name.strip(), split.strip() or "train"
    if not name:
        raise InputDataError(f"--dataset {spec!r}: give NAME or NAME:SPLIT, e.g. imdb:train")
    return name, split


def dataset_pool(spec: str, fields: FieldMap | dict[str, str | None] | None = None, config_name: str | None = None,
                 streaming: bool = False) -> PoolStream:
    """A PoolStream over `datasets.load_dataset(NAME, config_name, split=SPLIT, streaming=streaming)` for
    spec 'NAME[:SPLIT]' (`parse_dataset_spec`). Not streaming, `datasets` prepares the split once in its cache and
    memory-maps it (the row count is known, and a second read costs no download); streaming reads it from the
    source on every read."""
    import datasets

    name, split = parse_dataset_spec(spec)
    try:
        dataset = datasets.load_dataset(name, config_name, split=split, streaming=streaming)
    except (OSError, ValueError, KeyError, datasets.exceptions.DatasetsError) as exc:
        raise InputDataError(f"cannot load dataset {spec!r}: {exc}") from exc
    return dataset_stream(dataset, fields, f"{name}:{split}")
