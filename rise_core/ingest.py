"""Reading a pool of samples from JSONL, JSON, CSV or Parquet, with configurable field names.

`read_table` turns a file (or uploaded bytes) into a DataFrame; `read_pool` maps its columns onto `Sample`s with a
`FieldMap` (text; prompt + completion, with an optional input column appended to the prompt as Alpaca rows have it;
or a conversation, `messages`; optional id and label), keeps every other column as metadata, gives rows
without an id a stable content id, and reports the rows it cannot use instead of dropping them silently.

Row numbers in messages and reports are 1-based positions among the file's records (JSONL: non-blank lines;
CSV: data rows after the header).
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
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
              fields: FieldMap | dict[str, str | None] | None = None, fmt: str | None = None) -> PoolData:
    """Read samples from a file (or DataFrame); unusable rows (empty text, ...) are listed in `skipped`.

    `fields`: a FieldMap, or None to guess the fields from the column names, or a dict of some field names
    ({"text": "body"}) with the rest guessed.

    Raises InputDataError for a missing field, an empty file, bad encoding or duplicate ids."""
    name = "<dataframe>" if isinstance(source, pd.DataFrame) else (
        str(source) if isinstance(source, (str, Path)) else getattr(source, "name", "<upload>"))
    if isinstance(source, pd.DataFrame):
        _check_columns(source.columns, name)
        df, is_csv = source.astype(object), False
    else:
        is_csv = _EXTENSIONS.get("." + (fmt or detect_format(name)).lower().lstrip("."), fmt) == "csv"
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
    for row, rec in enumerate(df.to_dict("records"), 1):
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
