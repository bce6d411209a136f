"""The pool's span counts (`rise_core.span_counts`) persisted beside the index: `<index>.spans.npz`.

The file is an uncompressed .npz: `meta` (JSON: format, version, index uuid, rows covered, max_n, the digest of
those rows' content hashes), `words` (the vocabulary, newline-joined: a word never holds whitespace) and per field
`<field>.codes` / `<field>.counts` (spans in 2+ rows) and `<field>.single` (spans in one row). It is written to a
temporary file and renamed over the old one, so a reader sees a whole file or none; a build brings it up to date
when it finishes (`update_span_counts`), counting only the appended rows when the file covers the rows before them,
and a reader does the same on first use if it is missing or behind. It is trusted only when its uuid, format and
max_n fit and the digest of the rows it covers matches the index; otherwise it is recomputed from the stored texts.
`files.set_aside` moves it with the index (a companion `<name>.*`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..span_counts import FIELDS, SpanCounts, check_max_n, count_rows

if TYPE_CHECKING:
    from .reader import IndexReader

logger = logging.getLogger(__name__)
SPANS_SUFFIX = ".spans.npz"
SPANS_FORMAT = "rise-spans"
SPANS_FORMAT_VERSION = 1
MAX_N = 3  # what a build stores: every span of up to 3 words (serves any max_n <= 3)


def spans_path(index_path: str | Path) -> Path:
    return Path(str(index_path) + SPANS_SUFFIX)


def rows_digest(index: IndexReader, stop: int) -> str:
    """sha1 of the content hashes of rows 0..stop-1 in row order (a row's hash covers its text fields)."""
    import pyarrow as pa

    with index._cursor("read content hashes from") as cur:
        table = cur.sql("SELECT content_sha1 FROM rise_samples WHERE row < $1 ORDER BY row",
                        params=[stop]).to_arrow_table()
    col = table.column("content_sha1")
    digest = hashlib.sha1(str(stop).encode())
    for chunk in col.chunks:
        if len(chunk):
            width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
            off = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
            digest.update(memoryview(chunk.buffers()[2])[off[0]:off[-1]])
    return digest.hexdigest()


def read_texts(index: IndexReader, start: int, stop: int) -> tuple[list[Any], list[Any], list[Any]]:
    """(text, prompt, completion) of rows start..stop-1, None where a row lacks a field."""
    with index._cursor("read texts from") as cur:
        table = cur.sql("SELECT text, prompt, completion FROM rise_samples WHERE row >= $1 AND row < $2 ORDER BY row",
                        params=[start, stop]).to_arrow_table()
    return tuple(table.column(c).to_pylist() for c in ("text", "prompt", "completion"))  # type: ignore[return-value]


def _meta(index: IndexReader, counts: SpanCounts, digest: str) -> dict[str, Any]:
    return {"format": SPANS_FORMAT, "format_version": SPANS_FORMAT_VERSION, "index_uuid": index.manifest.index_uuid,
            "n_rows": counts.n_rows, "max_n": counts.max_n, "rows_digest": digest, "n_words": len(counts.words)}


def write_span_counts(index: IndexReader, counts: SpanCounts, digest: str) -> Path:
    """Write the sidecar (all of `counts`, singles included) through a temporary file renamed over the old one."""
    assert counts.single is not None
    path = spans_path(index.path)
    arrays: dict[str, np.ndarray] = {
        "meta": np.frombuffer(json.dumps(_meta(index, counts, digest)).encode(), dtype=np.uint8),
        "words": np.frombuffer("\n".join(counts.words).encode(), dtype=np.uint8)}
    for f, (codes, rows) in counts.kept.items():
        arrays[f"{f}.codes"], arrays[f"{f}.counts"] = codes.astype("<i8"), rows.astype("<i4")
        arrays[f"{f}.single"] = counts.single[f].astype("<i8")
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def _read_meta(path: Path) -> tuple[dict[str, Any], Any] | None:
    """(meta, open NpzFile) of the sidecar, or None when it is missing or unreadable."""
    try:
        npz = np.load(path, allow_pickle=False)
        meta = json.loads(bytes(npz["meta"]).decode())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        logger.warning("%s is unreadable (%s); the span counts are recomputed", path, exc)
        return None
    return meta, npz


def _usable_prefix(index: IndexReader, meta: dict[str, Any], max_n: int) -> str | None:
    """Why the sidecar cannot be used as counts of a prefix of this index's rows (None: it can)."""
    if meta.get("format") != SPANS_FORMAT or meta.get("format_version") != SPANS_FORMAT_VERSION:
        return f"format {meta.get('format')!r} version {meta.get('format_version')!r}"
    if meta.get("index_uuid") != index.manifest.index_uuid:
        return "another index's counts (uuid differs)"
    if not isinstance(meta.get("max_n"), int) or meta["max_n"] < max_n:
        return f"spans of up to {meta.get('max_n')} words, {max_n} asked"
    n = meta.get("n_rows")
    if not isinstance(n, int) or not 0 <= n <= len(index):
        return f"counts of {n} rows, the index has {len(index)}"
    if meta.get("rows_digest") != rows_digest(index, n):
        return "the rows' content differs"
    return None


def _load(npz: Any, meta: dict[str, Any], single: bool) -> SpanCounts:
    raw = bytes(npz["words"]).decode()
    words = raw.split("\n") if raw else []
    if len(words) != meta.get("n_words"):
        raise ValueError(f"{len(words)} words where the meta says {meta.get('n_words')}")
    kept, singles = {}, {}
    for f in FIELDS:
        if f"{f}.codes" in npz.files:
            kept[f] = (npz[f"{f}.codes"].astype(np.int64, copy=False), npz[f"{f}.counts"].astype(np.int32, copy=False))
            if single:
                singles[f] = npz[f"{f}.single"].astype(np.int64, copy=False)
    return SpanCounts(int(meta["n_rows"]), int(meta["max_n"]), words, kept, singles if single else None)


def load_span_counts(index: IndexReader, max_n: int = MAX_N, single: bool = False) -> SpanCounts | None:
    """The sidecar's counts when they are this index's current counts (all its rows, max_n or more words); None when
    missing or stale. `single`: load the single-row spans too (what an append needs)."""
    check_max_n(max_n)
    found = _read_meta(spans_path(index.path))
    if found is None:
        return None
    meta, npz = found
    with npz:
        why = _usable_prefix(index, meta, max_n)
        if why is None and meta["n_rows"] != len(index):
            why = f"counts of {meta['n_rows']} of {len(index)} rows"
        if why is not None:
            logger.info("%s: span counts not current (%s)", index.path, why)
            return None
        try:
            return _load(npz, meta, single).limited(max_n)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
            logger.warning("%s: damaged span counts (%s); recomputing", index.path, exc)
            return None


def update_span_counts(index: IndexReader, max_n: int = MAX_N) -> SpanCounts:
    """The index's current span counts, bringing the sidecar up to date: loaded when current; extended by the rows
    past those it covers (counted alone) when it covers a prefix of the index; else counted from every row. Written
    back when changed (a directory that cannot be written keeps them in memory only, with a warning)."""
    check_max_n(max_n)
    n = len(index)
    base: SpanCounts | None = None
    found = _read_meta(spans_path(index.path))
    if found is not None:
        meta, npz = found
        with npz:
            why = _usable_prefix(index, meta, max_n)
            if why is None and meta["max_n"] != max_n:
                why = f"spans of up to {meta['max_n']} words, {max_n} kept"
            if why is None:
                try:
                    base = _load(npz, meta, single=True)
                except (OSError, ValueError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
                    why = f"damaged: {exc}"
            if why is not None:
                logger.info("%s: recomputing the span counts (%s)", index.path, why)
    if base is not None and base.n_rows == n:
        return base
    start = base.n_rows if base is not None else 0
    counts = count_rows(*read_texts(index, start, n), max_n=max_n, base=base)
    try:
        write_span_counts(index, counts, rows_digest(index, n))
    except OSError as exc:
        logger.warning("cannot write the span counts beside %s (%s); they are kept in memory only", index.path, exc)
    return counts
