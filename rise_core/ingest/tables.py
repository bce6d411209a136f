"""Pool files (JSONL, JSON, CSV, Parquet; a path, file object or bytes; a local file may be compressed: .gz, .bz2,
.xz) read into a DataFrame: formats from extensions, UTF-8 decoding, JSON parsing (a repeated key refused), one name
per column."""

from __future__ import annotations

import bz2
import contextlib
import csv
import gzip
import io
import json
import lzma
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import pandas as pd

from .. import ingest_limits  # noqa: F401 - importing it lifts the csv module's cell limit for the process
from ..errors import InputDataError

FORMATS = ("jsonl", "json", "csv", "parquet")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet",
               ".pq": "parquet"}


# compressed local files (`pool.jsonl.gz`): the format is the extension before it. Uploads take none of them
# (`detect_format`): a few kilobytes may decompress to gigabytes before any limit could see a row.
COMPRESSIONS = {".gz": gzip, ".bz2": bz2, ".xz": lzma}


def detect_format(name: str | Path) -> str:
    """The format an uploaded or local file's extension names (uncompressed files only: `path_format`)."""
    suffix = Path(str(name)).suffix.lower()
    try:
        return EXTENSIONS[suffix]
    except KeyError:
        raise InputDataError(f"cannot tell the format of {str(name)!r} from its extension; use one of "
                             f"{sorted(EXTENSIONS)} or give the format ({', '.join(FORMATS)})") from None


def path_format(path: str | Path) -> str:
    """`detect_format` of a local file, a compressed one too (`COMPRESSIONS`: `pool.jsonl.gz` is JSONL)."""
    p = Path(str(path))
    if p.suffix.lower() in COMPRESSIONS:
        inner = p.with_suffix("")
        if inner.suffix.lower() not in EXTENSIONS:
            raise InputDataError(f"cannot tell the format of {str(path)!r} from its extensions; name it like "
                                 f"pool.jsonl{p.suffix} (one of {sorted(EXTENSIONS)}, then one of "
                                 f"{sorted(COMPRESSIONS)})")
        return EXTENSIONS[inner.suffix.lower()]
    return detect_format(p)


@contextlib.contextmanager
def open_data(path: Path, mode: str = "rb", **kwargs: Any) -> Iterator[IO[Any]]:
    """The file at `path` opened (`open`'s `mode` and `kwargs`), decompressed as its suffix says (`COMPRESSIONS`); a
    file that cannot be read, or a damaged archive, while it is open or read is an InputDataError naming it."""
    codec = COMPRESSIONS.get(path.suffix.lower())
    try:
        with (codec.open if codec else open)(path, mode, **kwargs) as fh:
            yield fh
    except (OSError, EOFError, lzma.LZMAError) as exc:  # a damaged archive is an OSError or EOFError too
        raise InputDataError(f"cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from exc


def read_bytes(source: str | Path | IO[bytes] | bytes) -> tuple[bytes, str]:
    """(the bytes, a name for messages) of a path, file object or bytes; InputDataError for a missing or unreadable
    file or a directory."""
    if isinstance(source, (bytes, bytearray)):
        return bytes(source), "<bytes>"
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            raise InputDataError(f"no such file: {str(path)!r}")
        if path.is_dir():
            raise InputDataError(f"{str(path)!r} is a directory, not a data file")
        with open_data(path) as fh:
            return fh.read(), str(path)
    data = source.read()
    if isinstance(data, str):
        data = data.encode()
    return data, getattr(source, "name", "<upload>")


def decode_utf8(data: bytes, name: str) -> str:
    """`data` as UTF-8 text (a BOM dropped); InputDataError naming the first bad byte and its line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputDataError(
            f"{name}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line}); "
            "re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 IN > OUT`"
        ) from None


def check_columns(names: Iterable[Any], name: str) -> None:
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


# `DataFrame.attrs` key of a frame from records: {column: positions of the records without that key}, for the
# columns some record lacks (`read_pool` tells a row without a text field from a row with an empty text)
ABSENT = "rise_absent_keys"


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records (dicts) as a DataFrame with every key of any record a column (None where a record lacks it; which
    records lack which key in `attrs[ABSENT]`)."""
    # object dtype keeps ints as ints (no float upcast where a key is missing) and strings verbatim
    columns: dict[str, None] = {}
    for rec in records:
        columns.update(dict.fromkeys(rec))
    frame = pd.DataFrame({c: [rec.get(c) for rec in records] for c in columns}, dtype=object)
    absent: dict[str, set[int]] = {}
    for i, rec in enumerate(records):
        if len(rec) < len(columns):  # (a record with every key costs no look-up)
            for c in columns.keys() - rec.keys():
                absent.setdefault(c, set()).add(i)
    if absent:
        frame.attrs[ABSENT] = absent
    return frame


def read_table(source: str | Path | IO[bytes] | bytes, fmt: str | None = None) -> pd.DataFrame:
    """Read a JSONL / JSON / CSV / Parquet file (path, file object or bytes) into a DataFrame.

    CSV cells are read as text (so an id "007" or a text "42" stays verbatim); `read_pool` infers numeric
    metadata columns. Raises InputDataError for an empty or malformed file."""
    name = str(source) if isinstance(source, (str, Path)) else getattr(source, "name", "<upload>")
    fmt = (fmt or (path_format(name) if isinstance(source, (str, Path)) else detect_format(name))).lower().lstrip(".")
    fmt = EXTENSIONS.get(f".{fmt}", fmt)  # an extension ("ndjson", "pq") names its format
    if fmt not in FORMATS:
        raise InputDataError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    data, name = read_bytes(source)
    if not data.strip():
        raise InputDataError(f"{name}: the file is empty")
    if fmt == "parquet":
        return _read_parquet(data, name)
    text = decode_utf8(data, name)
    if fmt == "csv":
        table = list(csv_rows(io.StringIO(text), name))
        df = pd.DataFrame(table[1:], columns=table[0] if table else [], dtype=object)
    else:
        records = _parse_json(text, name, lines=(fmt == "jsonl"))
        df = records_frame(records)
    if len(df) == 0:
        raise InputDataError(f"{name}: the file has no rows")
    return df


def csv_rows(lines: Iterable[str], name: str, *, strict: bool = True, empty_extra: bool = True) -> Iterator[list[str]]:
    """The header (an empty name made 'Unnamed: i', as pandas names it), then each data row of CSV text, every row
    as wide as the header (a short one padded with empty cells); blank lines are skipped.

    A row with more cells than the header is an InputDataError naming the file, the row and its line: an unquoted
    comma must not shift or drop a cell. `empty_extra`: extra cells that are all empty (a trailing comma) are dropped
    instead. `strict`: text the csv module can split only by guessing (a quote never closed) is an error too."""
    last = ""  # the line the reader took last: tells an unquoted blank line from a quoted blank cell

    def tracked() -> Iterator[str]:
        nonlocal last
        for raw in lines:
            last = raw
            yield raw

    reader = csv.reader(tracked(), strict=strict)
    width, row = 0, 0
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _csv_error(name, exc, row + 1 if width else 0, line) from None
        if len(cells) <= 1 and not "".join(cells).strip() and '"' not in last:
            continue  # a blank line (pandas skips one of spaces too)
        if not width:
            check_columns(cells, name)
            width = len(cells)
            yield [cell or f"Unnamed: {i}" for i, cell in enumerate(cells)]
            continue
        row += 1
        if len(cells) > width:
            if any(cells[width:]) or not empty_extra:
                raise _wide_row(name, row, line, cells, width)
            del cells[width:]
        yield cells + [""] * (width - len(cells))


def _wide_row(name: str, row: int, line: int, cells: list[str], width: int) -> InputDataError:
    fix = ("remove the trailing commas" if not any(cells[width:]) else
           'quote every cell that holds a comma ("the cat, the dog"), or name every column in the header')
    return InputDataError(f"{name}: row {row} (line {line}) has {len(cells)} cells where the header has {width}; "
                          f"{fix}")


def _csv_error(name: str, exc: csv.Error, row: int, line: int) -> InputDataError:
    """The error for CSV text the csv module cannot split, at data row `row` (0: the header) starting at `line`."""
    why = str(exc)
    if "unexpected end of data" in why:
        why = "a quoted cell is never closed (a quote inside a quoted cell is written twice: \"\")"
    elif "new-line character" in why:
        why = "a carriage return inside an unquoted cell; quote the cell"
    elif "expected after" in why:
        why = f"{why} (a quote inside a quoted cell is written twice: \"\")"
    where = "its header" if not row else f"row {row}"
    return InputDataError(f"{name}: not a readable CSV file: {where} (line {line}): {why}")


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


def json_row(line: str, name: str, lineno: int) -> dict[str, Any]:
    """One line of JSON Lines as a record; InputDataError naming the line when it is not a JSON object."""
    rec = _loads(line, name, f"line {lineno}")
    if not isinstance(rec, dict):
        raise InputDataError(f"{name}: line {lineno} is a JSON {type(rec).__name__}, expected an object")
    return rec


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _parse_json(text: str, name: str, lines: bool) -> list[dict[str, Any]]:
    """The records of JSON text: an array of objects or one object (`lines` False), else JSON Lines."""
    stripped = text.lstrip()
    if not lines and stripped.startswith("["):
        records = _loads(text, name, "the file")
        bad = next((i for i, r in enumerate(records, 1) if not isinstance(r, dict)), None)
        if bad is not None:
            raise InputDataError(f"{name}: item {bad} of the JSON array is not an object")
        return records
    if stripped.startswith(("{", "[")) and not _is_json(stripped.split("\n", 1)[0]):
        # the first line is no JSON value by itself: one document spread over lines (pretty-printed)
        if not lines:
            return [_loads(text, name, "the file")]  # one object: a pool of one row
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            doc = None  # not one document either: the line's error below
        if isinstance(doc, (dict, list)):
            raise InputDataError(f"{name}: this looks like one JSON {'object' if isinstance(doc, dict) else 'array'} "
                                 "spread over several lines, not JSON Lines (one object per line): save it as .json, "
                                 "or write one object per line")
    # split on "\n" only: JSON strings may hold U+2028, U+0085 and other characters str.splitlines breaks at
    return [json_row(line, name, lineno) for lineno, line in enumerate(text.split("\n"), 1) if line.strip()]


def _read_parquet(data: bytes, name: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        check_columns(pq.read_schema(pa.BufferReader(data)).names, name)  # read_table fails on a repeated name
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
