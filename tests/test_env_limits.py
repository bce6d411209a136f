"""Limits read from environment variables (rise_core.env_limits): one reader for the upload, filter, queue and check
limits, with the field's default, its type, and a ConfigError naming the variable and the bad value."""

from __future__ import annotations

import dataclasses

import pytest

from explorer.job_queue import QueueLimits
from explorer.request_limits import CheckLimits
from rise_core.env_limits import EnvLimits, env_field
from rise_core.errors import ConfigError
from rise_core.ingest_limits import PoolLimits
from rise_core.store.filters import FilterLimits


@dataclasses.dataclass(frozen=True)
class Demo(EnvLimits):
    rows: int = env_field(10, "DEMO_ROWS", "rows")
    waiting: int = env_field(4, "DEMO_WAITING", minimum=0)
    timeout_s: float = env_field(2.5, "DEMO_TIMEOUT_S", "seconds", minimum=0, above=True)


def test_defaults_and_values_from_the_environment():
    assert Demo.from_env({}) == Demo() == Demo(10, 4, 2.5)
    assert Demo.from_env({"DEMO_ROWS": " 7 ", "DEMO_WAITING": "0", "DEMO_TIMEOUT_S": "0.25", "OTHER": "x"}) == \
        Demo(7, 0, 0.25)
    assert Demo.from_env({"DEMO_ROWS": "  "}) == Demo()  # blank: not set
    got = Demo.from_env({"DEMO_TIMEOUT_S": "3"})
    assert got.timeout_s == 3.0 and isinstance(got.timeout_s, float)  # converted to the field's type


@pytest.mark.parametrize("var,value,message", [
    ("DEMO_ROWS", "lots", "DEMO_ROWS='lots': give a whole number of at least 1 (rows)"),
    ("DEMO_ROWS", "2.5", "DEMO_ROWS='2.5': give a whole number of at least 1 (rows)"),
    ("DEMO_ROWS", "0", "DEMO_ROWS='0': give a whole number of at least 1 (rows)"),
    ("DEMO_WAITING", "-1", "DEMO_WAITING='-1': give a whole number of at least 0"),
    ("DEMO_TIMEOUT_S", "0", "DEMO_TIMEOUT_S='0': give a number above 0 (seconds)"),
    ("DEMO_TIMEOUT_S", "nan", "DEMO_TIMEOUT_S='nan': give a number above 0 (seconds)"),
    ("DEMO_TIMEOUT_S", "inf", "DEMO_TIMEOUT_S='inf': give a number above 0 (seconds)"),
])
def test_a_bad_value_names_the_variable_and_the_value(var, value, message):
    with pytest.raises(ConfigError) as info:
        Demo.from_env({var: value})
    assert str(info.value) == message


def test_a_bad_value_given_in_code_names_the_field_and_its_variable():
    with pytest.raises(ConfigError, match=r"^Demo.rows \(DEMO_ROWS\) must be a whole number of at least 1 \(rows\), "
                                          r"not 0$"):
        Demo(rows=0)
    for bad in (True, 1.5, "3"):
        with pytest.raises(ConfigError, match="Demo.rows"):
            Demo(rows=bad)
    assert Demo(timeout_s=1).timeout_s == 1  # an int is a number


# every limits class of the library and the explorer: its fields' variables, defaults and the same errors
LIMITS = {
    PoolLimits: {"max_upload_mb": ("RISE_MAX_UPLOAD_MB", 50), "max_pool_mb": ("RISE_MAX_POOL_MB", 100),
                 "max_rows": ("RISE_MAX_POOL_ROWS", 100_000), "max_columns": ("RISE_MAX_POOL_COLUMNS", 64),
                 "max_cell_chars": ("RISE_MAX_CELL_CHARS", 100_000)},
    FilterLimits: {"memory_mb": ("RISE_FILTER_MEMORY_MB", 1024), "threads": ("RISE_FILTER_THREADS", 1),
                   "timeout_s": ("RISE_FILTER_TIMEOUT_S", 10.0)},
    QueueLimits: {"max_running": ("RISE_MAX_JOBS", 1), "max_per_user": ("RISE_MAX_JOBS_PER_USER", 2),
                  "max_waiting": ("RISE_MAX_WAITING_JOBS", 16)},
    CheckLimits: {"max_ks": ("RISE_CHECK_MAX_KS", 3), "max_seeds": ("RISE_CHECK_MAX_SEEDS", 3),
                  "max_prompts": ("RISE_CHECK_MAX_PROMPTS", 100), "max_new_tokens": ("RISE_CHECK_MAX_TOKENS", 128),
                  "max_retrains": ("RISE_CHECK_MAX_RETRAINS", 8)},
}


@pytest.mark.parametrize("cls", list(LIMITS), ids=lambda c: c.__name__)
def test_every_limits_class_reads_its_variables_the_same_way(cls, monkeypatch):
    expected = LIMITS[cls]
    assert {f.name: (f.metadata["env"], f.default) for f in dataclasses.fields(cls)} == expected
    assert cls.from_env({}) == cls()
    for var, _ in expected.values():
        monkeypatch.delenv(var, raising=False)
    assert cls.from_env() == cls()  # os.environ by default
    name, (var, default) = next(iter(expected.items()))
    monkeypatch.setenv(var, str(int(default) + 1))
    assert getattr(cls.from_env(), name) == int(default) + 1
    monkeypatch.setenv(var, "lots")
    with pytest.raises(ConfigError, match=f"^{var}='lots': give a whole number of at least"):
        cls.from_env()
