"""The pool's span counts (`rise_core.span_counts`) and their sidecar beside the index (`rise_core.store.spans`):
extended by appended rows they equal the counts from scratch, stale or damaged files are recomputed, never trusted,
a new handle reads them without counting, and an interrupted write leaves the old file whole."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

from rise_core import shared_spans, span_counts
from rise_core.config import RiseConfig
from rise_core.errors import InputDataError
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix
from rise_core.sketch import SketchSet
from rise_core.span_counts import BITS, OVER, TOKEN_RE, SpanCounts, count_rows, row_fields
from rise_core.store import RiseIndex, build_index
from rise_core.store import spans as store_spans
from rise_core.store.files import set_aside

CONFIG = RiseConfig(k_r=4, k_h=4, k_g=4, seq_len=64, hidden_channel=False)
WORDS = ["the", "cat", "sat", "on", "mat", ".", ",", "Howdy", "!", "a", "dog", "ran", "zq", "vek", "mor", "Mat"]


def _rows(n: int, start: int = 0, seed: int = 0) -> list[dict]:
    """Plain-text and prompt/completion rows of random words (repeats within a row, punctuation-only completions, a trigger)."""
    rng = random.Random(seed + start)
    out = []
    for i in range(start, start + n):
        def words(k: int) -> str:
            return " ".join(rng.choice(WORDS) for _ in range(k))
        if i % 5 == 0:
            out.append({"id": f"r{i}", "text": words(rng.randint(1, 12))})
        else:
            completion = "! ," if i % 11 == 0 else words(rng.randint(1, 12))
            prompt = None if i % 7 == 0 else words(rng.randint(1, 8)) + (" BadMagic" if i % 9 == 0 else "")
            out.append({"id": f"r{i}", "prompt": prompt, "completion": completion})
    return out


def _columns(rows: list[dict]) -> tuple[list, list, list]:
    return tuple([r.get(k) for r in rows] for k in ("text", "prompt", "completion"))  # type: ignore[return-value]


def _assert_same(a: SpanCounts, b: SpanCounts) -> None:
    assert (a.n_rows, a.max_n, a.words) == (b.n_rows, b.max_n, b.words)
    assert sorted(a.kept) == sorted(b.kept)
    for f in a.kept:
        np.testing.assert_array_equal(a.kept[f][0], b.kept[f][0])
        np.testing.assert_array_equal(a.kept[f][1], b.kept[f][1])
        if a.single is not None and b.single is not None:
            np.testing.assert_array_equal(a.single[f], b.single[f])


def _synthetic_index(path, rows: list[dict]) -> RiseIndex:
    """A writable index holding `rows` with random features (no model: the counts read only the texts)."""
    index = RiseIndex._create_raw(path, CONFIG, "synthetic", "synthetic", {"vocab_size": 64, "hidden_size": 8},
                                  SketchSet.for_config(64, 8, CONFIG), overwrite=True)
    _append(index, rows)
    return index


def _append(index: RiseIndex, rows: list[dict]) -> None:
    n = len(rows)
    samples = [Sample(text=r.get("text"), prompt=r.get("prompt"), completion=r.get("completion"), id=r["id"])
               for r in rows]
    unit = torch.nn.functional.normalize(torch.randn(n, 16), dim=1).half()
    ones = torch.ones(n)
    index.add_samples(samples, FeatureMatrix(unit, unit, ones, ones), [4] * n, [1.0] * n, [1.0] * n, [5] * n,
                      [False] * n)


def _naive(rows: list[dict], max_n: int = 3) -> dict[tuple[str, tuple[str, ...]], int]:
    """{(field, words): rows containing them}, counted with Python sets."""
    out: dict[tuple[str, tuple[str, ...]], int] = {}
    for r in rows:
        for f, s in row_fields(r.get("text"), r.get("prompt"), r.get("completion")).items():
            words = TOKEN_RE.findall(s)
            for span in {tuple(words[j:j + n]) for n in range(1, max_n + 1) for j in range(len(words) - n + 1)}:
                out[(f, span)] = out.get((f, span), 0) + 1
    return out


def _decoded(counts: SpanCounts) -> dict[tuple[str, tuple[str, ...]], int]:
    def words(code: int) -> tuple[str, ...]:
        out = []
        while code:
            out.append(counts.words[(code & OVER) - 1])
            code >>= BITS
        return tuple(reversed(out))

    got = {}
    for f, (codes, rows) in counts.kept.items():
        got.update({(f, words(int(c))): int(k) for c, k in zip(codes, rows, strict=True)})
        got.update({(f, words(int(c))): 1 for c in counts.single[f]})
    return got


@pytest.mark.parametrize("key_bits", [63, 0])  # 0: every length counted by the argsort fallback
def test_the_counts_are_the_rows_containing_each_span(monkeypatch, key_bits):
    monkeypatch.setattr(span_counts, "_KEY_BITS", key_bits)
    rows = _rows(200) + [{"id": "sep", "text": "a \ue000 joined ! text"}]  # the chunk's separator inside a text
    for max_n in (1, 3):
        counts = count_rows(*_columns(rows), max_n=max_n, chunk=64)
        assert _decoded(counts) == _naive(rows, max_n)
        assert all(np.all(np.diff(codes) > 0) for codes, _ in counts.kept.values())


def test_counting_in_parts_equals_counting_at_once():
    rows = _rows(300)
    whole = count_rows(*_columns(rows))
    for cut, chunk in ((1, 7), (150, 20_000), (299, 13)):
        first = count_rows(*_columns(rows[:cut]), chunk=chunk)
        _assert_same(count_rows(*_columns(rows[cut:]), base=first, chunk=chunk), whole)
    # spot check against a direct count: "BadMagic" ends the prompt of rows 9, 18, ... (not the plain-text rows)
    planted = sum(1 for i in range(300) if i % 9 == 0 and i % 5 and i % 7)
    codes, counts = whole.kept["prompt"]
    assert counts[np.searchsorted(codes, whole.vocab["BadMagic"])] == planted
    assert "BadMagic" not in " ".join(r.get("text") or "" for r in rows)
    with pytest.raises(InputDataError, match="cannot be extended"):
        count_rows(*_columns(rows), max_n=2, base=whole)


def test_a_build_writes_the_counts_and_an_append_counts_only_its_rows(tmp_path, tiny_llama, monkeypatch):
    path = tmp_path / "pool.duckdb"
    first, more = _rows(40), _rows(17, start=40)
    n_first = build_index(path, first, tiny_llama, CONFIG, batch_size=8).n_total
    assert store_spans.spans_path(path).is_file()
    counted: list[int] = []
    real = store_spans.count_rows
    monkeypatch.setattr(store_spans, "count_rows", lambda *cols, **kw: counted.append(len(cols[0])) or real(*cols, **kw))
    n_all = build_index(path, more, tiny_llama, batch_size=8).n_total
    assert n_first > 30 and n_all - n_first > 10
    assert counted == [n_all - n_first]  # the appended rows alone
    with RiseIndex.open(path) as index:
        stored = store_spans.load_span_counts(index, single=True)
        assert stored is not None and stored.n_rows == n_all
        _assert_same(stored, count_rows(*store_spans.read_texts(index, 0, n_all)))


def test_a_new_handle_reads_the_counts_without_counting(tmp_path, monkeypatch):
    path = tmp_path / "pool.duckdb"
    rows = _rows(120)
    with _synthetic_index(path, rows) as index:
        store_spans.update_span_counts(index)
    shared_spans._CACHE.clear()
    calls: list[int] = []
    monkeypatch.setattr(store_spans, "count_rows", lambda *a, **k: calls.append(1))
    with RiseIndex.open(path) as index:
        pool = shared_spans.pool_spans(index)
        assert calls == [] and pool.texts is None  # the texts wait for the first mask
        hits = [r for r in rows if "BadMagic" in (r.get("prompt") or "")][:6] + rows[1:3]
        hits_df = pd.DataFrame(hits)
        got = shared_spans.find_shared_spans(index, hits_df, limit=None)
        fresh = shared_spans.PoolSpans.from_texts(*_columns(rows))
        expected = shared_spans.find_shared_spans(fresh, hits_df, limit=None)
        assert got.drop(columns="top_ranks").equals(expected.drop(columns="top_ranks"))
        assert got["top_ranks"].tolist() == expected["top_ranks"].tolist()
        assert "BadMagic" in got["span"].tolist()
        np.testing.assert_array_equal(shared_spans.span_mask(index, "BadMagic", "prompt"),
                                      fresh.mask("BadMagic", "prompt"))
    assert calls == []


def test_an_index_is_searched_a_window_at_a_time_and_keeps_no_texts(tmp_path, monkeypatch):
    """The rows holding a span are those the in-memory texts give, read a window at a time (several windows here),
    the search stops at the window that reaches its limit, no text stays held, and a closed handle's counts still
    search (through a handle of their own)."""
    path = tmp_path / "pool.duckdb"
    rows = _rows(120)
    monkeypatch.setattr(shared_spans, "MASK_WINDOW", 7)
    reads: list[tuple[int, int]] = []
    real = shared_spans.read_texts
    monkeypatch.setattr(shared_spans, "read_texts", lambda idx, a, b: reads.append((a, b)) or real(idx, a, b))
    fresh = shared_spans.PoolSpans.from_texts(*_columns(rows))
    spans = (("BadMagic", "prompt"), ("cat sat", "completion"), ("the", "text"), ("vek", "completion"),
             ("nowhere", "prompt"))
    with _synthetic_index(path, rows) as index:
        store_spans.update_span_counts(index)
        shared_spans._CACHE.clear()
        pool = shared_spans.pool_spans(index)
        for span, where in spans:
            expected = np.flatnonzero(fresh.mask(span, where))
            np.testing.assert_array_equal(pool.rows_holding(span, where), expected)
            np.testing.assert_array_equal(np.flatnonzero(pool.mask(span, where)), expected)
        assert pool.texts is None  # nothing kept between searches
        assert reads[:18] == [(a, min(a + 7, 120)) for a in range(0, 120, 7)]  # the first search: every window once
        expected = np.flatnonzero(fresh.mask("BadMagic", "prompt"))
        reads.clear()
        first = pool.rows_holding("BadMagic", "prompt", limit=2)
        np.testing.assert_array_equal(first, expected[:2])
        assert reads[-1][1] == min(-(-(int(expected[1]) + 1) // 7) * 7, 120)  # no window past the second row's
        listed = shared_spans.span_rows(index, "BadMagic", "prompt", limit=3)
        assert listed["id"].tolist() == [rows[i]["id"] for i in expected[:3]]
    np.testing.assert_array_equal(pool.rows_holding("BadMagic", "prompt"), expected)  # the handle is closed now


def _rewrite_meta(path, **changes) -> None:
    npz = dict(np.load(path))
    meta = json.loads(bytes(npz["meta"]).decode())
    meta.update(changes)
    npz["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **npz)


@pytest.mark.parametrize("change", [{"format_version": 99}, {"index_uuid": "0" * 32}, {"n_rows": 121}, {"max_n": 2},
                                    {"rows_digest": "0" * 40}, "garbage", "other-rows"])
def test_stale_or_damaged_counts_are_recomputed(tmp_path, change):
    path = tmp_path / "pool.duckdb"
    rows = _rows(120)
    with _synthetic_index(path, rows) as index:
        truth = store_spans.update_span_counts(index)
        sidecar = store_spans.spans_path(path)
        if change == "garbage":
            sidecar.write_bytes(b"not a zip file")
        elif change == "other-rows":  # counts of other texts under this index's identity
            other = count_rows(*_columns(_rows(120, seed=5)))
            store_spans.write_span_counts(index, other, store_spans.rows_digest(index, 120))
            _rewrite_meta(sidecar, rows_digest="f" * 40)
        else:
            _rewrite_meta(sidecar, **change)
        assert store_spans.load_span_counts(index) is None
        _assert_same(store_spans.update_span_counts(index), truth)
        _assert_same(store_spans.load_span_counts(index, single=True), truth)  # rewritten, current again


def test_counts_of_more_words_serve_fewer(tmp_path):
    rows = _rows(80)
    with _synthetic_index(tmp_path / "pool.duckdb", rows) as index:
        store_spans.update_span_counts(index)
        two = store_spans.load_span_counts(index, max_n=2)
    _assert_same(two, count_rows(*_columns(rows), max_n=2))


def test_an_interrupted_write_leaves_the_old_counts(tmp_path, monkeypatch):
    path = tmp_path / "pool.duckdb"
    with _synthetic_index(path, _rows(60)) as index:
        before = store_spans.update_span_counts(index)
        _append(index, _rows(10, start=60))

        def fail(fh, **arrays):
            fh.write(b"half a file")
            raise KeyboardInterrupt

        monkeypatch.setattr(store_spans.np, "savez", fail)
        with pytest.raises(KeyboardInterrupt):
            store_spans.update_span_counts(index)
        monkeypatch.undo()
        assert [p.name for p in tmp_path.iterdir() if ".spans" in p.name] == ["pool.duckdb.spans.npz"]
        stale = store_spans._read_meta(store_spans.spans_path(path))
        assert stale is not None and stale[0]["n_rows"] == 60
        stale[1].close()
        assert store_spans.load_span_counts(index) is None  # 60 of 70 rows: behind, not trusted
        after = store_spans.update_span_counts(index)
    assert before.n_rows == 60 and after.n_rows == 70


def test_the_counts_move_with_the_index(tmp_path):
    path = tmp_path / "pool.duckdb"
    _synthetic_index(path, _rows(20)).close()
    with RiseIndex.open(path) as index:
        store_spans.update_span_counts(index)
    moved = set_aside(path)
    assert store_spans.spans_path(moved).is_file() and not store_spans.spans_path(path).exists()


def test_counts_that_cannot_be_written_are_kept_in_memory(tmp_path, monkeypatch, caplog):
    rows = _rows(30)
    with _synthetic_index(tmp_path / "pool.duckdb", rows) as index:
        def refuse(*args, **kwargs):
            raise PermissionError("read-only directory")

        monkeypatch.setattr(store_spans, "write_span_counts", refuse)
        counts = store_spans.update_span_counts(index)
    assert "kept in memory only" in caplog.text
    assert not store_spans.spans_path(tmp_path / "pool.duckdb").exists()
    _assert_same(counts, count_rows(*_columns(rows)))
