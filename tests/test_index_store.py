"""The DuckDB index store: round trip, exact fast ranking, filters, crash-resume, append, refusals, bad files."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
import torch
from conftest import make_lm
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core.attribution import explain, query_features, rank, select, top_rows
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import RiseExtractor
from rise_core.errors import IndexMismatchError, IndexStoreError, InputDataError
from rise_core.ingest import read_pool
from rise_core.models import load_model
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix, score_pool, top_k
from rise_core.store import RiseIndex, build_index, list_indexes

CFG = RiseConfig(k_r=16, k_h=8, k_g=16, counted_positions="completion", token_norm=True, center_hidden=False)
QUERY = Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket .")
FP16_ULP = 2.0**-10  # one float16 ulp at 1.0: the largest rounding difference of a stored unit-vector entry


@pytest.fixture(scope="module")
def built(tiny_llama, tmp_path_factory):
    path = tmp_path_factory.mktemp("idx") / "pool.duckdb"
    report = build_index(path, pool_rows(24), tiny_llama, CFG, batch_size=4)
    return path, report


def _features_by_id(path: Path) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    with RiseIndex.open(path) as index:
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
        return {i: (fm.rh[r].float(), fm.gh[r].float()) for r, i in enumerate(ids)}


def _assert_same_features(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            assert (x - y).abs().max() <= FP16_ULP


def test_round_trip_same_scores_as_in_memory(built, tiny_llama):
    path, report = built
    assert (report.n_added, report.n_already_present, report.n_skipped, report.stopped) == (24, 0, 0, False)
    rows = pool_rows(24)
    with RiseIndex.open(path) as index:
        assert len(index) == 24 and index.status == "complete"
        df = index.samples()
        assert list(df.columns[:5]) == ["id", "text", "prompt", "completion", "label"]
        assert {"topic", "year", "n_counted", "loss"} <= set(df.columns)
        assert list(df.index) == list(range(24))
        assert df["year"].dtype.kind == "i" and df["label"].dtype.kind == "i"
        stored = index.sample("s3")
        assert stored.text == rows[3]["text"] and stored.label == 1 and stored.meta == {"topic": "story",
                                                                                         "year": 2003}
        fm = index.feature_matrix()
        assert fm is index.feature_matrix()  # cached
        assert fm.rh.dtype == torch.float16 and fm.rh.shape == (24, CFG.k_r * CFG.k_h)

        # the same features in memory, in the index's row order
        ex = index.extractor(tiny_llama)
        order = [int(i[1:]) for i in df["id"]]
        feats = ex.extract([rows[i]["text"] for i in order])
        mem = FeatureMatrix.from_features(feats)
        assert (fm.rh.float() - mem.rh).abs().max() <= FP16_ULP
        torch.testing.assert_close(fm.rh_norm, mem.rh_norm)
        assert df["n_counted"].tolist() == feats.n_counted.tolist()

        qfm = query_features(index, tiny_llama, [QUERY])
        for opts in (ScoreOptions(), ScoreOptions(lambda_rh=0.2, lambda_gh=1.5, sample_norm="joint"),
                     ScoreOptions(sample_norm="none")):
            hits = rank(index, qfm, opts, k=5)
            expected = score_pool(fm, qfm, opts)  # the stored features, scored by rise_core.scoring
            idx, vals = top_k(expected.total, 5)
            assert hits["id"].tolist() == df["id"].iloc[idx.tolist()].tolist()
            torch.testing.assert_close(torch.tensor(hits["score"].tolist()), vals, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(torch.tensor((hits["rh"] + hits["gh"] + hits["hs"]).tolist()),
                                       torch.tensor(hits["score"].tolist()), rtol=1e-5, atol=1e-6)
            in_memory = score_pool(mem, qfm, opts).total[idx]  # unquantised features: fp16 rounding apart
            torch.testing.assert_close(vals, in_memory, rtol=0, atol=5e-3 * (1 + in_memory.abs().max().item()))
        assert list(hits.columns[:5]) == ["rank", "id", "score", "rh", "gh"]
        assert hits["rank"].tolist() == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("mode", ["channel", "joint", "none"])
def test_fast_top_rows_equals_dense_scoring(mode, monkeypatch):
    from rise_core import attribution

    if not attribution._half_gemv_accumulates_in_fp32():
        pytest.skip("this CPU's float16 matrix-vector product does not accumulate in float32: top_rows rightly "
                    "scores every row exactly, there is no fast path to test")

    def no_fallback(*args, **kwargs):
        raise AssertionError("top_rows fell back to scoring every row exactly")

    monkeypatch.setattr(attribution, "_exact_top_rows", no_fallback)  # so only the float16 fast path can answer
    gen = torch.Generator().manual_seed(1)
    n, d = 4000, 96
    raw = torch.randn(n, 2 * d, generator=gen, dtype=torch.float64)
    raw[100:130] = raw[99]  # exact ties
    raw[200:260] = raw[199] + 1e-4 * torch.randn(60, 2 * d, generator=gen, dtype=torch.float64)  # near ties
    rh, gh = raw[:, :d], raw[:, d:]
    norms_rh, norms_gh = torch.rand(n, generator=gen) * 5 + 0.1, torch.rand(n, generator=gen) * 5 + 0.1
    fm = FeatureMatrix(rh=(rh / rh.norm(dim=1, keepdim=True)).half(), gh=(gh / gh.norm(dim=1, keepdim=True)).half(),
                       rh_norm=norms_rh.float(), gh_norm=norms_gh.float())
    queries = fm.select([199, 5]).to(torch.float32)
    opts = ScoreOptions(lambda_rh=0.7, lambda_gh=1.3, sample_norm=mode)
    dense = score_pool(fm, queries, opts)
    allowed = torch.rand(n, generator=gen) < 0.5
    for k, mask in ((1, None), (10, None), (50, allowed), (n + 5, None)):
        rows, scores = top_rows(fm, queries, opts, k, mask)
        idx, vals = top_k(dense.total, k, mask)
        torch.testing.assert_close(scores.total, vals, rtol=1e-6, atol=1e-6)
        assert set(rows.tolist()) == set(idx.tolist()) or torch.allclose(dense.total[rows], vals, atol=1e-6)
        if mask is not None:
            assert mask[rows].all()
    full = score_pool(fm.to(torch.float32), queries, opts)  # the fp16 path (chunked widening) vs float32 rows
    torch.testing.assert_close(full.total, dense.total, rtol=1e-6, atol=1e-6)


def test_where_filter_and_columns(built, tiny_llama):
    path, _ = built
    with RiseIndex.open(path) as index:
        assert index.columns == {"label": "BIGINT", "topic": "VARCHAR", "year": "BIGINT"}
        qfm = query_features(index, tiny_llama, "the cat sat on the mat .")
        hits = rank(index, qfm, k=50, where="topic = 'cats' AND year >= 2008")
        assert len(hits) == 4 and set(hits["topic"]) == {"cats"} and (hits["year"] >= 2008).all()
        assert len(index.samples(where="label = 1")) == 12
        assert index.row_mask("label = 1").sum() == 12
        sel = select(index, qfm, top_n=3, where="topic = 'finance'")
        assert len(sel) == 3 and set(sel["topic"]) == {"finance"}
        assert sel["score"].is_monotonic_decreasing
        with pytest.raises(InputDataError, match=r"filter .*(failed.*Columns|refused: no column named).*topic"):
            rank(index, qfm, where="colour = 'red'")
        with pytest.raises(InputDataError, match="refused: it is 3 statements"):
            rank(index, qfm, where="1 = 1); DROP TABLE rise_samples; SELECT (1")
        with pytest.raises(InputDataError, match="refused: it is not valid SQL"):
            index.samples(where="topic = = 'x'")
        assert len(index) == 24


def test_select_top_n_and_fraction(built, tiny_llama):
    path, _ = built
    with RiseIndex.open(path) as index:
        qfm = query_features(index, tiny_llama, [QUERY, "the stock market crashed ."])
        everything = score_pool(index.feature_matrix(), qfm)  # the fixed weights, ScoreOptions()
        best = select(index, qfm, ScoreOptions(), fraction=0.25)
        assert len(best) == 6 and best["score"].is_monotonic_decreasing
        torch.testing.assert_close(torch.tensor(best["score"].tolist()),
                                   torch.sort(everything.total, descending=True).values[:6])
        assert len(select(index, qfm, top_n=100)) == 24
        with pytest.raises(InputDataError, match="exactly one"):
            select(index, qfm)
        with pytest.raises(InputDataError, match="fraction"):
            select(index, qfm, fraction=1.5)


def test_explanation_sums_to_channel_scores(built, tiny_llama):
    path, _ = built
    with RiseIndex.open(path) as index:
        qfm = query_features(index, tiny_llama, [QUERY])
        hits = rank(index, qfm, k=2)
        for _, hit in hits.iterrows():
            ex_attr, q_attr = explain(index, tiny_llama, hit["id"], QUERY, qfm)
            assert sum(ex_attr.rh) == pytest.approx(hit["rh"], abs=2e-3)
            assert sum(ex_attr.gh) == pytest.approx(hit["gh"], abs=2e-3)
            assert sum(q_attr.total) == pytest.approx(hit["score"], abs=2e-3)
            assert len(ex_attr.tokens) == len(ex_attr.rh)
        with pytest.raises(InputDataError, match="no sample with id"):
            explain(index, tiny_llama, "nope", QUERY, qfm)



def test_explaining_several_hits_runs_the_query_once(built, tiny_llama, monkeypatch):
    """The query's token sketches are computed once for all its hits (`attribution.TOKEN_SKETCHES`), and every
    explanation equals the one computed from scratch (`explain_hit`, both texts' sketches recomputed)."""
    from rise_core import attribution
    from rise_core.engine import RiseExtractor
    from rise_core.explain import explain_hit

    path, _ = built
    attribution.TOKEN_SKETCHES.clear()
    attribution.HIT_SKETCHES.clear()  # every hit's sketches computed here
    texts = []
    real = RiseExtractor.token_sketches_many

    def spy(self, samples, *args):
        texts.extend(Sample.coerce(s).full_text for s in samples)
        return real(self, samples, *args)
    with RiseIndex.open(path) as index:
        qfm = query_features(index, tiny_llama, [QUERY])
        hits = rank(index, qfm, k=4)["id"].tolist()
        monkeypatch.setattr(RiseExtractor, "token_sketches_many", spy)
        got = [explain(index, tiny_llama, h, QUERY, qfm) for h in hits]  # one at a time
        query_text = Sample.coerce(QUERY).full_text
        assert texts.count(query_text) == 1 and len(texts) == 1 + len(hits)
        attribution.TOKEN_SKETCHES.clear()
        attribution.HIT_SKETCHES.clear()
        together = attribution.explain_many(index, tiny_llama, hits, QUERY, qfm)  # the page's: one call
        assert list(together) == hits and texts.count(query_text) == 2
        monkeypatch.setattr(RiseExtractor, "token_sketches_many", real)
        options = attribution.index_weighting(index, qfm, None).options
        for h, (ex, q) in zip(hits, got, strict=True):
            want_ex, want_q = explain_hit(index.extractor(tiny_llama), index.sample(h),
                                          index.row_features(index.row_of(h)), Sample.coerce(QUERY), qfm, options)
            assert (ex.tokens, ex.rh, ex.gh, ex.hs) == (want_ex.tokens, want_ex.rh, want_ex.gh, want_ex.hs)
            assert (q.tokens, q.rh, q.gh, q.hs) == (want_q.tokens, want_q.rh, want_q.gh, want_q.hs)
            batched_ex, batched_q = together[h]  # the hits' passes shared: float64 rounding apart, the same
            assert batched_ex.tokens == ex.tokens and batched_q.tokens == q.tokens
            for name in ("rh", "gh", "hs"):
                np.testing.assert_allclose(getattr(batched_ex, name), getattr(ex, name), rtol=1e-9, atol=1e-9)
                np.testing.assert_allclose(getattr(batched_q, name), getattr(q, name), rtol=1e-9, atol=1e-9)
    attribution.TOKEN_SKETCHES.clear()


def test_hits_explained_again_under_other_weights_run_no_forward_pass(built, tiny_llama, monkeypatch):
    """A hit's token sketches do not depend on the query or the weights (`attribution.HIT_SKETCHES`): explaining the
    same hits under other weights (the page after a slider or the view changed) reads them back, and the explanations
    equal ones computed from nothing."""
    from rise_core import attribution
    from rise_core.engine import RiseExtractor

    path, _ = built
    attribution.HIT_SKETCHES.clear()
    with RiseIndex.open(path) as index:
        qfm = query_features(index, tiny_llama, [QUERY])
        hits = rank(index, qfm, k=4)["id"].tolist()
        attribution.explain_many(index, tiny_llama, hits, QUERY, qfm, ScoreOptions())
        passes = []
        real = RiseExtractor.token_sketches_many
        monkeypatch.setattr(RiseExtractor, "token_sketches_many",
                            lambda self, samples, *a: (passes.extend(samples), real(self, samples, *a))[1])
        heavier_rh = ScoreOptions(lambda_rh=2.0, lambda_hs=0.25)
        again = attribution.explain_many(index, tiny_llama, [*hits[:2], *hits], QUERY, qfm, heavier_rh)
        assert passes == [] and list(again) == hits  # each hit once, in order; the query's sketches kept too
        attribution.HIT_SKETCHES.clear()
        attribution.TOKEN_SKETCHES.clear()
        fresh = attribution.explain_many(index, tiny_llama, hits, QUERY, qfm, heavier_rh)
        assert len(passes) == 1 + len(hits)  # from nothing: the query and every hit
        for h in hits:
            for got, want in zip(again[h], fresh[h], strict=True):
                assert (got.tokens, got.rh, got.gh, got.hs) == (want.tokens, want.rh, want.gh, want.hs)
    attribution.HIT_SKETCHES.clear()


def test_an_explanation_reads_its_rows_features_alone(built, tiny_llama, monkeypatch):
    """`row_features` (what `explain` reads) equals the loaded matrix's row, read from the file while the matrix is
    not loaded (as on the ANN path, where no query loads it): an explanation reads one row, not every row."""
    path, _ = built
    with RiseIndex.open(path) as index:
        qfm = query_features(index, tiny_llama, [QUERY])
        hit = rank(index, qfm, k=1, search="exact")["id"].iloc[0]
        want = explain(index, tiny_llama, hit, QUERY, qfm)
        loaded = index.feature_matrix()
        cached = [index.row_features(r) for r in (0, len(index) - 1)]
    with RiseIndex.open(path) as index:
        def no_matrix():
            raise AssertionError("explain loaded the pool's feature matrix")
        monkeypatch.setattr(index, "feature_matrix", no_matrix)
        got = explain(index, tiny_llama, hit, QUERY, qfm)
        for r, row in zip((0, len(index) - 1), cached, strict=True):
            from_file = index.row_features(r)
            for f in ("rh", "gh", "rh_norm", "gh_norm", "hs", "hs_norm", "loss"):
                assert torch.equal(getattr(from_file, f), getattr(loaded.select([r]), f)), f
                assert torch.equal(getattr(row, f), getattr(from_file, f)), f
        with pytest.raises(InputDataError, match="not one of the"):
            index.row_features(len(index))
    for a, b in zip(want, got, strict=True):
        assert a.tokens == b.tokens and a.rh == b.rh and a.gh == b.gh and a.hs == b.hs

@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")


CRASH_SCRIPT = r"""
import os, signal, sys
from rise_core.config import RiseConfig
from rise_core.store import RiseIndex, build_index
from rise_core.models import load_model

model_dir, pool, index_path, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
original = RiseIndex._insert_prepared
calls = {"n": 0}

def insert_then_die(self, batch):
    calls["n"] += 1
    original(self, batch)  # inside the batch transaction, not yet committed
    if calls["n"] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

RiseIndex._insert_prepared = insert_then_die
lm = load_model(model_dir, dtype="float64")
build_index(index_path, pool, lm, RiseConfig(k_r=16, k_h=8, k_g=16), batch_size=4)
"""


def test_resume_after_sigkill(tmp_path, model_dir, tiny_llama):
    pool = write_jsonl(tmp_path / "pool.jsonl", pool_rows(24))
    index_path = tmp_path / "crash.duckdb"
    proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(model_dir), str(pool), str(index_path), "3"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -9, proc.stderr
    with RiseIndex.open(index_path) as index:  # only the two committed batches survive
        assert len(index) == 8 and index.status == "building"
        assert len(index.feature_matrix()) == 8

    lm = load_model(str(model_dir), dtype="float64")
    assert lm.fingerprint() == tiny_llama.fingerprint()
    report = build_index(index_path, pool, lm, batch_size=4)
    assert (report.n_added, report.n_already_present) == (16, 8)
    with RiseIndex.open(index_path) as index:
        assert len(index) == 24 and index.status == "complete"
    con = duckdb.connect(str(index_path), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT id) FROM rise_samples").fetchone() == (24, 24)
    con.close()

    fresh = tmp_path / "fresh.duckdb"  # the crash script's config: the default, with hidden centring
    build_index(fresh, pool, tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16), batch_size=4)
    _assert_same_features(_features_by_id(index_path), _features_by_id(fresh))


def test_stop_and_resume_with_progress(tmp_path, tiny_llama):
    path = tmp_path / "stop.duckdb"
    calls: list[tuple[int, int]] = []
    report = build_index(path, pool_rows(20), tiny_llama, CFG, batch_size=4,
                         progress=lambda d, t: calls.append((d, t)), should_stop=lambda: len(calls) >= 2)
    assert report.stopped and report.n_added == 4 and calls == [(0, 20), (4, 20)]
    with RiseIndex.open(path) as index:
        assert index.status == "building" and len(index) == 4
    calls.clear()
    report = build_index(path, pool_rows(20), tiny_llama, batch_size=4, progress=lambda d, t: calls.append((d, t)))
    assert not report.stopped and (report.n_added, report.n_already_present) == (16, 4)
    assert calls[0] == (0, 16) and calls[-1] == (16, 16)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    with RiseIndex.open(path) as index:
        assert index.status == "complete" and len(index) == 20


def test_a_statement_interrupted_by_ctrl_c_is_a_keyboard_interrupt(tmp_path):
    """DuckDB turns Ctrl-C into its InterruptException, or into RuntimeError('Query interrupted') when it lands between
    statements (a build's BEGIN): both are the KeyboardInterrupt the command line reports as "interrupted" (exit 130),
    not a traceback or a "database error"; other errors are as before."""
    from rise_core.errors import IndexStoreError
    from rise_core.store.schema import db_errors

    for raised in (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), RuntimeError("Query interrupted")):
        with pytest.raises(KeyboardInterrupt), db_errors(tmp_path / "i.duckdb", "write to"):
            raise raised
    with pytest.raises(IndexStoreError, match="database error while trying to write to"), \
            db_errors(tmp_path / "i.duckdb", "write to"):
        raise duckdb.CatalogException("no such table")
    with pytest.raises(RuntimeError, match="something else"), db_errors(tmp_path / "i.duckdb", "write to"):
        raise RuntimeError("something else")


def test_a_batch_interrupted_mid_insert_is_rolled_back_and_reported_as_interrupted(tmp_path, tiny_llama):
    """Ctrl-C inside a batch's INSERT aborts DuckDB's transaction, and the cleanup after it (unregistering the batch)
    failed with 'Current transaction is aborted', which replaced the interrupt: the build said "database error". Now
    the interrupt stands, the batch is rolled back, and building again resumes."""
    path = tmp_path / "int.duckdb"
    build_index(path, pool_rows(8), tiny_llama, CFG, batch_size=4, should_stop=lambda: True)  # created, empty

    class Interrupting:  # the writer connection, its features INSERT interrupted after aborting the transaction
        def __init__(self, con):
            self.con = con

        def __getattr__(self, name):
            return getattr(self.con, name)

        def execute(self, sql, *args):
            if sql.startswith("INSERT INTO rise_features"):
                with contextlib.suppress(duckdb.Error):
                    self.con.execute("SELECT error('aborts the transaction')")
                raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
            return self.con.execute(sql, *args)

    index = RiseIndex.open(path, read_only=False)
    real = index._connect()
    index._con = Interrupting(real)
    with pytest.raises(KeyboardInterrupt):
        build_index(index, pool_rows(8), tiny_llama, batch_size=4)
    index._con = real
    index.close()
    with RiseIndex.open(path) as reopened:
        assert len(reopened) == 0 and reopened.status == "building"
    report = build_index(path, pool_rows(8), tiny_llama, batch_size=4)
    assert report.n_added == 8 and not report.stopped


def test_an_unfinished_build_keeps_the_index_unfinished_until_it_is_finished(tmp_path, tiny_llama):
    """A build of pool A stopped, then pool B built to the end: the index is still not complete (A's rows are
    missing), the report and `info` name A; building A again finishes it. A stop before the first sample is stored
    leaves an index that queries refuse with what to do."""
    from rise_core.attribution import query_features
    from rise_core.errors import IndexStoreError

    path, calls = tmp_path / "two.duckdb", []
    a = [{**row, "id": f"a{i}"} for i, row in enumerate(pool_rows(12))]
    b = [{"id": "b0", "text": "the dog ran to the bank ."}, {"id": "b1", "text": "a cat sat on a hat ."}]
    report = build_index(path, a, tiny_llama, CFG, batch_size=4, progress=lambda d, t: calls.append(d),
                         should_stop=lambda: len(calls) >= 2)
    assert report.stopped and report.n_added == 4
    report = build_index(path, b, tiny_llama, batch_size=4)
    assert not report.stopped and report.n_added == 2 and len(report.unfinished) == 1
    assert "not complete: the build of" in report.summary()
    with RiseIndex.open(path) as index:
        assert index.status == "building" and len(index) == 6 and len(index.info()["unfinished"]) == 1
    report = build_index(path, b, tiny_llama, batch_size=4)  # B again: nothing to add, A still unfinished
    assert report.n_added == 0 and len(report.unfinished) == 1
    report = build_index(path, a, tiny_llama, batch_size=4)
    assert (report.n_added, report.unfinished) == (8, [])
    with RiseIndex.open(path) as index:
        assert index.status == "complete" and len(index) == 14 and index.info()["unfinished"] == []

    empty, phases = tmp_path / "empty.duckdb", []
    build_index(empty, pool_rows(8), tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16), batch_size=4,
                phase_progress=lambda *p: phases.append(p), should_stop=lambda: len(phases) >= 2)
    with RiseIndex.open(empty) as index, pytest.raises(IndexStoreError, match="holds no samples yet.*run the build"):
        query_features(index, tiny_llama, "the cat sat")


def test_every_phase_is_counted_and_the_mean_fit_can_be_stopped(tmp_path, tiny_llama):
    """A new index whose config needs the hidden-state mean reports the fit (all 20 rows: under HIDDEN_MEAN_SAMPLES)
    batch by batch, then the stored features; a stop during the fit stores nothing and the next build starts over."""
    path, phases = tmp_path / "phases.duckdb", []
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16)  # centres the hidden states: needs the mean
    report = build_index(path, pool_rows(20), tiny_llama, cfg, batch_size=8,
                         phase_progress=lambda *p: phases.append(p))
    fit, feat = "fitting the hidden-state mean", "computing features"
    assert phases == [(feat, 0, 20), (fit, 0, 20), (fit, 8, 20), (fit, 16, 20), (fit, 20, 20), (feat, 0, 20),
                      (feat, 8, 20), (feat, 16, 20), (feat, 20, 20)]
    assert report.n_added == 20

    stopped, phases = tmp_path / "stopped.duckdb", []
    report = build_index(stopped, pool_rows(20), tiny_llama, cfg, batch_size=8,
                         phase_progress=lambda *p: phases.append(p), should_stop=lambda: len(phases) >= 3)
    assert report.stopped and report.n_added == 0 and phases[-1] == (fit, 8, 20)
    with RiseIndex.open(stopped) as index:
        assert index.status == "building" and len(index) == 0 and index.hidden_mean is None
    report = build_index(stopped, pool_rows(20), tiny_llama, batch_size=8)
    assert report.n_added == 20 and not report.stopped
    _assert_same_features(_features_by_id(stopped), _features_by_id(path))


def test_append_equals_full_rebuild(tmp_path, tiny_llama):
    rows = pool_rows(36)
    appended, full = tmp_path / "appended.duckdb", tmp_path / "full.duckdb"
    build_index(appended, rows[:20], tiny_llama, CFG, batch_size=4)
    reader = RiseIndex.open(appended)  # a reader kept open in this process across the append
    before = reader.feature_matrix()
    old_rh = before.rh.clone()
    report = build_index(appended, rows[12:], tiny_llama, batch_size=4)  # overlaps 8 rows already present
    assert (report.n_added, report.n_already_present, report.n_total) == (16, 8, 36)
    after = reader.feature_matrix()  # reconnects, loads only the new rows
    assert len(after) == 36 and torch.equal(after.rh[:20], old_rh)
    assert len(reader) == 36
    reader.close()
    build_index(full, rows, tiny_llama, CFG, batch_size=4)
    _assert_same_features(_features_by_id(appended), _features_by_id(full))


def test_centring_mean_fixed_at_first_build(tmp_path, tiny_llama):
    cfg = CFG.replace(center_hidden=True, hs_depth=1.0)
    path = tmp_path / "centred.duckdb"
    rows = pool_rows(16)
    build_index(path, rows[:8], tiny_llama, cfg, batch_size=4)
    with RiseIndex.open(path) as index:
        mean = index._hidden_mean.clone()
        assert index.manifest.has_hidden_mean
    fitted = RiseExtractor(tiny_llama, cfg).fit_hidden_mean([r["text"] for r in rows[:8]], batch_size=4)
    torch.testing.assert_close(mean, fitted.double().cpu())
    build_index(path, rows[8:], tiny_llama, batch_size=4)
    with RiseIndex.open(path) as index:
        assert torch.equal(index._hidden_mean, mean) and len(index) == 16
        assert torch.equal(index.extractor(tiny_llama).hidden_mean.cpu().double(), mean)


def test_mismatched_config_or_model_refused(built, tiny_llama):
    path, _ = built
    size = path.stat().st_size
    with pytest.raises(IndexMismatchError, match=r"k_r: index 16, requested 32.*seq_len: index 512, requested 64"):
        build_index(path, pool_rows(4, start=100), tiny_llama, CFG.replace(k_r=32, seq_len=64))
    other = make_lm("gpt-neox")
    with pytest.raises(IndexMismatchError, match=r"model 'tiny-llama' \(fingerprint [0-9a-f]+\).*'tiny-gpt-neox'"):
        build_index(path, pool_rows(4, start=100), other)
    with RiseIndex.open(path) as index:
        with pytest.raises(IndexMismatchError, match="fingerprint"):
            index.extractor(other)
        with pytest.raises(IndexMismatchError, match="fingerprint"):
            query_features(index, other, "the cat")
        assert len(index) == 24
    assert path.stat().st_size == size


def test_changed_text_under_an_existing_id_refused(built, tiny_llama):
    path, _ = built
    rows = pool_rows(2)
    rows[1]["text"] = "the dog sat on the moon ."
    with pytest.raises(InputDataError, match="'s1' .*already in .*different text"):
        build_index(path, rows, tiny_llama)
    with RiseIndex.open(path) as index:
        assert len(index) == 24


def test_query_longer_than_seq_len_and_truncated_pool_rows(tmp_path, tiny_llama):
    cfg = CFG.replace(seq_len=8)
    rows = [{"id": "short", "text": "the cat sat ."},
            {"id": "long", "text": "the cat sat on the mat and the dog sat on the blanket ."},
            {"id": "late", "prompt": "the cat sat on the mat and the dog", "completion": "sat ."},
            {"id": "empty", "text": "  "}]
    path = tmp_path / "short.duckdb"
    report = build_index(path, rows, tiny_llama, cfg)
    assert (report.n_added, report.n_truncated, report.n_skipped) == (2, 1, 2)
    reasons = dict(report.skipped)
    assert "no counted token" in reasons[3] and "empty text" in reasons[4]
    with RiseIndex.open(path) as index:
        assert index.samples().set_index("id").loc["long", "truncated"]
        with pytest.raises(InputDataError, match=r"the query has 15 tokens; this index counts at most seq_len=8"):
            query_features(index, tiny_llama, rows[1]["text"])
        with pytest.raises(InputDataError, match=r"query 2 has"):
            query_features(index, tiny_llama, ["the cat", rows[1]["text"]])
        assert len(query_features(index, tiny_llama, ["the cat sat ."])) == 1
        # truncate=True counts the query's first seq_len tokens, as the build did for the pool's long row
        cut, stored = query_features(index, tiny_llama, rows[1]["text"], truncate=True), index.feature_matrix()
        row = index.row_of("long")
        for channel in ("rh", "gh"):  # unit rows stored in float16: 2^-11 relative rounding per value
            torch.testing.assert_close(getattr(cut, channel)[0], getattr(stored, channel)[row].float(),
                                       rtol=0, atol=2e-3)


def test_bad_pool_leaves_index_intact(built, tiny_llama, tmp_path):
    path, _ = built
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"text": "caf\xe9"}\n')
    blank = write_jsonl(tmp_path / "blank.jsonl", [{"text": ""}, {"text": " "}])
    dups = write_jsonl(tmp_path / "dups.jsonl", [{"id": "x", "text": "the cat"}, {"id": "x", "text": "the dog"}])
    for bad, message in ((empty, "empty"), (latin, "UTF-8"), (blank, r"no usable rows \(2 skipped"),
                         (dups, "duplicate ids")):
        with pytest.raises(InputDataError, match=message):
            build_index(path, bad, tiny_llama)
    with pytest.raises(InputDataError, match="missing field"):
        build_index(path, blank, tiny_llama, fields={"text": "body"})
    with RiseIndex.open(path) as index:
        assert len(index) == 24 and index.status == "complete"


def test_bad_index_files(tmp_path, built, tiny_llama):
    with pytest.raises(IndexStoreError, match="no index at"):
        RiseIndex.open(tmp_path / "missing.duckdb")
    with pytest.raises(IndexStoreError, match="is a directory"):
        RiseIndex.open(tmp_path)
    text_file = tmp_path / "notes.duckdb"
    text_file.write_text("hello " * 1000)
    with pytest.raises(IndexStoreError, match="not a DuckDB database file"):
        RiseIndex.open(text_file)
    for read_only in (True, False):  # a pool file given as the index: DuckDB spoke of an in-memory database
        with pytest.raises(IndexStoreError, match="not a RISE index: it is not a DuckDB database file"):
            RiseIndex.open(write_jsonl(tmp_path / "pool.jsonl", pool_rows(3)), read_only=read_only)
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE people (name VARCHAR)")
    con.close()
    with pytest.raises(IndexStoreError, match="DuckDB database but not a RISE index"):
        RiseIndex.open(foreign)
    corrupted = tmp_path / "corrupted.duckdb"
    corrupted.write_bytes(built[0].read_bytes())
    data = bytearray(corrupted.read_bytes())
    data[12288:] = bytes(len(data) - 12288)  # keep DuckDB's headers, zero every block
    corrupted.write_bytes(bytes(data))
    with pytest.raises(IndexStoreError, match="corrupted|not a"):
        with RiseIndex.open(corrupted) as index:
            index.feature_matrix()
    for bad in (text_file, foreign, corrupted):  # building into them refuses and leaves them as they were
        before = bad.read_bytes()
        with pytest.raises(IndexStoreError):
            build_index(bad, pool_rows(4), tiny_llama, CFG)
        assert bad.read_bytes() == before


def test_missing_or_read_only_directory(tmp_path, tiny_llama):
    with pytest.raises(IndexStoreError, match="does not exist; create it first"):
        build_index(tmp_path / "nope" / "x.duckdb", pool_rows(4), tiny_llama, CFG)
    if os.geteuid() != 0:
        read_only = tmp_path / "ro"
        read_only.mkdir()
        read_only.chmod(0o555)
    else:  # root ignores permission bits; sysfs refuses new files even to root
        read_only = Path("/sys")
        if not read_only.is_dir() or os.access(read_only, os.W_OK) and _can_create(read_only):
            pytest.skip("no read-only directory available")
    with pytest.raises(IndexStoreError, match="permission denied|not writable"):
        build_index(read_only / "x.duckdb", pool_rows(4), tiny_llama, CFG)


def _can_create(directory: Path) -> bool:
    try:
        (directory / ".rise_probe").touch()
    except OSError:
        return False
    (directory / ".rise_probe").unlink()
    return True


def test_overwrite_list_and_info(tmp_path, tiny_llama):
    path = tmp_path / "a.duckdb"
    build_index(path, pool_rows(6), tiny_llama, CFG)
    with pytest.raises(IndexStoreError, match="already exists"):
        RiseIndex.create(path, tiny_llama, CFG)
    build_index(path, pool_rows(4, start=50), tiny_llama, CFG.replace(k_r=8), overwrite=True)
    (tmp_path / "junk.duckdb").write_text("x" * 5000)
    listed = list_indexes(tmp_path)
    assert [Path(r["path"]).name for r in listed] == ["a.duckdb", "junk.duckdb"]
    assert listed[0]["n_samples"] == 4 and listed[0]["dims"] == [8, 8, 16] and listed[0]["status"] == "complete"
    assert "not a DuckDB database" in listed[1]["error"]
    with RiseIndex.open(path) as index:
        info = index.info()
        assert info["size_bytes"] == index.size_bytes() > 0
        # the tensor composition's GH channel hashes h with its own seed (h_g)
        assert info["config"]["k_r"] == 8 and info["seeds"] == {"r": 42, "h": 43, "g": 44, "h_g": 45}
        assert info["model_fingerprint"] == tiny_llama.fingerprint()
        json.dumps(info)


def test_pool_from_reader_keeps_row_numbers(tmp_path, tiny_llama):
    pool = write_jsonl(tmp_path / "p.jsonl", [{"text": "the cat sat ."}, {"text": ""}, {"text": " "}])
    report = build_index(tmp_path / "r.duckdb", read_pool(pool), tiny_llama, CFG)
    assert report.n_added == 1 and [r for r, _ in report.skipped] == [2, 3] and report.n_rows == 3


def test_metadata_columns_typed_and_widened_on_append(tmp_path, tiny_llama):
    path = tmp_path / "meta.duckdb"
    first = [{"id": "a", "text": "the cat sat .", "label": "pos", "year": 2001, "score": 0.5, "tags": ["x"]},
             {"id": "b", "text": "the dog sat .", "label": "neg", "year": 2002, "Text": "shadow"}]
    build_index(path, first, tiny_llama, CFG)
    with RiseIndex.open(path) as index:
        assert index.columns == {"label": "VARCHAR", "year": "BIGINT", "meta_score": "DOUBLE", "tags": "JSON",
                                 "meta_Text": "VARCHAR"}
        assert index.samples(where="year > 2001")["id"].tolist() == ["b"]
        assert index.samples(where="meta_score = 0.5")["id"].tolist() == ["a"]
    build_index(path, [{"id": "c", "text": "the moon .", "label": "pos", "year": "unknown", "source": "web"}],
                tiny_llama)
    with RiseIndex.open(path) as index:
        cols = index.columns
        assert cols["year"] == "VARCHAR" and cols["source"] == "VARCHAR"
        df = index.samples().set_index("id")
        assert df.loc["a", "year"] == "2001" and df.loc["c", "year"] == "unknown" and df.loc["c", "source"] == "web"
        assert index.samples(where="label = 'pos'")["id"].tolist() == ["a", "c"]
        assert index.sample("a").meta == {"year": 2001, "score": 0.5, "tags": ["x"]}


def test_set_status_refuses_an_unknown_status_and_keeps_the_old_one(tiny_llama, tmp_path):
    path = tmp_path / "s.duckdb"
    build_index(path, pool_rows(3), tiny_llama, CFG)
    with RiseIndex.open(path, read_only=False) as index:
        with pytest.raises(IndexStoreError, match=r"unknown index status 'done'; valid statuses: building, complete"):
            index.set_status("done")
        assert index.status == "complete"
        index.set_status("building")
    with RiseIndex.open(path) as index:
        assert index.status == "building"


def test_hs_depth_counts_only_where_the_hs_channel_is_stored(tiny_llama, tmp_path):
    """Without the HS channel the layer it would read changes no stored value, so an append that asks another
    hs_depth is the same config (and stores what a one-shot build would); with HS stored it is refused."""
    off = CFG.replace(hidden_channel=False)
    assert off.differences(off.replace(hs_depth=1.0)) == []
    assert CFG.differences(CFG.replace(hs_depth=1.0)) == ["hs_depth"]
    assert off.differences(CFG.replace(hs_depth=1.0)) == ["hidden_channel", "hs_depth"]
    rows = pool_rows(12)
    build_index(tmp_path / "two.duckdb", rows[:6], tiny_llama, off, batch_size=3)
    build_index(tmp_path / "two.duckdb", rows[6:], tiny_llama, off.replace(hs_depth=1.0), batch_size=3)
    build_index(tmp_path / "one.duckdb", rows, tiny_llama, off.replace(hs_depth=1.0), batch_size=3)
    _assert_same_features(_features_by_id(tmp_path / "two.duckdb"), _features_by_id(tmp_path / "one.duckdb"))
    build_index(tmp_path / "hs.duckdb", rows[:6], tiny_llama, CFG, batch_size=3)
    with pytest.raises(IndexMismatchError, match=r"hs_depth: index 0\.7, requested 1\.0"):
        build_index(tmp_path / "hs.duckdb", rows[6:], tiny_llama, CFG.replace(hs_depth=1.0))
