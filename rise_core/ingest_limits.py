"""Limits on a pool file from an untrusted source (an upload), checked before the file is read in full.

A small file can hold a large table: Parquet compresses (a few kilobytes of zstd inflate to gigabytes), and its
dictionary pages store one long value once for any number of rows; a CSV or JSONL can hold more rows, columns or
longer cells than one user should make the machine load. `check_pool` reads a Parquet file's footer, then the file as
a stream of small dictionary-encoded batches (string values counted by their lengths, never decoded row by row), and
a text file one record at a time; it raises InputDataError naming the first limit passed, its value, and the
environment variable that raises it. `check_upload_size` holds the size of the file itself.

Each limit is a `PoolLimits` field with its environment variable; `PoolLimits.from_env()` reads them (`env_limits`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from .env_limits import EnvLimits, env_field
from .errors import InputDataError

CSV_FIELD_LIMIT = 2**31 - 1
"""The csv module's cell limit (131,072 characters by default), lifted for the process when this module is imported
(the check here and `ingest.tables`' reader, which imports it, measure every cell) and never put back: another
thread's read could put it back in the middle of one; cells are bounded by `PoolLimits.max_cell_chars` instead."""
csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))

MB = 1024 * 1024  # Streamlit's megabyte for server.maxUploadSize
_BATCH_ROWS = 4096  # rows a Parquet batch: its indices and lengths are a few arrays of this many integers
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace (json.decoder's own pattern)
_FORMAT_ALIASES = {"ndjson": "jsonl", "pq": "parquet"}  # as rise_core.ingest reads them
_FIXED_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8}  # decoded bytes a value


@dataclass(frozen=True)
class PoolLimits(EnvLimits):
    """How large a pool file the explorer (or any caller of `check_pool`) accepts, each with its environment variable.

    The defaults suit a small machine shared by a team, where one upload must not take more than about a gigabyte:
    - 50 MB a file: a quarter of Streamlit's 200 MB default; the app holds an upload's bytes in memory (and a copy while
      reading it). Larger pools are for the CLI (`rise index`), which reads files from disk.
    - 100 MB of values once decompressed and decoded: the reader holds a pool as Python objects, a few times that.
    - 100,000 rows: the bundled pools have a few thousand; indexing 100,000 rows on a CPU already takes hours.
    - 64 columns: text, prompt, completion, id, label and dozens of metadata columns; with the row limit this bounds the
      cells (6.4 million) a file of many tiny cells turns into Python objects.
    - 100,000 characters a cell: the index reads the first 512 tokens (a few thousand characters) of a text; the rest is
      kept for display only, and 100,000 characters hold any single document one would read on a page.
    """

    max_upload_mb: int = env_field(50, "RISE_MAX_UPLOAD_MB", "MB a file")
    max_pool_mb: int = env_field(100, "RISE_MAX_POOL_MB", "MB of values once decompressed")
    max_rows: int = env_field(100_000, "RISE_MAX_POOL_ROWS", "rows")
    max_columns: int = env_field(64, "RISE_MAX_POOL_COLUMNS", "columns")
    max_cell_chars: int = env_field(100_000, "RISE_MAX_CELL_CHARS", "characters a cell")

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * MB

    @property
    def max_pool_bytes(self) -> int:
        return self.max_pool_mb * MB

    def refuse(self, limit: str, name: str, found: str) -> InputDataError:
        """The error for a file that passes the limit `limit` (a field name); `found` says what the file holds."""
        meta = next(f.metadata for f in fields(self) if f.name == limit)
        value = getattr(self, limit)
        env = meta["env"]
        return InputDataError(f"{name}: {found}; the limit is {value:,} {meta['unit']} ({env}). Use a smaller file, "
                              f"or raise the limit where the app is started (e.g. {env}={value * 2})")


def check_upload_size(n_bytes: int, name: str, limits: PoolLimits) -> None:
    """InputDataError when a file of `n_bytes` is larger than `limits.max_upload_mb`."""
    if n_bytes > limits.max_upload_bytes:
        raise limits.refuse("max_upload_mb", name, f"the file is {n_bytes / MB:,.1f} MB ({n_bytes:,} bytes)")


def check_pool(data: bytes, fmt: str, name: str, limits: PoolLimits) -> None:
    """Raise InputDataError when the pool file `data` (format `fmt`, one of rise_core.ingest.FORMATS) passes a limit;
    reads no more than it must, and stops at the first limit passed.

    A file the check cannot parse is left to `rise_core.ingest.read_table`, which refuses it with its own message,
    where the reader is sure to fail at the same place: a Parquet file without a readable footer, JSON that the
    reader's own parser and line splitting refuse, text that is not UTF-8, a CSV row wider than its header. A CSV the
    csv module cannot parse and Parquet values the stream cannot read are refused here."""
    fmt = _FORMAT_ALIASES.get(fmt, fmt)
    if fmt not in ("jsonl", "json", "csv", "parquet"):
        raise InputDataError(f"{name}: unknown format {fmt!r}")
    if not data or data.isspace():
        return  # the reader says the file is empty
    if fmt == "parquet":
        _check_parquet(data, name, limits)
        return
    if len(data) > limits.max_pool_bytes:
        raise limits.refuse("max_pool_mb", name, f"the file is {len(data) / MB:,.1f} MB")
    try:
        if fmt == "csv":
            _check_csv(data, name, limits)
        elif fmt == "json":
            text = data.decode("utf-8-sig")
            if text.lstrip().startswith("["):
                _check_records(_array_items(text, name), name, limits, "item")
            else:
                _check_records(_json_lines(io.StringIO(text, newline="\n"), name, limits), name, limits, "line")
        else:
            stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="\n")
            _check_records(_json_lines(stream, name, limits), name, limits, "line")
    except UnicodeDecodeError:
        return  # the reader names the byte and how to re-encode


class _Unreadable(Exception):
    """A record the check cannot parse: the reader refuses the file at that record."""


def _longest_line(limits: PoolLimits) -> int:
    """A bound on the line a file within the limits holds: the most columns, each a cell of the longest with its
    quotes and delimiter, twice over (a JSON line holds keys as well as values). A longer line is refused before it
    is split into cells, which bounds what one line can become in memory; JSON written with \\u escapes (up to six
    characters a character) can pass it only with several cells near the cell limit."""
    return limits.max_columns * (limits.max_cell_chars + 3) * 2


def _check_line_length(line: str, number: int, name: str, limits: PoolLimits) -> None:
    """Refuse a line too long for any row within the limits, before it is split into cells."""
    if len(line) > _longest_line(limits):
        raise limits.refuse("max_cell_chars", name,
                            f"line {number} has {len(line):,} characters, more than {limits.max_columns} cells "
                            f"(RISE_MAX_POOL_COLUMNS) within the limit could fill")


def _json_lines(stream: Iterable[str], name: str, limits: PoolLimits) -> Iterator[tuple[int, int, Any]]:
    """(line number, length, record) for the non-blank lines of a JSONL stream, split on "\\n" as the reader does;
    stops (`_Unreadable`) at a line the reader refuses."""
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        _check_line_length(line, number, name, limits)
        yield number, len(line), _loads(line, name, f"line {number}")


def _array_items(text: str, name: str) -> Iterator[tuple[int, int, Any]]:
    """(item number, length, item) for each item of a JSON array, decoded one at a time."""
    decoder = json.JSONDecoder()
    pos = _JSON_SPACE.match(text, text.index("[") + 1).end()
    number = 0
    while pos < len(text) and text[pos] != "]":
        number += 1
        item, end = _loads(text, name, f"item {number}", decoder, pos)
        yield number, end - pos, item
        pos = _JSON_SPACE.match(text, end).end()
        if text[pos:pos + 1] == ",":
            pos = _JSON_SPACE.match(text, pos + 1).end()
        elif text[pos:pos + 1] != "]":
            raise _Unreadable


def _loads(text: str, name: str, where: str, decoder: json.JSONDecoder | None = None, pos: int = 0) -> Any:
    """json.loads(text), or decoder.raw_decode(text, pos); `_Unreadable` where the reader's json.loads fails too,
    InputDataError for what it would not catch (an integer of more digits than Python converts)."""
    try:
        return json.loads(text) if decoder is None else decoder.raw_decode(text, pos)
    except (json.JSONDecodeError, RecursionError):
        raise _Unreadable from None
    except ValueError as exc:
        raise InputDataError(f"{name}: {where} cannot be read: {exc}") from None


def _check_records(records: Iterator[tuple[int, int, Any]], name: str, limits: PoolLimits, unit: str) -> None:
    columns: set[str] = set()
    rows = 0
    try:
        for number, length, record in records:
            if not isinstance(record, dict):
                return  # the reader refuses a record that is not an object
            rows += 1
            if rows > limits.max_rows:
                raise limits.refuse("max_rows", name, f"it has more than {limits.max_rows:,} rows")
            columns.update(record)
            if len(columns) > limits.max_columns:
                raise limits.refuse("max_columns", name, f"its records have {len(columns):,} different keys by "
                                    f"{unit} {number}")
            if length > limits.max_cell_chars:  # a decoded string is never longer than the JSON that holds it
                longest = _longest_string(record)
                if longest > limits.max_cell_chars:
                    raise limits.refuse("max_cell_chars", name, f"{unit} {number} holds a text of {longest:,} "
                                        "characters")
    except _Unreadable:
        return


def _longest_string(value: Any) -> int:
    """The longest string (keys included) anywhere in a decoded JSON value."""
    longest, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            longest = max(longest, max(map(len, item), default=0))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return longest


def _csv_lines(stream: Iterable[str], name: str, limits: PoolLimits) -> Iterator[str]:
    for number, line in enumerate(stream, 1):
        _check_line_length(line, number, name, limits)
        yield line


def _check_csv(data: bytes, name: str, limits: PoolLimits) -> None:
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")
    reader = csv.reader(_csv_lines(stream, name, limits))
    rows = -1  # data rows read; the header is row 0

    def where() -> str:
        return "its header" if rows <= 0 else f"row {rows} (line {reader.line_num})"

    try:
        for row in reader:
            if not row:
                continue  # a blank line: skipped, as the reader does
            rows += 1
            if rows > limits.max_rows:
                raise limits.refuse("max_rows", name, f"it has more than {limits.max_rows:,} data rows")
            if len(row) > limits.max_columns:
                raise limits.refuse("max_columns", name, f"{where()} has {len(row):,} columns")
            longest = max(map(len, row))
            if longest > limits.max_cell_chars:
                raise limits.refuse("max_cell_chars", name, f"{where()} has a cell of {longest:,} characters")
    except csv.Error as exc:
        rows += 1  # the row being read
        raise InputDataError(f"{name}: not a readable CSV file: {exc} (line {reader.line_num})") from None


def _check_parquet(data: bytes, name: str, limits: PoolLimits) -> None:
    """The footer first (rows, columns, the decompressed size of the pages, fixed-width values, the string statistics),
    then the string values' lengths from a stream of dictionary-encoded batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(pa.BufferReader(data)).metadata  # the footer only
    except (pa.ArrowException, OSError):
        return  # no footer, no table: the reader refuses the file
    if meta.num_rows > limits.max_rows:
        raise limits.refuse("max_rows", name, f"its footer gives {meta.num_rows:,} rows")
    if meta.num_columns > limits.max_columns:
        raise limits.refuse("max_columns", name, f"it has {meta.num_columns:,} columns (nested fields counted)")
    schema = meta.schema
    text_leaves = [i for i in range(meta.num_columns) if schema.column(i).physical_type == "BYTE_ARRAY"]  # by index:
    # a dotted path would be ambiguous for a column named "a.b"
    pages = fixed = 0  # decompressed page bytes; decoded bytes of the fixed-width values
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for c in range(group.num_columns):
            chunk = group.column(c)
            pages += chunk.total_uncompressed_size
            kind = chunk.physical_type
            width = schema.column(c).length if kind == "FIXED_LEN_BYTE_ARRAY" else _FIXED_WIDTH.get(kind, 0)
            fixed += chunk.num_values * width
            if kind == "BYTE_ARRAY":
                _check_statistics(chunk, name, limits)
    if pages > limits.max_pool_bytes:
        raise limits.refuse("max_pool_mb", name, f"its pages decompress to {pages / MB:,.1f} MB")
    if fixed > limits.max_pool_bytes:
        raise limits.refuse("max_pool_mb", name, f"its numbers and fixed-size values take {fixed / MB:,.1f} MB")
    try:
        _check_parquet_values(data, text_leaves, fixed, name, limits)
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{name}: not a readable Parquet file: {exc}") from exc


def _check_statistics(chunk: Any, name: str, limits: PoolLimits) -> None:
    """Refuse a column chunk whose statistics hold a value over the cell limit (statistics give one value, the
    largest in sort order: a lower bound on the longest, so only ever a reason to refuse)."""
    import pyarrow as pa

    try:
        stats = chunk.statistics if chunk.is_stats_set else None
        extremes = (stats.min, stats.max) if stats is not None and stats.has_min_max else ()
    except (ValueError, UnicodeDecodeError, pa.ArrowException):
        return  # statistics pyarrow cannot decode: the values are counted in the stream
    longest = max((len(v) for v in extremes if isinstance(v, (str, bytes))), default=0)
    if longest > limits.max_cell_chars:
        raise limits.refuse("max_cell_chars", name, f"column {chunk.path_in_schema!r} holds a value of {longest:,} "
                            "characters (from its statistics)")


def _check_parquet_values(data: bytes, text_leaves: list[int], fixed: int, name: str, limits: PoolLimits) -> None:
    """Stream the rows in batches with every string column kept dictionary-encoded (a value stored once in a
    dictionary page stays one value however many rows repeat it), counting the decoded size from the lengths."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # extension types (JSON, geometry) read as their storage, so that read_dictionary applies to them too
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text_leaves, arrow_extensions_enabled=False)
    except TypeError:  # pyarrow before 19 has no extension types for Parquet
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text_leaves)
    rows, decoded = 0, fixed
    for batch in reader.iter_batches(batch_size=_BATCH_ROWS, use_threads=False):
        first = rows + 1
        rows += batch.num_rows
        if rows > limits.max_rows:
            raise limits.refuse("max_rows", name, f"it has more than {limits.max_rows:,} rows")
        for column_name, column in zip(batch.schema.names, batch.columns, strict=True):
            nbytes, longest = _text_sizes(column)
            decoded += nbytes
            if longest > limits.max_cell_chars:
                raise limits.refuse("max_cell_chars", name, f"column {column_name!r} holds a value of {longest:,} "
                                    f"characters (rows {first:,} to {rows:,})")
            if decoded > limits.max_pool_bytes:
                raise limits.refuse("max_pool_mb", name, f"its values take {decoded / MB:,.1f} MB once decoded by "
                                    f"row {rows:,}")


def _text_sizes(array: Any) -> tuple[int, int]:
    """(bytes, the longest value in characters) of the strings and binaries in an Arrow array, nested values
    included; a dictionary-encoded array is measured through its indices, never decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if isinstance(array, pa.ExtensionArray):
        return _text_sizes(array.storage)
    if pa.types.is_dictionary(kind):
        if not _is_text(kind.value_type):
            return 0, 0
        nbytes = pc.take(pc.binary_length(array.dictionary), array.indices)
        chars = pc.take(_char_lengths(array.dictionary), array.indices)
        return int(pc.sum(nbytes).as_py() or 0), int(pc.max(chars).as_py() or 0)
    if _is_text(kind):
        return int(pc.sum(pc.binary_length(array)).as_py() or 0), int(pc.max(_char_lengths(array)).as_py() or 0)
    if pa.types.is_struct(kind):
        children = array.flatten()
    elif pa.types.is_map(kind):
        children = [array.keys, array.items]
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        children = [array.flatten()]
    else:
        return 0, 0
    sizes = [_text_sizes(child) for child in children]
    return sum(s[0] for s in sizes), max((s[1] for s in sizes), default=0)


def _is_text(kind: Any) -> bool:
    import pyarrow as pa

    return _is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or (
        kind == getattr(pa, "binary_view", lambda: None)())


def _is_string(kind: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or (
        kind == getattr(pa, "string_view", lambda: None)())


def _char_lengths(array: Any) -> Any:
    """Characters a string (UTF-8 code points), bytes a binary value."""
    import pyarrow.compute as pc

    return pc.utf8_length(array) if _is_string(array.type) else pc.binary_length(array)
