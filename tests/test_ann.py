"""The ANN index (rise_core.ann): same top-k and exact scores as the exact scan, query-time lambdas, exact fallbacks,
filters, appended rows, refused sidecars, the missing-faiss message and `rise index-ann`.

Pools are synthetic and clustered (a few topics in a small latent space, mapped to each channel by a fixed random
matrix, plus noise), written straight into small DuckDB indexes without a model."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from index_helpers import patch_finding

from rise_core import ann, attribution
from rise_core.attribution import rank, rank_each
from rise_core.cli import main
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.engine import SampleFeatures
from rise_core.errors import ConfigError, IndexMismatchError, IndexStoreError, InputDataError
from rise_core.feedback import FeedbackConfig
from rise_core.memo import BoundedMemo
from rise_core.samples import Sample
from rise_core.scoring import ContrastFeatures, FeatureMatrix, score_pool
from rise_core.sketch import SketchSet
from rise_core.store import RiseIndex
from rise_core.units import format_bytes

CFG = RiseConfig(k_r=4, k_h=4, k_g=6, center_hidden=False, hidden_channel=True,
                 hs_depth=1.0)  # RH 16, GH 24, HS 12 values (the final hidden state: hidden cosine streams from it)
HIDDEN = 12
N = 400
NLIST = 16
TOPICS = ("t0", "t1", "t2", "t3")


def clustered(n: int, seed: int, config: RiseConfig = CFG, n_topics: int = 8, latent: int = 6) -> SampleFeatures:
    """n samples of n_topics clusters: latent = 2 centre[topic] + 0.5 noise, each channel = latent @ W_c + noise."""
    fixed = torch.Generator().manual_seed(1234)  # the topics and channel maps: the same for every call
    centres = torch.randn(n_topics, latent, generator=fixed)
    maps = {c: torch.randn(latent, d, generator=fixed) for c, d in
            zip(("rh", "gh", "hs"), (*config.feature_dims, HIDDEN), strict=True)}
    gen = torch.Generator().manual_seed(seed)
    topic = torch.randint(n_topics, (n,), generator=gen)
    lat = 2 * centres[topic] + 0.5 * torch.randn(n, latent, generator=gen)
    ch = {c: lat @ w + 0.3 * torch.randn(n, w.shape[1], generator=gen) for c, w in maps.items()}
    return SampleFeatures(rh=ch["rh"], gh=ch["gh"], n_counted=torch.full((n,), 8), mean_support=torch.full((n,), 4.0),
                          loss=torch.full((n,), 2.0), hs=ch["hs"] if config.hidden_channel else None)


def append(index: RiseIndex, feats: SampleFeatures, start: int, prefix: str = "s") -> None:
    n = len(feats.rh)
    samples = [Sample(text=f"synthetic {i}", id=f"{prefix}{i}", label=i % 2, meta={"topic": TOPICS[i % 4]})
               for i in range(start, start + n)]
    index.add_samples(samples, FeatureMatrix.from_features(feats, dtype=torch.float16), feats.n_counted.tolist(),
                      feats.mean_support.tolist(), feats.loss.tolist(), [9] * n, [False] * n)


def make_index(path: Path, n: int = N, seed: int = 0, config: RiseConfig = CFG) -> Path:
    index = RiseIndex._create_raw(path, config, "synthetic", "synthetic", {"vocab_size": 64, "hidden_size": HIDDEN},
                                  SketchSet.for_config(64, HIDDEN, config))
    index.set_hidden_mean(torch.zeros(HIDDEN))
    append(index, clustered(n, seed, config), 0)
    index.set_status("complete")
    index.close()
    return path


def query(seed: int = 99) -> FeatureMatrix:
    return FeatureMatrix.from_features(clustered(1, seed), dtype=torch.float32)


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> Path:
    pytest.importorskip("faiss")
    path = make_index(tmp_path_factory.mktemp("ann") / "pool.duckdb")
    with RiseIndex.open(path) as index:
        meta = ann.build_ann(index, nlist=NLIST, threads=1)
    assert (meta.n_rows, meta.nlist, meta.nprobe, meta.dims) == (N, NLIST, 8, {"rh": 16, "gh": 24, "hs": HIDDEN})
    return path


def col_(df, name: str) -> torch.Tensor:
    """A float score column as float32 (pandas widens the scores to float64)."""
    return torch.tensor(df[name].to_numpy()).float()


def exact_top(index: RiseIndex, q: FeatureMatrix, options: ScoreOptions, k: int, where: str | None = None
              ) -> tuple[list[int], torch.Tensor]:
    scores = score_pool(index.feature_matrix(), q, options).total
    if where:
        scores = torch.where(index.row_mask(where), scores, torch.tensor(float("-inf")))
    top = torch.topk(scores, k)
    return top.indices.tolist(), top.values


def test_ann_top_k_equals_exact_top_k(pool):
    options = ScoreOptions()
    with RiseIndex.open(pool) as index:
        handle = ann.load_ann(index)
        for seed in range(5):
            q = query(seed)
            want, values = exact_top(index, q, options, 10)
            for nprobe in (NLIST // 2, NLIST):  # half the cells of a clustered pool, and all of them
                rows, scores, info = ann.top_rows(handle, q, options, 10, nprobe=nprobe)
                assert info["path"] == "ann" and info["nprobe"] == nprobe
                assert rows.tolist() == want
                torch.testing.assert_close(scores.total, values, rtol=1e-6, atol=1e-6)
        # one cell of sixteen cannot hold every hit of every query: recall is approximate, not exact by accident
        recalls = [len(set(ann.top_rows(handle, query(s), options, 10, nprobe=1)[0].tolist())
                       & set(exact_top(index, query(s), options, 10)[0])) for s in range(5)]
        assert min(recalls) < 10


def test_a_contrast_is_one_query_vector_for_the_ann_index(pool):
    """A contrastive query (A versus B) is the inner-product query q(A) - q(B): scanning every cell, the ANN's top k is
    the exact top k of score(A) - score(B), with those scores; `top` notes the contrast on the ANN path too."""
    options = ScoreOptions(weighting="fixed")
    with RiseIndex.open(pool) as index:
        handle = ann.load_ann(index)
        fm = index.feature_matrix()
        for a, b in ((1, 2), (3, 4)):
            contrast = ContrastFeatures.of(query(a), query(b))
            want = score_pool(fm, query(a), options).total - score_pool(fm, query(b), options).total
            top = torch.topk(want, 10)
            rows, scores, _ = ann.top_rows(handle, contrast, options, 10, nprobe=NLIST)
            assert rows.tolist() == top.indices.tolist()
            torch.testing.assert_close(scores.total, top.values, rtol=1e-5, atol=1e-5)  # float32 summation order
        ranking = attribution.top(index, contrast, options, k=10, search="ann")
        assert ranking.search["path"] == "ann" and ranking.contrast in ranking.notes


def test_returned_scores_are_exact_and_rank_says_which_path_ran(pool):
    options = ScoreOptions(lambda_rh=0.7, lambda_gh=1.0, lambda_hs=0.3)
    q = query()
    with RiseIndex.open(pool) as index:
        fast = rank(index, q, options, k=12, search="ann")
        slow = rank(index, q, options, k=12, search="exact")
        dense = score_pool(index.feature_matrix(), q, options)
        rows = [index.row_of(i) for i in fast["id"]]
    assert fast.attrs["search"]["path"] == "ann" and slow.attrs["search"]["path"] == "exact"
    assert fast.attrs["search"]["n_candidates"] >= 12 and fast.attrs["search"]["n_rows"] == N
    assert fast["id"].tolist() == slow["id"].tolist()
    for c, col in (("total", "score"), ("rh", "rh"), ("gh", "gh"), ("hs", "hs")):
        torch.testing.assert_close(col_(fast, col), getattr(dense, c)[rows], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(col_(fast, col), col_(slow, col),
                                   rtol=1e-6, atol=1e-7)
    assert list(fast.columns) == list(slow.columns)
    assert "approximate search over 400 rows" in ann.search_summary(fast.attrs["search"])


@pytest.mark.parametrize("lambdas", [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.2, -0.5, 1.5)])
def test_lambdas_chosen_at_query_time_are_honoured(pool, lambdas):
    options = ScoreOptions(lambda_rh=lambdas[0], lambda_gh=lambdas[1], lambda_hs=lambdas[2])
    q = query(7)
    with RiseIndex.open(pool) as index:
        want, values = exact_top(index, q, options, 8)
        df = rank(index, q, options, k=8, search="ann")
        assert df.attrs["search"]["path"] == "ann"
        assert [index.row_of(i) for i in df["id"]] == want
        torch.testing.assert_close(col_(df, "score"), values, rtol=1e-6, atol=1e-7)
        for c, lam in zip(("rh", "gh", "hs"), lambdas, strict=True):
            assert lam != 0 or (df[c] == 0).all()


@pytest.mark.parametrize("mode", ["joint", "none"])
def test_joint_and_none_normalisation_fall_back_to_exact(pool, mode):
    options = ScoreOptions(sample_norm=mode, lambda_hs=0.5)
    q = query(3)
    with RiseIndex.open(pool) as index:
        df = rank(index, q, options, k=10, search="ann")
        want, values = exact_top(index, q, options, 10)
        assert [index.row_of(i) for i in df["id"]] == want
    info = df.attrs["search"]
    assert info["path"] == "exact" and f"sample_norm={mode!r}" in info["reason"] and info["n_rows"] == N
    assert ann.search_summary(info).startswith("exact scan of 400 rows (sample_norm=")
    torch.testing.assert_close(col_(df, "score"), values, rtol=1e-6, atol=1e-7)


def test_where_filter_inside_the_scan_and_exact_when_selective(pool, monkeypatch):
    options = ScoreOptions()
    q = query(5)
    with RiseIndex.open(pool) as index:
        ann.set_nprobe(index, NLIST)
        try:
            # a filter keeping half the rows, searched with the IDSelector (the exact shortcut switched off)
            monkeypatch.setattr(ann.search, "FILTER_EXACT_FACTOR", 0.0)
            df = rank(index, q, options, k=10, where="label = 1", search="ann")
            want, values = exact_top(index, q, options, 10, where="label = 1")
            assert df.attrs["search"]["path"] == "ann" and df.attrs["search"]["n_allowed"] == N // 2
            assert [index.row_of(i) for i in df["id"]] == want and (df["label"] == 1).all()
            torch.testing.assert_close(col_(df, "score"), values, rtol=1e-6, atol=1e-7)
            # a selective filter: its few rows are scored exactly
            monkeypatch.setattr(ann.search, "FILTER_EXACT_FACTOR", 2.0)
            where = "topic = 't1' AND row < 60"
            df = rank(index, q, options, k=5, where=where, search="ann")
            want, values = exact_top(index, q, options, 5, where=where)
            info = df.attrs["search"]
            assert info["path"] == "exact"
            assert "the filter keeps 15 of 400 rows: all of them are scored" in info["reason"]
            assert [index.row_of(i) for i in df["id"]] == want
            torch.testing.assert_close(col_(df, "score"), values, rtol=1e-6, atol=1e-7)
            assert rank(index, q, options, k=5, where="FALSE", search="ann").empty
        finally:
            ann.set_nprobe(index, NLIST // 2)


def test_appended_rows_are_found_then_added(tmp_path):
    pytest.importorskip("faiss")
    path = make_index(tmp_path / "grow.duckdb", n=200, seed=1)
    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=8, nprobe=8)
    q = query(11)
    one = clustered(1, 11)  # the query's own features (same seed): three copies are the best hits of all
    near = SampleFeatures(**{f: torch.cat([getattr(one, f)] * 3) for f in
                             ("rh", "gh", "n_counted", "mean_support", "loss", "hs")})
    with RiseIndex.open(path, read_only=False) as writer:
        append(writer, near, 200, prefix="new")
    options = ScoreOptions()
    with RiseIndex.open(path) as index:
        assert ann.ann_status(index).n_tail == 3
        df = rank(index, q, options, k=5, search="ann")
        info = df.attrs["search"]
        assert info["path"] == "ann" and info["n_tail"] == 3 and info["n_rows"] == 203
        assert set(df["id"].iloc[:3]) == {"new200", "new201", "new202"}
        want, values = exact_top(index, q, options, 5)
        assert sorted(index.row_of(i) for i in df["id"]) == sorted(want)
        torch.testing.assert_close(col_(df, "score"), values, rtol=1e-6, atol=1e-7)
        meta, added = ann.update_ann(index)
        assert (added, meta.n_rows, ann.ann_status(index).n_tail) == (3, 203, 0)
        again = rank(index, q, options, k=5, search="ann")
        # the same hits (the three tied copies in any order) and scores
        assert again.attrs["search"]["n_tail"] == 0 and set(again["id"]) == set(df["id"])
        torch.testing.assert_close(col_(again, "score"), values, rtol=1e-6, atol=1e-7)
        assert ann.update_ann(index)[1] == 0


def test_foreign_stale_or_damaged_ann_files_are_refused(pool, tmp_path, monkeypatch):
    other = make_index(tmp_path / "other.duckdb", n=N, seed=0)  # the same rows, but another index
    for src, dst in zip(ann.ann_paths(pool), ann.ann_paths(other), strict=True):
        shutil.copy(src, dst)
    q = query()
    with RiseIndex.open(other) as index:
        status = ann.ann_status(index)
        assert status.state == "invalid" and "built for another index" in status.reason
        with pytest.raises(IndexMismatchError, match="built for another index"):
            rank(index, q, k=3, search="ann")
        monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)
        df = rank(index, q, k=3)  # auto: ignored, with the reason
        assert df.attrs["search"]["path"] == "exact" and "another index" in df.attrs["search"]["reason"]

        # its own ANN, then a faiss file that does not match the sidecar, then no faiss file
        ann.build_ann(index, nlist=8)
        assert rank(index, q, k=3).attrs["search"]["path"] == "ann"
        faiss_path, meta_path = ann.ann_paths(other)
        with open(faiss_path, "ab") as fh:
            fh.write(b"\0")
        with pytest.raises(IndexStoreError, match="does not match its sidecar"):
            rank(index, q, k=3, search="ann")
        faiss_path.unlink()
        with pytest.raises(IndexStoreError, match="is missing"):
            rank(index, q, k=3, search="ann")
        meta_path.unlink()
        with pytest.raises(IndexStoreError, match="no ANN index"):
            rank(index, q, k=3, search="ann")
        assert rank(index, q, k=3).attrs["search"]["reason"] == "no ANN index"
    with RiseIndex.open(pool) as index:
        monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", N + 1)
        assert rank(index, q, k=3).attrs["search"]["path"] == "exact"  # auto: too small a pool
        monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", N)
        assert rank(index, q, k=3).attrs["search"]["path"] == "ann"
        assert rank(index, q, k=3, search="exact").attrs["search"]["path"] == "exact"
        both = rank_each(index, FeatureMatrix.concat([q, query(4)]), k=3, search="ann")
        assert both.attrs["search"]["path"] == "ann" and both["query"].tolist() == [1, 1, 1, 2, 2, 2]
        with pytest.raises(Exception, match="unknown search 'fast'; choose one of auto, exact, ann"):
            rank(index, q, k=3, search="fast")


def test_missing_faiss_names_the_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "faiss", None)  # `import faiss` raises ImportError
    with pytest.raises(ConfigError, match="pip install faiss-cpu"):
        ann.import_faiss()
    path = make_index(tmp_path / "nofaiss.duckdb", n=40, seed=3)
    with RiseIndex.open(path) as index:
        with pytest.raises(ConfigError, match=r"needs faiss, which is not installed: pip install faiss-cpu"):
            ann.build_ann(index)
        assert rank(index, query(), k=3).attrs["search"]["reason"] == "no ANN index"  # no faiss needed without one
    assert main(["index-ann", "--index", str(path), "--quiet"]) == 1
    assert "pip install faiss-cpu" in capsys.readouterr().err


def test_missing_faiss_with_an_ann_index_falls_back_or_refuses(pool, monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    monkeypatch.setattr(ann.rank, "_LOADED", BoundedMemo(4))  # nothing opened before
    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)
    with RiseIndex.open(pool) as index:
        with pytest.raises(ConfigError, match="pip install faiss-cpu"):
            rank(index, query(), k=3, search="ann")
        df = rank(index, query(), k=3)  # auto: the exact scan, saying why
    assert df.attrs["search"]["path"] == "exact" and "pip install faiss-cpu" in df.attrs["search"]["reason"]


def test_cli_index_ann(tmp_path, capsys):
    pytest.importorskip("faiss")
    path = make_index(tmp_path / "cli.duckdb", n=120, seed=2)
    assert main(["index-ann", "--index", str(path), "--status"]) == 0
    assert "absent: no ANN index" in capsys.readouterr().out
    assert main(["index-ann", "--index", str(path), "--nlist", "8", "--nprobe", "4", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "built IVF8,SQfp16 over 120 rows" in out and "queries scan 4 cells" in out
    assert main(["index-ann", "--index", str(path), "--status"]) == 0
    assert "valid: ANN index over 120 rows (IVF8,SQfp16, nprobe 4)" in capsys.readouterr().out
    assert main(["index-ann", "--index", str(path), "--set-nprobe", "6"]) == 0
    assert "scan 6 of 8 cells" in capsys.readouterr().out
    assert main(["index-ann", "--index", str(path), "--update", "--quiet"]) == 0
    assert "already up to date" in capsys.readouterr().out
    assert main(["index-ann", "--index", str(path), "--set-nprobe", "9"]) == 1
    assert "nprobe must be between 1 and nlist (8), got 9" in capsys.readouterr().err
    assert main(["index-ann", "--index", str(path), "--nlist", "500", "--quiet"]) == 1
    assert "--nlist must be between 1 and the number of samples (120), got 500" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index-ann", "--index", str(path), "--status", "--nlist", "4"])


def test_cli_info_shows_the_ann_status(tmp_path, capsys):
    pytest.importorskip("faiss")
    path = make_index(tmp_path / "info.duckdb", n=120, seed=2)

    def info() -> tuple[str, dict]:
        assert main(["info", "--index", str(path)]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ANN index"))
        assert main(["info", "--index", str(path), "--json"]) == 0
        return line, json.loads(capsys.readouterr().out)["ann"]

    line, js = info()
    assert line.split(None, 2)[2] == f"none (`rise index-ann --index {path}` builds one; queries scan every row)"
    assert (js["state"], js["n_index_rows"], js["n_covered"], js["meta"]) == ("absent", 120, 0, None)

    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=8, nprobe=4)
    faiss_path, _ = ann.ann_paths(path)
    size = faiss_path.stat().st_size
    line, js = info()
    assert line.split(None, 2)[2] == (f"IVF8,SQfp16 over 120 of 120 rows (up to date), nprobe 4 of 8 cells, "
                                      f"{format_bytes(size)}; queries use it from 50,000 rows "
                                      "(`rank(..., search='ann')` forces it)")
    assert (js["state"], js["n_covered"], js["n_tail"]) == ("valid", 120, 0)
    assert (js["meta"]["nprobe"], js["meta"]["nlist"], js["meta"]["faiss_bytes"]) == (4, 8, size)

    with RiseIndex.open(path, read_only=False) as writer:  # 5 rows appended since the ANN build: stale
        append(writer, clustered(5, 7), 120, prefix="new")
    line, js = info()
    assert "over 120 of 125 rows (stale: the 5 appended since are scored exactly; " in line
    assert f"`rise index-ann --index {path} --update` adds them)" in line
    assert (js["state"], js["n_index_rows"], js["n_covered"], js["n_tail"]) == ("valid", 125, 120, 5)

    with open(faiss_path, "ab") as fh:  # a faiss file that does not match its sidecar
        fh.write(b"\0")
    line, js = info()
    assert "unusable, queries scan every row: " in line and "does not match its sidecar" in line
    assert js["state"] == "invalid" and "does not match its sidecar" in js["reason"]


def test_cli_query_says_which_search_ran(pool, monkeypatch, capsys):
    import rise_core.attribution
    import rise_core.cli.query

    monkeypatch.setattr(rise_core.cli.query, "_open_for_query",  # the synthetic index has no model
                        lambda args: (RiseIndex.open(args.index, read_only=True), None))
    monkeypatch.setattr(rise_core.attribution, "query_features", lambda index, lm, queries, **kw: query())
    argv = ["query", "--index", str(pool), "--text", "anything", "-k", "3"]

    assert main(argv) == 0  # 400 rows: below ANN_MIN_ROWS, so the exact scan
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1 + 3  # stdout: the table alone (header, 3 hits)
    assert captured.err.strip().splitlines()[-1] == (
        "search: exact scan of 400 rows (the ANN index is used from 50,000 rows)")

    assert main([*argv, "--search", "ann"]) == 0  # forced: the ANN index whatever the pool size
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("search: approximate search over 400 rows")

    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", N)
    assert main([*argv, "--search", "exact"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("search: exact scan of 400 rows")
    assert main(argv) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "search: approximate search over 400 rows (IVF16,SQfp16, nprobe 8), exact rescoring of 19 candidates")

    monkeypatch.setattr(ann.search, "FILTER_EXACT_FACTOR", 0.0)  # a filter searched in the ANN scan, not all cells
    assert main([*argv, "--where", "label = 1", "--format", "json"]) == 0  # JSON stays parseable
    captured = capsys.readouterr()
    assert [r["label"] for r in json.loads(captured.out)] == [1, 1, 1]
    assert captured.err.strip().splitlines()[-1].startswith("search: approximate search over 400 rows (")
    assert captured.err.strip().endswith("; 200 rows match the filter")

    monkeypatch.setattr(ann.search, "FILTER_EXACT_FACTOR", 2.0)
    assert main([*argv, "--where", "row < 10", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 1 + 3
    assert captured.err.strip().splitlines()[-1] == (
        "search: exact scan of 400 rows (the filter keeps 10 of 400 rows: all of them are scored)")


HS_SHARE = 1.0 / 3.4  # HS's share of the default weights (1.4, 1.0, 1.0)


@pytest.mark.parametrize(("lambdas", "factor", "why"), [
    ((1.4, 1.0, 1.0), 1.0, ""),  # the default weights: the default cells
    ((2.8, 2.0, 2.0), 1.0, ""),  # scaled alike: the same
    ((0.0, 1.0, 0.5), 1.0, ""),  # more on HS than the default (RH left out): the cells follow HS, no more needed
    ((0.0, 0.0, 1.0), 1.0, ""),
    ((1.4, 1.0, 0.5), HS_SHARE / (0.5 / 2.9), "HS has 0.59 of its default share of the weights"),
    ((1.4, 1.0, 0.0), 8.0, "the weights leave out HS"),  # the backdoor preset
    ((0.0, 1.0, 0.0), 8.0, "the weights leave out HS"),
    ((1.4, 1.0, 0.05), 8.0, "HS has 0.069 of its default share of the weights"),  # 14x, capped
])
def test_probe_factor_follows_the_share_of_hs(lambdas, factor, why):
    options = ScoreOptions(lambda_rh=lambdas[0], lambda_gh=lambdas[1], lambda_hs=lambdas[2])
    got, note = ann.probe_factor(options, {"rh": 16, "gh": 24, "hs": HIDDEN})
    assert got == pytest.approx(factor) and note == (f"{got:.2g}x the cells: {why}" if why else "")
    # an index without HS: the cells follow RH and GH, whatever their weights
    assert ann.probe_factor(ScoreOptions(lambda_rh=0.0), {"rh": 16, "gh": 24}) == (1.0, "")


def test_weights_leaning_away_from_a_channel_scan_more_cells(tmp_path):
    """A query that weighs HS 0 (the backdoor preset) scans MAX_PROBE_FACTOR times the default cells, and says so;
    the default weights scan the default cells. An explicit nprobe is used as given."""
    pytest.importorskip("faiss")
    path = make_index(tmp_path / "wide.duckdb", n=600, seed=8)
    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=64, nprobe=2, threads=1)
        q = query(6)
        handle = ann.load_ann(index)
        _, _, plain = ann.top_rows(handle, q, ScoreOptions.preset("default"), 5)
        _, _, backdoor = ann.top_rows(handle, q, ScoreOptions.preset("backdoor"), 5)
        _, _, given = ann.top_rows(handle, q, ScoreOptions.preset("backdoor"), 5, nprobe=3)
    assert (plain["nprobe"], plain["probes_note"]) == (2, "")
    assert (backdoor["nprobe"], backdoor["probes_note"]) == (16, "8x the cells: the weights leave out HS")
    assert ann.search_summary(backdoor).startswith(
        "approximate search over 600 rows (IVF64,SQfp16, nprobe 16: 8x the cells: the weights leave out HS), exact "
        "rescoring of ")
    assert (given["nprobe"], given["probes_note"]) == (3, "")


def test_the_span_lift_reads_a_widening_ann_head(pool, monkeypatch):
    """When the behaviour test fires on the ANN path, the rows holding its span are lifted (rise_core.span_lift) over
    the ANN's own head, widened past the lift: on this clustered pool, where half the cells find the exact top 10,
    the lifted top 10 is the exact lifted top 10."""
    from rise_core import adaptive, attribution

    found = adaptive.BehaviourEvidence("3", "text", 5, 10, 0.05, 1e-4, 0)  # rows "synthetic 3", "synthetic 13"...
    patch_finding(monkeypatch, lambda spans, g, r, query=None: found)
    auto = ScoreOptions.preset("default")
    with RiseIndex.open(pool) as index:
        texts = index.rows_frame(list(range(N)))["text"]
        held = torch.tensor(texts.str.fullmatch(r"synthetic 3").to_numpy())
        assert int(held.sum()) == 1
        moved = 0
        for seed in range(3):
            q = query(seed)
            got = attribution.top(index, q, auto, k=10, search="ann")
            assert got.search["path"] == "ann" and got.search["lift_rows_read"] >= 40
            plain = score_pool(index.feature_matrix(), q, adaptive.gradient_view(auto)).total
            lift = adaptive.SPAN_LIFT * float(plain.double().std(unbiased=False))
            dense = plain + held.float() * lift
            assert got.rows.tolist() == torch.topk(dense, 10).indices.tolist()
            torch.testing.assert_close(got.scores, dense[got.rows], rtol=1e-5, atol=1e-5)  # float32 products
            moved += got.rows.tolist() != torch.topk(plain, 10).indices.tolist()
        assert moved  # the lift changed some query's top 10


def grown_pool(path: Path, seed: int, n_new: int) -> Path:
    """A 300-row index with its ANN index, then `n_new` rows appended (the tail the ANN index does not cover)."""
    pytest.importorskip("faiss")
    make_index(path, n=300, seed=seed)
    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=8, nprobe=4)
    with RiseIndex.open(path, read_only=False) as writer:
        append(writer, clustered(n_new, seed + 1), 300, prefix="new")
    return path


def forbid_matrix(monkeypatch, index: RiseIndex) -> None:
    """Make `index.feature_matrix()` fail: what runs after must not load every row's features."""
    def no_matrix():
        raise AssertionError("the pool's feature matrix was loaded")
    monkeypatch.setattr(index, "feature_matrix", no_matrix)


def test_the_ann_path_scores_sampled_rows_without_the_pools_matrix(tmp_path, monkeypatch):
    """`ann.score_pool_rows`, the spread's rows on the ANN path: the exact scores of any rows, covered ones from the
    ANN file's lossless codes and appended ones from their features, equal to the exact scan's (float32 products of
    the same float16 rows, summed in another order: 1e-6). A lifted ANN query then never loads the pool's feature
    matrix, and lifts by the spread of the rows `span_lift.spread_rows` samples."""
    from rise_core import adaptive, span_lift

    path = grown_pool(tmp_path / "grow.duckdb", 3, 20)  # 20 rows appended since the ANN build: the tail
    q, options = query(12), ScoreOptions(lambda_rh=1.4, lambda_gh=1.0, lambda_hs=0.5)
    rows = span_lift.spread_rows(320, 40)  # 40 evenly spaced rows, the last ones in the tail
    assert len(rows) == 40 and int(rows[-1]) == 319 and int((rows >= 300).sum()) >= 2
    with RiseIndex.open(path) as index:
        dense = score_pool(index.feature_matrix(), q, options)
        handle = ann.load_ann(index)
        for order in (rows, rows.flip(0)):
            got = ann.score_pool_rows(index, handle, q, options, order)
            for part in ("total", "rh", "gh", "hs"):
                torch.testing.assert_close(getattr(got, part), getattr(dense, part)[order], rtol=1e-6, atol=1e-6)

    found = adaptive.BehaviourEvidence("3", "text", 5, 10, 0.05, 1e-4, 0)
    patch_finding(monkeypatch, lambda spans, g, r, query=None: found)
    with RiseIndex.open(path) as index:
        forbid_matrix(monkeypatch, index)
        got = attribution.top(index, q, ScoreOptions.preset("default"), k=10, search="ann")
        assert got.search["path"] == "ann" and "span" in got.parts
        view = got.weighting.options  # the fixed weights the query was scored with
        spread = float(dense_scores(path, q, view)[span_lift.spread_rows(320)].double().std(unbiased=False))
        assert got.search["lift_amount"] == pytest.approx(adaptive.SPAN_LIFT * spread, rel=1e-5)


def dense_scores(path: Path, q: FeatureMatrix, options: ScoreOptions) -> torch.Tensor:
    with RiseIndex.open(path) as index:
        return score_pool(index.feature_matrix(), q, options).total


def test_a_valuation_of_a_large_pool_scores_every_row_from_the_ann_codes(tmp_path, monkeypatch):
    """On a pool a query would rank through the ANN index, a valuation (Select data, `rise select`) scores every row
    from the ANN file's codes, a block at a time, without loading the feature matrix: the same selection and scores
    as the matrix's (float32 products of the same float16 rows: 1e-6), filtered or not, contrasted or not, rows
    appended since the ANN build included."""
    from rise_core.attribution import valuation

    path = grown_pool(tmp_path / "big.duckdb", 5, 10)
    q, options = query(13), ScoreOptions(lambda_rh=1.4, lambda_gh=1.0, lambda_hs=1.0)
    contrast = ContrastFeatures.of(q, query(14))
    want = {}
    with RiseIndex.open(path) as index:  # small pool: the matrix
        for where in (None, "topic = 't1'", "contrast"):
            if where == "contrast":
                want[where] = valuation(index, contrast, options, fraction=0.5)
            else:
                want[where] = valuation(index, q, options, fraction=0.5, where=where)
            assert index.features_loaded
    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)  # as a large pool: the ANN path
    with RiseIndex.open(path) as index:
        forbid_matrix(monkeypatch, index)
        for where, expected in want.items():
            got = (valuation(index, contrast, options, fraction=0.5) if where == "contrast" else
                   valuation(index, q, options, fraction=0.5, where=where))
            assert got.rows.tolist() == expected.rows.tolist() and len(got) == (155 if where != "topic = 't1'"
                                                                                 else len(expected))
            torch.testing.assert_close(got.scores, expected.scores, rtol=1e-6, atol=1e-6)
            for part in ("rh", "gh", "hs"):
                torch.testing.assert_close(got.parts[part], expected.parts[part], rtol=1e-6, atol=1e-6)
        assert not index.features_loaded


def test_feedback_on_a_large_pool_streams_the_ann_codes(tmp_path, monkeypatch):
    """Relevance feedback on a pool a query ranks through the ANN index, with the feature matrix not loaded: the
    query's and the marked rows' products with every row come from one pass over the ANN file's codes
    (`ann.pool_channel_products`), and the ranking, its scores, parts and feedback weights equal the matrix path's
    (float32 products of the same float16 rows, summed in another order: 1e-5 after standardising), with a filter,
    rows appended since the ANN build, three misses with the turn on (the marks turn to the other view), and pseudo
    rows (their products in one more pass)."""
    path = grown_pool(tmp_path / "fb.duckdb", 7, 12)
    q = query(15)
    marks = {"s3": True, "new305": True, "s40": False}
    misses = {"s3": False, "new305": False, "s40": False}  # all "not this": with the turn on, it turns
    turn = FeedbackConfig(turn_after=3)
    cases = [(ScoreOptions(lambda_rh=1.4, lambda_gh=1.0, lambda_hs=0.5), None, marks, None),
             (ScoreOptions.preset("default"), "topic = 't2'", marks, None),
             (ScoreOptions.preset("default"), None, misses, turn),
             (ScoreOptions.preset("default"), None, marks, FeedbackConfig(pseudo_rows=3))]
    want = []
    with RiseIndex.open(path) as index:
        for options, where, marked, config in cases:
            want.append(attribution.top_with_feedback(index, q, marked, options, k=8, where=where, config=config))
    assert [w.feedback["turned"] for w in want] == [False, False, True, False]
    assert [len(w.feedback["pseudo_rows"]) for w in want] == [0, 0, 0, 3] and "pseudo" in want[3].parts
    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)
    with RiseIndex.open(path) as index:
        forbid_matrix(monkeypatch, index)
        for (options, where, marked, config), expected in zip(cases, want, strict=True):
            got = attribution.top_with_feedback(index, q, marked, options, k=8, where=where, config=config)
            assert got.feedback["turned"] == expected.feedback["turned"]
            assert got.feedback["pseudo_rows"] == expected.feedback["pseudo_rows"]
            assert got.rows.tolist() == expected.rows.tolist()
            torch.testing.assert_close(got.scores, expected.scores, rtol=1e-5, atol=1e-5)
            assert got.parts.keys() == expected.parts.keys()
            for part in got.parts:
                torch.testing.assert_close(got.parts[part], expected.parts[part], rtol=1e-5, atol=1e-5)
            assert got.feedback["weights"] == pytest.approx(expected.feedback["weights"], rel=1e-5)
            assert got.marks == expected.marks
        assert not index.features_loaded


@pytest.mark.parametrize("lifted", [False, True], ids=["plain", "lifted"])
def test_compare_on_a_large_pool_never_loads_the_feature_matrix(tmp_path, monkeypatch, lifted):
    """The Compare page's RISE, RISE fixed weights and hidden cosine on a pool a query ranks through the ANN index
    (its feature matrix not loaded) read the pool a block at a time: RISE as a valuation does (every row from the ANN
    file's codes, the weights chosen for the query, the span lift where its test lifts), hidden cosine a slice of the
    file at a time. The scores equal the feature matrix's (float32 products of the same float16 rows, summed in
    another order: 1e-6), for the query and for a contrast with another answer, rows appended since the ANN build
    included; the matrix is never loaded."""
    from rise_core import adaptive
    from rise_core.methods import HIDDEN_COSINE, RISE, RISE_FIXED, compare_methods

    if lifted:  # the behaviour test fires: the rows holding its span ("synthetic 3", "synthetic 13", ...) are lifted
        found = adaptive.BehaviourEvidence("3", "text", 5, 10, 0.05, 1e-4, 0)
        patch_finding(monkeypatch, lambda spans, g, r, query=None: found)
    path = grown_pool(tmp_path / "cmp.duckdb", 7, 12)
    q, other = query(15), query(16)
    methods, options = [RISE, RISE_FIXED, HIDDEN_COSINE], ScoreOptions.preset("default")
    asks = {"query": (q, None), "contrast": (ContrastFeatures.of(q, other), [Sample(text="the other answer")])}

    def compared(index: RiseIndex) -> dict:
        return {ask: compare_methods(index, [Sample(text="the query")], fm, options, methods=methods, versus=versus)
                for ask, (fm, versus) in asks.items()}

    with RiseIndex.open(path) as index:  # a small pool: the feature matrix
        want = compared(index)
        assert index.features_loaded
    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)  # as a large pool: read a block at a time
    with RiseIndex.open(path) as index:
        forbid_matrix(monkeypatch, index)
        got = compared(index)
        assert not index.features_loaded
    for ask in asks:
        for m in methods:
            assert got[ask][m].available, got[ask][m].missing
            np.testing.assert_allclose(got[ask][m].scores, want[ask][m].scores, rtol=1e-6, atol=1e-6)
    rise = want["query"][RISE].scores[0]
    assert not np.allclose(rise, want["query"][RISE_FIXED].scores[0]) or not lifted  # the lift moved RISE's scores


def test_compare_decodes_the_codes_once_for_rise_and_its_fixed_weights(tmp_path, monkeypatch):
    """On a pool read a block at a time, Compare's RISE and RISE with fixed weights score the same query vectors
    under other lambdas: one pass over the ANN file's codes serves both (it made one each: 1.6 s a method at 100k
    rows), and each method's scores are bit for bit those it gets alone."""
    from rise_core.methods import RISE, RISE_FIXED, compare_methods

    path = grown_pool(tmp_path / "once.duckdb", 7, 12)
    monkeypatch.setattr(ann.rank, "ANN_MIN_ROWS", 0)
    options, fm, queries = ScoreOptions.preset("default"), query(15), [Sample(text="the query")]
    passes = []
    decode = ann.AnnIndex.channel_matvecs

    def counted(handle, rows, vectors):
        if len(rows) == handle.meta.n_rows:  # a pass over every covered row (the behaviour test reads a few)
            passes.append(sorted(vectors))
        return decode(handle, rows, vectors)

    monkeypatch.setattr(ann.AnnIndex, "channel_matvecs", counted)
    with RiseIndex.open(path) as index:
        forbid_matrix(monkeypatch, index)
        alone = {m: compare_methods(index, queries, fm, options, methods=[m])[m].scores for m in (RISE, RISE_FIXED)}
        assert len(passes) == 2
        both = compare_methods(index, queries, fm, options, methods=[RISE, RISE_FIXED])
    assert passes[2:] == [["gh", "hs", "rh"]], "one pass for both methods"
    for m in (RISE, RISE_FIXED):
        np.testing.assert_array_equal(both[m].scores, alone[m])


def test_load_hidden_reads_the_hs_columns_alone(tmp_path):
    """`RiseIndex.load_hidden`, what streamed hidden cosine reads: the HS channel and its norms of any row range, equal
    to the feature matrix's (the same stored float16 and float32 values, bit for bit); an index without HS says so."""
    path = make_index(tmp_path / "hs.duckdb", n=50, seed=4)
    with RiseIndex.open(path) as index:
        hs, hs_norm = index.load_hidden(7, 31)
        fm = index.feature_matrix()
        assert torch.equal(hs, fm.hs[7:31]) and torch.equal(hs_norm, fm.hs_norm[7:31])
        assert index.load_hidden(5, 5)[0].shape == (0, HIDDEN)
    plain = make_index(tmp_path / "plain.duckdb", n=10, config=dataclasses.replace(CFG, hidden_channel=False))
    with RiseIndex.open(plain) as index, pytest.raises(IndexMismatchError, match="no HS channel"):
        index.load_hidden(0, 5)


def test_one_column_of_the_pool_is_read_alone(tmp_path):
    """`RiseIndex.column`, what Compare reads of a large pool instead of every text: one column of the samples view in
    row order, the same values as `samples()`'s; a name that is not one of its columns (an SQL fragment included) is
    refused before any query."""
    path = make_index(tmp_path / "col.duckdb", n=30, seed=6)
    with RiseIndex.open(path) as index:
        whole = index.samples()
        for name in ("id", "label", "topic", "text", "n_counted"):
            assert index.column(name).equals(whole[name]), name
        for bad in ("nope", "row", 'id" FROM samples; DROP TABLE samples; --', "id, text"):
            with pytest.raises(InputDataError, match="no column"):
                index.column(bad)
        assert len(index.samples()) == 30

