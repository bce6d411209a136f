"""Fuzzing the pool readers: whatever bytes a user hands over, `read_pool` returns a pool or raises InputDataError
(a clear message, never a traceback), and whatever samples are written in a supported format come back verbatim."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rise_core.errors import InputDataError
from rise_core.ingest import FORMATS, read_pool

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text as users have it: any Unicode (line and paragraph separators, NEL, CR, quotes, commas, NUL included) that
# holds a visible character (a whitespace-only text is an empty sample, reported as skipped, tested elsewhere).
# Surrogates cannot be encoded as UTF-8, so no file can hold them.
texts = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40).filter(lambda t: t.strip())
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def _read(data: bytes, fmt: str):
    return read_pool(io.BytesIO(data), fmt=fmt)


@FUZZ
@given(data=st.binary(max_size=300), fmt=st.sampled_from(FORMATS))
def test_arbitrary_bytes_give_a_pool_or_a_clear_error(data, fmt):
    try:
        pool = _read(data, fmt)
    except InputDataError as exc:
        assert str(exc).startswith("<upload>: ")  # every message names the file it is about
        return
    assert len(pool.samples) + len(pool.skipped) == pool.n_rows


@FUZZ
@given(lines=st.lists(st.one_of(
    st.dictionaries(st.sampled_from(["text", "prompt", "completion", "id", "label", "x"]), json_values, max_size=5)
    .map(lambda d: json.dumps(d, ensure_ascii=False)),
    st.text(max_size=30),  # not JSON, or JSON that is not an object
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),  # nested past the decoder's recursion limit
    st.integers(1, 3000).map(lambda n: '{"text": "a", "x": ' + "[" * n + "]" * n + "}"),
), min_size=1, max_size=6))
def test_generated_jsonl_gives_a_pool_or_an_error_naming_the_line(lines):
    data = "\n".join(lines).encode("utf-8", errors="surrogatepass")
    try:
        pool = _read(data, "jsonl")
    except InputDataError as exc:
        assert str(exc).startswith("<upload>: ")
        return
    assert len(pool.samples) + len(pool.skipped) == pool.n_rows


def _frame(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"s{i}" for i in range(len(rows))], "prompt": [r[0] for r in rows],
                         "completion": [r[1] for r in rows], "note": [r[2] for r in rows]})


def _write(df: pd.DataFrame, fmt: str) -> bytes:
    if fmt == "jsonl":
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in df.to_dict("records")).encode()
    if fmt == "json":
        return json.dumps(df.to_dict("records"), ensure_ascii=False, indent=1).encode()
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


@FUZZ
@given(rows=st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=5), fmt=st.sampled_from(FORMATS))
def test_written_samples_read_back_verbatim(rows, fmt):
    df = _frame(rows)
    if fmt == "csv" and any("\x00" in t or "\r" in t for r in rows for t in r):
        return  # CSV has no way to hold NUL or a bare CR verbatim: pandas' own writer cannot round-trip them
    pool = _read(_write(df, fmt), fmt)
    assert pool.skipped == []
    assert [(s.id, s.prompt, s.completion) for s in pool.samples] == [
        (f"s{i}", p, c) for i, (p, c, _) in enumerate(rows)]
    if fmt != "csv":  # CSV metadata columns of numbers are read as numbers
        assert [s.meta["note"] for s in pool.samples] == [n for _, _, n in rows]


@pytest.mark.parametrize("depth", [5000, 100_000])
def test_a_deeply_nested_jsonl_line_is_an_error_naming_the_file_and_line(tmp_path, depth):
    path = tmp_path / "pool.jsonl"
    path.write_text('{"text": "fine"}\n' + '{"text": "x", "meta": ' + "[" * depth + "]" * depth + "}\n")
    with pytest.raises(InputDataError, match=rf"^{path}: line 2 is nested too deeply to read"):
        read_pool(path)


def test_a_deeply_nested_json_array_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text('[{"text": "fine"}, {"text": "x", "meta": ' + "[" * 5000 + "]" * 5000 + "}]")
    with pytest.raises(InputDataError, match=rf"^{path}: the file is nested too deeply to read"):
        read_pool(path)


def test_metadata_too_deep_to_store_is_a_skipped_row():
    """A metadata value nested past what can be walked (here built in memory: a DataFrame can hold what no file
    decoder returns): that row is skipped and reported, the rest of the pool is read."""
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    df = pd.DataFrame({"text": ["fine", "deep", "ok"], "meta": [1, deep, 2]}, dtype=object)
    pool = read_pool(df)
    assert [s.text for s in pool.samples] == ["fine", "ok"]
    assert pool.skipped == [(2, "a label or metadata value is nested too deeply to store")]
