"""Reading pools: formats, field maps, metadata, ids, and every kind of bad input with a clear message."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from rise_core.errors import InputDataError
from rise_core.ingest import FieldMap, PoolData, coerce_pool, read_pool, read_table, stable_id
from rise_core.samples import Sample


def _write_table(df: pd.DataFrame, path, fmt: str):
    """`df` written to `path` as a pool file of format `fmt` (jsonl, json, csv, parquet)."""
    if fmt == "jsonl":
        df.to_json(path, orient="records", lines=True)
    elif fmt == "json":
        df.to_json(path, orient="records")
    elif fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


def _jsonl(tmp_path, rows, name="pool.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (["text", "id"], FieldMap(text="text", prompt=None, completion=None, id="id", label=None)),
        (["prompt", "completion", "label"], FieldMap(text=None, prompt="prompt", completion="completion", id=None,
                                                     label="label")),
        # Alpaca: the input is part of the prompt (appended after a blank line), not metadata
        (["instruction", "input", "output"], FieldMap(text=None, prompt="instruction", completion="output", id=None,
                                                      label=None, input="input")),
        (["Question", "Answer", "ID"], FieldMap(text=None, prompt="Question", completion="Answer", id="ID",
                                                label=None)),
        (["content", "response"], FieldMap(text="content", prompt=None, completion=None, id=None, label=None)),
    ],
)
def test_field_map_guess(columns, expected):
    assert FieldMap.guess(columns) == expected


def test_field_map_guess_with_given_names_and_failure():
    fm = FieldMap.guess(["body", "id", "label"], text="body")
    assert (fm.text, fm.id, fm.label) == ("body", "id", "label")
    fm = FieldMap.guess(["q", "a", "instruction"], completion="a")
    assert (fm.prompt, fm.completion) == ("instruction", "a")
    with pytest.raises(InputDataError, match=r"--text-field.*"):
        FieldMap.guess(["foo", "bar"])


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_read_formats_keep_metadata(tmp_path, fmt):
    rows = [{"id": 1, "text": "the cat sat", "label": 1, "topic": "cats", "year": 2020},
            {"id": 2, "text": "the dog", "label": 0, "topic": "dogs", "year": 2021}]
    path = _write_table(pd.DataFrame(rows), tmp_path / f"pool.{fmt}", fmt)
    pool = read_pool(path)
    assert [s.id for s in pool.samples] == ["1", "2"]
    assert pool.samples[0].text == "the cat sat" and pool.samples[0].label == 1
    assert pool.samples[0].meta == {"topic": "cats", "year": 2020}
    assert isinstance(pool.samples[1].meta["year"], int)
    assert pool.n_rows == 2 and not pool.skipped


@pytest.mark.parametrize("codec", ["gz", "bz2", "xz"])
@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv"])
def test_a_compressed_local_file_reads_as_the_file_inside(tmp_path, fmt, codec):
    """Local pool files are often kept compressed (`train.jsonl.gz`): the format is the extension before the
    codec's, and the rows are those of the file inside. Uploads take none of them (`detect_format`; the upload
    limits' test refuses a gzip bomb by its name)."""
    import bz2
    import gzip
    import lzma

    from rise_core.ingest import detect_format

    rows = [{"id": "a", "text": "the cat sat", "label": 1, "topic": "cats"}, {"id": "b", "text": "the dog"}]
    plain = _write_table(pd.DataFrame(rows), tmp_path / f"pool.{fmt}", fmt)
    packed = tmp_path / f"pool.{fmt}.{codec}"
    packed.write_bytes({"gz": gzip, "bz2": bz2, "xz": lzma}[codec].compress(plain.read_bytes()))
    want, got = read_pool(plain), read_pool(packed)
    assert got.samples == want.samples and got.n_rows == 2
    pd.testing.assert_frame_equal(read_table(packed), read_table(plain))
    with pytest.raises(InputDataError, match="cannot tell the format"):
        detect_format(packed.name)  # what an upload's name is read with
    damaged = tmp_path / f"damaged.{fmt}.{codec}"
    damaged.write_bytes(packed.read_bytes()[:12])
    with pytest.raises(InputDataError, match=f"cannot read .*damaged.{fmt}.{codec}"):
        read_pool(damaged)
    with pytest.raises(InputDataError, match=r"from its extensions; name it like pool.jsonl"):
        read_pool(tmp_path / f"pool.txt.{codec}")


def test_read_from_bytes_and_file_object():
    data = b'{"text": "the cat"}\n\n{"text": "the dog"}\n'
    assert len(read_table(data, fmt="jsonl")) == 2
    pool = read_pool(io.BytesIO(data), fmt="jsonl")
    assert [s.text for s in pool.samples] == ["the cat", "the dog"]


def test_csv_cells_stay_verbatim_and_metadata_is_typed(tmp_path):
    path = tmp_path / "pool.csv"
    path.write_text("id,text,score,flag,code\n007,42,1.5,true,x1\n008,the cat,,false,x2\n", encoding="utf-8")
    pool = read_pool(path)
    assert [s.id for s in pool.samples] == ["007", "008"]
    assert pool.samples[0].text == "42"
    assert pool.samples[0].meta == {"score": 1.5, "flag": True, "code": "x1"}
    assert pool.samples[1].meta == {"flag": False, "code": "x2"}


def test_prompt_completion_pool(tmp_path):
    path = _jsonl(tmp_path, [{"instruction": "what ?", "output": "the cat", "source": "a"},
                             {"instruction": "", "output": "the dog", "source": "b"}])
    pool = read_pool(path)
    assert pool.samples[0] == Sample(prompt="what ?", completion="the cat", id=pool.samples[0].id)
    assert pool.samples[1].prompt is None and pool.samples[1].completion == "the dog"
    assert pool.samples[0].meta == {"source": "a"}


def test_rows_without_id_get_stable_content_ids(tmp_path):
    path = _jsonl(tmp_path, [{"text": "the cat"}, {"text": "the dog"}, {"text": "the cat"}])
    pool = read_pool(path)
    assert [s.id for s in pool.samples] == [stable_id(Sample(text="the cat")), stable_id(Sample(text="the dog"))]
    assert pool.skipped == [(3, "duplicate of row 1 (same text, no id)")]
    assert read_pool(path).samples[0].id == pool.samples[0].id  # stable across reads


def test_empty_text_rows_are_skipped_and_reported(tmp_path):
    path = _jsonl(tmp_path, [{"text": "the cat"}, {"text": ""}, {"text": "   "}, {"text": None}, {"other": 1},
                             {"text": ["a", "list"]}])
    pool = read_pool(path, FieldMap(text="text"))
    assert len(pool.samples) == 1
    assert [r for r, _ in pool.skipped] == [2, 3, 4, 5, 6]
    assert "empty text" in pool.skipped[0][1] and "list" in pool.skipped[-1][1]
    assert pool.n_rows == 6


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "pool.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputDataError, match="empty"):
        read_pool(path)


def test_csv_with_header_only(tmp_path):
    path = tmp_path / "pool.csv"
    path.write_text("id,text\n", encoding="utf-8")
    with pytest.raises(InputDataError, match="no rows"):
        read_pool(path)


def test_csv_header_the_csv_module_cannot_split_is_a_clear_error():
    """A lone carriage return inside an unquoted header cell (found by the fuzzer: b"\\xc2\\x80\\r\\x00") is refused
    as a CSV the reader cannot split, not a crash of the csv module."""
    with pytest.raises(InputDataError, match="not a readable CSV file"):
        read_table(b"\xc2\x80\r\x00", "csv")


def test_missing_field_lists_columns(tmp_path):
    path = _jsonl(tmp_path, [{"body": "the cat", "id": 1}])
    with pytest.raises(InputDataError, match=r"missing field 'text'.*\['body', 'id'\].*--text-field"):
        read_pool(path, FieldMap(text="text"))
    with pytest.raises(InputDataError, match=r"missing field 'uid' \(id\)"):
        read_pool(path, {"text": "body", "id": "uid"})
    assert read_pool(path).samples[0].text == "the cat"  # "body" is guessed
    with pytest.raises(InputDataError, match="cannot tell which column"):
        read_pool(_jsonl(tmp_path, [{"words": "the cat"}], "other.jsonl"))


def test_non_utf8_bytes(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_bytes(b'{"text": "the cat"}\n{"text": "caf\xe9"}\n')
    with pytest.raises(InputDataError, match=r"not valid UTF-8.*line 2.*iconv"):
        read_pool(path)
    csv_path = tmp_path / "pool.csv"
    csv_path.write_bytes(b"text\nthe cat\ncaf\xe9\n")
    with pytest.raises(InputDataError, match="line 3"):
        read_pool(csv_path)


def test_invalid_json_line(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_text('{"text": "the cat"}\n{"text": oops}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputDataError, match="line 2 is not valid JSON"):
        read_pool(path)
    path.write_text('{"text": "the cat"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InputDataError, match="line 2 is a JSON list"):
        read_pool(path)


def test_duplicate_ids_refused(tmp_path):
    path = _jsonl(tmp_path, [{"id": "a", "text": "the cat"}, {"id": "b", "text": "the dog"},
                             {"id": "a", "text": "the moon"}])
    with pytest.raises(InputDataError, match=r"duplicate ids 'a' \(rows 1, 3\)"):
        read_pool(path)
    with pytest.raises(InputDataError, match="duplicate ids"):
        coerce_pool([Sample(text="x", id="1"), Sample(text="y", id="1")])


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(InputDataError, match="extension"):
        read_pool(tmp_path / "pool.txt")
    with pytest.raises(InputDataError, match="no such file"):
        read_pool(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(InputDataError, match="Parquet"):
        read_pool(bad)


def test_coerce_pool_from_samples():
    pool = coerce_pool(["the cat", {"text": "the dog", "id": 7}, Sample(prompt="p", completion="c")])
    assert isinstance(pool, PoolData)
    assert pool.samples[1].id == "7"
    assert all(s.id for s in pool.samples)


def test_a_repeated_column_name_is_refused_in_every_format(tmp_path):
    """pandas would read the second 'label' as 'label.1' (a name no filter or field map knows), json.loads would keep
    only the last value: refused, naming the file and the column."""
    csv_path = tmp_path / "dup.csv"
    csv_path.write_text("id,label,text,label\n1,0,the cat,1\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=r"dup\.csv: column 'label' appears twice \(columns 2 and 4\)"):
        read_pool(csv_path)
    jsonl = tmp_path / "dup.jsonl"
    jsonl.write_text('{"id": 1, "text": "the cat"}\n{"id": 2, "label": 0, "text": "the dog", "label": 1}\n')
    with pytest.raises(InputDataError, match=r"dup\.jsonl: line 2 has the key 'label' twice"):
        read_pool(jsonl)
    array = tmp_path / "dup.json"
    array.write_text('[{"text": "the cat", "id": 1, "id": 2}]')
    with pytest.raises(InputDataError, match=r"dup\.json: an object in the file has the key 'id' twice"):
        read_pool(array)
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["the cat"]), pa.array(["b"])],
                                        names=["id", "text", "id"]), parquet)
    with pytest.raises(InputDataError, match=r"dup\.parquet: column 'id' appears twice \(columns 1 and 3\)"):
        read_pool(parquet)
    frame = pd.DataFrame([["the cat", 0, 1]], columns=["text", "label", "label"])
    with pytest.raises(InputDataError, match=r"<dataframe>: column 'label' appears twice"):
        read_pool(frame)
    # a column really named 'label.1' next to 'label' is two names, and both are kept
    ok = tmp_path / "ok.csv"
    ok.write_text("text,label,label.1\nthe cat,0,1\n", encoding="utf-8")
    sample = read_pool(ok).samples[0]
    assert sample.label == 0 and sample.meta == {"label.1": 1}


def test_text_of_spaces_is_called_empty_text(tmp_path):
    # a pair file whose third row has a text of spaces instead of a completion, and whose fourth has a real text
    rows = [{"id": "a", "prompt": "p", "completion": "the cat"}, {"id": "b", "prompt": "p", "completion": "  "},
            {"id": "c", "text": "   "}, {"id": "d", "text": "the dog"}]
    path = _jsonl(tmp_path, rows)
    pool = read_pool(path)
    assert [s.id for s in pool.samples] == ["a"]
    assert pool.skipped[:2] == [(2, "empty completion ('completion', only whitespace)"),
                                (3, "empty text ('text', only whitespace)")]
    assert pool.skipped[2][0] == 4 and "a 'text' but no 'completion'" in pool.skipped[2][1]
    plain = read_pool(_jsonl(tmp_path, [{"text": "the cat"}, {"text": ""}, {"text": "\t "}], "plain.jsonl"))
    assert plain.skipped == [(2, "empty text ('text')"), (3, "empty text ('text', only whitespace)")]
    with pytest.raises(InputDataError, match=r"^sample 'q3' has empty text \(only whitespace\)$"):
        Sample(text="  ", id="q3")
    with pytest.raises(InputDataError, match=r"^a sample without an id has empty text$"):
        Sample(text="")
    with pytest.raises(InputDataError, match=r"^a sample without an id has an empty completion \(only whitespace\)$"):
        Sample(prompt="p", completion=" \n")


def test_a_conversation_files_row_with_a_text_is_reported_as_a_mixed_file(tmp_path):
    """A file of `messages` rows is read as conversations; its plain-text and pair rows are skipped (as before), with a
    reason that says the file mixes forms, not only 'empty conversation'."""
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "the cat"}]
    path = _jsonl(tmp_path, [{"text": "the dog"}, {"messages": turns}, {"prompt": "p", "completion": "c"},
                             {"text": " ", "messages": None}])
    pool = read_pool(path)
    assert [s.messages[1].content for s in pool.samples] == ["the cat"] and pool.rows == [2]
    (r1, why1), (r3, why3), last = pool.skipped
    assert (r1, r3) == (1, 3) and last == (4, "empty conversation ('messages')")
    assert why1 == ("empty conversation ('messages'), but the row has 'text': this file mixes plain-text rows with "
                    "conversations; give them as separate files, or choose the fields to read (--text-field)")
    assert why3.startswith("empty conversation ('messages'), but the row has 'prompt' and 'completion': this file "
                           "mixes prompt + completion rows with conversations")


def test_python_values_in_text_fields_are_read_as_a_files_cells_are(tmp_path):
    """`coerce_pool([{"text": 42}])` raised AttributeError ('int' object has no attribute 'strip'): a number is now
    its text and a list or object a skipped row with the reason a JSONL file's row gets."""
    rows = [{"id": "a", "text": 42}, {"id": "b", "text": [1, 2]}, {"id": "c", "text": {"k": 1}}, {"id": "d", "text": 2.5}]
    from_file = read_pool(_jsonl(tmp_path, rows))
    given = coerce_pool(rows)
    assert [(s.id, s.text) for s in given.samples] == [(s.id, s.text) for s in from_file.samples] == [
        ("a", "42"), ("d", "2.5")]
    assert from_file.skipped == [(2, "text is a list, not a string"), (3, "text is a dict, not a string")]
    assert given.skipped == [(2, "sample 'b': text is a list, not a string"),
                             (3, "sample 'c': text is a dict, not a string")]
    pairs = coerce_pool([{"prompt": 1, "completion": b"the cat"}, {"prompt": "p", "completion": ["x"]}])
    assert [(s.prompt, s.completion) for s in pairs.samples] == [("1", "the cat")]
    assert pairs.skipped == [(2, "a sample without an id: completion is a list, not a string")]
    with pytest.raises(InputDataError, match=r"^a sample without an id: text is of type int, not a string$"):
        Sample(text=42)


def test_an_id_that_is_a_list_or_an_object_is_a_skipped_row(tmp_path):
    """Its Python spelling ("{'a': 1}") was stored as the id; it is now a skipped row with the reason, from a file and
    from samples given directly alike."""
    rows = [{"id": {"a": 1}, "text": "x"}, {"id": [1], "text": "y"}, {"id": 3, "text": "z"}]
    from_file, given = read_pool(_jsonl(tmp_path, rows)), coerce_pool(rows)
    for pool in (from_file, given):
        assert [(s.id, s.text) for s in pool.samples] == [("3", "z")]
        assert pool.skipped == [(1, "id is a dict, not a text or a number"), (2, "id is a list, not a text or a number")]
