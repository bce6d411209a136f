"""CSV rows against their header: a row with more cells than the header is refused (never shifted or cut), quoted
commas and newlines are cells, and every reader of CSV (pool and query files, quick-run samples, shard folders)
checks it."""

from __future__ import annotations

import re

import pytest

from rise_core.errors import InputDataError
from rise_core.ingest import read_pool, read_samples, read_table, stream_pool


def _csv(tmp_path, text: str, name: str = "pool.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("read", [read_pool, read_samples, read_table])
def test_a_row_with_more_cells_than_the_header_is_an_error_naming_the_row(tmp_path, read):
    """pandas took an extra leading cell as the index: every column moved one place (id 'the cat sat on the mat',
    text 'extra'), silently. Pool and query files (`read_pool`), quick-run samples and uploads (`read_table`) all go
    through the one reader."""
    path = _csv(tmp_path, "id,text\n1,the cat sat on the mat,extra\n2,the dog sat,more\n")
    with pytest.raises(InputDataError, match=rf"^{re.escape(str(path))}: row 1 \(line 2\) has 3 cells where the "
                                             r"header has 2; quote every cell that holds a comma"):
        read(path)


def test_an_unquoted_comma_in_a_text_is_an_error_not_a_cut_text(tmp_path):
    """`text\\nthe cat,sat on the mat` stored 'sat on the mat'."""
    path = _csv(tmp_path, "text\nthe cat,sat on the mat\n")
    with pytest.raises(InputDataError, match=r"row 1 \(line 2\) has 2 cells where the header has 1"):
        read_pool(path)


def test_the_row_and_line_are_those_of_the_wide_row(tmp_path):
    """Rows count data records (a quoted cell may span lines, blank lines are no rows); the line is where the row
    starts."""
    path = _csv(tmp_path, 'id,text\n1,"the cat\nsat"\n\n2,the dog\n3,the bird, flew\n')
    with pytest.raises(InputDataError, match=r"row 3 \(line 6\) has 3 cells where the header has 2"):
        read_pool(path)


def test_an_empty_cell_past_the_header_is_ignored(tmp_path):
    """A trailing comma on the data rows (an export's artefact) is accepted: the extra cells are empty, so dropping
    them moves no cell and loses nothing but the comma (pandas used to shift the columns, and the pool had 'no usable
    rows'). Any non-empty extra cell is still refused."""
    path = _csv(tmp_path, "id,text\n1,the cat,\n2,the dog,,\n3,the bird\n")
    pool = read_pool(path)
    assert [(s.id, s.text) for s in pool.samples] == [("1", "the cat"), ("2", "the dog"), ("3", "the bird")]
    assert pool.skipped == []
    with pytest.raises(InputDataError, match=r"row 2 \(line 3\) has 4 cells where the header has 2"):
        read_pool(_csv(tmp_path, "id,text\n1,the cat,\n2,the dog,,x\n", "later.csv"))


def test_quoted_commas_newlines_and_short_rows_are_read(tmp_path):
    path = _csv(tmp_path, 'id,text,note\n1,"the cat, the mat","a\r\nb"\r\n2,"said ""hi""\nthen left"\n  \n3,x,\n')
    pool = read_pool(path)
    assert [(s.id, s.text, s.meta.get("note")) for s in pool.samples] == [
        ("1", "the cat, the mat", "a\r\nb"), ("2", 'said "hi"\nthen left', None), ("3", "x", None)]
    assert pool.rows == [1, 2, 3]


def test_a_header_with_a_trailing_comma_has_an_unnamed_empty_column(tmp_path):
    df = read_table(_csv(tmp_path, "id,text,\n1,the cat,\n"))
    assert list(df.columns) == ["id", "text", "Unnamed: 2"] and df.values.tolist() == [["1", "the cat", ""]]


@pytest.mark.parametrize(("text", "why"), [
    ('id,text\n1,the cat\n2,"the dog\n', r"row 2 \(line 3\): a quoted cell is never closed"),
    ("id,text\n1,the cat\rsat\n", r"row 1 \(line 2\): a carriage return inside an unquoted cell"),
])
def test_csv_text_that_cannot_be_split_names_the_row(tmp_path, text, why):
    """An unclosed quote used to swallow the rest of the file silently in the csv module (pandas refused it); a bare
    carriage return inside a cell made pandas start a new row in the middle of a text."""
    with pytest.raises(InputDataError, match=rf"not a readable CSV file: {why}"):
        read_pool(_csv(tmp_path, text))


def test_a_cell_longer_than_the_csv_modules_default_limit_is_read(tmp_path):
    pool = read_pool(_csv(tmp_path, "text\n" + "cat " * 50_000 + "\n"))
    assert len(pool.samples[0].text) == 200_000


def test_a_folder_of_csv_shards_with_a_wide_row_is_refused_before_it_is_read(tmp_path):
    """`datasets`' csv builder (pandas) shifts such a file's columns too, even for a trailing comma (its first column
    taken as the index), so a shard's extra cells are refused, empty or not; the file and row are named."""
    folder = tmp_path / "shards"
    folder.mkdir()
    (folder / "a.csv").write_text("id,text\n1,the cat\n", encoding="utf-8")
    (folder / "b.csv").write_text("id,text\n2,the dog\n3,the bird,\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=rf"^{re.escape(str(folder / 'b.csv'))}: row 2 \(line 3\) has 3 cells "
                                             r"where the header has 2; remove the trailing commas"):
        stream_pool(folder)
