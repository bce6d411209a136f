"""CSV outputs read back as written (a bare carriage return in a text no longer splits its row), and the browser's
downloads keep formula-like texts from running in a spreadsheet."""

from __future__ import annotations

import io

import pandas as pd

from rise_core.csv_out import csv_text, spreadsheet_safe, write_csv

TEXTS = ["line one\rline two", "a, \"quoted\" b", "multi\nline", "=1+1", "-3", "plain", ""]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"id": [f"r{i}" for i in range(len(TEXTS))], "score": [0.5 - i for i in range(len(TEXTS))],
                         "text": TEXTS})


def test_csv_reads_back_as_written():
    df = _frame()
    plain = df.to_csv(index=False)  # pandas' default quoting: the bare CR splits the first row
    assert len(pd.read_csv(io.StringIO(plain), keep_default_na=False)) == len(df) + 1
    back = pd.read_csv(io.StringIO(csv_text(df)), keep_default_na=False)
    assert back["text"].tolist() == TEXTS and back["id"].tolist() == df["id"].tolist()
    assert back["score"].dtype.kind == "f" and back["score"].tolist() == df["score"].tolist()


def test_write_csv_to_path_and_stream(tmp_path):
    df = _frame()
    write_csv(df, tmp_path / "out.csv")
    stream = io.StringIO()
    write_csv(df, stream)
    assert (tmp_path / "out.csv").read_bytes().decode() == stream.getvalue() == csv_text(df)


def test_spreadsheet_form_only_marks_formula_starts():
    df = _frame()
    safe = spreadsheet_safe(df)
    assert safe["text"].tolist() == [TEXTS[0], TEXTS[1], TEXTS[2], "'=1+1", "'-3", "plain", ""]
    assert safe["score"].tolist() == df["score"].tolist() and df["text"].tolist() == TEXTS
    back = pd.read_csv(io.StringIO(csv_text(df, for_spreadsheet=True)), keep_default_na=False)
    assert back["text"].tolist() == safe["text"].tolist()


def test_a_column_named_like_a_formula_is_kept_as_text():
    df = pd.DataFrame({"=cmd()": ["a"], "score": [1.0]})
    back = pd.read_csv(io.StringIO(csv_text(df, for_spreadsheet=True)))
    assert back.columns.tolist() == ["'=cmd()", "score"] and df.columns.tolist() == ["=cmd()", "score"]
