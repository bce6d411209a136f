"""The product benchmarks' harness (benchmarks/harness.py) against known answers, and the ported benchmarks run end to
end at toy sizes: their command lines parse and their JSON carries the fields the docs quote. No timing asserts."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import build_tiny_model, build_tokenizer

from benchmarks import harness, query_latency, shared_spans_long, vocab_pass


def test_timed_interleaves_after_one_warm_up_each():
    calls: list[str] = []
    times = harness.timed({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=2)
    assert calls == ["a", "b", "a", "b", "a", "b"]
    assert list(times) == ["a", "b"] and all(t >= 0 for t in times.values())
    count = []
    harness.median_seconds(lambda: count.append(1), repeats=3)
    assert len(count) == 4


def test_ratios_are_over_the_base_measured_in_the_same_run():
    assert harness.ratios({"forward": 2.0, "rise": 2.06, "dense": 3.0}, "forward") == \
        {"forward": 1.0, "rise": 1.03, "dense": 1.5}
    assert harness.ratios({"a": 3.0, "b": 1.0}, "a", digits=2) == {"a": 1.0, "b": 0.33}


@pytest.mark.parametrize(("values", "q", "expected"), [
    (list(range(1, 21)), 0.95, 19),  # nearest rank: the 19th of 20
    (list(range(1, 101)), 0.95, 95),
    ([5.0], 0.95, 5.0),
    ([3, 1, 2], 0.5, 2),
    ([], 0.95, None),
])
def test_percentile_is_the_nearest_rank(values, q, expected):
    assert harness.percentile(values, q) == expected


def test_latency_ms_gives_the_median_and_the_p95_in_milliseconds():
    assert harness.latency_ms([0.001, 0.003, 0.002, 0.010]) == {"p50_ms": 2.5, "p95_ms": 10.0}
    assert harness.latency_ms([]) == {"p50_ms": None, "p95_ms": None}


def test_parser_adds_only_the_shared_options_asked_for():
    bare = harness.parser("doc")
    assert vars(bare.parse_args([])) == {}
    full = harness.parser("doc", repeats=5, threads=0, json_flag=True, out="results/x")
    assert vars(full.parse_args([])) == {"repeats": 5, "threads": 0, "json": False, "out": "results/x"}
    assert vars(full.parse_args(["--repeats", "2", "--threads", "1", "--json", "--out", "o"])) == \
        {"repeats": 2, "threads": 1, "json": True, "out": "o"}
    assert harness.parser("doc", out="").parse_args([]).out is None  # "": no folder unless given


def test_set_threads_leaves_torch_alone_at_zero():
    before = torch.get_num_threads()
    try:
        assert harness.set_threads(0) == before
        assert harness.set_threads(1) == 1 == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)


def test_json_outputs_and_the_markdown_table(tmp_path, capsys):
    path = harness.write_json(tmp_path / "a" / "r.json", {"x": 1, "p": tmp_path})
    assert json.loads(path.read_text()) == {"x": 1, "p": str(tmp_path)}
    harness.append_jsonl(tmp_path / "r.jsonl", [{"n": 1}])
    harness.append_jsonl(tmp_path / "r.jsonl", [{"n": 2}, {"n": 3}])
    assert [json.loads(line)["n"] for line in (tmp_path / "r.jsonl").read_text().splitlines()] == [1, 2, 3]
    harness.print_json({"ratio": 1.03})
    assert json.loads(capsys.readouterr().out) == {"ratio": 1.03}
    table = harness.markdown_table([{"variant": "a", "ratio": 1.0}, {"variant": "b", "ratio": 1.5}]).splitlines()
    assert table[0].split("|")[1:3] == [" variant   ", "   ratio "] and "1.500" in table[3]


def test_query_latency_runs_at_a_toy_size_and_reports_its_ratios(capsys):
    assert query_latency.main(["--sizes", "300", "--repeats", "1", "--threads", "1", "--json", "--dims",
                               "8,4,8"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["n_samples"] == 300 and res["dims"] == [8, 4, 8] and res["threads"] == 1
    for key in ("floor_ms", "scoring_ms", "rank_ms", "rank_where_ms", "scoring_over_floor", "rank_over_floor",
                "rank_default_fired_ms", "rank_default_fired_prompt_ms"):
        assert res[key] > 0, key
    # every synthetic row holds the span, so the best rows lifted are the best rows: the first head (64 rows) is enough
    # for either lift (1.5 spreads, or 10 for a span of the prompt)
    assert res["lift_rows_read"] == res["lift_rows_read_prompt"] == 64


def test_vocab_pass_runs_on_a_tiny_model_and_times_every_variant(tmp_path, capsys):
    model_dir = tmp_path / "model"  # V = 1100: above the top 256 the pass keeps, and above one 1024-column block
    build_tiny_model("llama", 1100, dtype=torch.float32).save_pretrained(model_dir)
    build_tokenizer().save_pretrained(model_dir)
    args = ["--model", str(model_dir), "--batch-size", "2", "--seq-len", "16", "--repeats", "1"]
    assert vocab_pass.main([*args, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["vocab_pass"]["vocab"] == 1100 and res["vocab_pass"]["positions"] == 2 * 15
    assert set(res["vocab_pass"]["over_head_matmul"]) == {
        "head matmul (bare forward)", "dense reference", "blocked 1024/4", "blocked 1024/8", "blocked 1024/16",
        "blocked 1024/32", "blocked 2048/8", "blocked 4096/8"}
    assert res["vocab_pass"]["over_head_matmul"]["head matmul (bare forward)"] == 1.0
    assert len(res["bench"]) == 4 and all(r["time_ratio"] > 0 for r in res["bench"].values())
    assert vocab_pass.main(args) == 0
    assert "| blocked 1024/8 " in capsys.readouterr().out


def test_ann_scale_runs_at_a_toy_size_and_appends_its_results(tmp_path, capsys):
    from benchmarks import ann_scale

    args = ["--sizes", "2000", "--dims", "4x2x4", "--queries", "5", "--exact-queries", "2", "--repeats", "1",
            "--duckdb-max", "0", "--out", str(tmp_path / "out")]
    assert ann_scale.main(args) == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "ann_scale.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["n"] == 2000 and rows[0]["values_per_sample"] == 4 * 2 * 2 + ann_scale.HIDDEN
    for name in ("exact", "filter_25%", "filter_1%", *(f"sweep.{p}" for p in rows[0]["sweep"])):
        part = rows[0]["sweep"][name[6:]] if name.startswith("sweep.") else rows[0][name]
        assert 0 < part["p50_ms"] <= part["p95_ms"], name
    assert "| 2,000 (4x2x4) |" in (tmp_path / "out" / "ann_scale.md").read_text()


def test_shared_spans_long_runs_at_a_toy_size_and_reports_its_ratios(capsys):
    assert shared_spans_long.main(["--words", "60", "--repeats", "1", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["words"] == 60 and res["shared_spans_listed"] >= 1
    for key in ("floor_ms", "find_shared_spans_ms", "candidates_ms", "find_shared_spans_over_floor"):
        assert res[key] > 0, key
