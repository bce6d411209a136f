"""What people give the explorer: a pool file (uploaded, or bundled), typed queries, typed lines.

The three pages that take a file (Build index, Select data, Diagnostics) read it through `PoolFile`, so a file is
read one way everywhere: the format from its extension, the rows by `rise_core.ingest`, errors naming the file. An
upload is held to `rise_core.ingest_limits.PoolLimits` (set by RISE_MAX_* environment variables) before it is read.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from rise_core.errors import InputDataError
from rise_core.ingest import FORMATS, detect_format, read_pool, read_table
from rise_core.ingest_limits import PoolLimits, check_pool, check_upload_size
from rise_core.samples import Sample

if TYPE_CHECKING:
    import pandas as pd

    from rise_core.ingest import FieldMap, PoolData

UPLOAD_TYPES = list(FORMATS)  # what the pages' file uploaders accept


class UploadedFileLike(Protocol):
    """What the pages need of an upload (Streamlit's `UploadedFile` is one)."""

    name: str

    def getvalue(self) -> bytes: ...  # Streamlit's also has `size` (bytes), read first when present


@dataclass(frozen=True)
class PoolFile:
    """A pool file picked on a page: its name (the file's stem, for default index names), format and content (a
    bundled file's path, or an upload's bytes)."""

    name: str
    fmt: str
    source: Path | bytes
    file_name: str = ""  # how errors name an upload

    @classmethod
    def from_upload(cls, upload: UploadedFileLike, limits: PoolLimits | None = None) -> PoolFile:
        """An uploaded file, checked against `limits` (default: `PoolLimits.from_env()`) before anything reads it in
        full; InputDataError when its extension names no supported format or it passes a limit."""
        limits = limits or PoolLimits.from_env()
        fmt = detect_format(upload.name)
        size = getattr(upload, "size", None)
        if isinstance(size, int):  # refused before the bytes are copied
            check_upload_size(size, upload.name, limits)
        data = upload.getvalue()
        check_upload_size(len(data), upload.name, limits)
        check_pool(data, fmt, upload.name, limits)
        return cls(name=Path(upload.name).stem, fmt=fmt, source=data, file_name=upload.name)

    @classmethod
    def bundled(cls, name: str, path: Path) -> PoolFile:
        """A bundled pool (JSONL) by its name and path (see `rise_core.bundled.pool_paths`)."""
        return cls(name=name, fmt=detect_format(path), source=path)

    def _open(self) -> Path | IO[bytes]:
        if isinstance(self.source, Path):
            return self.source
        stream = io.BytesIO(self.source)
        stream.name = self.file_name or f"{self.name}.{self.fmt}"  # read errors name the file
        return stream

    def table(self) -> pd.DataFrame:
        """The file's rows and columns as they are (for a preview and the field mapping)."""
        return read_table(self._open(), self.fmt)

    def pool(self, fields: FieldMap | None = None) -> PoolData:
        """The file's samples, with the fields mapped by `fields` (None: guessed from the column names)."""
        return read_pool(self._open(), fields, self.fmt)


def parse_typed_queries(text: str) -> list[Sample]:
    """Typed queries: blocks of text separated by a blank line, each one plain-text query."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text or "")]
    queries = [Sample(text=b, id=f"q{i}") for i, b in enumerate(b for b in blocks if b)]
    if not queries:
        raise InputDataError("type at least one query (separate several queries with a blank line)")
    return queries


def parse_lines(text: str, what: str = "line") -> list[str]:
    """Non-empty lines of `text`, stripped (e.g. candidates typed one per line)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise InputDataError(f"type at least one {what}, one per line")
    return lines
