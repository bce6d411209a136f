"""The streaming ANN build (rise_core.ann.write_ivf): shards merged on disk give the very file a one-shot in-memory
build writes, the builder holds at most a block of rows and a shard at a time, an interrupted build or update leaves
no half-written file, and files written the old way (the whole index in memory) are read and updated.

Pools are the synthetic clustered ones of test_ann.py, or plain numpy arrays read block by block."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from test_ann import CFG, append, clustered, make_index, query

from rise_core import ann
from rise_core.attribution import rank
from rise_core.config import ScoreOptions
from rise_core.errors import IndexStoreError
from rise_core.store import RiseIndex

faiss = pytest.importorskip("faiss")

D = 32
NLIST = 16


@pytest.fixture(autouse=True)
def one_thread():
    """k-means and the adds on one thread, so that two trainings on the same rows give the same cells."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def rows(n: int, seed: int = 0) -> np.ndarray:
    """n clustered float16-exact rows of D values (8 centres)."""
    gen = np.random.default_rng(seed)
    centres = np.random.default_rng(123).standard_normal((8, D))
    x = centres[gen.integers(0, 8, n)] + 0.3 * gen.standard_normal((n, D))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16).astype(np.float32)


def one_shot(template, x: np.ndarray, path: Path) -> bytes:
    """The file faiss writes for the same trained index filled in memory in one go (the pre-streaming build)."""
    ivf = faiss.clone_index(template)
    ivf.set_direct_map_type(faiss.DirectMap.Array)
    ivf.add(x)
    faiss.write_index(ivf, str(path))
    return path.read_bytes()


def tmp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name)


@pytest.mark.parametrize("shard_rows", [1000, 300, 37, 1])
def test_shards_merged_on_disk_equal_a_one_shot_build(tmp_path, shard_rows):
    x = rows(500)
    template, n_train = ann.train_ivf(lambda s, e: x[s:e], len(x), D, NLIST, chunk_rows=64)
    assert n_train == len(x)  # 16 cells x 64 rows a cell > 500 rows: all of them
    want = one_shot(template, x, tmp_path / "ref.faiss")
    path = tmp_path / "built.faiss"
    shards = ann.write_ivf(faiss.clone_index(template), lambda s, e: x[s:e], len(x), path, tmp_path / "scratch",
                           shard_rows=shard_rows, chunk_rows=50)
    assert shards == -(-len(x) // shard_rows)
    assert path.read_bytes() == want  # the same cells, rows, codes, ids and direct map: byte for byte
    assert tmp_files(tmp_path) == [] and not (tmp_path / "scratch").exists()

    # and so the same search results, read memory-mapped as queries read it
    meta = ann.AnnMeta("u", "f", len(x), {"rh": D}, NLIST, 4, n_train, 0)
    built, ref = ann.AnnIndex.read(path, meta), ann.AnnIndex.read(tmp_path / "ref.faiss", meta)
    for q in rows(5, seed=9):
        assert built.search(q, 10, 4).tolist() == ref.search(q, 10, 4).tolist()
    np.testing.assert_array_equal(built.gather(np.arange(0, 500, 7)), x[::7])  # lossless codes


def test_few_filled_cells_use_faiss_sparse_layout(tmp_path):
    """Rows in at most half the cells: faiss writes the sizes of the filled cells only ('sprs'); so does the merge."""
    x = rows(400)
    template, _ = ann.train_ivf(lambda s, e: x[s:e], len(x), D, NLIST)
    y = np.repeat(x[:2], 30, axis=0)  # 60 rows in at most 2 cells
    want = one_shot(template, y, tmp_path / "ref.faiss")
    path = tmp_path / "built.faiss"
    ann.write_ivf(faiss.clone_index(template), lambda s, e: y[s:e], len(y), path, tmp_path / "scratch", shard_rows=7)
    assert b"sprs" in want and path.read_bytes() == want


def test_index_build_in_shards_equals_one_shard_and_ranks_the_same(tmp_path):
    path = make_index(tmp_path / "pool.duckdb", n=300, seed=4)
    faiss_path, _ = ann.ann_paths(path)
    with RiseIndex.open(path) as index:
        one = ann.build_ann(index, nlist=8, threads=1, shard_rows=10**6)
        whole = faiss_path.read_bytes()
        q = query(2)
        before = rank(index, q, ScoreOptions(), k=10, search="ann")
        many = ann.build_ann(index, nlist=8, threads=1, shard_rows=45, chunk_rows=16)
        assert faiss_path.read_bytes() == whole
        after = rank(index, q, ScoreOptions(), k=10, search="ann")
    assert (one.extra["shards"], many.extra["shards"], many.extra["shard_rows"]) == (1, 7, 45)
    assert after["id"].tolist() == before["id"].tolist()
    torch.testing.assert_close(torch.tensor(after["score"].to_numpy()), torch.tensor(before["score"].to_numpy()))


def test_the_builder_holds_one_block_and_one_shard_at_most(tmp_path, monkeypatch):
    """Memory, by construction rather than timing: every read asks for at most chunk_rows rows and lets DuckDB's
    buffers go, every shard holds at most shard_rows rows when it is written out, and the k-means sample is capped
    by TRAIN_MAX_BYTES."""
    path = make_index(tmp_path / "spy.duckdb", n=400, seed=5)
    reads: list[int] = []
    shards: list[int] = []
    reader, dump = ann.build._index_reader, ann.layout.dump_shard

    def spy_reader(index, channels):
        read = reader(index, channels)

        def spied(start, stop):
            reads.append(stop - start)
            return read(start, stop)
        return spied

    def spy_dump(shard, *args):
        shards.append(shard.ntotal)
        return dump(shard, *args)

    releases = [0]
    release = RiseIndex.release

    def spy_release(self):
        releases[0] += 1
        return release(self)

    monkeypatch.setattr(ann.build, "_index_reader", spy_reader)
    monkeypatch.setattr(ann.build, "dump_shard", spy_dump)
    monkeypatch.setattr(RiseIndex, "release", spy_release)
    with RiseIndex.open(path) as index:
        d = sum(ann.index_dims(index).values())
    monkeypatch.setattr(ann.build, "TRAIN_MAX_BYTES", 4 * d * 150)  # a k-means sample of 150 rows at most
    with RiseIndex.open(path) as index:
        meta = ann.build_ann(index, nlist=8, chunk_rows=32, shard_rows=96, threads=1)
    assert max(reads) <= 32 and sum(reads) == 2 * 400  # one pass to sample, one to add
    # DuckDB's buffer pool is let go after every block (it would otherwise keep every block read)
    assert releases[0] >= len(reads)
    assert shards == [96, 96, 96, 96, 16]
    assert meta.train_rows == 150 and meta.extra == {"shards": 5, "shard_rows": 96}
    assert ann.shard_rows_for(2112) * (2 * 2112 + 8) <= ann.SHARD_BYTES  # the default: bytes, not rows


class Interrupt(KeyboardInterrupt):
    pass


@pytest.mark.parametrize("where", ["adding", "merging"])
def test_an_interrupted_build_leaves_the_old_files_and_no_half_file(tmp_path, monkeypatch, where):
    path = make_index(tmp_path / "cut.duckdb", n=300, seed=6)
    faiss_path, meta_path = ann.ann_paths(path)
    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=8, threads=1)
    old = faiss_path.read_bytes(), meta_path.read_text()
    calls = [0]

    def cut(real):
        def wrapped(*args, **kwargs):
            calls[0] += 1
            if calls[0] == 3:
                raise Interrupt  # Ctrl-C half way
            return real(*args, **kwargs)
        return wrapped

    if where == "adding":
        monkeypatch.setattr(ann.build, "dump_shard", cut(ann.layout.dump_shard))
    else:
        monkeypatch.setattr(ann.layout, "_copy", cut(ann.layout._copy))
    with RiseIndex.open(path) as index:
        with pytest.raises(Interrupt):
            ann.build_ann(index, nlist=4, threads=1, shard_rows=50)
        assert (faiss_path.read_bytes(), meta_path.read_text()) == old  # untouched until the final rename
        assert tmp_files(tmp_path) == []
        assert ann.ann_status(index).valid

    with RiseIndex.open(path, read_only=False) as writer:  # an update cut short the same way
        append(writer, clustered(120, 8), 300, prefix="new")
    calls[0] = 0
    with RiseIndex.open(path) as index:
        with pytest.raises(Interrupt):
            ann.update_ann(index, shard_rows=30)
        assert (faiss_path.read_bytes(), meta_path.read_text()) == old
        assert tmp_files(tmp_path) == []
        status = ann.ann_status(index)
        assert status.valid and status.n_tail == 120


def test_a_failed_write_is_an_index_store_error_and_leaves_no_half_file(tmp_path, monkeypatch):
    path = make_index(tmp_path / "full.duckdb", n=200, seed=7)

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ann.layout, "_copy", disk_full)
    with RiseIndex.open(path) as index:
        with pytest.raises(IndexStoreError, match=r"cannot write .*full\.duckdb\.ann\.faiss: No space left"):
            ann.build_ann(index, nlist=4, threads=1)
        assert ann.ann_status(index).state == "absent"
    assert tmp_files(tmp_path) == [] and not ann.ann_paths(path)[0].exists()


def test_update_streams_into_the_file_a_one_shot_build_would_write(tmp_path):
    """An ANN file written the old way (the whole index in memory, faiss.write_index) is updated in shards into the
    file a one-shot build over all rows with the same cells writes."""
    path = make_index(tmp_path / "grow.duckdb", n=200, seed=1)
    faiss_path, meta_path = ann.ann_paths(path)
    with RiseIndex.open(path) as index:
        dims = ann.index_dims(index)
        read = ann.build._index_reader(index, list(dims))
        template, n_train = ann.train_ivf(read, 200, sum(dims.values()), 8)
        quantizer = faiss.clone_index(template.quantizer)
        old = faiss.clone_index(template)
        old.set_direct_map_type(faiss.DirectMap.Array)
        old.add(read(0, 200))
        meta = ann.AnnMeta(index.manifest.index_uuid, CFG.fingerprint(), 200, dims, 8, 8, n_train, 0,
                           structure="IVF8,SQfp16")
        ann.write_ann(old, meta, faiss_path, meta_path)
    with RiseIndex.open(path, read_only=False) as writer:
        append(writer, clustered(57, 3), 200, prefix="new")
    with RiseIndex.open(path) as index:
        assert ann.ann_status(index).n_tail == 57
        meta, added = ann.update_ann(index, shard_rows=20, chunk_rows=8)
        assert (added, meta.n_rows, ann.ann_status(index).state) == (57, 257, "valid")
        ref = ann.layout.new_ivf(quantizer, sum(dims.values()), 8, own=True)
        ref.is_trained = True
        ref.set_direct_map_type(faiss.DirectMap.Array)
        ref.add(ann.build._index_reader(index, list(dims))(0, 257))
        faiss.write_index(ref, str(tmp_path / "ref.faiss"))
        assert faiss_path.read_bytes() == (tmp_path / "ref.faiss").read_bytes()
        assert meta.faiss_bytes == faiss_path.stat().st_size
        q = query(11)
        fast = rank(index, q, ScoreOptions(), k=8, search="ann")
        slow = rank(index, q, ScoreOptions(), k=8, search="exact")
        assert set(fast["id"]) == set(slow["id"])
    assert tmp_files(tmp_path) == []


def test_update_of_a_file_in_another_layout_says_rebuild(tmp_path):
    path = make_index(tmp_path / "odd.duckdb", n=120, seed=2)
    faiss_path, meta_path = ann.ann_paths(path)
    with RiseIndex.open(path) as index:
        meta = ann.build_ann(index, nlist=4, threads=1)
    with open(faiss_path, "ab") as fh:  # faiss still reads it, but its lists no longer end the file
        fh.write(b"\0" * 16)
    meta.faiss_bytes = faiss_path.stat().st_size
    meta_path.write_text(meta.to_json())
    with RiseIndex.open(path, read_only=False) as writer:
        append(writer, clustered(5, 3), 120, prefix="new")
    with RiseIndex.open(path) as index:
        with pytest.raises(IndexStoreError, match=r"does not end in the inverted-list layout.*rebuild it with `rise "
                                                  r"index-ann"):
            ann.update_ann(index)
    assert tmp_files(tmp_path) == []


def test_queries_open_the_file_memory_mapped(tmp_path):
    """The query side holds the cells in the mapped file, not in its heap: faiss maps them in place."""
    x = rows(300)
    template, _ = ann.train_ivf(lambda s, e: x[s:e], len(x), D, NLIST)
    path = tmp_path / "m.faiss"
    ann.write_ivf(template, lambda s, e: x[s:e], len(x), path, tmp_path / "scratch")
    handle = ann.AnnIndex.read(path, ann.AnnMeta("u", "f", len(x), {"rh": D}, NLIST, 4, 300, 0))
    maps = Path(f"/proc/{os.getpid()}/maps")
    if maps.exists():
        assert str(path) in maps.read_text()
    assert handle.ivf.ntotal == len(x)


def test_cli_shard_rows(tmp_path, capsys):
    import json

    from rise_core.cli import main

    path = make_index(tmp_path / "cli.duckdb", n=120, seed=2)
    assert main(["index-ann", "--index", str(path), "--nlist", "8", "--shard-rows", "50", "--quiet", "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert (meta["n_rows"], meta["extra"]) == (120, {"shards": 3, "shard_rows": 50})
    with pytest.raises(SystemExit):
        main(["index-ann", "--index", str(path), "--shard-rows", "0"])
    assert "--shard-rows must be at least 1, got 0" in capsys.readouterr().err
