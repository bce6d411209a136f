"""Upload limits (rise_core.ingest_limits, explorer.uploads.PoolFile.from_upload): files that inflate, or hold too many
rows, columns or too long cells, are refused with a message naming the limit and its variable before anything reads
them in full; the bundled pools pass; the Build page shows the message, not a traceback."""

from __future__ import annotations

import gzip
import io
import json
import re
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from explorer.uploads import PoolFile
from rise_core.errors import ConfigError, InputDataError
from rise_core.ingest import read_table
from rise_core.ingest_limits import MB, PoolLimits, check_pool, check_upload_size

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CELL = 5_000_000  # characters in each cell of the Parquet bombs
BOMB_ROWS = 20  # 20 x 5 MB: 100 MB once decoded


@dataclass
class Upload:
    """An upload as the pages get it (Streamlit's UploadedFile: name, size, getvalue)."""

    name: str
    data: bytes
    size: int | None = None

    def getvalue(self) -> bytes:
        return self.data


class SizeOnlyUpload(Upload):
    """An upload whose bytes must not be needed: `size` alone decides."""

    def getvalue(self) -> bytes:
        raise AssertionError("the bytes were read although the size was over the limit")


def refused(data: bytes, fmt: str, limits: PoolLimits | None = None) -> str:
    """The message check_pool refuses `data` with (fails when it is accepted)."""
    with pytest.raises(InputDataError) as info:
        check_pool(data, fmt, f"pool.{fmt}", limits or PoolLimits())
    return str(info.value)


def names_limit(message: str, env: str, value: int) -> bool:
    """The message names the limit's value and the variable that raises it (a page shows it escaped: explorer.plain's
    backslashes and word joiners are taken out first)."""
    message = re.sub(r"\\(.)", r"\1", message).replace("\u2060", "")
    return f"the limit is {value:,}" in message and f"({env})" in message and f"{env}={value * 2}" in message


def parquet_bytes(table: pa.Table, **options) -> bytes:
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd", store_schema=False, **options)  # as a foreign writer: no Arrow schema
    return out.getvalue()


def dictionary_bomb(rows: int = BOMB_ROWS, cell: int = CELL, column: str = "text") -> bytes:
    """`rows` rows of one `cell`-character string: stored once in the dictionary page, so the file is a few hundred
    bytes; any reader that decodes it holds rows x cell bytes. Written from a dictionary array, so the test never
    holds the inflated column either."""
    values = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["a" * cell]))
    return parquet_bytes(pa.table({column: values}))


_PEAK_POOLS: list[pa.MemoryPool] = []  # kept alive: a buffer allocated in one frees through it, whenever it is freed


@contextmanager
def arrow_peak() -> Iterator[pa.MemoryPool]:
    """A memory pool that records the peak of what pyarrow allocates inside the block (`.max_memory()`)."""
    previous = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(previous)
    _PEAK_POOLS.append(pool)
    pa.set_memory_pool(pool)
    try:
        yield pool
    finally:
        pa.set_memory_pool(previous)


def python_peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------- settings


def test_limits_come_from_the_environment():
    assert PoolLimits.from_env({}) == PoolLimits()
    env = {"RISE_MAX_UPLOAD_MB": "7", "RISE_MAX_POOL_MB": " 9 ", "RISE_MAX_POOL_ROWS": "10", "RISE_MAX_POOL_COLUMNS": "3",
           "RISE_MAX_CELL_CHARS": "11"}
    assert PoolLimits.from_env(env) == PoolLimits(7, 9, 10, 3, 11)
    assert {f.metadata["env"] for f in fields(PoolLimits)} == set(env)  # every limit has its variable
    with pytest.raises(ConfigError, match=r"RISE_MAX_POOL_ROWS='lots': give a whole number of at least 1 \(rows\)"):
        PoolLimits.from_env({"RISE_MAX_POOL_ROWS": "lots"})
    with pytest.raises(ConfigError, match="RISE_MAX_CELL_CHARS='0': give a whole number of at least 1"):
        PoolLimits.from_env({"RISE_MAX_CELL_CHARS": "0"})


def test_streamlit_config_and_app_script_agree_with_the_default_upload_limit():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == PoolLimits().max_upload_mb
    script = (ROOT / "scripts" / "app.sh").read_text()
    flag = re.search(r'--server\.maxUploadSize "\$\{RISE_MAX_UPLOAD_MB:-(\d+)\}"', script)
    assert flag and int(flag.group(1)) == PoolLimits().max_upload_mb


# ---------------------------------------------------------------- upload size


def test_an_upload_over_the_size_limit_is_refused_before_its_bytes_are_read(monkeypatch):
    monkeypatch.setenv("RISE_MAX_UPLOAD_MB", "1")
    with pytest.raises(InputDataError) as info:
        PoolFile.from_upload(SizeOnlyUpload("big.jsonl", b"", size=MB + 1))
    assert names_limit(str(info.value), "RISE_MAX_UPLOAD_MB", 1) and "big.jsonl: the file is 1.0 MB (1,048,577 bytes)" in str(info.value)
    line = json.dumps({"text": "the cat sat on the mat ."}).encode() + b"\n"
    data = line * (MB // len(line) + 1)  # just over 1 MB, and no `size`: measured from the bytes
    with pytest.raises(InputDataError, match="RISE_MAX_UPLOAD_MB"):
        PoolFile.from_upload(Upload("big.jsonl", data))
    assert len(PoolFile.from_upload(Upload("ok.jsonl", data[:MB - MB % len(line)])).table()) == MB // len(line)
    check_upload_size(MB, "exactly.jsonl", PoolLimits(max_upload_mb=1))  # the limit itself is allowed


# ---------------------------------------------------------------- Parquet


@pytest.mark.parametrize("column", ["text", "a.b"])  # a dotted name: no path for the reader to mistake
def test_a_parquet_dictionary_bomb_is_refused_without_inflating_it(column):
    """400 bytes that decode to 100 MB. The check streams the column as a dictionary (the one 5 MB value, held once)
    and counts the rows' lengths through the indices, so what it allocates is bounded by a few copies of the largest
    stored value (the decompressed dictionary page, the dictionary built from it: about 3 x 5 MB measured), against the
    100 MB a full read decodes; we allow 4 values (20 MB), a fifth of the inflated size. The Python side is the
    messages and a few objects (tracemalloc: well under 1 MB)."""
    bomb = dictionary_bomb(column=column)
    assert len(bomb) < 2_000
    limits = PoolLimits(max_cell_chars=2 * CELL, max_pool_mb=50)  # so that the decoded size is the limit passed
    with arrow_peak() as pool:
        message = refused(bomb, "parquet", limits)
    assert names_limit(message, "RISE_MAX_POOL_MB", 50) and "once decoded" in message
    assert pool.max_memory() < 4 * CELL
    assert python_peak(lambda: refused(bomb, "parquet", limits)) < MB
    with arrow_peak() as pool:  # the bomb is real: a full read holds the 100 MB
        assert read_table(bomb, "parquet").shape == (BOMB_ROWS, 1)
    assert pool.max_memory() >= BOMB_ROWS * CELL


def test_a_parquet_bomb_with_long_cells_names_the_cell_limit():
    message = refused(dictionary_bomb(), "parquet")
    assert names_limit(message, "RISE_MAX_CELL_CHARS", 100_000)
    assert "column 'text' holds a value of 5,000,000 characters" in message


def test_parquet_pages_that_decompress_past_the_limit_are_refused_from_the_footer():
    """Distinct values (no dictionary): the footer's page sizes say 20 MB, so nothing is decompressed; pyarrow
    allocates only for the footer (a few KB; 1 MB allowed) against the 20 MB a read would."""
    data = parquet_bytes(pa.table({"text": [f"{i:02d}" + "b" * (MB - 2) for i in range(20)]}), use_dictionary=False)
    assert len(data) < 100_000
    with arrow_peak() as pool:
        message = refused(data, "parquet", PoolLimits(max_pool_mb=10, max_cell_chars=2 * MB))
    assert names_limit(message, "RISE_MAX_POOL_MB", 10) and "its pages decompress to 20.0 MB" in message
    assert pool.max_memory() < MB


def test_parquet_rows_columns_and_fixed_width_values_are_checked_from_the_footer():
    rows = parquet_bytes(pa.table({"text": pa.array(["x"] * 11)}))
    assert names_limit(refused(rows, "parquet", PoolLimits(max_rows=10)), "RISE_MAX_POOL_ROWS", 10)
    check_pool(rows, "parquet", "ok.parquet", PoolLimits(max_rows=11))
    wide = parquet_bytes(pa.table({f"c{i}": [1] for i in range(5)}))
    assert names_limit(refused(wide, "parquet", PoolLimits(max_columns=4)), "RISE_MAX_POOL_COLUMNS", 4)
    # 3,000 rows of one 1,000-byte fixed-size value: a dictionary of one value stored, 3 MB decoded
    blob = pa.DictionaryArray.from_arrays(pa.array([0] * 3000, pa.int32()), pa.array([b"z" * 1000], pa.binary(1000)))
    message = refused(parquet_bytes(pa.table({"blob": blob})), "parquet", PoolLimits(max_pool_mb=2))
    assert "fixed-size values take 2.9 MB" in message and "RISE_MAX_POOL_MB" in message


def test_parquet_strings_inside_lists_structs_and_maps_count():
    """Values over 4,096 bytes get no statistics from pyarrow's writer: these are measured in the stream."""
    long = "c" * 5_000
    for column in (pa.array([["a", long]]), pa.array([{"x": "a", "y": long}]),
                   pa.array([[("k", long)]], pa.map_(pa.string(), pa.string()))):
        message = refused(parquet_bytes(pa.table({"nested": column})), "parquet", PoolLimits(max_cell_chars=4_999))
        assert "column 'nested' holds a value of 5,000 characters (rows 1 to 1)" in message, column.type
        assert "RISE_MAX_CELL_CHARS" in message


def test_parquet_statistics_refuse_a_long_value_before_the_values_are_read():
    data = parquet_bytes(pa.table({"text": ["short", "d" * 50]}))
    assert "holds a value of 50 characters (from its statistics)" in refused(data, "parquet",
                                                                             PoolLimits(max_cell_chars=49))


def test_an_ordinary_parquet_pool_is_accepted_and_read():
    table = pa.table({"id": ["a", "b", "c"], "text": ["the cat sat", "the dog sat", "é" * 10],
                      "tags": [["x"], [], ["y", "z"]], "score": [1.5, None, 2.0]})
    data = parquet_bytes(table)
    limits = PoolLimits(max_cell_chars=11, max_columns=4, max_rows=3)  # every limit met exactly ("the cat sat")
    pool = PoolFile.from_upload(Upload("mine.parquet", data), limits).pool()
    assert [s.text for s in pool.samples] == ["the cat sat", "the dog sat", "é" * 10]
    assert "holds a value of 11 characters" in refused(data, "parquet", PoolLimits(max_cell_chars=10))


def test_a_file_that_is_not_parquet_is_left_to_the_readers_message():
    pool_file = PoolFile.from_upload(Upload("pool.parquet", b"\x00garbage"))
    with pytest.raises(InputDataError, match="pool.parquet: not a readable Parquet file"):
        pool_file.table()


# ---------------------------------------------------------------- CSV and JSON


def csv_rows(n: int, cell: str = "the cat") -> bytes:
    return ("id,text\n" + "".join(f"{i},{cell}\n" for i in range(n))).encode()


def jsonl_rows(n: int, blank_lines: bool = False) -> bytes:
    sep = "\n\n" if blank_lines else "\n"
    return "".join(json.dumps({"id": i, "text": "the cat"}) + sep for i in range(n)).encode()


def test_csv_and_jsonl_with_too_many_rows_are_refused():
    limits = PoolLimits(max_rows=50)
    for data, fmt in [(csv_rows(51), "csv"), (jsonl_rows(51), "jsonl"), (jsonl_rows(51, True), "jsonl"),
                      (json.dumps([{"text": "a"}] * 51).encode(), "json")]:
        message = refused(data, fmt, limits)
        assert names_limit(message, "RISE_MAX_POOL_ROWS", 50) and "more than 50" in message, fmt
    for data, fmt in [(csv_rows(50), "csv"), (jsonl_rows(50, True), "jsonl"), (b"[" + b",".join([b'{"a":1}'] * 50)
                                                                                + b"]", "json")]:
        check_pool(data, fmt, "ok", limits)  # exactly the limit; blank lines are no rows


def test_csv_and_jsonl_with_a_too_long_cell_are_refused():
    limits = PoolLimits(max_cell_chars=1_000)
    message = refused(csv_rows(3, '"' + "x," * 500 + 'y"'), "csv", limits)  # a quoted cell of 1,001 characters
    assert names_limit(message, "RISE_MAX_CELL_CHARS", 1_000) and "row 1 (line 2) has a cell of 1,001" in message
    nested = {"text": "ok", "meta": {"notes": ["fine", "é" * 1_001]}}  # 1,001 characters, 2,002 bytes
    message = refused(jsonl_rows(2) + json.dumps(nested).encode() + b"\n", "jsonl", limits)
    assert names_limit(message, "RISE_MAX_CELL_CHARS", 1_000) and "line 3 holds a text of 1,001" in message
    check_pool(json.dumps({"text": "é" * 1_000}, ensure_ascii=True).encode(), "jsonl", "ok", limits)  # 6,000 escaped


def test_a_csv_cell_past_the_csv_modules_own_field_limit_is_measured():
    """The csv module refuses fields over 131,072 characters by default; the reader lifts its limit (`ingest.tables`),
    so such a cell is measured and named with its length."""
    data = csv_rows(1, "q" * 200_000)
    assert "row 1 (line 2) has a cell of 200,000 characters" in refused(data, "csv")
    check_pool(data, "csv", "ok", PoolLimits(max_cell_chars=200_000))


def test_too_many_columns_or_keys_are_refused():
    limits = PoolLimits(max_columns=4)
    header = ",".join(f"c{i}" for i in range(5)).encode() + b"\n1,2,3,4,5\n"
    assert "its header has 5 columns" in refused(header, "csv", limits)
    keys = b"".join(json.dumps({"text": "a", f"k{i}": i}).encode() + b"\n" for i in range(4))  # 5 keys in all
    message = refused(keys, "jsonl", limits)
    assert names_limit(message, "RISE_MAX_POOL_COLUMNS", 4) and "5 different keys by line 4" in message


def test_a_line_too_long_for_any_row_is_refused_before_it_is_split():
    limits = PoolLimits(max_columns=2, max_cell_chars=10)  # a row: 2 cells of at most 10 characters
    data = b"a,b\n" + b"," * 100 + b"\n"
    message = refused(data, "csv", limits)
    assert "line 2 has 101 characters" in message and "RISE_MAX_CELL_CHARS" in message


def test_a_bare_carriage_return_does_not_stop_the_jsonl_check():
    """The reader splits JSONL on "\\n" only; a check that split on "\\r" too would see a broken first line, leave the
    file to the reader, and let every row through."""
    data = b'{"text":\r "a"}\n' + jsonl_rows(60)
    assert "RISE_MAX_POOL_ROWS" in refused(data, "jsonl", PoolLimits(max_rows=50))
    assert len(read_table(data, "jsonl")) == 61  # the reader reads that first line


def test_unreadable_text_is_left_to_the_readers_own_message():
    for data, fmt, expected in [(b'{"text": "a"}\n{oops\n', "jsonl", "line 2 is not valid JSON"),
                                (b"\xff\xfe text\n", "csv", "not valid UTF-8"),
                                (b'[{"text": "a"},', "json", "invalid JSON")]:
        check_pool(data, fmt, "f", PoolLimits())
        with pytest.raises(InputDataError, match=expected):
            PoolFile.from_upload(Upload(f"f.{fmt}", data)).table()
    # an integer longer than Python converts: the reader would fail with a bare ValueError; the check names the line
    huge = b'{"text": "a"}\n{"text": "b", "n": ' + b"1" * 5_000 + b"}\n"
    assert "line 2 cannot be read" in refused(huge, "jsonl")


def test_compressed_files_are_refused_by_their_extension_without_being_decompressed():
    """ingest reads no compressed files; a gzip bomb named .jsonl.gz is refused by its extension, and one named .jsonl
    is not UTF-8 text (nothing decompresses it)."""
    bomb = gzip.compress(b'{"text": "' + b"a" * 20 * MB + b'"}\n')
    assert len(bomb) < 100_000
    with pytest.raises(InputDataError, match="cannot tell the format"):
        PoolFile.from_upload(Upload("pool.jsonl.gz", bomb))
    with pytest.raises(InputDataError, match="not valid UTF-8"):
        PoolFile.from_upload(Upload("pool.jsonl", bomb)).table()


def test_the_bundled_pools_pass_with_the_default_limits():
    paths = sorted((ROOT / "data").glob("*.jsonl"))
    assert len(paths) >= 6
    for path in paths:
        pool_file = PoolFile.from_upload(Upload(path.name, path.read_bytes()))
        assert len(pool_file.table()) == sum(1 for line in path.read_text().split("\n") if line.strip())


# ---------------------------------------------------------------- the Build page


@pytest.fixture
def build_page(tmp_path, monkeypatch):
    """The Build page on empty folders (no model is loaded before the pool is read)."""
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    for var in ("RISE_INDEX_DIR", "RISE_DATA_DIR", "RISE_ADAPTER_DIR"):
        (tmp_path / var).mkdir()
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setenv("RISE_MODEL", str(tmp_path / "no-model"))
    monkeypatch.syspath_prepend(str(ROOT))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/1_Build_index.py").run()
    return at.radio(key="build_source").set_value("Upload a file").run()


def test_the_build_page_shows_the_limit_not_a_traceback(build_page, monkeypatch):
    at = build_page
    at.file_uploader(key="build_file").set_value(("bomb.parquet", dictionary_bomb(), "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and "Could not read the pool" in at.error[0].value
    assert "RISE_MAX_CELL_CHARS" in at.error[0].value and "5,000,000 characters" in at.error[0].value
    assert not at.dataframe  # nothing was read, nothing previewed
    monkeypatch.setenv("RISE_MAX_POOL_ROWS", "2")
    at.file_uploader(key="build_file").set_value(("three.csv", csv_rows(3), "text/csv")).run()
    assert not at.exception and len(at.error) == 1
    assert names_limit(at.error[0].value, "RISE_MAX_POOL_ROWS", 2)
    monkeypatch.setenv("RISE_MAX_POOL_ROWS", "3")
    at.run()
    assert not at.exception and not at.error and at.dataframe  # within the limit: read and previewed
