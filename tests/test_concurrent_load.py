"""The under-load benchmark's core on a tiny random model: concurrent query sessions on one index, then a build
appending to it in the same process (`benchmarks/concurrent_load.py`). No timing asserts."""

from __future__ import annotations

import pytest

from benchmarks import concurrent_load as bench

K = 5


@pytest.fixture(scope="module")
def results() -> dict:
    args = bench.parse_args(["--tiny", "--sessions", "3", "--queries-per-session", "2", "--pool-rows", "24",
                             "--append-rows", "8", "--k", str(K), "--retry-wait", "0.05", "--skip-app",
                             "--skip-cross-process"])
    return bench.run_benchmark(args, log=lambda line: None)


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_concurrent_sessions_without_a_writer_return_k_rows_and_no_error(results, mode):
    idle = results["api"][mode]["idle"]
    assert idle["error_counts"] == {} and idle["errors"] == 0
    assert idle["ok"] == idle["queries"] == 3 * 2
    assert results["api"][mode]["queries_without_k_hits"] == 0
    assert results["api_model_loads"] == 1


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_after_the_build_every_handle_answers_and_sees_the_committed_rows(results, mode):
    run = results["api"][mode]
    assert run["after_build"]["errors"] == 0
    visible = run["visible_after_build"]
    assert visible["errors"] == [] and visible["rows_seen"] == [visible["expected_rows"]]


@pytest.mark.parametrize("mode", ["shared", "separate"])
def test_queries_during_an_append_keep_working_and_then_see_the_new_rows(results, mode):
    run = results["api"][mode]
    assert run["build"]["error"] is None and run["build"]["n_added"] == 8
    assert run["under_build"]["error_counts"] == {}
    assert run["queries_without_k_hits"] == 0
    assert run["visible_after_build"]["visible"], run["visible_after_build"]
