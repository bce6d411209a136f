"""Filters (`--where`, the Attribute page's Filter box) are conditions over the pool's own columns and nothing else.

An adversarial corpus (file readers of every format, glob, COPY, ATTACH, INSTALL/LOAD, PRAGMA/SET, settings and
environment functions, set-operation escapes, comments, stacked statements, quoting tricks, huge literals, deep
nesting) is refused on every surface -- the Python API, the CLI and the Attribute page under AppTest -- with one
clear line and no file content, and leaves the index file byte for byte as it was. Every ordinary filter still runs,
and the connection itself cannot reach files even for SQL that got past the parse check."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from explorer_env import INDEX_NAME, N_POOL, build_explorer_env

from rise_core.attribution import query_features, rank
from rise_core.cli import main
from rise_core.errors import InputDataError
from rise_core.models import load_model
from rise_core.samples import Sample
from rise_core.store import RiseIndex
from rise_core.store.filters import LOCKED_CONFIG, MAX_DEPTH, MAX_FILTER_CHARS, FilterRefused, check_filter

ROOT = Path(__file__).resolve().parent.parent
MARKER = "TOPSECRET-7f3a9c"  # in every file the payloads try to read; must never appear in a message


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sandbox")
    app_env = build_explorer_env(root)
    secrets = root / "secrets"
    secrets.mkdir()
    (secrets / "secret.txt").write_text(f"{MARKER}\n")
    (secrets / "secret.csv").write_text(f"a,b\n{MARKER},1\n")
    (secrets / "secret.json").write_text(json.dumps([{"a": MARKER}]))
    pd.DataFrame({"a": [MARKER]}).to_parquet(secrets / "secret.parquet")
    (root / "q.jsonl").write_text(json.dumps({"prompt": "tell me a story", "completion": "the cat sat ."}) + "\n")
    return {"root": root, "app": app_env, "secrets": secrets,
            "index": Path(app_env["RISE_INDEX_DIR"]) / INDEX_NAME, "model": app_env["RISE_MODEL"]}


def payloads(secrets: Path) -> list[str]:
    """Filters an attacker types; every one must be refused."""
    s, d = secrets, str(secrets)
    txt, csv, js, pq = (str(s / f"secret.{ext}") for ext in ("txt", "csv", "json", "parquet"))
    stacked = "1 = 1); {} ; SELECT (1"
    return [
        # file readers of every format, as scalar subqueries, EXISTS, IN and FROM-less replacement scans
        f"CAST((SELECT replace(content, chr(10), ' | ') FROM read_text('{txt}')) AS INTEGER) = 1",
        f"EXISTS (SELECT * FROM read_text('{txt}'))",
        f"EXISTS (SELECT * FROM read_blob('{txt}'))",
        f"EXISTS (SELECT * FROM read_csv('{csv}'))",
        f"EXISTS (SELECT * FROM read_csv_auto('{csv}'))",
        f"label IN (SELECT a FROM read_csv('{csv}'))",
        f"EXISTS (SELECT * FROM read_json('{js}'))",
        f"EXISTS (SELECT * FROM read_json_auto('{js}'))",
        f"EXISTS (SELECT * FROM read_ndjson_objects('{js}'))",
        f"EXISTS (SELECT * FROM read_parquet('{pq}'))",
        f"EXISTS (SELECT * FROM parquet_metadata('{pq}'))",
        f"EXISTS (SELECT * FROM '{csv}')",
        f"id = (SELECT a FROM '{pq}')",
        f"EXISTS (SELECT * FROM sniff_csv('{csv}'))",
        f"read_text('{txt}') IS NOT NULL",
        f"EXISTS (SELECT * FROM glob('{d}/*'))",
        "(SELECT count(*) FROM glob('/root/.ssh/*')) > 0",
        "EXISTS (SELECT * FROM read_csv('http://127.0.0.1:9/x.csv'))",
        "EXISTS (SELECT * FROM read_parquet('s3://bucket/x.parquet'))",
        # stacked statements: COPY, ATTACH, INSTALL/LOAD, PRAGMA/SET, DDL
        stacked.format(f"COPY samples TO '{d}/out.csv'"),
        stacked.format(f"ATTACH '{d}/other.duckdb' AS o"),
        stacked.format("INSTALL httpfs"),
        stacked.format("LOAD httpfs"),
        stacked.format("PRAGMA database_list"),
        stacked.format("SET enable_external_access = true"),
        stacked.format("DROP TABLE rise_samples"),
        "label = 1; SELECT 1",
        # settings, environment, catalogue and other tables of the index
        "current_setting('temp_directory') IS NOT NULL",
        "getenv('HOME') IS NOT NULL",
        "EXISTS (SELECT * FROM duckdb_settings())",
        "EXISTS (SELECT * FROM duckdb_extensions())",
        "EXISTS (SELECT * FROM pragma_database_list())",
        "version() = 'x'",
        "EXISTS (SELECT * FROM information_schema.tables)",
        "EXISTS (SELECT * FROM rise_manifest)",
        "EXISTS (FROM query('SELECT 1'))",
        # set-operation escapes out of the WHERE clause
        "1=0) UNION ALL SELECT 3 WHERE (1=1",
        "1=0) UNION SELECT 999999999999 WHERE (1=1",
        "1=1) INTERSECT SELECT row FROM samples WHERE (1=1",
        "1=1) EXCEPT SELECT 0 WHERE (1=1",
        "1=0) UNION ALL SELECT row FROM rise_features WHERE (1=1",
        # comments
        "label = 1 -- ) OR (1=1",
        "label = 1 /* ) UNION ALL SELECT 5 WHERE (1=1 */ OR EXISTS (SELECT 1)",
        f"/**/EXISTS/**/(SELECT/**/*/**/FROM/**/read_text('{txt}'))",
        # quoting tricks
        f"\"read_text\"('{txt}') IS NOT NULL",
        f"main.read_text('{txt}') IS NOT NULL",
        "system.main.current_setting('threads') = '2'",
        "id = 'a') UNION ALL SELECT 1 WHERE ('1'='1'",
        "samples.id = 'r01'",
        "$$x$$ = id OR EXISTS (SELECT 1)",
        "id = $1",
        # anything that is not a plain scalar condition
        "list_transform([1], x -> x + 1) = [2]",
        "sum(n_tokens) > 0",
        "row_number() OVER () = 1",
        "random() < 0.5",
        "CAST(id AS MAP(VARCHAR, VARCHAR)) IS NULL",
        # huge literals and deep nesting
        "id = '" + "x" * (MAX_FILTER_CHARS + 10) + "'",
        "n_tokens < 1" + "0" * (MAX_FILTER_CHARS + 10),
        "(" * 5000 + "label = 1" + ")" * 5000,
        "NOT " * (MAX_DEPTH + 5) + "label = 1",
        "lower(" * (MAX_DEPTH + 5) + "id" + ")" * (MAX_DEPTH + 5) + " = 'x'",
        "   ",
        "label = 1\x00",
    ]


ORDINARY = {  # filter -> rows of the explorer fixture's pool it keeps (31 rows: N_POOL labelled + one HTML row)
    "label = 1": None,
    "topic = 'cats'": None,
    "topic LIKE 'st%'": None,
    "topic ILIKE 'MONEY'": None,
    "topic IN ('cats', 'money') AND NOT label = 1": None,
    "label IS NOT NULL AND n_tokens BETWEEN 1 AND 1000": None,
    "lower(completion) LIKE '%howdy%'": None,
    "CAST(label AS INTEGER) = 1 OR id = 'evil'": None,
    "length(text) >= 0 AND coalesce(label, 0) = 0": None,
    "n_counted > 0 AND n_tokens < 400": None,
    "id = 'a'') OR (''1''=''1'": None,  # a quote inside a string literal: a plain (non-matching) comparison
    "n_tokens < 1" + "0" * 400: None,  # a huge numeric literal inside the length limit
    "((((label = 1))))": None,
}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_clean_refusal(message: str) -> None:
    assert MARKER not in message
    assert "\n" not in message, "a refusal is one line"
    assert "Traceback" not in message


def test_check_filter_refuses_the_corpus_before_anything_runs(env):
    columns = ["row", "id", "text", "prompt", "completion", "label", "topic", "n_counted", "loss", "mean_support",
               "n_tokens", "truncated"]
    corpus = payloads(env["secrets"])
    assert len(corpus) >= 40
    for where in corpus:
        with pytest.raises(FilterRefused) as info:
            check_filter(where, columns)
        _assert_clean_refusal(str(info.value))
        assert "refused" in str(info.value)
    for where in ORDINARY:
        assert check_filter(where, columns) == f"SELECT row FROM samples WHERE ({where})"


def test_api_refuses_every_payload_and_leaves_the_index_as_it_was(env):
    lm = load_model(env["model"])
    before = _sha(env["index"])
    with RiseIndex.open(env["index"]) as index:
        qfm = query_features(index, lm, [Sample(prompt="tell me a story", completion="the cat sat on the mat .")])
        unfiltered = rank(index, qfm, k=5)
        for where in payloads(env["secrets"]):
            for call in (lambda w: rank(index, qfm, k=5, where=w), index.samples, index.row_mask):
                with pytest.raises(InputDataError) as info:
                    call(where)
                _assert_clean_refusal(str(info.value))
        # ordinary filters still work, and keep exactly the rows pandas keeps
        frame = index.samples()
        assert len(frame) == N_POOL + 1
        expected = {
            "label = 1": frame["label"] == 1,
            "topic = 'cats'": frame["topic"] == "cats",
            "topic LIKE 'st%'": frame["topic"].str.startswith("st"),
            "topic ILIKE 'MONEY'": frame["topic"].str.lower() == "money",
            "topic IN ('cats', 'money') AND NOT label = 1": frame["topic"].isin(["cats", "money"])
            & (frame["label"] != 1),
            "lower(completion) LIKE '%howdy%'": frame["completion"].str.lower().str.contains("howdy"),
            "CAST(label AS INTEGER) = 1 OR id = 'evil'": (frame["label"] == 1) | (frame["id"] == "evil"),
            "id = 'a'') OR (''1''=''1'": frame["id"] == "a') OR ('1'='1",
            "((((label = 1))))": frame["label"] == 1,
        }
        for where in ORDINARY:
            mask = index.row_mask(where).numpy()
            assert len(index.samples(where)) == int(mask.sum())
            if where in expected:
                assert mask.tolist() == expected[where].tolist(), where
            hits = rank(index, qfm, k=5, where=where)
            assert set(hits["id"]) <= set(frame["id"][mask])
        assert int(index.row_mask("label = 1").sum()) > 0
        assert rank(index, qfm, k=5)[["id", "score"]].equals(unfiltered[["id", "score"]])
    assert _sha(env["index"]) == before


def test_cli_refuses_every_payload_without_loading_the_model(env, capsys, monkeypatch):
    before = _sha(env["index"])

    def no_model(*args, **kwargs):
        raise AssertionError("a refused filter must be reported before the model is loaded")

    monkeypatch.setattr("rise_core.cli.query.load_model_from_args", no_model)
    for where in payloads(env["secrets"]):
        for command in (["query", "--index", str(env["index"]), "--text", "hi", "--where", where],
                        ["select", "--index", str(env["index"]), "--queries", str(env["root"] / "q.jsonl"),
                         "--top-n", "3", "--out", str(env["root"] / "selected.jsonl"), "--where", where]):
            code = main(command)
            out, err = capsys.readouterr()
            assert code != 0, where
            assert MARKER not in out + err and "Traceback" not in err
            assert "refused" in err, (where, err)
    assert not (env["root"] / "selected.jsonl").exists()
    assert _sha(env["index"]) == before


def test_attribute_page_refuses_every_payload(env, monkeypatch):
    from streamlit.testing.v1 import AppTest

    for key, value in env["app"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(ROOT))
    before = _sha(env["index"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/2_Attribute.py").run()
    at.text_area(key="query_prompt").input("tell me a story").run()
    at.text_area(key="query_completion").input("the cat sat on the mat .").run()
    at.button(key="attribute").click().run()
    assert not at.exception
    # the page strips the box (blank is no filter), and streamlit refuses a NUL in a text input itself
    for where in [w for w in payloads(env["secrets"]) if w.strip() and "\x00" not in w]:
        at.text_input(key="where").input(where).run()
        assert not at.exception, (where, [e.value for e in at.exception])
        shown = [e.value for e in at.error]
        assert shown and any("refused" in m for m in shown), (where, shown)
        page_text = "\n".join([*shown, *(m.value for m in at.markdown), *(c.value for c in at.caption)])
        assert MARKER not in page_text
    at.text_input(key="where").input("label = 1").run()
    assert not at.error and not at.exception
    assert _sha(env["index"]) == before


def test_the_connection_itself_reaches_no_file(env):
    """The second wall: SQL that got past the check still cannot read a file, install an extension, or unlock."""
    con = duckdb.connect(":memory:", config=LOCKED_CONFIG)
    try:
        for sql in (f"SELECT * FROM read_text('{env['secrets'] / 'secret.txt'}')",
                    f"SELECT * FROM glob('{env['secrets']}/*')",
                    "INSTALL httpfs",
                    "SET enable_external_access = true",
                    "SET autoinstall_known_extensions = true"):
            with pytest.raises(duckdb.Error) as info:
                con.execute(sql).fetchall()
            assert MARKER not in str(info.value)
    finally:
        con.close()
    with RiseIndex.open(env["index"]) as index:
        with index._cursor("probe") as cur, pytest.raises(duckdb.Error):
            cur.execute(f"SELECT * FROM read_text('{env['secrets'] / 'secret.txt'}')").fetchall()


def test_cli_filter_matching_nothing_is_an_error_not_an_empty_file(env, capsys, tmp_path):
    out_file = tmp_path / "selected.jsonl"
    code = main(["select", "--index", str(env["index"]), "--queries", str(env["root"] / "q.jsonl"), "--top-n", "3",
                 "--where", "topic = 'no such topic'", "--out", str(out_file)])
    _, err = capsys.readouterr()
    assert code != 0 and "matches none of the index's 31 rows" in err
    assert not out_file.exists()
