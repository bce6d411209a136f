"""What a pool reader says about a bad row or file: a row without the field (not 'empty text'), a bad line in a
folder read through `datasets` (the file and the line), a JSON document spread over lines (not 'line 1 is not valid
JSON'), and NaN cells (no metadata, no label, never the text 'nan')."""

from __future__ import annotations

import gzip
import json
import math
import re

import datasets
import pandas as pd
import pytest

from rise_core.errors import InputDataError
from rise_core.ingest import read_pool, stream_pool


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(tmp_path, rows, name="pool.jsonl"):
    return _write(tmp_path, name, "".join(json.dumps(r) + "\n" for r in rows))


# 1. a row without the field ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["pool.jsonl", "pool.json"])
def test_a_row_without_the_text_field_is_reported_as_such_not_as_empty_text(tmp_path, name):
    """`{"id": "a", "body": "x"}` in a pool of `text` rows was skipped as "empty text ('text')": the user looked for
    a blank text that is not there. An explicitly empty, blank or null text is still an empty text."""
    rows = [{"id": "a", "body": "x"}, {"id": "b", "text": "the cat"}, {"id": "c", "text": ""},
            {"id": "d", "text": "  "}, {"id": "e", "text": None}, {}]
    path = _write(tmp_path, name, "".join(json.dumps(r) + "\n" for r in rows) if name.endswith("l")
                  else json.dumps(rows, indent=2))
    pool = read_pool(path)
    assert [s.id for s in pool.samples] == ["b"]
    assert pool.skipped == [(1, "no 'text' field (the row has 'id', 'body')"), (3, "empty text ('text')"),
                            (4, "empty text ('text', only whitespace)"), (5, "empty text ('text')"),
                            (6, "no 'text' field (the row is an empty object)")]


def test_a_row_without_the_completion_is_reported_as_such(tmp_path):
    pairs = read_pool(_jsonl(tmp_path, [{"prompt": "p", "completion": "c"}, {"prompt": "p2"},
                                        {"prompt": "p3", "completion": None}], "pairs.jsonl"))
    assert pairs.skipped == [(2, "no 'completion' field (the row has 'prompt')"), (3, "empty completion ('completion')")]


# 2. a bad line in a folder read through `datasets` ----------------------------------------------------------------

@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf")


def test_a_bad_line_in_a_folder_of_jsonl_files_names_the_file_and_the_line(tmp_path, hf_cache):
    """`datasets` said only "An error occurred while generating the dataset" (the file in a log line, the line not
    at all)."""
    _write(tmp_path, "shards/a.jsonl", '{"text": "the cat"}\n{"text": "the dog"}\n')
    bad = _write(tmp_path, "shards/b.jsonl", '{"text": "a bird"}\n\n{"text": broken}\n{"text": "a fish"}\n')
    with pytest.raises(InputDataError, match=rf"^{re.escape(str(bad))}: line 3 is not valid JSON \(Expecting value, "
                                             r"column 10\)$"):
        stream_pool(tmp_path / "shards")


def test_a_damaged_compressed_shard_is_named(tmp_path, hf_cache):
    _write(tmp_path, "shards/a.jsonl", '{"text": "the cat"}\n')
    bad = tmp_path / "shards" / "b.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"text": "a bird"}\n')[:-12] + b"x")
    with pytest.raises(InputDataError, match=rf"^cannot read {re.escape(repr(str(bad)))}: "):
        stream_pool(tmp_path / "shards")


def test_what_datasets_could_not_read_is_said_when_no_line_is_at_fault(tmp_path, hf_cache):
    """A column that is a number in one file and a text in another: every line is valid JSON, so the message is what
    `datasets` found wrong, not only that an error occurred."""
    _write(tmp_path, "shards/a.jsonl", '{"text": "the cat", "n": 1}\n')
    _write(tmp_path, "shards/b.jsonl", '{"text": "the dog", "n": "x"}\n')
    with pytest.raises(InputDataError, match=r"shards': An error occurred while generating the dataset: Failed to "
                                             r"parse string: 'x' as a scalar of type int64"):
        stream_pool(tmp_path / "shards")


def test_a_damaged_save_to_disk_folder_names_what_is_wrong(tmp_path):
    """Already so: the folder and pyarrow's reason."""
    datasets.Dataset.from_list([{"text": "the cat"}]).save_to_disk(str(tmp_path / "saved"))
    next((tmp_path / "saved").glob("*.arrow")).write_bytes(b"garbage")
    with pytest.raises(InputDataError, match=rf"^{re.escape(str(tmp_path / 'saved'))}: not a readable `datasets` "
                                             r"folder: .*metadata bytes"):
        stream_pool(tmp_path / "saved")


# 3. one JSON document spread over lines ---------------------------------------------------------------------------

SPREAD = ("this looks like one JSON {} spread over several lines, not JSON Lines (one object per line): save it as "
          ".json, or write one object per line")


@pytest.mark.parametrize(("text", "kind"), [('{\n  "text": "the cat"\n}\n', "object"),
                                            ('[\n  {"text": "the cat"},\n  {"text": "the dog"}\n]\n', "array")])
def test_a_pretty_printed_document_in_a_jsonl_file_is_called_what_it_is(tmp_path, text, kind):
    """It was "line 1 is not valid JSON (Expecting property name enclosed in double quotes, column 2)"."""
    path = _write(tmp_path, "pool.jsonl", text)
    with pytest.raises(InputDataError, match=f"^{re.escape(f'{path}: ' + SPREAD.format(kind))}$"):
        read_pool(path)


def test_a_jsonl_file_with_a_bad_first_line_still_names_the_line(tmp_path):
    path = _write(tmp_path, "pool.jsonl", '{"text": broken\n{"text": "the dog"}\n')
    with pytest.raises(InputDataError, match=r"pool\.jsonl: line 1 is not valid JSON \(Expecting value, column 10\)$"):
        read_pool(path)


@pytest.mark.parametrize("text", ['{"id": "a", "text": "the cat"}', '{\n  "id": "a",\n  "text": "the cat"\n}\n'])
def test_a_json_file_of_one_object_is_a_pool_of_one_row(tmp_path, text):
    """One object on one line was a one-row pool already; spread over lines it was 'line 1 is not valid JSON'."""
    pool = read_pool(_write(tmp_path, "pool.json", text))
    assert [(s.id, s.text) for s in pool.samples] == [("a", "the cat")] and not pool.skipped


def test_a_json_file_of_one_broken_document_names_where(tmp_path):
    path = _write(tmp_path, "pool.json", '{\n  "text": "the cat",\n}\n')
    with pytest.raises(InputDataError, match=r"pool\.json: invalid JSON at line 3, column 1: Expecting property name "
                                             r"enclosed in double quotes$"):
        read_pool(path)


def test_json_files_of_arrays_and_of_json_lines_still_read(tmp_path):
    array = read_pool(_write(tmp_path, "a.json", '[\n  {"text": "the cat"},\n  {"text": "the dog"}\n]\n'))
    lines = read_pool(_write(tmp_path, "b.json", '{"text": "the cat"}\n{"text": "the dog"}\n'))
    assert [s.text for s in array.samples] == [s.text for s in lines.samples] == ["the cat", "the dog"]


# 4. NaN cells -----------------------------------------------------------------------------------------------------

def _read(tmp_path, fmt: str):
    """A pool whose second row's `source`, `score` and `label` are missing (NaN where the format has one)."""
    df = pd.DataFrame({"id": ["a", "b"], "text": ["the cat", "the dog"], "source": ["web", math.nan],
                       "score": [0.5, math.nan], "label": [1, math.nan]})
    path = tmp_path / f"pool.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "parquet":
        df.to_parquet(path, index=False)
    elif fmt == "jsonl":  # Python's json writes NaN, and reads it back
        path.write_text("".join(json.dumps(r) + "\n" for r in df.to_dict("records")))
    else:
        return read_pool(df)
    return read_pool(path)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl", "dataframe"])
def test_a_nan_cell_is_no_metadata_and_no_label(tmp_path, fmt):
    pool = _read(tmp_path, fmt)
    a, b = pool.samples
    assert a.meta == {"source": "web", "score": 0.5} and a.label == 1
    assert b.meta == {} and b.label is None and not pool.skipped


def test_a_nan_spelled_in_a_csv_cell_is_no_label_and_leaves_the_other_labels_integers(tmp_path):
    """A CSV label column of 1, NaN, 0 read its labels as 1.0, None, 0.0 (one NaN made the column floats); an empty
    cell kept them integers. A text column keeps the word 'nan' as it is written."""
    path = _write(tmp_path, "pool.csv", "text,label,score,source\nthe cat,1,NaN,web\nthe dog,NaN,2,nan\n"
                                        "the bird,0,nan,book\n")
    pool = read_pool(path)
    assert [s.label for s in pool.samples] == [1, None, 0]
    assert all(type(s.label) is int for s in pool.samples if s.label is not None)
    assert [s.meta for s in pool.samples] == [{"source": "web"}, {"score": 2, "source": "nan"}, {"source": "book"}]
    assert type(pool.samples[1].meta["score"]) is int
