"""`rise evaluate --pool P --queries Q` on bad input: labels read strictly, rows never dropped silently.

Labels: a pool row's label is read as `rise query --compare` reads it (`metrics.binary_labels`: 0/1, 0.0/1.0, booleans,
true/false, yes/no, positive/negative, pos/neg, case-insensitive); anything else (0.9, 2, "maybe", a list) is an
InputDataError naming the file, the row, the id and the value, never a traceback or a rounded label. Per-query labels
are not supported (a label is one 0/1 per pool row), so a list label is refused the same way.

Skipped rows, the choice made: every row of an evaluation pool is labelled, so a pool row that cannot be used (empty
or missing text, a duplicate) would change the pool and the metrics: it is refused, with its row and reason. Query
rows carry no label the metrics read: an unusable one is left out and listed on stderr (as `rise build` lists its
skipped rows), so the per-query table's missing query is explained. Rows past --max-pool / --max-queries are not read.
"""

from __future__ import annotations

import pytest
from index_helpers import save_tiny_model, write_jsonl

from rise_core.cli import main
from rise_core.evaluation import load_task


def pool_rows(n: int = 12) -> list[dict]:
    return [{"id": f"p{i}", "text": f"the cat number {i} sat on the mat", "label": i % 2} for i in range(n)]


QUERIES = [{"id": "q1", "text": "the cat number 3 sat"}, {"id": "q2", "text": "a cat sat on the mat"}]


def run(tmp_path, pool: list[dict], queries: list[dict] = QUERIES, *extra: str) -> int:
    return main(["evaluate", "--pool", str(write_jsonl(tmp_path / "pool.jsonl", pool)),
                 "--queries", str(write_jsonl(tmp_path / "queries.jsonl", queries)), "--methods", "BM25",
                 "--out", str(tmp_path / "out"), *extra])


@pytest.mark.parametrize("bad", ["maybe", 0.9, 0.7, 2, -1, "", [1, 0], {"q1": 1}])
def test_a_label_that_is_not_binary_is_refused_with_its_row(tmp_path, capsys, bad):
    pool = pool_rows()
    pool[3]["label"] = bad
    assert run(tmp_path, pool) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "pool.jsonl: row 4 (id 'p3')" in err and repr(bad) in err


def test_every_bad_label_is_counted_and_a_missing_one_named(tmp_path, capsys):
    pool = pool_rows()
    pool[5]["label"], pool[7]["label"] = 0.9, 0.7  # once silently 0
    del pool[2]["label"]
    assert run(tmp_path, pool) == 1
    err = capsys.readouterr().err
    assert "row 3 (id 'p2') has no label (and 2 more rows)" in err


@pytest.mark.parametrize(("values", "expected"), [
    ([True, False], [1, 0]), (["1", "0"], [1, 0]), (["TRUE", "false"], [1, 0]), ([1.0, 0.0], [1, 0]),
    (["yes", "No"], [1, 0]), (["positive", "neg"], [1, 0]),
])
def test_accepted_label_spellings_become_0_1_in_labels_and_samples(tmp_path, values, expected):
    pool = pool_rows(4)
    for row, value in zip(pool, values * 2, strict=True):
        row["label"] = value
    task = load_task(None, write_jsonl(tmp_path / "pool.jsonl", pool), write_jsonl(tmp_path / "q.jsonl", QUERIES))
    assert task.labels.tolist() == expected * 2
    assert [s.label for s in task.pool] == expected * 2  # what the retrospective classifier reads


def test_csv_labels_true_false(tmp_path):
    pool = tmp_path / "pool.csv"
    pool.write_text("id,text,label\n" + "".join(f"p{i},the cat {i} sat,{'TRUE' if i % 2 else 'false'}\n"
                                                for i in range(4)))
    task = load_task(None, pool, write_jsonl(tmp_path / "q.jsonl", QUERIES))
    assert task.labels.tolist() == [0, 1, 0, 1]


def test_unusable_pool_rows_are_refused_not_dropped(tmp_path, capsys):
    pool = pool_rows()
    pool[2]["text"], pool[4]["text"] = "", "   "
    del pool[6]["text"]
    assert run(tmp_path, pool) == 1  # once: "pool 9" from 12 rows, silently
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "pool.jsonl: 3 pool rows cannot be used (row 3: empty text" in err and "row 7: no 'text' field (the row has" in err


def test_a_duplicate_pool_row_is_refused(tmp_path, capsys):
    pool = [{k: v for k, v in r.items() if k != "id"} for r in pool_rows()]
    pool[5]["text"], pool[5]["label"] = pool[1]["text"], 0  # same text, the other label
    assert run(tmp_path, pool) == 1
    assert "row 6: duplicate of row 2" in capsys.readouterr().err


def test_rows_past_max_pool_are_not_read(tmp_path, capsys):
    pool = pool_rows()
    pool[10]["text"], pool[11]["label"] = "", "maybe"
    assert run(tmp_path, pool, QUERIES, "--max-pool", "8") == 0
    assert "pool 8 (4 positive)" in capsys.readouterr().err


def test_skipped_queries_are_listed_on_stderr(tmp_path, capsys):
    queries = [*QUERIES, {"id": "q3", "text": ""}, {"id": "q4", "text": "the mat"}]
    assert run(tmp_path, pool_rows(), queries) == 0
    err = capsys.readouterr().err
    assert "pool 12 (6 positive), 3 queries" in err
    assert "queries.jsonl: skipped 1 query row:" in err and "row 3: empty text ('text')" in err


def test_no_usable_query_is_an_error(tmp_path, capsys):
    assert run(tmp_path, pool_rows(), [{"id": "q1", "text": " "}]) == 1
    assert "queries.jsonl: no usable rows (1 skipped: row 1: empty text" in capsys.readouterr().err


def test_word_labels_evaluate_with_the_tiny_model(tmp_path, capsys):
    """The whole command, RISE on the tiny model, over a pool labelled yes/no: the same table as 1/0."""
    model = save_tiny_model(tmp_path / "model")
    tables = []
    for name, pos, neg in (("words", "yes", "no"), ("ints", 1, 0)):
        pool = [{**r, "label": pos if r["label"] else neg} for r in pool_rows(6)]
        out = tmp_path / name
        assert main(["evaluate", "--pool", str(write_jsonl(tmp_path / "pool.jsonl", pool)), "--queries",
                     str(write_jsonl(tmp_path / "q.jsonl", QUERIES)), "--model", str(model), "--methods", "RISE",
                     "--out", str(out)]) == 0
        tables.append((out / "pool_methods.csv").read_text())
    assert "pool 6 (3 positive)" in capsys.readouterr().err
    assert tables[0] == tables[1]
