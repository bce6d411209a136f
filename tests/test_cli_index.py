"""`rise build / query / select / info` end to end on a tiny model saved to disk, and every bad input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pandas as pd
import pytest
from index_helpers import patch_finding, pool_rows, save_tiny_model, write_jsonl

from rise_core.cli import main
from rise_core.store import RiseIndex

DIMS = ["--k-r", "16", "--k-h", "8", "--k-g", "16"]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    model = save_tiny_model(root / "model")
    pool = write_jsonl(root / "pool.jsonl", [*pool_rows(24), {"id": "blank", "text": ""}])
    queries = write_jsonl(root / "queries.jsonl", [{"text": "the cat sat on the mat ."},
                                                   {"text": "the bank lost money ."}])
    index = root / "pool.duckdb"
    code = main(["build", str(pool), "--index", str(index), "--model", str(model), *DIMS, "--batch-size", "4",
                 "--quiet"])
    assert code == 0
    return SimpleNamespace(root=root, model=model, pool=pool, queries=queries, index=index)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _n_samples(path: Path) -> int:
    with RiseIndex.open(path) as index:
        return len(index)


def test_build_reports_skips_and_resumes(env, capsys):
    code, out, _ = _run(capsys, "build", env.pool, "--index", env.index, "--quiet")  # model and config from index
    assert code == 0
    assert "0 added, 24 already present, 1 skipped" in out and "row 25: empty text" in out
    with RiseIndex.open(env.index) as index:
        assert index.manifest.model_id == str(env.model.resolve()) and index.config.k_r == 16


@pytest.mark.parametrize(("arch", "architecture"), [
    ("gpt-neox", "GPTNeoXForCausalLM"), ("mixtral", "MixtralForCausalLM"), ("qwen2-moe", "Qwen2MoeForCausalLM")])
def test_build_and_query_other_architectures(arch, architecture, tmp_path, capsys):
    """Beside the Llama of `env`: an untied GPT-NeoX and two mixtures of experts (4 experts, 2 per token; Qwen2-MoE
    with its shared expert) build and query through the CLI with nothing specific to them, since RISE reads only the
    final hidden state and the head. Known answer: a pool row's own text as the query ranks that row first (its
    features are the query's; every other row's cosine is below 1)."""
    model = save_tiny_model(tmp_path / "model", arch)
    pool = write_jsonl(tmp_path / "pool.jsonl", pool_rows(12))
    index = tmp_path / "pool.duckdb"
    code, out, err = _run(capsys, "build", pool, "--index", index, "--model", model, *DIMS, "--batch-size", "4",
                          "--quiet")
    assert code == 0, err
    assert "12 added" in out
    with RiseIndex.open(index) as idx:
        assert idx.manifest.model_info["architecture"] == architecture and len(idx) == 12
    row = pool_rows(12)[5]
    code, out, err = _run(capsys, "query", "--index", index, "--text", row["text"], "-k", "3", "--format", "json")
    assert code == 0, err
    hits = json.loads(out)
    assert [h["rank"] for h in hits] == [1, 2, 3] and hits[0]["id"] == row["id"]


def test_query_formats_filter_and_explain(env, capsys):
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", "the cat sat on the mat .", "-k", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["rank", "id", "score", "rh", "gh"] and len(lines) == 4

    code, out, _ = _run(capsys, "query", "--index", env.index, "--prompt", "what did the cat do ?", "--completion",
                        "the cat sat on the mat .", "-k", "2", "--where", "topic = 'cats'", "--format", "json",
                        "--explain")
    assert code == 0
    hits = json.loads(out)
    assert len(hits) == 2 and {h["topic"] for h in hits} == {"cats"}
    ex = hits[0]["explanation"]
    assert sum(ex["example"]["rh"]) == pytest.approx(hits[0]["rh"], abs=2e-3)
    assert len(ex["query"]["tokens"]) == len(ex["query"]["gh"])

    code, out, _ = _run(capsys, "query", "--index", env.index, "--queries", env.queries, "-k", "4", "--format", "csv",
                        "--lambda-rh", "0", "--sample-norm", "joint")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert list(df.columns[:5]) == ["rank", "id", "score", "rh", "gh"] and len(df) == 4
    assert (df["rh"] == 0).all() and df["score"].is_monotonic_decreasing

    code, out, _ = _run(capsys, "query", "--index", env.index, "--queries", env.queries, "--each", "-k", "2",
                        "--format", "json")
    assert code == 0
    assert [h["query"] for h in json.loads(out)] == [1, 1, 2, 2]

    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", "the cat", "--explain", "-k", "1")
    assert code == 0 and "RH example:" in out and "GH query:" in out


def test_explained_tokens_keep_their_significant_digits():
    """A token's contribution is printed to 3 significant digits: under weights that leave RH small (4e-4 a token on
    the real model when HS leads) fixed decimals printed every one as +0.000."""
    from types import SimpleNamespace

    from rise_core.cli.query import _top_tokens

    attr = SimpleNamespace(tokens=["Liver", " the", "\n", "ok"], rh=[4.12e-4, -1.5e-5, 0.0, 2.0e-4])
    assert _top_tokens(attr, "rh", n=3) == "Liver(+0.000412)  ok(+0.0002)  the(-1.5e-05)"


def test_explain_sums_up_a_channel_the_weights_leave_near_zero(capsys):
    """A channel whose strongest token contribution is below a thousandth of the hit's strongest (HS at 3e-7 a token
    under the gradient view) is one line saying so, not six tokens of noise."""
    from types import SimpleNamespace

    from rise_core.cli.query import _print_table

    def attr(rh, hs):
        return SimpleNamespace(tokens=["biome", "desert"], rh=rh, gh=[0.1, 0.05], hs=hs)

    df = pd.DataFrame([{"rank": 1, "id": "c20", "score": 1.36, "rh": 0.78, "gh": 0.58, "hs": 1e-6, "text": "t"}])
    _print_table(df, 80, {"c20": (attr([0.23, 0.2], [3.4e-7, 1e-7]), attr([0.24, 0.1], [2e-7, 0.0]))})
    out = capsys.readouterr().out
    assert "HS: adds little here (its largest token contribution 3.4e-07, against 0.24 in another channel)" in out
    assert "RH example: biome(+0.23)" in out and "HS example" not in out


def test_select_writes_top_n_or_fraction(env, capsys, tmp_path):
    out_jsonl, out_csv = tmp_path / "top.jsonl", tmp_path / "half.csv"
    code, out, _ = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "5",
                        "--out", out_jsonl)
    assert code == 0 and "selected 5 of 24 samples" in out
    rows = [json.loads(line) for line in out_jsonl.read_text().splitlines()]
    assert len(rows) == 5 and [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert all(a["score"] >= b["score"] for a, b in zip(rows, rows[1:], strict=False))
    assert {"id", "text", "label", "topic", "year", "rh", "gh"} <= rows[0].keys()

    code, out, _ = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--fraction", "0.5",
                        "--where", "label = 1", "--out", out_csv)
    assert code == 0 and "selected 6 of 12 samples" in out
    df = pd.read_csv(out_csv)
    assert len(df) == 6 and (df["label"] == 1).all()


def test_select_never_writes_over_its_own_input_and_writes_whole_or_not_at_all(env, capsys, tmp_path, monkeypatch):
    """`--out` naming the queries' file (by another spelling of its path, too) or the marks file is refused before
    anything runs, and the file is as it was; a write that fails midway leaves what was at --out as it was."""
    from rise_core.cli import query as cli_query

    queries = Path(env.queries)
    before = queries.read_bytes()
    other_spelling = queries.parent / ".." / queries.parent.name / queries.name
    code, _, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "5",
                        "--out", other_spelling)
    assert code == 1 and "is the file given to --queries, which this command reads" in err
    assert queries.read_bytes() == before
    marks = tmp_path / "marks.jsonl"
    marks.write_text("{}")
    code, _, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "5",
                        "--marks", marks, "--out", marks)
    assert code == 1 and "given to --marks" in err and marks.read_text() == "{}"

    out = tmp_path / "kept.jsonl"
    out.write_text("what was there\n")

    def fails_midway(rec_df):
        yield {"id": "first"}
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cli_query, "records", fails_midway)
    code, _, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "5",
                        "--out", out)
    assert code == 1 and "No space left on device" in err
    assert out.read_text() == "what was there\n" and [p.name for p in tmp_path.iterdir() if ".part" in p.name] == []


def test_select_versus_other_answers(env, capsys, tmp_path):
    """`rise select --versus-queries FILE` (one other answer per query) and `--versus-text` (one for all): each pool
    row's score is its score for the query set minus its score for the other answers (checked against the two plain
    selections with the same fixed weights), the note says so, and a file of the wrong length is refused."""
    fixed = ["--lambda-rh", "1", "--lambda-gh", "0.5", "--lambda-hs", "0.3", "--fraction", "1"]
    others = write_jsonl(tmp_path / "others.jsonl", [{"text": "the dog ran in the park ."},
                                                     {"text": "the bank made money ."}])

    notes: list[str] = []

    def selected(*argv: str) -> dict[str, dict]:
        out = tmp_path / "sel.jsonl"
        code, _, err = _run(capsys, "select", "--index", env.index, *argv, *fixed, "--out", out)
        assert code == 0, err
        notes.append(err)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)
        return {r["id"]: r for r in rows}

    def assert_contrast(contrast: dict[str, dict], a: dict[str, dict], b: dict[str, dict]) -> None:
        assert contrast.keys() == a.keys() == b.keys()
        for rid, r in contrast.items():  # float32 scores of float16 rows, written as JSON: 1e-5
            for c in ("score", "rh", "gh", "hs"):
                assert r[c] == pytest.approx(a[rid][c] - b[rid][c], abs=1e-5)

    a = selected("--queries", env.queries)
    b = selected("--queries", others)
    paired = selected("--queries", env.queries, "--versus-queries", others)
    assert "contrast: each score is the query's minus its score against the other answers (--versus-queries" \
        in notes[-1]
    assert_contrast(paired, a, b)
    one = write_jsonl(tmp_path / "one.jsonl", [{"text": "the bank made money ."}])
    assert_contrast(selected("--queries", env.queries, "--versus-text", "the bank made money ."), a,
                    selected("--queries", one))
    three = write_jsonl(tmp_path / "three.jsonl", [{"text": "x y"}, {"text": "y z"}, {"text": "z x"}])
    code, _, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--versus-queries", three,
                        "--top-n", "3", "--out", tmp_path / "o.jsonl")
    assert code == 1 and "2 queries, 3 other answers" in err
    with pytest.raises(SystemExit) as exc:
        main(["select", "--index", str(env.index), "--queries", str(env.queries), "--versus-queries", str(three),
              "--versus-text", "b", "--top-n", "3", "--out", str(tmp_path / "o.jsonl")])
    assert exc.value.code == 2 and "--versus-queries FILE, or one as --versus-text" in capsys.readouterr().err


def test_select_with_marks_values_the_pool_again(env, capsys, tmp_path):
    """`rise select --marks FILE`: the pool valued again with the marks, the top N or fraction of that: the rows and
    scores of `rank_with_feedback` on the query set (its words, the marked words' source, the queries' texts joined),
    the row marked yes selected first, the row marked no never, the best unmarked rows after; a contrast with marks
    is a usage error."""
    from rise_core.attribution import marked_words, query_features, rank_with_feedback
    from rise_core.compare import fit_bm25
    from rise_core.config import ScoreOptions
    from rise_core.models import load_model
    from rise_core.samples import Sample

    fixed = ["--lambda-rh", "1", "--lambda-gh", "0.5", "--lambda-hs", "0.3"]
    plain = tmp_path / "plain.jsonl"
    code, _, _ = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--fraction", "1", *fixed,
                      "--out", plain)
    ids = [json.loads(line)["id"] for line in plain.read_text().splitlines()]
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps({ids[-2]: True, ids[0]: False}))
    out = tmp_path / "marked.jsonl"
    code, stdout, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "6",
                             "--marks", marks, *fixed, "--out", out)
    assert code == 0, err
    assert "selected 6 of 24 samples" in stdout and "feedback: 1 marked yes, 1 no" in err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["id"] == ids[-2] and rows[0]["mark"] == "yes"  # the confirmed row, first
    assert ids[0] not in [r["id"] for r in rows] and all(r["mark"] == "" for r in rows[1:])  # the refused one, out
    assert [r["score"] for r in rows[1:]] == sorted((r["score"] for r in rows[1:]), reverse=True)
    queries = [Sample(text="the cat sat on the mat ."), Sample(text="the bank lost money .")]
    with RiseIndex.open(env.index) as index:
        qfm = query_features(index, load_model(str(env.model)), queries)
        words = marked_words(index, Sample(text="\n".join(q.full_text for q in queries)), fit_bm25(index))
        want = rank_with_feedback(index, qfm, {ids[-2]: True, ids[0]: False},
                                  ScoreOptions(lambda_rh=1.0, lambda_gh=0.5, lambda_hs=0.3), k=6, words=words)
    assert want["mark"].tolist() == ["yes"] + [""] * 6 + ["no"]  # as shown: yes, the 6 best unmarked, no
    want = want.iloc[:6]
    assert [r["id"] for r in rows] == want["id"].tolist()
    assert [r["score"] for r in rows] == pytest.approx(want["score"].tolist(), abs=1e-5)  # float32, via JSON
    with pytest.raises(SystemExit) as exc:
        main(["select", "--index", str(env.index), "--queries", str(env.queries), "--marks", str(marks),
              "--versus-text", "b", "--top-n", "3", "--out", str(tmp_path / "o.jsonl")])
    assert exc.value.code == 2 and "does not go with a contrast" in capsys.readouterr().err


def test_query_with_marks_prints_them_around_the_hits(env, capsys, tmp_path):
    """`rise query --marks`: the row marked yes first, the k best unmarked rows, the row marked no last, the mark
    column saying which."""
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", "the cat sat on the mat .", "-k", "6",
                        "--format", "json")
    ids = [h["id"] for h in json.loads(out)]
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps({ids[5]: True, ids[0]: False}))
    code, out, err = _run(capsys, "query", "--index", env.index, "--text", "the cat sat on the mat .", "-k", "3",
                          "--marks", marks)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5"]
    assert rows[0][1:3] == ["yes", ids[5]] and rows[-1][1:3] == ["no", ids[0]]
    assert not {r[1] for r in rows[1:4]} & {"yes", "no", ids[5], ids[0]}  # three unmarked rows between


def test_info_text_json_and_directory(env, capsys):
    code, out, _ = _run(capsys, "info", "--index", env.index)
    assert code == 0
    assert "complete" in out and "K_r=16, K_h=8, K_g=16" in out and "24 (24 labelled" in out
    assert "topic (varchar)" in out and "size on disk" in out
    code, out, _ = _run(capsys, "info", "--index", env.index, "--json")
    info = json.loads(out)
    assert info["n_samples"] == 24 and info["dims"] == [16, 8, 16] and info["size_bytes"] > 0
    code, out, _ = _run(capsys, "info", "--index", env.root)
    assert code == 0 and "pool.duckdb: 24 samples" in out


@pytest.mark.parametrize("argv", [
    ["query", "--index", "x.duckdb"],
    ["query", "--index", "x.duckdb", "--text", "a", "--queries", "q.jsonl"],
    ["query", "--index", "x.duckdb", "--prompt", "a"],
    ["query", "--index", "x.duckdb", "--text", "a", "--each"],
    ["select", "--index", "x.duckdb", "--queries", "q.jsonl", "--out", "o.jsonl"],
    ["select", "--index", "x.duckdb", "--queries", "q.jsonl", "--top-n", "3", "--fraction", "0.1", "--out", "o.csv"],
    ["build", "pool.jsonl"],
    ["build", "pool.jsonl", "--index", "x.duckdb", "--k-r", "many"],
    ["info"],
])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_help_lists_config_and_field_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["build", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for text in ("--k-r", "CountSketch dim of the vocabulary residual", "--no-token-norm", "--counted-positions",
                 "--text-field", "--prompt-field", "--batch-size", "resumes"):
        assert text in out


def _ro_dir(tmp_path: Path) -> Path | None:
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    sysfs = Path("/sys")
    try:
        (sysfs / ".rise_probe").touch()
    except OSError:
        return sysfs
    (sysfs / ".rise_probe").unlink()
    return None


def test_bad_inputs_exit_1_and_keep_the_index(env, capsys, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"text\nthe cat\ncaf\xe9\n")
    dups = write_jsonl(tmp_path / "dups.jsonl", [{"id": 1, "text": "the cat"}, {"id": 1, "text": "the dog"}])
    blank = write_jsonl(tmp_path / "blank.jsonl", [{"text": " "}])
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    corrupted = tmp_path / "corrupted.duckdb"
    data = bytearray(env.index.read_bytes())
    data[12288:] = bytes(len(data) - 12288)
    corrupted.write_bytes(bytes(data))
    idx = str(env.index)
    cases = [
        (["build", empty, "--index", idx], "the file is empty"),
        (["build", env.pool, "--index", idx, "--text-field", "body"], "missing field 'body'"),
        (["build", latin, "--index", idx], "not valid UTF-8"),
        (["build", dups, "--index", idx], "duplicate ids '1'"),
        (["build", blank, "--index", idx], "no usable rows"),
        (["build", env.pool, "--index", idx, "--k-r", "32"], "k_r: index 16, requested 32"),
        (["build", env.pool, "--index", idx, "--preset", "paper"], "token_norm: index False, requested True"),
        (["build", env.pool, "--index", foreign], "not a RISE index"),
        (["build", env.pool, "--index", corrupted], "corrupted"),
        (["build", env.pool, "--index", tmp_path / "missing" / "x.duckdb"], "does not exist"),
        (["query", "--index", corrupted, "--text", "the cat"], "corrupted"),
        (["query", "--index", foreign, "--text", "the cat"], "not a RISE index"),
        (["query", "--index", tmp_path / "none.duckdb", "--text", "the cat"], "no index at"),
        (["query", "--index", idx, "--text", "the cat", "--where", "colour = 'red'"], "colour"),
        (["query", "--index", idx, "--queries", empty], "empty"),
        (["query", "--index", idx, "--queries", env.queries, "--explain"], "--explain explains the hits of one"),
        (["query", "--index", idx, "--text", "the cat", "--model", tmp_path], "could not load model"),
        (["select", "--index", idx, "--queries", env.queries, "--top-n", "2", "--out", tmp_path / "o.txt"], ".jsonl"),
        (["select", "--index", idx, "--queries", env.queries, "--top-n", "2", "--out", tmp_path / "no" / "o.csv"],
         "does not exist"),
        (["info", "--index", tmp_path / "none.duckdb"], "no index at"),
    ]
    ro = _ro_dir(tmp_path)
    if ro is not None:
        cases.append((["build", env.pool, "--index", ro / "x.duckdb"], "not writable|permission denied"))
    for argv, message in cases:
        code, out, err = _run(capsys, *argv)
        assert code == 1, (argv, out, err)
        assert any(line.startswith(f"rise {argv[0]}: error: ") for line in err.splitlines()), err
        assert pd.Series([err]).str.contains(message, regex=True).all(), (argv, err)
        assert "Traceback" not in err
    assert _n_samples(env.index) == 24


def test_query_longer_than_seq_len(env, capsys, tmp_path):
    index = tmp_path / "short.duckdb"
    code, out, _ = _run(capsys, "build", env.pool, "--index", index, "--model", env.model, *DIMS, "--seq-len", "8",
                        "--quiet")
    assert code == 0 and "truncated to seq_len" in out
    code, _, err = _run(capsys, "query", "--index", index, "--text", "the cat sat on the mat and the dog sat on it")
    assert code == 1 and "has 13 tokens; this index counts at most seq_len=8" in err


def test_cli_subprocess_end_to_end(env, tmp_path):
    index = tmp_path / "sub.duckdb"
    pool = write_jsonl(tmp_path / "sub.jsonl", pool_rows(12))
    run = [sys.executable, "-m", "rise_core.cli"]
    proc_env = {**os.environ, "PYTHONPATH": os.getcwd()}
    build = subprocess.run([*run, "build", str(pool), "--index", str(index), "--model", str(env.model), *DIMS,
                            "--batch-size", "4"], capture_output=True, text=True, timeout=300, env=proc_env)
    assert build.returncode == 0, build.stderr
    assert "12 added" in build.stdout  # the tqdm bar on stderr names each phase of the build
    assert "fitting the hidden-state mean" in build.stderr and "computing features: 100%" in build.stderr
    query = subprocess.run([*run, "query", "--index", str(index), "--text", "the doctor gave medicine", "-k", "3",
                            "--format", "json"], capture_output=True, text=True, timeout=300, env=proc_env)
    assert query.returncode == 0, query.stderr
    assert len(json.loads(query.stdout)) == 3


def test_an_empty_query_text_is_named(env, capsys, tmp_path):
    """A query of spaces is called empty text (not an empty completion, not 'sample None'), naming which query."""
    code, _, err = _run(capsys, "query", "--index", env.index, "--text", "   ")
    assert code == 1 and "the query given with --text has empty text (only whitespace)" in err
    code, _, err = _run(capsys, "query", "--index", env.index, "--prompt", "p", "--completion", " ")
    assert code == 1 and "the query given with --completion is empty" in err
    queries = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "text": "the cat sat on the mat ."},
                                                 {"id": "q2", "text": "the bank lost money ."}, {"id": "q3", "text": "  "}])
    code, _, err = _run(capsys, "query", "--index", env.index, "--queries", queries, "-k", "2")
    assert code == 0
    assert f"note: 1 of 3 queries skipped (query 3 (row 3 of {queries}): empty text ('text', only whitespace))" in err
    blank = write_jsonl(tmp_path / "blank.jsonl", [{"id": "q1", "text": " "}])
    code, _, err = _run(capsys, "query", "--index", env.index, "--queries", blank)
    assert code == 1 and f"{blank}: no usable queries: query 1 (row 1 of {blank}): empty text" in err
    assert "sample None" not in err and "completion" not in err


def test_query_versus_another_answer(env, capsys):
    """`--versus-*`: the scores are the query's minus the other answer's (checked against two plain queries with the
    same fixed weights), the note says so, and --explain shows the other answer's tokens pulling the score down."""
    fixed = ["--lambda-rh", "1", "--lambda-gh", "0.5", "--lambda-hs", "0.3", "--search", "exact", "--format", "json",
             "-k", "30"]
    prompt, a, b = "what did the cat do ?", "the cat sat on the mat .", "the bank lost money ."
    scores = {}
    for name, completion in (("a", a), ("b", b)):
        code, out, _ = _run(capsys, "query", "--index", env.index, "--prompt", prompt, "--completion", completion,
                            *fixed)
        assert code == 0
        scores[name] = {h["id"]: h for h in json.loads(out)}
    code, out, err = _run(capsys, "query", "--index", env.index, "--prompt", prompt, "--completion", a,
                          "--versus-completion", b, *fixed)  # B's prompt defaults to the query's
    assert code == 0 and "contrast: each score is the query's minus its score against the other answer" in err
    hits = json.loads(out)
    assert len(hits) == len(scores["a"])
    for h in hits:  # float32 scores of float16 rows, printed in JSON: 1e-5
        for c in ("score", "rh", "gh", "hs"):
            assert h[c] == pytest.approx(scores["a"][h["id"]][c] - scores["b"][h["id"]][c], abs=1e-5)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", a, "--versus-text", b, "-k", "2",
                        "--explain")
    assert code == 0 and "RH query:" in out and "RH versus:" in out
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", a, "--versus-text", b, "-k", "1",
                        "--explain", "--format", "json")
    ex = json.loads(out)[0]["explanation"]
    assert [t.strip() for t in ex["versus"]["tokens"][-2:]] == ["money", "."]  # B's tokens
    # A's tokens (up) and B's (down) together carry the hit's contrast score
    assert sum(ex["query"]["rh"]) + sum(ex["versus"]["rh"]) == pytest.approx(json.loads(out)[0]["rh"], abs=2e-3)


@pytest.mark.parametrize(("argv", "message"), [
    (["--text", "the cat", "--versus-text", "the cat"], "the other answer is identical to the query"),
    (["--text", "the cat", "--versus-text", "  "], "the other answer given with --versus-text is empty"),
    (["--prompt", "p", "--completion", "the cat", "--versus-completion", ""],
     "the other answer given with --versus-completion is empty"),
    (["--prompt", "p", "--completion", "the cat", "--versus-completion", "the cat"],
     "the other answer is identical to the query"),
])
def test_query_versus_bad_other_answer_exits_1(env, capsys, argv, message):
    code, _, err = _run(capsys, "query", "--index", env.index, *argv)
    assert code == 1 and message in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--text", "a", "--versus-text", "b", "--versus-completion", "c"], "--versus-text, or as --versus-completion"),
    (["--text", "a", "--versus-prompt", "b"], "--versus-prompt needs --versus-completion"),
])
def test_query_versus_usage_errors_exit_2(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        main(["query", "--index", "x.duckdb", *argv])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_query_with_marks_ranks_again(env, capsys, tmp_path):
    """`--marks FILE` (the Attribute page's download): the marked rows carry their marks, a yes-marked row moves up,
    the score is the sum of its parts (the marked words' included), and stderr says what the marks chose."""
    text = "the cat sat on the mat ."
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "--format", "json", "-k", "24")
    assert code == 0
    ids = [h["id"] for h in json.loads(out)]
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps({ids[-1]: True, ids[0]: False}))
    code, out, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks, "--format", "json",
                          "-k", "24")
    assert code == 0 and "feedback: 1 marked yes, 1 no; the marks chose" in err
    hits = {h["id"]: h for h in json.loads(out)}
    assert hits[ids[-1]]["mark"] == "yes" and hits[ids[0]]["mark"] == "no"
    assert hits[ids[-1]]["rank"] < 24  # the confirmed hit moved up
    for h in hits.values():  # the parts are float32 (1e-5 in JSON)
        assert h["score"] == pytest.approx(sum(h.get(c) or 0.0 for c in ("rh", "gh", "hs", "span", "words")),
                                           abs=1e-4)
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks, "-k", "3")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["rank", "mark", "id"]


def test_query_not_word_refuses_a_word_of_the_query(env, capsys, tmp_path, monkeypatch):
    """`--not-word` (repeatable) reaches the marked words as refused words of the query (a word the query lacks is
    ignored) and stderr says so; in `rise select --marks` too; without --marks it is a usage error."""
    from rise_core import attribution

    seen, marked_words = [], attribution.marked_words

    def spy(*args, **kwargs):
        seen.append(marked_words(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(attribution, "marked_words", spy)
    text = "the cat sat on the mat ."
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "--format", "json", "-k", "3")
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps({json.loads(out)[0]["id"]: True}))
    code, out, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks, "--not-word", "cat",
                          "--not-word", "zebra", "--format", "json")
    assert code == 0 and "Not lifted, as you asked: 'cat'" in err
    assert seen[-1].refused == {"cat"} and "cat" not in seen[-1].query and "mat" in seen[-1].query
    # the page's download holds its refused words: read with the marks, joined by --not-word's
    marks.write_text(json.dumps({"marks": json.loads(marks.read_text()), "not_words": ["sat"]}))
    code, _, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks, "--not-word", "cat")
    assert code == 0 and "Not lifted, as you asked: 'cat', 'sat'" in err and seen[-1].refused == {"cat", "sat"}
    code, _, err = _run(capsys, "select", "--index", env.index, "--queries", env.queries, "--top-n", "3", "--out",
                        tmp_path / "sel.jsonl", "--marks", marks, "--not-word", "mat")
    assert code == 0 and seen[-1].refused == {"mat", "sat"}  # the queries file's first query holds both
    with pytest.raises(SystemExit) as exc:
        main(["query", "--index", str(env.index), "--text", text, "--not-word", "cat"])
    assert exc.value.code == 2 and "--not-word refuses a word the marks would lift; it needs --marks" in \
        capsys.readouterr().err


def test_query_with_three_misses_names_the_other_view_and_its_flags_run(env, capsys, tmp_path):
    """Three no-marks and none yes: stderr says how to rank from the other view (the marks do not turn by themselves),
    naming the flags for this index (with or without HS), and the flags it names run; two misses say nothing."""
    from rise_core.cli.query import ALL_MISSES_CLI, ALL_MISSES_CLI_NO_HS

    text = "the cat sat on the mat ."
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "--format", "json", "-k", "3")
    ids = [h["id"] for h in json.loads(out)]
    marks = tmp_path / "marks.json"
    with RiseIndex.open(env.index) as index:
        has_hs = index.config.hidden_channel
    hint = ALL_MISSES_CLI if has_hs else ALL_MISSES_CLI_NO_HS
    marks.write_text(json.dumps(dict.fromkeys(ids[:2], False)))
    code, _, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks)
    assert code == 0 and hint not in err
    marks.write_text(json.dumps(dict.fromkeys(ids, False)))
    code, _, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks)
    assert code == 0 and hint in err
    flags = (["--preset", "backdoor"], ["--weighting", "fixed", "--lambda-rh", "0", "--lambda-gh", "0", "--lambda-hs",
                                        "1"]) if has_hs else (["--lambda-rh", "0"],)
    for named in flags:
        assert " ".join(named) in hint
        code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "-k", "3", *named)
        assert code == 0 and out.strip()


def test_query_with_marks_keeps_the_span_lift_and_says_so(env, capsys, tmp_path, monkeypatch):
    """Where the behaviour test fired (its finding replaced: the tiny pool shares no trigger), `--marks` keeps the span
    lift after a yes on a row holding it: the span column stays, the score is the sum of its parts, stderr says so."""
    from rise_core import adaptive, attribution

    patch_finding(monkeypatch, lambda *a, **k: adaptive.BehaviourEvidence("the", "text", 5, 10, 0.05,
                                                                                           1e-4, 0))
    attribution.BEHAVIOUR_MEMO.clear()
    text = "the cat sat on the mat ."
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", text, "--format", "json", "-k", "24",
                        "--weighting", "auto")
    assert code == 0
    hits = json.loads(out)
    holder = next(h["id"] for h in hits if (h.get("span") or 0) > 0)
    marks = tmp_path / "marks.json"
    marks.write_text(json.dumps({holder: True}))
    code, out, err = _run(capsys, "query", "--index", env.index, "--text", text, "--marks", marks, "--format", "json",
                          "-k", "24", "--weighting", "auto")
    assert code == 0 and "The behaviour test's span stays lifted (the span column): 'the'" in err
    after = json.loads(out)
    assert any((h.get("span") or 0) > 0 for h in after)
    for h in after:
        assert h["score"] == pytest.approx(sum(h.get(c) or 0.0 for c in ("rh", "gh", "hs", "span", "words")),
                                           abs=1e-4)
    attribution.BEHAVIOUR_MEMO.clear()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not JSON"),
    ("[" * 50_000, "nested too deeply to be a marks file"),
    ("[1, 2]", "expected a JSON object of sample id -> true/false"),
    ("{}", "expected a JSON object"),
    ('{"a": "yes"}', "marks are true or false"),
    ('{"no-such-row": true}', "is not in"),
    ("{" + ", ".join(f'"r{i}": true' for i in range(1001)) + "}", "1,001 marks; at most 1,000"),
    (" " * (1 << 20) + "{}", "bytes; a marks file holds at most 1,000 ids"),
    ('{"marks": {"a": true}, "words": ["x"]}', "unknown keys ['words'] beside \"marks\""),
    ('{"marks": {"a": true}, "not_words": "x"}', '"not_words" must be a list of words'),
    ('{"marks": {}, "not_words": []}', "expected a JSON object"),
    (json.dumps({"marks": {"a": True}, "not_words": [f"w{i}" for i in range(65)]}),
     "65 words refused (--marks file and --not-word); at most 64"),
])
def test_query_bad_marks_exit_1(env, capsys, tmp_path, content, message):
    marks = tmp_path / "marks.json"
    marks.write_text(content)
    code, _, err = _run(capsys, "query", "--index", env.index, "--text", "the cat", "--marks", marks)
    assert code == 1 and message in err


def test_query_and_info_say_when_the_index_is_not_complete(env, capsys, tmp_path):
    """A build stopped halfway: `rise info` names the unfinished pool, `rise query` and `rise select` still rank the
    stored samples and say on stderr that the index is not complete; once finished, nothing is said."""
    from rise_core.ingest import read_pool  # the pool as `rise build` reads it (named by its file)
    from rise_core.models import load_model
    from rise_core.store import build_index

    index, calls = tmp_path / "half.duckdb", []
    build_index(index, read_pool(env.pool), load_model(str(env.model)), batch_size=4,
                progress=lambda d, t: calls.append(d), should_stop=lambda: len(calls) >= 2)
    code, out, _ = _run(capsys, "info", "--index", index)
    assert code == 0 and f"the build of {env.pool} was interrupted or stopped: run it again to finish" in out
    for argv in (("query", "--index", index, "--text", "the cat sat"),
                 ("select", "--index", index, "--queries", env.queries, "--top-n", "2", "--out", tmp_path / "s.jsonl")):
        code, _, err = _run(capsys, *argv)
        assert code == 0 and f"is not complete (the build of {env.pool} was stopped or interrupted)" in err
        assert "rankings cover the 4 samples stored so far" in err
    build_index(index, read_pool(env.pool), load_model(str(env.model)), batch_size=4)
    code, _, err = _run(capsys, "query", "--index", index, "--text", "the cat sat")
    assert code == 0 and "not complete" not in err


def test_query_marks_do_not_go_with_each(env, capsys, tmp_path):
    marks = tmp_path / "marks.json"
    marks.write_text('{"a": true}')
    with pytest.raises(SystemExit) as exc:
        main(["query", "--index", str(env.index), "--queries", str(env.queries), "--each", "--marks", str(marks)])
    assert exc.value.code == 2 and "--marks ranks one query again" in capsys.readouterr().err
    code, _, err = _run(capsys, "query", "--index", env.index, "--marks", tmp_path / "absent.json", "--text", "a")
    assert code == 1 and "no such file" in err


def test_query_compare_ranks_with_every_method(env, capsys):
    """`rise query --compare`: the Compare page from a terminal. RISE's top k is `rise query`'s, BM25's the top k of
    BM25 fitted on the pool (a known answer: the same scorer run here), the agreement table and the label metrics (the
    pool's 0/1 labels) are printed; json and csv carry the same lists; under a contrast BM25 ranks by the query's
    score minus the other answer's."""
    import numpy as np

    from rise_core.compare import fit_bm25
    from rise_core.samples import Sample

    query, other = "the cat sat on the mat .", "the bank lost money ."
    code, out, err = _run(capsys, "query", "--index", env.index, "--text", query, "--compare", "-k", "5")
    assert code == 0, err
    assert "Agreement with RISE" in out and "Against the pool's labels:" in out and "precision@5" in out
    for name in ("RISE", "RISE fixed weights", "Hidden cosine", "BM25"):
        assert f"{name}: top 5" in out
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", query, "--compare", "--format", "json",
                        "-k", "5")
    assert code == 0
    got = json.loads(out)
    assert got["reference"] == "RISE" and {r["method"] for r in got["agreement"]} >= {"RISE fixed weights", "BM25"}
    assert {r["method"] for r in got["labels"]} >= {"RISE", "BM25"}
    _, plain, _ = _run(capsys, "query", "--index", env.index, "--text", query, "--format", "json", "-k", "5")
    assert [h["id"] for h in got["top"]["RISE"]] == [h["id"] for h in json.loads(plain)]
    with RiseIndex.open(env.index) as index:
        ids = index.samples()["id"].to_numpy()
        bm25 = fit_bm25(index)
        plain_scores = bm25.score([Sample(text=query)])[0]
        contrast_scores = plain_scores - bm25.score([Sample(text=other)])[0]
    for hits, scores in ((got["top"]["BM25"], plain_scores), (None, contrast_scores)):
        if hits is None:
            code, out, err = _run(capsys, "query", "--index", env.index, "--text", query, "--versus-text", other,
                                  "--compare", "RISE,BM25", "--format", "json", "-k", "5")
            assert code == 0 and "minus its score for the other answer" in err
            hits = json.loads(out)["top"]["BM25"]
        best = np.argsort(-scores, kind="stable")[:5]
        assert [h["score"] for h in hits] == pytest.approx(scores[best].tolist(), abs=1e-6)
        assert {h["id"] for h in hits} <= set(ids[scores >= scores[best[-1]]])  # the top 5, ties in any order
    code, out, _ = _run(capsys, "query", "--index", env.index, "--text", query, "--compare", "RISE,BM25",
                        "--format", "csv", "-k", "3")
    table = pd.read_csv(io.StringIO(out))
    assert list(table.columns[:4]) == ["method", "rank", "id", "score"] and len(table) == 6
    assert table.groupby("method")["rank"].apply(list).to_dict() == {"RISE": [1, 2, 3], "BM25": [1, 2, 3]}


@pytest.mark.parametrize(("extra", "message"), [
    (["--compare", "RISE,Nonsense"], "unknown methods ['Nonsense']"),
    (["--compare", ",,"], "--compare: name at least one method"),
    (["--compare", "--where", "label = 1"], "--compare ranks the whole pool"),
    (["--compare", "--explain"], "--compare ranks the whole pool"),
])
def test_query_compare_usage_errors_exit_2(capsys, extra, message):
    with pytest.raises(SystemExit) as exc:
        main(["query", "--index", "x.duckdb", "--text", "the cat", *extra])
    assert exc.value.code == 2 and message in capsys.readouterr().err
