"""Pools where people keep them, read in windows and never whole (rise_core.ingest.PoolStream): a `datasets`
save_to_disk folder, Arrow files, a sharded Parquet folder, `datasets` objects, `--dataset NAME[:SPLIT]` through
`datasets.load_dataset`, and any re-readable generator. Every source builds the index the same pool read whole
builds; resume and append work as for a file; a streamed build holds a bounded number of rows whatever the pool's
size (counted, not timed)."""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core.cli import main
from rise_core.config import HIDDEN_MEAN_SAMPLES, RiseConfig
from rise_core.errors import InputDataError
from rise_core.ingest import PoolStream, dataset_pool, parse_dataset_spec, stream_pool
from rise_core.store import RiseIndex, build_index
from rise_core.store.schema import WINDOW_BATCHES

CFG = RiseConfig(k_r=16, k_h=8, k_g=16)  # the default config's layout (HS channel, its mean) at small dims
ROWS = pool_rows(40)
BATCH = 2  # a window is BATCH * WINDOW_BATCHES = 32 rows: the 40-row pool spans two


def _by_id(path: Path) -> dict[str, list[torch.Tensor]]:
    with RiseIndex.open(path) as index:
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
        return {i: [fm.rh[r], fm.gh[r], fm.hs[r], fm.rh_norm[r], fm.gh_norm[r], fm.hs_norm[r]]
                for r, i in enumerate(ids)}


def assert_same_index(path: Path, ref: Path) -> None:
    """Same ids in the same order, same stored samples and mean, and equal features: both builds run the same float64
    computations on the same batches, so nothing may differ at all."""
    with RiseIndex.open(path) as a, RiseIndex.open(ref) as b:
        assert a.samples()["id"].tolist() == b.samples()["id"].tolist()
        assert a.sample_list() == b.sample_list()
        assert torch.equal(a.hidden_mean, b.hidden_mean) and a.status == b.status == "complete"
    got, want = _by_id(path), _by_id(ref)
    for sid, parts in want.items():
        assert all(torch.equal(x, y) for x, y in zip(got[sid], parts, strict=True)), sid


def assert_same_features(path: Path, ref: Path) -> None:
    """The same samples with the same features, in any row order: a sample computed in another batch (a resumed or
    appended build groups the rows differently) differs by float64 rounding, which can move a stored float16 entry by
    one ulp (2^-10 at 1.0, unit-vector entries being at most 1) and a float32 norm in its last bits."""
    got, want = _by_id(path), _by_id(ref)
    assert got.keys() == want.keys()
    for sid, parts in want.items():
        for i, (x, y) in enumerate(zip(got[sid], parts, strict=True)):
            torch.testing.assert_close(x.double(), y.double(), **(dict(atol=2.0**-10, rtol=0) if i < 3 else
                                                                  dict(atol=0, rtol=1e-6)), msg=sid)


@pytest.fixture(scope="module")
def ref(tiny_llama, tmp_path_factory):
    """The pool read whole (a JSONL file) and its index: what every streamed source must give."""
    root = tmp_path_factory.mktemp("ref")
    path = root / "ref.duckdb"
    build_index(path, write_jsonl(root / "pool.jsonl", ROWS), tiny_llama, CFG, batch_size=BATCH)
    return path


def _parquet_folder(root: Path, rows: list[dict]) -> Path:
    """Rows in three Parquet shards (one in a subfolder) plus files a reader must leave out."""
    folder = root / "shards"
    (folder / "part-2").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows[:15]), folder / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[15:30]), folder / "part-1.parquet")
    pq.write_table(pa.Table.from_pylist(rows[30:]), folder / "part-2" / "data.parquet")  # paths sort: after part-1
    (folder / "_SUCCESS").write_text("")
    (folder / ".hidden").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:3]), folder / ".hidden" / "stale.parquet")
    return folder


def _arrow_folder(root: Path, rows: list[dict]) -> Path:
    """Rows in two Arrow IPC files: one in the file format (batches of 7 rows), one in the stream format."""
    folder = root / "arrow"
    folder.mkdir()
    first = pa.Table.from_pylist(rows[:25])
    with pa.ipc.new_file(folder / "a.arrow", first.schema) as writer:
        for batch in first.to_batches(max_chunksize=7):
            writer.write_batch(batch)
    second = pa.Table.from_pylist(rows[25:])
    with pa.ipc.new_stream(folder / "b.arrow", second.schema) as writer:
        writer.write_table(second)
    return folder


def _text_folder(root: Path, rows: list[dict], kind: str) -> Path:
    """Rows in two JSON Lines or CSV shards (the second in a subfolder), as people keep instruction data."""
    folder = root / kind
    (folder / "part-1").mkdir(parents=True)  # paths sort: part-0.jsonl, then part-1/data.jsonl
    if kind == "jsonl":
        write_jsonl(folder / "part-0.jsonl", rows[:20])
        write_jsonl(folder / "part-1" / "data.jsonl", rows[20:])
    elif kind == "jsonl.gz":  # compressed shards, as hubs often keep them
        for name, part in (("part-0.jsonl", rows[:20]), ("part-1/data.jsonl", rows[20:])):
            plain = write_jsonl(folder / name, part)
            (folder / f"{name}.gz").write_bytes(gzip.compress(plain.read_bytes()))
            plain.unlink()
    else:
        pd.DataFrame(rows[:20]).to_csv(folder / "part-0.csv", index=False)
        pd.DataFrame(rows[20:]).to_csv(folder / "part-1" / "data.csv", index=False)
    return folder


@pytest.mark.parametrize("kind", ["save_to_disk", "parquet", "arrow", "arrow_file", "dataset", "iterable", "jsonl",
                                  "jsonl.gz", "csv"])
def test_every_source_builds_the_index_the_pool_read_whole_builds(kind, tiny_llama, ref, tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf")  # text shards are prepared there
    if kind == "save_to_disk":
        datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))
        pool = tmp_path / "saved"
    elif kind == "parquet":
        pool = _parquet_folder(tmp_path, ROWS)
    elif kind == "arrow":
        pool = _arrow_folder(tmp_path, ROWS)
    elif kind == "arrow_file":  # what save_to_disk writes: one Arrow stream file
        datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))
        pool = next((tmp_path / "saved").glob("*.arrow"))
    elif kind == "dataset":
        pool = datasets.Dataset.from_list(ROWS)
    elif kind in ("jsonl", "jsonl.gz", "csv"):
        pool = _text_folder(tmp_path, ROWS, kind)
    else:
        pool = datasets.Dataset.from_list(ROWS).to_iterable_dataset(num_shards=2)
    stream = stream_pool(pool)
    assert isinstance(stream, PoolStream)
    assert stream.n_rows == (None if kind == "iterable" else len(ROWS))
    assert stream.fields.text == "text" and stream.fields.id == "id"
    calls: list[tuple[int, int]] = []
    report = build_index(tmp_path / "x.duckdb", pool, tiny_llama, CFG, batch_size=BATCH,
                         progress=lambda d, t: calls.append((d, t)))
    assert (report.n_added, report.n_rows) == (len(ROWS), len(ROWS))
    assert calls[-1] == (len(ROWS), len(ROWS))  # a source that does not know its rows: counted before the build
    assert_same_index(tmp_path / "x.duckdb", ref)


def test_a_streamed_build_resumes_and_appends(tiny_llama, ref, tmp_path):
    folder = _parquet_folder(tmp_path, ROWS)
    path = tmp_path / "resumed.duckdb"
    calls: list[tuple[int, int]] = []
    report = build_index(path, folder, tiny_llama, CFG, batch_size=BATCH, progress=lambda d, t: calls.append((d, t)),
                         should_stop=lambda: len(calls) >= 3)
    assert report.stopped and 0 < report.n_added < len(ROWS) and calls[0] == (0, len(ROWS))
    done = report.n_added
    with RiseIndex.open(path) as index:
        assert index.status == "building" and len(index) == done
    calls.clear()
    report = build_index(path, folder, tiny_llama, batch_size=BATCH, progress=lambda d, t: calls.append((d, t)))
    assert (report.n_added, report.n_already_present, report.stopped) == (len(ROWS) - done, done, False)
    assert calls[-1] == (len(ROWS), len(ROWS)) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    with RiseIndex.open(path) as index:
        assert index.status == "complete"
    assert_same_features(path, ref)
    # an append (the mean stays the one fitted on the first 20 rows): the folder of all 40 streamed onto an index of
    # the first 20 gives the index that appending the 40 rows read whole gives
    streamed, whole = tmp_path / "streamed.duckdb", tmp_path / "whole.duckdb"
    for path in (streamed, whole):
        build_index(path, ROWS[:20], tiny_llama, CFG, batch_size=BATCH)
    report = build_index(streamed, folder, tiny_llama, batch_size=BATCH)
    assert (report.n_added, report.n_already_present) == (20, 20)
    build_index(whole, ROWS, tiny_llama, batch_size=BATCH)
    assert_same_index(streamed, whole)


def test_rows_ids_and_duplicates_are_checked_across_chunks(tmp_path):
    rows = [{"text": f"the cat sat {i}", "id": f"s{i}"} for i in range(10)]
    rows[8]["text"] = " "  # row 9: empty
    stream = PoolStream.from_records(lambda: rows, source="gen")
    chunks = list(stream.chunks(4))
    assert [c.rows for c in chunks] == [[1, 2, 3, 4], [5, 6, 7, 8], [10]]
    assert chunks[2].skipped == [(9, "empty text ('text', only whitespace)")]
    twice = [*rows[:6], {"text": "another", "id": "s1"}]
    with pytest.raises(InputDataError, match=r"gen: duplicate ids 's1' \(rows 2, 7\)"):
        list(PoolStream.from_records(lambda: twice, source="gen").chunks(4))
    no_ids = [{"text": t} for t in ["a cat", "a dog", "a cat", "the moon", "a dog"]]  # repeats in later chunks
    data = PoolStream.from_records(lambda: no_ids).read_all()
    assert [s.text for s in data.samples] == ["a cat", "a dog", "the moon"] and data.rows == [1, 2, 4]
    assert data.skipped == [(3, "duplicate of row 1 (same text, no id)"), (5, "duplicate of row 2 (same text, no id)")]
    assert PoolStream.from_records(lambda: no_ids).count(2) == (3, 5)


def test_shards_may_differ_in_columns_but_bad_folders_are_refused(tiny_llama, tmp_path):
    folder = tmp_path / "uneven"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist([{"text": "the cat sat", "label": 1}]), folder / "a.parquet")
    pq.write_table(pa.Table.from_pylist([{"text": "the dog sat", "topic": "dogs"}]), folder / "b.parquet")
    data = stream_pool(folder).read_all()
    assert [(s.label, s.meta) for s in data.samples] == [(1, {}), (None, {"topic": "dogs"})]

    datasets.DatasetDict({"train": datasets.Dataset.from_list(ROWS[:3]),
                          "test": datasets.Dataset.from_list(ROWS[3:5])}).save_to_disk(str(tmp_path / "dict"))
    with pytest.raises(InputDataError, match=r"DatasetDict with the splits \['train', 'test'\]: give one split's "
                                             r"folder, e.g. .*dict/train"):
        stream_pool(tmp_path / "dict")
    assert isinstance(stream_pool(tmp_path / "dict" / "train"), PoolStream)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputDataError, match="folder without .parquet, .arrow, .jsonl, .json or .csv files"):
        stream_pool(tmp_path / "empty")
    both_text = _text_folder(tmp_path, ROWS, "jsonl")
    pd.DataFrame(ROWS[:2]).to_csv(both_text / "extra.csv", index=False)
    with pytest.raises(InputDataError, match="both JSON Lines and CSV files"):
        stream_pool(both_text)
    infos = _parquet_folder(tmp_path / "hub", ROWS)  # a hub snapshot: its JSON infos beside the shards are not rows
    (infos / "dataset_infos.json").write_text("{}")
    assert stream_pool(infos).n_rows == len(ROWS)
    mixed = _parquet_folder(tmp_path, ROWS)
    (mixed / "x.arrow").write_bytes(b"")
    with pytest.raises(InputDataError, match="both Parquet and Arrow files"):
        stream_pool(mixed)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputDataError, match="a.parquet: not a readable Parquet file"):
        stream_pool(tmp_path / "bad")
    with pytest.raises(InputDataError, match=r"missing field 'body' \(text\)"):  # before any index exists
        stream_pool(folder, {"text": "body"})
    only_blank = tmp_path / "blank"
    only_blank.mkdir()
    pq.write_table(pa.Table.from_pylist([{"text": ""}, {"text": " "}]), only_blank / "a.parquet")
    with pytest.raises(InputDataError, match=r"no usable rows \(2 skipped: row 1: empty text"):
        build_index(tmp_path / "never.duckdb", only_blank, tiny_llama, CFG)
    assert not (tmp_path / "never.duckdb").exists()  # a new index is not created for a pool with nothing to build


def test_dataset_spec_names_load_dataset_arguments(tmp_path, monkeypatch):
    assert parse_dataset_spec("tatsu-lab/alpaca") == ("tatsu-lab/alpaca", "train")
    assert parse_dataset_spec("imdb:test") == ("imdb", "test")
    assert parse_dataset_spec("imdb:train[:100]") == ("imdb", "train[:100]")  # the first ':' splits
    with pytest.raises(InputDataError, match="give NAME or NAME:SPLIT"):
        parse_dataset_spec(":train")
    folder = _parquet_folder(tmp_path, ROWS)  # a local folder of Parquet files: a NAME load_dataset takes offline
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    seen = []
    real = datasets.load_dataset

    def recording(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", recording)
    stream = dataset_pool(f"{folder}:train")
    assert seen[-1] == ((str(folder), None), {"split": "train", "streaming": False})
    assert (stream.source, stream.n_rows) == (f"{folder}:train", len(ROWS))
    assert [s.id for s in stream.read_all().samples] == [r["id"] for r in ROWS]
    streamed = dataset_pool(str(folder), streaming=True)
    assert seen[-1] == ((str(folder), None), {"split": "train", "streaming": True})
    assert [s.id for s in streamed.read_all().samples] == [r["id"] for r in ROWS]
    with pytest.raises(InputDataError, match=r"cannot load dataset .*:nope.*split \"nope\""):
        dataset_pool(f"{folder}:nope")
    with pytest.raises(InputDataError, match="cannot load dataset"):
        dataset_pool(str(tmp_path / "no_such_folder"))


def test_cli_builds_from_a_folder_or_a_dataset(tmp_path, monkeypatch, capsys):
    model = save_tiny_model(tmp_path / "model")
    folder = _parquet_folder(tmp_path, ROWS)
    dims = ["--k-r", "16", "--k-h", "8", "--k-g", "16", "--model", str(model), "--quiet", "--batch-size", "4"]
    assert main(["build", str(folder), "--index", str(tmp_path / "a.duckdb"), *dims]) == 0
    assert "40 added, 0 already present, 0 skipped" in capsys.readouterr().out
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    assert main(["build", "--dataset", f"{folder}:train", "--index", str(tmp_path / "b.duckdb"), *dims,
                 "--text-field", "text"]) == 0
    capsys.readouterr()
    assert _by_id(tmp_path / "a.duckdb").keys() == _by_id(tmp_path / "b.duckdb").keys()
    assert main(["query", "--index", str(tmp_path / "b.duckdb"), "--text", "the cat sat on the mat .", "-k", "3",
                 "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    for argv, message in [([], "give a pool path or --dataset"),
                          ([str(folder), "--dataset", "x"], "give a pool path or --dataset"),
                          ([str(folder), "--streaming"], "--dataset-config and --streaming go with --dataset"),
                          ([str(folder), "--format", "csv"], "--format names a pool file's format")]:
        with pytest.raises(SystemExit) as exc:
            main(["build", *argv, "--index", str(tmp_path / "c.duckdb"), *dims])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.txt").write_text("no pool here")
    assert main(["build", str(tmp_path / "notes"), "--index", str(tmp_path / "c.duckdb"), *dims]) == 1
    assert "folder without .parquet, .arrow, .jsonl, .json or .csv files" in capsys.readouterr().err
    assert not (tmp_path / "c.duckdb").exists()


class _Tracked(str):
    """A metadata value that counts its live copies: one per row the build holds (the reader keeps it in the row's
    Sample.meta until the row is committed and dropped)."""

    live = 0

    def __new__(cls, value: str) -> _Tracked:
        _Tracked.live += 1
        return super().__new__(cls, value)

    def __del__(self) -> None:
        _Tracked.live -= 1


@pytest.mark.parametrize("cfg", [CFG.replace(hidden_channel=False), CFG], ids=["no_mean", "mean"])
def test_a_streamed_build_holds_a_bounded_number_of_rows(cfg, tiny_llama, tmp_path):
    """A generator-backed pool of 1200 rows: at no point are more than about two windows of rows (plus, for a config
    with the hidden-state mean, its fit subset) alive at once. Counted every 16 rows read; a row is freed when the
    build lets go of it (reference counting: no row waits for the cycle collector, which the final count checks)."""
    batch = 4
    window = batch * WINDOW_BATCHES
    n = 1200
    rows = pool_rows(n)
    peak = 0

    def records():
        nonlocal peak
        for i, row in enumerate(rows):
            if i % 16 == 0:
                peak = max(peak, _Tracked.live)
            yield {**row, "payload": _Tracked(f"p{i}")}

    stream = PoolStream.from_records(records, source="generator", n_rows=n)
    report = build_index(tmp_path / "gen.duckdb", stream, tiny_llama, cfg, batch_size=batch)
    assert report.n_added == n and _Tracked.live == 0
    gc.collect()
    assert _Tracked.live == 0
    bound = 2 * window + 16 + (HIDDEN_MEAN_SAMPLES if cfg.needs_hidden_mean else 0)
    assert 0 < peak <= bound < n / 2, (peak, bound)
    if cfg.needs_hidden_mean:  # the seeded mean subset of 1200 rows, gathered from the stream, as read whole
        build_index(tmp_path / "whole.duckdb", [{**r, "payload": f"p{i}"} for i, r in enumerate(rows)], tiny_llama,
                    cfg, batch_size=batch)
        assert_same_index(tmp_path / "gen.duckdb", tmp_path / "whole.duckdb")
