"""An overwrite (`build_index(overwrite=True)`, `rise build --overwrite`) keeps the index it replaces until the new one
is whole: the old file and its own files are moved aside for the build, removed once it ends, put back when it fails
before storing anything, and kept (and named) when it stops or fails after storing samples. A rebuild of the same
pool without overwrite rewrites nothing, and says which samples the pool now labels otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core.cli import main
from rise_core.config import RiseConfig
from rise_core.errors import ConfigError
from rise_core.store import RiseIndex, build_index
from rise_core.store.build import FEATURE_PHASE

CFG = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64)


@pytest.fixture
def old(tmp_path, tiny_llama) -> tuple[Path, str]:
    """An index of 6 samples at a.duckdb, with a file of its own beside it, and its uuid."""
    path = tmp_path / "a.duckdb"
    build_index(path, pool_rows(6), tiny_llama, CFG)
    (tmp_path / "a.duckdb.notes").write_text("the old index's own file")
    with RiseIndex.open(path) as index:
        return path, index.manifest.index_uuid


def _uuid_and_size(path: Path) -> tuple[str, int]:
    with RiseIndex.open(path) as index:
        return index.manifest.index_uuid, len(index)


def _others(path: Path) -> list[str]:
    """The other index files beside `path` (an old index set aside is one)."""
    return sorted(p.name for p in path.parent.glob("*.duckdb") if p != path)


def test_an_overwrite_that_ends_removes_the_old_index_and_its_files(old, tiny_llama):
    path, uuid = old
    report = build_index(path, pool_rows(4, start=50), tiny_llama, CFG, overwrite=True)
    assert not report.stopped and not report.replaced and "kept at" not in report.summary()
    new_uuid, n = _uuid_and_size(path)
    assert new_uuid != uuid and n == 4
    assert _others(path) == [] and not (path.parent / "a.duckdb.notes").exists()


@pytest.mark.parametrize("fails", ["unknown preset", "first phase"])
def test_an_overwrite_that_fails_before_storing_anything_puts_the_old_index_back(old, tiny_llama, fails):
    path, uuid = old

    def broken(phase, done, total):
        raise OSError("disk full")
    kwargs = {"preset": "no-such-preset"} if fails == "unknown preset" else {"phase_progress": broken}
    with pytest.raises(ConfigError if fails == "unknown preset" else OSError) as info:
        build_index(path, pool_rows(8, start=50), tiny_llama, CFG, overwrite=True, **kwargs)
    assert not getattr(info.value, "__notes__", None)
    assert _uuid_and_size(path) == (uuid, 6)
    assert (path.parent / "a.duckdb.notes").read_text() == "the old index's own file" and _others(path) == []


def test_an_overwrite_interrupted_after_a_batch_keeps_both_and_says_where(old, tiny_llama):
    path, uuid = old

    def interrupt(done, total):
        if done:  # after the first committed batch
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt) as info:
        build_index(path, pool_rows(8, start=50), tiny_llama, CFG, batch_size=4, progress=interrupt, overwrite=True)
    (aside,) = _others(path)
    assert info.value.__notes__ == [f"The index it was to replace is kept at {path.parent / aside}."]
    assert _uuid_and_size(path.parent / aside) == (uuid, 6)
    assert (path.parent / f"{aside}.notes").read_text() == "the old index's own file"
    assert _uuid_and_size(path)[1] == 4  # the first batch, resumed by a build without overwrite
    assert build_index(path, pool_rows(8, start=50), tiny_llama, CFG, batch_size=4).n_added == 4


def test_an_overwrite_stopped_early_keeps_the_old_index_and_the_report_names_it(old, tiny_llama):
    path, uuid = old
    done = []
    report = build_index(path, pool_rows(8, start=50), tiny_llama, CFG, batch_size=4, should_stop=lambda: bool(done),
                         progress=lambda n, total: done.append(n) if n else None, overwrite=True)
    (aside,) = _others(path)
    assert report.stopped and report.n_total == 4 and report.replaced == str(path.parent / aside)
    assert f"the index it was to replace is kept at {path.parent / aside}" in report.summary()
    assert _uuid_and_size(path.parent / aside) == (uuid, 6)


def test_an_overwrite_stopped_before_its_first_sample_puts_the_old_index_back(old, tiny_llama):
    path, uuid = old
    report = build_index(path, pool_rows(8, start=50), tiny_llama, CFG, batch_size=4, should_stop=lambda: True,
                         overwrite=True)
    assert report.stopped and report.n_total == 0 and not report.replaced
    assert _uuid_and_size(path) == (uuid, 6) and _others(path) == []
    assert (path.parent / "a.duckdb.notes").read_text() == "the old index's own file"


def test_the_command_line_says_what_an_interrupted_overwrite_left(old, tiny_llama, tmp_path, monkeypatch, capsys):
    """Without anything stored the old index is back and a rerun starts over; with a batch stored, a rerun without
    --overwrite resumes it (the same command would start over again) and the old index's place is named."""
    from rise_core import store

    path, uuid = old
    model = save_tiny_model(tmp_path / "model")
    pool = write_jsonl(tmp_path / "pool.jsonl", pool_rows(8, start=50))
    build = store.build_index
    args = ["build", str(pool), "--index", str(path), "--model", str(model), "--overwrite", "--quiet",
            "--batch-size", "4", "--k-r", "16", "--k-h", "8", "--k-g", "16", "--seq-len", "64"]

    def interrupted_at(after: int):
        def run(*a, **kw):
            def phase(name, done, total):
                if name == FEATURE_PHASE and done > after:  # `after` samples stored
                    raise KeyboardInterrupt
            return build(*a, **{**kw, "phase_progress": phase})
        return run

    monkeypatch.setattr(store, "build_index", interrupted_at(-1))  # before the first sample
    assert main(args) == 130
    err = capsys.readouterr().err
    assert f"nothing was stored, and {path} is as it was before the build" in err and "resume" not in err
    assert _uuid_and_size(path) == (uuid, 6)

    monkeypatch.setattr(store, "build_index", interrupted_at(0))  # after the first batch
    assert main(args) == 130
    err = capsys.readouterr().err
    (aside,) = _others(path)
    assert "Rerun it without --overwrite to resume." in err
    assert f"The index it was to replace is kept at {path.parent / aside}." in err


@pytest.mark.parametrize("source", ["in memory", "streamed"])
def test_a_rebuild_says_which_samples_the_pool_relabels_and_keeps_what_was_stored(tmp_path, tiny_llama, source):
    """Building the same pool again with a label changed (or a metadata value) adds nothing and rewrites nothing:
    the index keeps its rows, and the report says how many samples the pool now labels otherwise, naming the first,
    and what to do to take the pool's labels (the summary `rise build` prints, and the Build page's line)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from explorer.jobs import BuildJob

    rows = pool_rows(6)
    path = tmp_path / "a.duckdb"
    build_index(path, rows, tiny_llama, CFG)
    changed = [dict(r) for r in rows]
    changed[1]["label"], changed[4]["label"], changed[5]["topic"] = 1 - rows[1]["label"], None, "other"
    if source == "streamed":
        folder = tmp_path / "shards"
        folder.mkdir()
        pq.write_table(pa.Table.from_pylist(changed), folder / "a.parquet")
        pool = folder
    else:
        pool = changed
    report = build_index(path, pool, tiny_llama)
    assert (report.n_added, report.n_already_present, report.n_relabelled) == (0, 6, 3)
    assert report.relabelled == ["s1", "s4", "s5"]
    assert ("3 samples already in the index (e.g. 's1', 's4', 's5') have another label or metadata in the pool: the "
            "index keeps what it stored (build a new index, or overwrite this one, to take the pool's)"
            in report.summary())
    with RiseIndex.open(path) as index:  # as first stored, by id (rows are stored in the build's order)
        ids = index.column("id").tolist()
        assert dict(zip(ids, index.column("label").tolist(), strict=True)) == {r["id"]: r["label"] for r in rows}
        assert dict(zip(ids, index.column("topic").tolist(), strict=True)) == {r["id"]: r["topic"] for r in rows}
    job = BuildJob(path, None, None, CFG)  # type: ignore[arg-type]
    job.report, job.status = report, "done"
    assert "3 samples already in the index (e.g. 's1', 's4', 's5') have another label" in job.message()
    unchanged = build_index(path, rows, tiny_llama)
    assert unchanged.n_relabelled == 0 and "another label" not in unchanged.summary()
