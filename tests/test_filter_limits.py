"""Filters are bounded in memory, threads and time (rise_core.store.filters.FilterLimits).

DuckDB's own memory limit does not cover the strings an expression builds, so a filter that multiplies text (nested
replace(), long concatenations) is refused by its estimated size before it runs; every index connection runs with
DuckDB's memory_limit and threads set before its configuration is locked; a filter query past the time limit is
interrupted. Each of these ends in one clear line asking for a simpler filter, and leaves the index file as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest
import torch
from conftest import make_lm

from rise_core.config import RiseConfig
from rise_core.errors import ConfigError, InputDataError
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix
from rise_core.store import RiseIndex
from rise_core.store.filters import (
    MAX_STRING_CHARS,
    MAX_STRING_GROWTH,
    FilterLimits,
    FilterRefused,
    FilterTooCostly,
    check_filter,
)

N_ROWS = 20_000  # ten vectors of DuckDB's 2,048 rows: a filter can be interrupted between them
COLUMNS = ["row", "id", "text", "label"]
CFG = RiseConfig(k_r=4, k_h=2, k_g=4, hidden_channel=False)
ENV = ("RISE_FILTER_MEMORY_MB", "RISE_FILTER_THREADS", "RISE_FILTER_TIMEOUT_S")


def nested_replace(depth: int, replacement: str) -> str:
    expr = "text"
    for _ in range(depth):
        expr = f"replace({expr}, ' ', {replacement})"
    return f"length({expr}) > 0"


# Filters that would build text without bound; each passes the allow-list (only allowed functions) and is refused
# by its size before DuckDB runs it.
COSTLY = {
    "eight nested replace() with a column replacement": nested_replace(8, "text"),
    "eight nested replace() with text || text": nested_replace(8, "text || text"),
    "eight nested replace() doubling a constant": nested_replace(8, "'  '"),
    "forty texts concatenated": " || ".join(["text"] * 40) + " = 'x'",  # 2 + 3 + ... + 40 texts built per row
    "a constant multiplied by replace()": f"replace('{'x' * 400}', 'x', '{'y' * 400}') = text",
}
# Filters that stay within the size estimate: every one must still pass the check.
WITHIN = [
    "label = 1",
    " OR ".join(f"lower(text) LIKE '%word{i}%'" for i in range(40)),
    "replace(text, 'cat', 'dog') LIKE '%dog%'",
    "length(replace(replace(text, 'a', 'bb'), 'c', 'dd')) > 10",
    "upper(trim(text)) || ' ' || id = 'x'",
    "CASE WHEN label = 1 THEN lower(text) ELSE id END = 'x'",
    "coalesce(text, id) IN ('a', 'b') AND CAST(label AS VARCHAR) = '1'",
]


def slow_filter() -> str:
    """45 distinct regular expressions over every row: about a second on this 20,000-row pool, each vector of
    2,048 rows a tenth of that (distinct patterns, so DuckDB cannot share one evaluation between them)."""
    return " OR ".join(f"regexp_matches(text, '(t.{{40}}){{5}}z{i}')" for i in range(45))


@pytest.fixture(autouse=True)
def default_limits(monkeypatch):
    for var in ENV:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def big_index(tmp_path_factory) -> Path:
    """A 20,000-row index (labels alternate 0/1) with zero features: only its samples matter to a filter."""
    path = tmp_path_factory.mktemp("limits") / "big.duckdb"
    d_rh, d_gh = CFG.feature_dims
    with RiseIndex.create(path, make_lm("llama"), CFG) as index:
        for start in range(0, N_ROWS, 5000):
            n = min(5000, N_ROWS - start)
            samples = [Sample(id=f"s{i}", text=f"sample {i}: the cat sat on the mat and the dog on the blanket . " * 3,
                              label=i % 2) for i in range(start, start + n)]
            features = FeatureMatrix(rh=torch.zeros(n, d_rh, dtype=torch.float16),
                                     gh=torch.zeros(n, d_gh, dtype=torch.float16),
                                     rh_norm=torch.zeros(n), gh_norm=torch.zeros(n))
            index.add_samples(samples, features, [1] * n, [0.0] * n, [0.0] * n, [10] * n, [False] * n)
        index.set_status("complete")
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _settings(index: RiseIndex) -> tuple[str, int]:
    """memory_limit and threads of the index's connection, read on a cursor of its own (not through a filter)."""
    cur = index._connect().cursor()
    try:
        return tuple(cur.execute("SELECT current_setting('memory_limit'), current_setting('threads')").fetchone())
    finally:
        cur.close()


def test_default_limits_suit_a_small_shared_machine():
    assert FilterLimits() == FilterLimits(memory_mb=1024, threads=1, timeout_s=10.0)
    assert FilterLimits.from_env({}) == FilterLimits()
    assert FilterLimits.from_env({"RISE_FILTER_MEMORY_MB": "256", "RISE_FILTER_THREADS": "2",
                                  "RISE_FILTER_TIMEOUT_S": "2.5"}) == FilterLimits(256, 2, 2.5)


@pytest.mark.parametrize("var,value", [("RISE_FILTER_MEMORY_MB", "lots"), ("RISE_FILTER_MEMORY_MB", "0"),
                                       ("RISE_FILTER_THREADS", "-1"), ("RISE_FILTER_TIMEOUT_S", "nan"),
                                       ("RISE_FILTER_TIMEOUT_S", "0")])
def test_a_bad_limit_in_the_environment_is_a_config_error(var, value):
    with pytest.raises(ConfigError) as info:
        FilterLimits.from_env({var: value})
    assert str(info.value).startswith(f"{var}={value!r}: give ")


@pytest.mark.parametrize("read_only", [True, False])
def test_every_index_connection_runs_with_the_limits_locked(big_index, monkeypatch, read_only):
    with RiseIndex.open(big_index, read_only=read_only) as index:
        assert _settings(index) == ("1.0 GiB", 1)  # the defaults
    monkeypatch.setenv("RISE_FILTER_MEMORY_MB", "96")
    monkeypatch.setenv("RISE_FILTER_THREADS", "2")
    with RiseIndex.open(big_index, read_only=read_only) as index:
        assert _settings(index) == ("96.0 MiB", 2)
        cur = index._connect().cursor()
        for statement in ("SET memory_limit = '64GB'", "SET threads = 16", "RESET memory_limit"):
            with pytest.raises(duckdb.Error, match="(?i)lock"):  # the configuration is locked after the limits
                cur.execute(statement)
        cur.close()
        assert _settings(index) == ("96.0 MiB", 2)


@pytest.mark.parametrize("name", list(COSTLY))
def test_filters_that_multiply_text_are_refused_before_they_run(big_index, monkeypatch, name):
    monkeypatch.setenv("RISE_FILTER_MEMORY_MB", "64")
    where = COSTLY[name]
    with pytest.raises(FilterTooCostly) as info:
        check_filter(where, COLUMNS)
    message = str(info.value)
    assert "memory" in message and "simplify" in message and "\n" not in message
    assert str(MAX_STRING_GROWTH) in message or f"{MAX_STRING_CHARS:,}" in message or "replacement" in message
    before = _sha(big_index)
    with RiseIndex.open(big_index) as index:
        for run in (index.row_mask, index.samples):
            with pytest.raises(FilterTooCostly):
                run(where)
        assert int(index.row_mask("label = 1").sum()) == N_ROWS // 2  # the handle still answers
    assert _sha(big_index) == before


def test_functions_that_build_text_outside_the_list_stay_refused():
    for where in ("length(repeat(text, 1000000)) > 0", "length(string_agg(text, ',')) > 0",
                  "length(lpad(text, 100000000, 'x')) > 0"):
        with pytest.raises(FilterRefused, match="not allowed|aggregate"):
            check_filter(where, COLUMNS)


@pytest.mark.parametrize("where", WITHIN)
def test_ordinary_string_filters_pass_the_size_estimate(where):
    assert check_filter(where, COLUMNS) == f"SELECT row FROM samples WHERE ({where})"


def test_a_filter_past_the_time_limit_is_stopped_and_the_index_still_answers(big_index, monkeypatch):
    monkeypatch.setenv("RISE_FILTER_TIMEOUT_S", "0.05")
    before = _sha(big_index)
    with RiseIndex.open(big_index) as index:
        for run in (index.row_mask, index.samples):
            with pytest.raises(FilterTooCostly, match=r"took longer than 0\.05 s .*simplify it") as info:
                run(slow_filter())
            assert isinstance(info.value, InputDataError) and "\n" not in str(info.value)
        # the interrupted cursor is gone; the next filter on the same handle runs to the end
        assert int(index.row_mask("label = 1").sum()) == N_ROWS // 2
    assert _sha(big_index) == before


def test_the_slow_filter_finishes_under_the_default_limit(big_index):
    """The same filter is legitimate: with the default 10 s it runs and keeps no row (no text has a 'z<digit>')."""
    with RiseIndex.open(big_index) as index:
        assert int(index.row_mask(slow_filter()).sum()) == 0


def test_duckdb_out_of_memory_is_the_same_clear_message(big_index, monkeypatch):
    monkeypatch.setenv("RISE_FILTER_MEMORY_MB", "2")  # less than joining and sorting 20,000 rows needs
    before = _sha(big_index)
    with RiseIndex.open(big_index) as index:
        with pytest.raises(FilterTooCostly, match=r"needed more than the 2 MiB of memory .*simplify it"):
            index.samples("length(text) > 0")
    assert _sha(big_index) == before
    monkeypatch.delenv("RISE_FILTER_MEMORY_MB")
    with RiseIndex.open(big_index) as index:  # the default limit: the same filter runs
        assert len(index.samples("length(text) > 0 AND label = 0")) == N_ROWS // 2


def test_ordinary_filters_keep_the_rows_they_should(big_index):
    with RiseIndex.open(big_index) as index:
        assert int(index.row_mask("label = 1").sum()) == N_ROWS // 2
        assert index.samples("id = 's7'")["text"].iloc[0].startswith("sample 7: ")
        # s1, s10..s19, s100..s199, s1000..s1999, s10000..s19999
        assert int(index.row_mask("starts_with(id, 's1')").sum()) == 1 + 10 + 100 + 1000 + 10000
        assert int(index.row_mask(WITHIN[1]).sum()) == 0
        assert int(index.row_mask(WITHIN[2]).sum()) == N_ROWS
