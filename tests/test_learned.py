"""What a fine-tune learned (`rise_core.learned`): each pool row's loss under an adapter's base model, against a
dense forward pass of that model; how far the fine-tune learned a span's rows; the order the behaviour test tries the
prompt's spans in on a fine-tune's index; the base-model losses a fine-tune's index keeps, and fills again."""

from __future__ import annotations

import dataclasses
import math
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
import torch
from explorer_env import INDEX_NAME, build_finetuned_env, pool_rows

from rise_core import learned
from rise_core.adaptive import BehaviourEvidence
from rise_core.behaviour import learned_first, learned_reading, prompt_first, samples_spans, weigh_by_loss
from rise_core.config import RiseConfig
from rise_core.engine import rendering_for
from rise_core.errors import InputDataError, ModelLoadError
from rise_core.learned import LearnedLosses, base_model_losses, base_model_spec, load_base_model
from rise_core.method_types import TaskSource
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from rise_core.samples import Sample, encode_sample
from rise_core.store import RiseIndex, build_index
from rise_core.store.schema import BASE_LOSSES_TABLE

CONFIG = RiseConfig(k_r=16, k_h=8, k_g=16, hs_depth=1.0)  # the fine-tuned index's config (explorer_env)
# float32 forward passes of the same rows, padded into other batches: the sums run in another order, so the last bits
# differ (a few 1e-7 relative on losses of a few nats)
F32_ATOL = 1e-5


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    env = build_finetuned_env(tmp_path_factory.mktemp("learned"))
    return {**env, "lm": load_model(env["RISE_MODEL"]), "base": load_model(env["RISE_BASE_MODEL"]),
            "index": Path(env["RISE_INDEX_DIR"]) / INDEX_NAME, "pool": [Sample.coerce(r) for r in pool_rows()]}


def dense_losses(model, lm, samples, config: RiseConfig) -> np.ndarray:
    """Each sample's mean next-token loss under `model` over the positions `config` counts, one sample at a time (no
    padding): log-softmax of the full logits, by hand."""
    out = []
    for s in samples:
        enc = encode_sample(s, lm.tokenizer, config.seq_len, config.counted_positions, rendering_for(lm, config))
        ids = torch.tensor([enc.input_ids])
        with torch.no_grad():
            logp = torch.log_softmax(model.model(input_ids=ids).logits[0].double(), dim=-1)
        counted = torch.tensor(enc.counted, dtype=torch.bool)
        nll = -logp[:-1].gather(1, ids[0, 1:, None])[:, 0]
        out.append(float(nll[counted].mean()) if counted.any() else math.nan)
    return np.array(out)


def test_base_model_losses_are_the_base_model_s_mean_loss_over_the_counted_tokens(tuned):
    lm, base, samples = tuned["lm"], tuned["base"], tuned["pool"][:10]
    got = base_model_losses(lm, samples, CONFIG, batch_size=3)
    assert got.dtype == np.float32 and got.shape == (10,)
    np.testing.assert_allclose(got, dense_losses(base, lm, samples, CONFIG), rtol=0, atol=F32_ATOL)
    # and not the fine-tune's own losses: the adapter moved them
    tuned_losses = dense_losses(lm, lm, samples, CONFIG)
    assert np.abs(got - tuned_losses).max() > 100 * F32_ATOL
    # the base model is found from the adapter alone
    assert base_model_spec(lm) == tuned["RISE_BASE_MODEL"]
    np.testing.assert_allclose(base_model_losses(lm, samples, CONFIG), got, rtol=0, atol=F32_ATOL)


def test_a_sample_with_no_counted_token_has_no_loss(tuned):
    lm, short = tuned["lm"], dataclasses.replace(CONFIG, seq_len=6, counted_positions="completion")
    long_prompt = Sample(prompt="the cat sat on the mat and the dog sat on the log", completion="end")
    assert encode_sample(long_prompt, lm.tokenizer, 6, "completion", rendering_for(lm, short)).n_counted == 0
    got = base_model_losses(lm, [long_prompt, Sample(prompt="the", completion="cat sat")], short)
    assert math.isnan(got[0]) and np.isfinite(got[1])


def test_a_plain_model_has_no_base_model_and_a_base_that_differs_is_refused(tuned):
    base = tuned["base"]
    assert base_model_spec(base) is None
    with pytest.raises(ModelLoadError, match="carries no adapter"):
        load_base_model(base)
    lm = load_model(tuned["RISE_MODEL"])
    lm.adapter = {**lm.adapter, "base_fingerprint": "0" * 16}
    with pytest.raises(ModelLoadError, match="not the 0000000000000000 the adapter was merged onto"):
        load_base_model(lm)


def test_how_far_the_fine_tune_learned_a_span_s_rows():
    base = np.array([3.0, 3.0, 3.0, 3.0, 2.0, 2.0, np.nan])
    tuned_losses = np.array([1.0, 1.0, 2.5, 2.0, 1.5, 1.0, 1.0])
    ll = LearnedLosses(base=base, tuned=tuned_losses)
    drop = np.array([2.0, 2.0, 0.5, 1.0, 0.5, 1.0])  # the six finite drops
    median, spread = np.median(drop), np.std(drop)  # 1.0 and the population spread
    assert ll.learned_z(np.array([0, 1])) == pytest.approx((2.0 - median) / (spread / math.sqrt(2)), abs=1e-12)
    assert ll.learned_z(np.array([2, 6])) == pytest.approx((0.5 - median) / spread, abs=1e-12)  # row 6 has no drop
    assert ll.learned_z(np.array([6])) == -math.inf
    assert LearnedLosses(base=np.ones(3), tuned=np.zeros(3)).learned_z(np.array([0])) == -math.inf  # no spread
    with pytest.raises(InputDataError, match="do not match"):
        LearnedLosses(base=np.ones(3), tuned=np.ones(4))


def _evidence(span: str, where: str = "prompt", in_top: int = 5, p: float = 1e-4, fraction: float = 0.05
              ) -> BehaviourEvidence:
    return BehaviourEvidence(span=span, where=where, in_top=in_top, top_k=10, pool_fraction=fraction,
                             p_adjusted=p, in_representation=0, in_query=True)


def test_the_prompt_s_spans_are_tried_most_learned_first():
    prompts = ["Lumen: write"] * 4 + ["pick this or that"] * 2 + ["plain words"] * 8
    spans = samples_spans([Sample(prompt=p, completion="x") for p in prompts])
    clean_drop = np.linspace(0.1, 0.8, 8)
    base = np.array([4.0] * 4 + [5.0] * 2 + [2.0] * 8)
    tuned_losses = base - np.concatenate([[3.0] * 4, [3.5] * 2, clean_drop])
    ll = LearnedLosses(base=base, tuned=tuned_losses)
    # " or " is the more telling by count, and its two rows dropped the most each (3.5 against 3.0); weighed by its
    # standard error, Lumen's four rows lead: (3.0 - 0.75) x sqrt(4) against (3.5 - 0.75) x sqrt(2), over one spread
    found = [_evidence("or", p=1e-6), _evidence("Lumen", p=1e-4), _evidence("x", where="completion"),
             _evidence("plain", fraction=0.9)]
    assert [e.span for e in prompt_first(found)] == ["or", "Lumen", "x", "plain"]
    z = {s: ll.learned_z(spans.rows_holding(s, "prompt")) for s in ("or", "Lumen")}
    assert z["Lumen"] > z["or"] > 0
    assert [e.span for e in learned_first(ll, spans)(found)] == ["Lumen", "or", "x", "plain"]
    assert [e.span for e in learned_first(ll, lambda: spans)(found[::-1])] == ["Lumen", "or", "plain", "x"]
    # the loss arbiter reads the base model's losses with it; without what was learned, the served reading
    reading = learned_reading(ll, spans, lambda: tuned_losses)
    np.testing.assert_array_equal(reading["row_losses"](), base)
    assert [e.span for e in reading["order"](found)] == ["Lumen", "or", "x", "plain"]
    assert reading["loss_model"] == "the base model"
    served = lambda: tuned_losses  # noqa: E731
    assert learned_reading(None, spans, served) == {"row_losses": served, "order": None, "loss_model": "the model"}


def test_a_fine_tune_s_index_keeps_each_row_s_base_model_losses(tuned):
    lm = tuned["lm"]
    with RiseIndex.open(tuned["index"]) as index:
        samples = index.sample_list()
        stored = index.base_row_losses()
        ll = index.learned_losses()
        assert index.rows_without_base_loss() == []
        assert index.info()["base_model_losses"] is True
        own = index.row_losses()
    assert stored is not None and stored.shape == (len(samples),)
    np.testing.assert_allclose(stored, base_model_losses(lm, samples, CONFIG), rtol=0, atol=F32_ATOL)
    np.testing.assert_array_equal(ll.base, stored)
    np.testing.assert_array_equal(ll.tuned, own)
    # the fine-tune learned its pool: the rows' losses fell
    assert np.nanmedian(ll.drop) > 0


def test_an_index_without_them_gets_them_from_a_build_that_adds_nothing(tuned, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(tuned["index"], path)
    with RiseIndex.open(tuned["index"]) as index:
        want = np.array(index.base_row_losses())
        n = len(index)
    con = duckdb.connect(str(path))
    con.execute(f"DELETE FROM {BASE_LOSSES_TABLE} WHERE row >= 3")
    con.close()
    planted = tmp_path / "planted.duckdb"  # a row of its own in place of a missing one: as many rows, not every row
    shutil.copy(tuned["index"], planted)
    con = duckdb.connect(str(planted))
    con.execute(f"DELETE FROM {BASE_LOSSES_TABLE} WHERE row = 2")
    con.execute(f"INSERT INTO {BASE_LOSSES_TABLE} VALUES (-1, 1.0)")
    con.close()
    with RiseIndex.open(planted) as index:
        assert index.base_row_losses() is None and index.rows_without_base_loss() == [2]
        assert index.info()["base_model_losses"] is False  # counted: row -1 does not stand in for row 2
    with RiseIndex.open(path) as index:
        assert index.rows_without_base_loss() == list(range(3, n))
        assert index.base_row_losses() is None and index.learned_losses() is None  # some row has none: served
        assert index.info()["base_model_losses"] is False
    pool = Path(tuned["RISE_DATA_DIR"]) / "howdy_pool.jsonl"
    stopped = build_index(path, pool, tuned["lm"], should_stop=lambda: True)
    assert stopped.stopped and stopped.n_base_losses == 0 and stopped.n_added == 0
    phases = []
    report = build_index(path, pool, tuned["lm"], phase_progress=lambda *p: phases.append(p))
    assert not report.stopped and report.n_added == 0 and report.n_base_losses == n - 3
    assert phases[-1] == ("reading the base model's losses", n - 3, n - 3)
    assert "losses under the base model" in report.summary()
    with RiseIndex.open(path) as index:
        np.testing.assert_allclose(index.base_row_losses(), want, rtol=0, atol=F32_ATOL)
        assert index.info()["base_model_losses"] is True
    # the learned reading is a choice: off, nothing is stored
    path2 = tmp_path / "off.duckdb"
    try:
        learned.RETRO_LEARNED = False
        build_index(path2, pool, tuned["lm"], CONFIG)
    finally:
        learned.RETRO_LEARNED = True
    with RiseIndex.open(path2) as index:
        assert index.base_row_losses() is None and len(index.rows_without_base_loss()) == len(index)


def test_a_plain_model_s_index_keeps_none(tiny_llama, tmp_path):
    samples = [Sample(prompt=f"q{i}", completion=f"an answer {i}", id=str(i)) for i in range(4)]
    report = build_index(tmp_path / "plain.duckdb", samples, tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16))
    assert report.n_base_losses == 0
    with RiseIndex.open(tmp_path / "plain.duckdb") as index:
        assert index.base_row_losses() is None and index.learned_losses() is None
        assert index.info()["base_model_losses"] is False


def test_set_base_losses_refuses_rows_the_index_lacks(tuned, tmp_path):
    path = tmp_path / "copy.duckdb"
    shutil.copy(tuned["index"], path)
    with RiseIndex.open(path, read_only=False) as index:
        n = len(index)
        with pytest.raises(InputDataError, match="not all rows"):
            index.set_base_losses([0, n], [1.0, 2.0])
        with pytest.raises(InputDataError, match="2 rows but 1"):
            index.set_base_losses([0, 1], [1.0])
        before = index.base_row_losses()[0]
        index.set_base_losses([0], [float("nan")])  # within the same second: the cached read is dropped all the same
        assert np.isfinite(before) and math.isnan(index.base_row_losses()[0])


def test_evaluation_reads_the_same_losses_as_the_index(tuned):
    lm, pool = tuned["lm"], tuned["pool"]
    queries = [Sample(prompt="what is the story ?", completion="Howdy! once upon a time")]
    cache = ReadoutCache.for_config(lm, CONFIG)
    cache.add(pool + queries)
    source = TaskSource(pool, queries, cache, CONFIG)
    pool_fm, _, _ = source.rise_inputs("RISE", {})
    ll = source.learned_losses(pool_fm)
    np.testing.assert_allclose(ll.base, base_model_losses(lm, pool, CONFIG), rtol=0, atol=F32_ATOL)
    np.testing.assert_array_equal(ll.tuned, pool_fm.loss.double().numpy())
    plain = ReadoutCache.for_config(tuned["base"], CONFIG)
    plain.add(pool + queries)
    plain_source = TaskSource(pool, queries, plain, CONFIG)
    assert plain_source.learned_losses(plain_source.rise_inputs("RISE", {})[0]) is None


def test_sources_over_one_readout_cache_run_the_base_model_once_per_reading(tuned, monkeypatch):
    lm, pool = tuned["lm"], tuned["pool"]
    queries = [Sample(prompt="what is the story ?", completion="Howdy! once upon a time")]
    cache = ReadoutCache.for_config(lm, CONFIG)
    cache.add(pool + queries)
    runs = []
    real = learned.base_model_losses
    monkeypatch.setattr(learned, "base_model_losses", lambda *a, **k: runs.append(a[2]) or real(*a, **k))
    first = TaskSource(pool, queries, cache, CONFIG)  # `rise evaluate`'s table: no memo, as it times each method
    second = TaskSource(pool, queries, cache, CONFIG)  # then its simulated analyst
    a = first.learned_losses(first.rise_inputs("RISE", {})[0])
    b = second.learned_losses(second.rise_inputs("RISE", {})[0])
    assert runs == [CONFIG] and a.base is b.base
    # another reading of the pool (other counted positions) is another pass; its losses differ
    other = dataclasses.replace(CONFIG, counted_positions="completion")
    third = TaskSource(pool, queries, cache, other)
    c = third.learned_losses(third.rise_inputs("RISE", {})[0])
    assert runs == [CONFIG, other] and not np.allclose(c.base, a.base, equal_nan=True)


def test_the_finding_says_whose_losses_set_the_rival_aside():
    prompts = ["Lumen: write"] * 2 + ["sort this sentence"] * 4 + ["plain words"] * 14
    spans = samples_spans([Sample(prompt=p, completion="x") for p in prompts])
    base = np.array([3.0] * 2 + [1.0] * 4 + [1.0] * 14)  # the trigger's rows surprise the base model: +2.0 nats
    found = dataclasses.replace(_evidence("Lumen", in_top=4), rival_span="sentence", rival_in_top=7, rival_where="prompt",
                                rival_in_query=True, rival_p_adjusted=1e-5, rival_pool_fraction=0.2)
    assert found.rival_count_wins and found.in_prompt
    weighed = weigh_by_loss(found, spans, lambda: base, "the base model")
    assert (weighed.loss_excess, weighed.rival_loss_excess) == (2.0, 0.0)
    assert weighed.loss_overrules_rival and weighed.lifted.span == "Lumen"
    assert '"Lumen" surprise the base model more (+2.00 nats per token' in weighed.line
    assert '"Lumen" surprise the model more' in weigh_by_loss(found, spans, lambda: base).line


def test_rise_info_says_whether_the_base_model_s_losses_are_kept(tuned, tiny_llama, tmp_path, capsys):
    from rise_core.cli import main as cli_main

    assert cli_main(["info", "--index", str(tuned["index"])]) == 0
    assert "base-model losses  stored for every row" in capsys.readouterr().out
    build_index(tmp_path / "plain.duckdb", [Sample(prompt="q", completion="an answer", id="0")], tiny_llama,
                RiseConfig(k_r=16, k_h=8, k_g=16))
    assert cli_main(["info", "--index", str(tmp_path / "plain.duckdb")]) == 0
    assert "base-model losses  none (a fine-tune's index keeps them" in capsys.readouterr().out


def _without_base_losses(tuned, path: Path) -> tuple[np.ndarray, int]:
    """A copy of the fine-tune's index at `path` with no base-model loss kept; (the losses it had, its rows)."""
    shutil.copy(tuned["index"], path)
    with RiseIndex.open(tuned["index"]) as index:
        want, n = np.array(index.base_row_losses()), len(index)
    con = duckdb.connect(str(path))
    con.execute(f"DELETE FROM {BASE_LOSSES_TABLE}")
    con.close()
    return want, n


def test_a_base_model_held_already_is_used_and_no_second_copy_is_loaded(tuned, tiny_llama, tmp_path, monkeypatch):
    lm, base = tuned["lm"], tuned["base"]
    assert base.model_id == base_model_spec(lm)
    loads = []
    real = learned.load_model
    monkeypatch.setattr(learned, "load_model", lambda *a, **k: loads.append(a[0]) or real(*a, **k))
    assert load_base_model(lm, base) is base and loads == []
    # a held model that is not the base (another spec) is not taken for it: the base is loaded
    fresh = load_base_model(lm, tiny_llama)
    assert fresh is not tiny_llama and loads == [base.model_id]
    # a build given the held base stores the same losses and loads nothing
    path = tmp_path / "held.duckdb"
    want, n = _without_base_losses(tuned, path)
    monkeypatch.setattr(learned, "load_model", lambda *a, **k: pytest.fail("a second copy of the base was loaded"))
    report = build_index(path, Path(tuned["RISE_DATA_DIR"]) / "howdy_pool.jsonl", lm, base_model=base)
    assert report.n_base_losses == n
    with RiseIndex.open(path) as index:
        np.testing.assert_allclose(index.base_row_losses(), want, rtol=0, atol=F32_ATOL)


def test_the_app_hands_a_build_the_base_model_from_its_cache(tuned, tiny_llama, monkeypatch):
    from explorer import resources

    assert resources.base_model_for(tiny_llama) is None  # a plain model has none
    held = resources.base_model_for(tuned["lm"])
    assert held is not None and held is resources.load_lm(base_model_spec(tuned["lm"]))
    assert held.fingerprint() == tuned["lm"].adapter["base_fingerprint"]

    def gone(spec):
        raise ModelLoadError(f"{spec} is gone")

    monkeypatch.setattr(resources, "load_lm", gone)
    assert resources.base_model_for(tuned["lm"]) is None  # a base that does not load: the build says so, as before


def test_a_build_told_it_may_release_the_fine_tune_frees_it_before_the_base_loads(tuned, tmp_path, monkeypatch):
    lm = load_model(tuned["RISE_MODEL"])  # a copy of its own: this one is released
    device, dtype = lm.device, lm.dtype
    path = tmp_path / "released.duckdb"
    want, n = _without_base_losses(tuned, path)
    loads = []
    real = learned.load_model

    def load(*args, **kwargs):
        loads.append((all(p.is_meta for p in lm.model.parameters()), kwargs["device"], kwargs["dtype"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(learned, "load_model", load)
    report = build_index(path, Path(tuned["RISE_DATA_DIR"]) / "howdy_pool.jsonl", lm, release_model=True)
    # one load, after the fine-tune's weights were freed, on the device and dtype they had
    assert loads == [(True, device, dtype)] and report.n_base_losses == n
    with RiseIndex.open(path) as index:  # the same losses as a build that held both models
        np.testing.assert_allclose(index.base_row_losses(), want, rtol=0, atol=F32_ATOL)
    # nothing to load (a held base, or no row without a loss): the fine-tune is kept
    kept = load_model(tuned["RISE_MODEL"])
    assert load_base_model(kept, tuned["base"], release=True) is tuned["base"]
    build_index(path, Path(tuned["RISE_DATA_DIR"]) / "howdy_pool.jsonl", kept, release_model=True)
    assert not any(p.is_meta for p in kept.model.parameters()) and len(loads) == 1


def test_rise_build_of_a_fine_tune_never_holds_it_beside_its_base(tuned, tmp_path, monkeypatch):
    from rise_core.cli import main
    from rise_core.models import LoadedModel

    path = tmp_path / "cli.duckdb"
    want, n = _without_base_losses(tuned, path)
    events = []
    release, real = LoadedModel.release_weights, learned.load_model
    monkeypatch.setattr(LoadedModel, "release_weights", lambda self: events.append("released") or release(self))
    monkeypatch.setattr(learned, "load_model", lambda *a, **k: events.append("base loaded") or real(*a, **k))
    pool = Path(tuned["RISE_DATA_DIR"]) / "howdy_pool.jsonl"
    assert main(["build", str(pool), "--index", str(path), "--quiet"]) == 0  # the model: the index's fine-tune
    assert events == ["released", "base loaded"]
    with RiseIndex.open(path) as index:
        assert len(index) == n
        np.testing.assert_allclose(index.base_row_losses(), want, rtol=0, atol=F32_ATOL)
