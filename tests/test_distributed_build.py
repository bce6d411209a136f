"""The sharded build on Ray: the same index as the one-process build, a worker killed mid-shard retried, a stopped
coordinator resumed by `rise build --workers 2` without duplicates, a clear error without Ray.

One local Ray (2 CPUs) serves the module; workers load the conftest tiny model from a checkpoint directory. The mean
is fitted on 16 samples here (HIDDEN_MEAN_SAMPLES, patched in this process, where both builds choose the subset), so
a 100-sample pool exercises both the fit on one worker and several shards.

Tolerances: the workers and this process run the same batches of the same float64 model, so features agree to
float64 rounding (bit for bit in practice). They are stored as float16 unit vectors, where a float64-rounding
difference can at most flip one float16 rounding: one float16 ulp at 1.0 (2^-10), far below any real error (a wrong
mean, sketch or batch changes entries by ~1e-1). After a resume the remaining samples form other length-sorted
batches than an uninterrupted build, so padding differs; the model is padding-invariant to float64 rounding, hence
the same bound, compared by id.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
import torch
from conftest import FLOAT64_TOL
from index_helpers import pool_rows, save_tiny_model, write_jsonl

import rise_core.config
from rise_core.cli import main
from rise_core.config import RiseConfig
from rise_core.models import load_model
from rise_core.store import DistributedBuildError, RiseIndex, build_index, build_index_distributed
from rise_core.store.distributed import CRASH_FLAG_ENV

CFG = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=16, counted_positions="completion")  # centred, with the HS channel
MEAN_FIT = 16
BATCH = 2  # a window is 32 samples: the 84 samples after the fit make 3 shards of 32
FP16_ULP = 2.0**-10


def make_pool() -> list[dict]:
    """102 prompt/completion rows: some truncated to seq_len, a few (the 2 `late` ones among them) with their whole
    completion past seq_len (skipped)."""
    rows = []
    for r in pool_rows(100):
        words = r["text"].split()
        rows.append({"id": r["id"], "prompt": " ".join(words[:-3]), "completion": " ".join(words[-3:]),
                     "label": r["label"], "topic": r["topic"]})
    late = "the cat sat on the mat and the dog sat on the blanket and the moon ."
    for at in (37, 70):
        rows.insert(at, {"id": f"late{at}", "prompt": late, "completion": "sat .", "label": 0, "topic": "cats"})
    return rows


POOL = make_pool()


@pytest.fixture(scope="module", autouse=True)
def small_mean_fit():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rise_core.config, "HIDDEN_MEAN_SAMPLES", MEAN_FIT)
        yield


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray for the module; its workers see CRASH_FLAG_ENV (the file exists only in the crash test)."""
    ray = pytest.importorskip("ray")
    flag = tmp_path_factory.mktemp("crash") / "crash-once"
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {CRASH_FLAG_ENV: str(flag)}})
    try:
        yield ray, flag
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("model") / "tiny-llama")


@pytest.fixture(scope="module")
def reference(model_dir, tmp_path_factory):
    """The one-process build of POOL: its path, report, progress calls and phase calls."""
    path = tmp_path_factory.mktemp("ref") / "one.duckdb"
    calls: list[tuple[int, int]] = []
    phases: list[tuple[str, int, int]] = []
    lm = load_model(str(model_dir), dtype="float64")
    report = build_index(path, POOL, lm, CFG, batch_size=BATCH, progress=lambda d, t: calls.append((d, t)),
                         phase_progress=lambda p, d, t: phases.append((p, d, t)))
    assert report.n_skipped >= 2 and report.n_truncated > 0 and report.n_added == len(POOL) - report.n_skipped
    return path, report, calls, phases


def _phase_ends(calls: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Each phase in the order it started, with its last (done, total): what a progress bar shows at its end."""
    ends: dict[str, tuple[str, int, int]] = {}
    for phase, done, total in calls:
        ends[phase] = (phase, done, total)
    return list(ends.values())


def _features_by_id(index: RiseIndex) -> dict[str, list[torch.Tensor]]:
    fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
    return {i: [fm.rh[r].double(), fm.gh[r].double(), fm.hs[r].double(),
                torch.stack([fm.rh_norm[r], fm.gh_norm[r], fm.hs_norm[r]]).double()] for r, i in enumerate(ids)}


def _assert_same_index(path: Path, ref_path: Path, same_order: bool) -> None:
    """Same ids, samples, stats, manifest and mean; features within the module docstring's tolerance."""
    with RiseIndex.open(path) as got, RiseIndex.open(ref_path) as ref:
        a, b = got.manifest, ref.manifest
        assert (a.model_id, a.model_fingerprint, a.model_info, a.config, a.sketch_digest, a.seeds, a.status) == \
               (b.model_id, b.model_fingerprint, b.model_info, b.config, b.sketch_digest, b.seeds, "complete")
        assert a.has_hidden_mean and got.columns == ref.columns
        torch.testing.assert_close(got.hidden_mean, ref.hidden_mean, **FLOAT64_TOL)
        df_a, df_b = got.samples(), ref.samples()
        if same_order:
            assert df_a["id"].tolist() == df_b["id"].tolist()
        df_a, df_b = df_a.set_index("id").sort_index(), df_b.set_index("id").sort_index()
        assert df_a.index.tolist() == df_b.index.tolist()
        exact = ["text", "prompt", "completion", "label", "topic", "n_counted", "n_tokens", "truncated"]
        assert df_a[exact].equals(df_b[exact])
        for col in ("loss", "mean_support"):  # float32 columns
            torch.testing.assert_close(torch.tensor(df_a[col].tolist()), torch.tensor(df_b[col].tolist()),
                                       rtol=1e-6, atol=0)
        feats_a, feats_b = _features_by_id(got), _features_by_id(ref)
        for sid, parts in feats_b.items():
            for x, y in zip(feats_a[sid][:3], parts[:3], strict=True):
                assert (x - y).abs().max() <= FP16_ULP, sid
            torch.testing.assert_close(feats_a[sid][3], parts[3], rtol=1e-6, atol=0)  # float32 norms


def _count_ids(path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT count(*), count(DISTINCT id) FROM rise_samples").fetchone()
    finally:
        con.close()


def _wait_until_cpus_free(ray, n: int = 2, limit_s: float = 120.0) -> None:
    """The workers of a finished or killed build give their CPUs back (Ray frees them asynchronously)."""
    deadline = time.monotonic() + limit_s
    while ray.available_resources().get("CPU", 0) < n:
        assert time.monotonic() < deadline, f"workers still hold CPUs: {ray.available_resources()}"
        time.sleep(0.2)


def test_two_workers_build_the_same_index(ray_cluster, model_dir, reference, tmp_path):
    ray, _ = ray_cluster
    ref_path, ref_report, ref_calls, ref_phases = reference
    path = tmp_path / "sharded.duckdb"
    calls: list[tuple[int, int]] = []
    phases: list[tuple[str, int, int]] = []
    report = build_index_distributed(path, POOL, model_dir, CFG, workers=2, batch_size=BATCH, shard_size=32,
                                     dtype="float64", progress=lambda d, t: calls.append((d, t)),
                                     phase_progress=lambda p, d, t: phases.append((p, d, t)))
    assert (report.n_added, report.n_already_present, report.n_truncated, report.n_total, report.stopped) == \
           (ref_report.n_added, 0, ref_report.n_truncated, ref_report.n_total, False)
    assert report.skipped == ref_report.skipped
    assert calls == ref_calls  # one call per committed batch, the same counts, in the same order
    # the phases `rise build` names on its bar (the mean's fit, then the features) start in the same order and end
    # where the one-process build's end
    assert _phase_ends(phases) == _phase_ends(ref_phases) and len(_phase_ends(phases)) == 2
    _assert_same_index(path, ref_path, same_order=True)
    _wait_until_cpus_free(ray)


def test_worker_killed_mid_shard_is_retried(ray_cluster, model_dir, reference, tmp_path):
    ray, flag = ray_cluster
    flag.touch()  # the first worker to compute a shard's first batch deletes it and dies (os._exit)
    path = tmp_path / "crashed.duckdb"
    report = build_index_distributed(path, POOL, str(model_dir), CFG, workers=2, batch_size=BATCH, shard_size=32,
                                     dtype="float64", max_retries=2)
    assert not flag.exists(), "no worker died"
    assert report.n_added == reference[1].n_added and not report.stopped
    assert _count_ids(path) == (report.n_added, report.n_added)
    _assert_same_index(path, reference[0], same_order=True)
    _wait_until_cpus_free(ray)


def test_stopped_coordinator_resumes_without_duplicates(ray_cluster, model_dir, reference, tmp_path, capsys):
    ray, _ = ray_cluster
    ref_path = reference[0]
    pool = write_jsonl(tmp_path / "pool.jsonl", POOL)
    path = tmp_path / "resumed.duckdb"
    # 1. stopped after 10 committed batches (the mean fit's 8 and 2 of the first shard): whole batches are kept,
    # as when the coordinator is killed (the commit path is build_index's, whose SIGKILL resume test_index_store runs)
    calls: list[tuple[int, int]] = []
    report = build_index_distributed(path, pool, model_dir, CFG, workers=2, batch_size=BATCH, shard_size=32,
                                     dtype="float64", progress=lambda d, t: calls.append((d, t)),
                                     should_stop=lambda: len(calls) > 10)
    assert report.stopped and len(calls) == 11 and calls[0] == (0, len(POOL))
    with RiseIndex.open(path) as index, RiseIndex.open(ref_path) as ref:
        n_first = len(index)
        assert index.status == "building" and n_first == report.n_added and 0 < n_first < len(ref)
        assert index.samples()["id"].tolist() == ref.samples()["id"].tolist()[:n_first]  # its first rows, in order
        torch.testing.assert_close(index.hidden_mean, ref.hidden_mean, **FLOAT64_TOL)
    _wait_until_cpus_free(ray)  # the stopped build's workers were let go

    # 2. the same build as a `rise build --workers 2` command finishes it: every id once, the features of an
    # uninterrupted build (compared by id: the remaining samples form other batches)
    code = main(["build", str(pool), "--index", str(path), "--workers", "2", "--batch-size", str(BATCH),
                 "--dtype", "float64", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0 and f"{n_first} already present" in out and "complete in" in out
    n = reference[1].n_added
    assert _count_ids(path) == (n, n)
    _assert_same_index(path, ref_path, same_order=False)
    _wait_until_cpus_free(ray)


def test_a_sharded_overwrite_keeps_the_old_index_until_it_ends(ray_cluster, model_dir, reference, tmp_path):
    """As `build_index` does (`build.replacing`): stopped before its first sample, the overwrite puts the old index
    back; run to the end, it removes the index it replaced."""
    ray, _ = ray_cluster
    path = tmp_path / "over.duckdb"
    path.write_bytes(reference[0].read_bytes())
    with RiseIndex.open(path) as index:
        uuid, n = index.manifest.index_uuid, len(index)
    stopped = build_index_distributed(path, POOL, model_dir, CFG, workers=2, batch_size=BATCH, dtype="float64",
                                      should_stop=lambda: True, overwrite=True)
    assert stopped.stopped and stopped.n_total == 0 and not stopped.replaced
    with RiseIndex.open(path) as old:
        assert (old.manifest.index_uuid, len(old)) == (uuid, n)
    _wait_until_cpus_free(ray)
    done = build_index_distributed(path, POOL[:8], model_dir, CFG, workers=2, batch_size=BATCH, dtype="float64",
                                   overwrite=True)
    assert not done.stopped and not done.replaced and done.n_total == len(POOL[:8]) - done.n_skipped
    assert [p.name for p in tmp_path.glob("*.duckdb")] == [path.name]
    with RiseIndex.open(path) as new:
        assert new.manifest.index_uuid != uuid
    _wait_until_cpus_free(ray)


def test_without_ray_a_clear_error_and_the_one_process_build_unchanged(monkeypatch, model_dir, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    path = tmp_path / "x.duckdb"
    with pytest.raises(DistributedBuildError, match=r"needs Ray, which is not installed: pip install \"ray>=2\.30\""):
        build_index_distributed(path, POOL, model_dir, CFG, workers=2)
    pool = write_jsonl(tmp_path / "pool.jsonl", POOL[:6])
    assert main(["build", str(pool), "--index", str(path), "--workers", "2", "--quiet"]) == 1
    assert "pip install \"ray>=2.30\"" in capsys.readouterr().err
    assert not path.exists()
    code = main(["build", str(pool), "--index", str(path), "--model", str(model_dir), "--dtype", "float64",
                 "--k-r", "16", "--k-h", "8", "--k-g", "16", "--quiet"])
    assert code == 0 and "6 added" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["build", str(pool), "--index", str(path), "--workers", "0"])


def test_a_fine_tunes_sharded_build_stores_the_base_models_losses(ray_cluster, model_dir, tmp_path):
    """As `build_index` does on a fine-tune's index: every row's loss under the adapter's base model, computed by the
    workers, equal to the one-process computation (float64 models; stored as float32, so to float32 rounding)."""
    from rise_core.finetune import FinetuneConfig, finetune
    from rise_core.learned import base_model_losses
    from rise_core.store.build import BASE_LOSS_PHASE

    ray, _ = ray_cluster
    pool = POOL[:40]
    adapter = tmp_path / "adapter"
    finetune(load_model(str(model_dir), dtype="float64"), pool, adapter,
             FinetuneConfig(rank=2, alpha=4, epochs=1, batch_size=8, seq_len=16, warmup_steps=1,
                            learning_rate=5e-2, target_modules=("q_proj", "v_proj")))
    path = tmp_path / "tuned.duckdb"
    phases: list[tuple[str, int, int]] = []
    report = build_index_distributed(path, pool, adapter, CFG, workers=2, batch_size=BATCH, dtype="float64",
                                     phase_progress=lambda p, d, t: phases.append((p, d, t)))
    with RiseIndex.open(path) as index:
        got, samples, n = index.base_row_losses(), index.sample_list(), len(index)
        assert index.rows_without_base_loss() == []
    assert report.n_base_losses == n and not report.stopped
    assert _phase_ends(phases)[-1] == (BASE_LOSS_PHASE, n, n)
    lm = load_model(str(adapter), dtype="float64")
    want = base_model_losses(lm, samples, CFG)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    # the fine-tune's own losses differ: the workers read the base model, not the fine-tune
    with RiseIndex.open(path) as index:
        assert not np.allclose(index.row_losses(), got)
    _wait_until_cpus_free(ray)
