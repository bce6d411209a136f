"""Bergson as a registry method: its scores equal the cosine of per-example gradients computed by autograd (projected
with Bergson's own matrices, or not projected at all), on RISE's tokens and counted positions; it runs through
`rise evaluate`'s harness and the Compare backend; without the package it says what to install.

Every test but the last needs the optional `bergson` package and is skipped without it."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import FLOAT64_TOL
from index_helpers import pool_rows

from rise_core import bergson_method, method_types, methods
from rise_core.attribution import query_features
from rise_core.bergson_method import BERGSON, BergsonOptions, BergsonScorer, build
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.errors import ConfigError
from rise_core.evaluation import Task, evaluate
from rise_core.methods import TaskSource, Unavailable, compare_methods
from rise_core.readout_cache import ReadoutCache
from rise_core.samples import Sample, encode_sample
from rise_core.store import RiseIndex, build_index

POOL = [Sample(prompt="what did the cat do ?", completion="the cat sat on the mat .", id="p0", label=1),
        Sample(prompt="where is the kitten ?", completion="the kitten is sleeping on the blanket .", id="p1", label=1),
        Sample(text="howdy ! once upon a time a dragon sat on the moon .", id="p2", label=0),
        Sample(prompt="what happened ?", completion="the stock market crashed and the bank lost money .", id="p3",
               label=0),
        Sample(text="the doctor gave the patient medicine for the fever .", id="p4", label=0),
        Sample(prompt="how can you invest money ?", completion="with a bank .", id="p5", label=0)]
QUERIES = [Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket ."),
           Sample(text="the bank lost money and the stock market crashed .")]
SEQ_LEN = 64


def _needs_bergson() -> None:
    pytest.importorskip("bergson")


def _projected_gradients(lm, samples, counted: str, p: int) -> torch.Tensor:
    """(n, dims) per-sample gradients of the summed counted-token loss w.r.t. every linear weight of the model body,
    each unpadded sample on its own through autograd, projected p x p with Bergson's matrices (p = 0: not at all)."""
    from bergson.collector.collector import create_module_projection_matrix

    model = lm.model
    linears = [(n, m) for n, m in model.base_model.named_modules() if isinstance(m, torch.nn.Linear)]
    rows = []
    for s in samples:
        enc = encode_sample(s, lm.tokenizer, SEQ_LEN, counted)
        ids = torch.tensor([enc.input_ids])
        with torch.enable_grad():
            logits = model(ids).logits[0, :-1]
            loss = (F.cross_entropy(logits, ids[0, 1:], reduction="none") * torch.tensor(enc.counted)).sum()
            grads = torch.autograd.grad(loss, [m.weight for _, m in linears])
        parts = []
        for (name, _), g in zip(linears, grads, strict=True):
            if p:
                left = create_module_projection_matrix(name, "left", p, g.shape[0], g.dtype, g.device,
                                                       "rademacher", "jl", None)
                right = create_module_projection_matrix(name, "right", p, g.shape[1], g.dtype, g.device,
                                                        "rademacher", "jl", None)
                g = left @ g @ right.T
            parts.append(g.flatten())
        rows.append(torch.cat(parts))
    return torch.stack(rows)


@pytest.mark.parametrize(("counted", "p"), [("completion", 4), ("all", 4), ("completion", 0)])
def test_scores_are_the_cosine_of_per_example_gradients(tiny_lm, tmp_path, counted, p):
    _needs_bergson()
    index = build(tiny_lm, POOL, tmp_path / "idx", SEQ_LEN, counted, BergsonOptions(projection_dim=p), batch_size=4)
    got = index.scores(tiny_lm, QUERIES, batch_size=2)
    pool_g = _projected_gradients(tiny_lm, POOL, counted, p)
    query_g = _projected_gradients(tiny_lm, QUERIES, counted, p)
    expected = (F.normalize(query_g, dim=1) @ F.normalize(pool_g, dim=1).T).numpy()
    np.testing.assert_allclose(got, expected, **FLOAT64_TOL)
    stored = np.asarray(bergson_method._import_bergson().load_gradients(index.path))
    np.testing.assert_allclose(stored, pool_g.numpy(), **FLOAT64_TOL)  # the rows in pool order, unnormalised
    assert index.gradient_bytes == len(POOL) * pool_g.shape[1] * 8 and index.disk_bytes > index.gradient_bytes
    assert index.n_tokens == sum(len(encode_sample(s, tiny_lm.tokenizer, SEQ_LEN, counted).input_ids) for s in POOL)


@pytest.mark.parametrize("p", [4, 0])
def test_row_bytes_are_what_the_index_stores_per_row(tiny_lm, tmp_path, p):
    """`row_bytes`, which the app bounds before it builds (RISE_MAX_PEER_BYTES), is the index's own size per row."""
    _needs_bergson()
    options = BergsonOptions(projection_dim=p)
    index = build(tiny_lm, POOL, tmp_path / "idx", SEQ_LEN, options=options)
    assert index.gradient_bytes == len(POOL) * bergson_method.row_bytes(tiny_lm, options)
    weights = sum(t.numel() * t.element_size() for t in tiny_lm.model.parameters())
    assert methods.peer_bytes(BERGSON, tiny_lm, 1000) == 1000 * bergson_method.row_bytes(tiny_lm) + weights


def test_the_model_is_left_as_it_was(tiny_llama, tmp_path):
    _needs_bergson()
    flags = [p.requires_grad for p in tiny_llama.model.parameters()]
    index = build(tiny_llama, POOL, tmp_path / "idx", SEQ_LEN)
    index.scores(tiny_llama, QUERIES)
    assert [p.requires_grad for p in tiny_llama.model.parameters()] == flags
    assert all(p.grad is None for p in tiny_llama.model.parameters())


def _linear_hooks(model) -> int:
    """Forward and backward hooks on the model's linear layers (Bergson's, while it builds or queries)."""
    return sum(len(m._forward_hooks) + len(m._backward_hooks) for m in model.modules()
               if isinstance(m, torch.nn.Linear))


@pytest.mark.parametrize("precondition", [False, True], ids=["plain", "preconditioned"])
def test_a_build_reports_its_batches_and_stops_when_its_progress_raises(tiny_llama, tmp_path, precondition):
    """`progress(done, total)` after each batch, counting on over the Hessian's second pass; an exception it raises
    ends the build there (how the app's Stop works), with the model as it was and no hook left on it."""
    _needs_bergson()
    options = BergsonOptions(precondition=precondition)
    seen = []
    build(tiny_llama, POOL, tmp_path / "idx", SEQ_LEN, options=options, batch_size=4,
          progress=lambda done, total: seen.append((done, total)))
    total = len(POOL) * (2 if precondition else 1)
    expected = [(4, total), (6, total)] + ([(10, total), (12, total)] if precondition else [])
    assert seen == expected

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop
    flags = [p.requires_grad for p in tiny_llama.model.parameters()]
    with pytest.raises(Stop):
        build(tiny_llama, POOL, tmp_path / "stopped", SEQ_LEN, options=options, batch_size=4, progress=stop)
    assert [p.requires_grad for p in tiny_llama.model.parameters()] == flags and _linear_hooks(tiny_llama.model) == 0


def test_a_scorer_on_a_private_copy_leaves_the_shared_model_alone(tiny_llama, monkeypatch):
    """In the app other sessions run the model while Bergson builds: given `lm.private_copy()`, Bergson's hooks and
    its gradient switches are on the copy alone (the forward passes of other threads would fire them), and the scores
    are those of a scorer on the model itself (the same weights, the same computation)."""
    _needs_bergson()
    config = RiseConfig(seq_len=SEQ_LEN)
    flags = [p.requires_grad for p in tiny_llama.model.parameters()]
    hooked, register = [], torch.nn.Module.register_forward_hook

    def spy(module, *args, **kwargs):
        hooked.append(module)
        return register(module, *args, **kwargs)
    monkeypatch.setattr(torch.nn.Module, "register_forward_hook", spy)
    during = []
    scorer = BergsonScorer(tiny_llama.private_copy(), config)

    def look(done, total):
        during.append(([p.requires_grad for p in scorer.lm.model.parameters()] != flags,
                       [p.requires_grad for p in tiny_llama.model.parameters()] == flags))
    scorer.fit(POOL, progress=look)
    scorer.score(QUERIES)
    shared, copied = set(map(id, tiny_llama.model.modules())), set(map(id, scorer.lm.model.modules()))
    assert hooked and all(id(m) in copied and id(m) not in shared for m in hooked)
    assert during == [(True, True)], "the copy's gradients switched for the build, the shared model's untouched"
    assert scorer.lm.model is not tiny_llama.model and scorer.lm.fingerprint() == tiny_llama.fingerprint()
    own = BergsonScorer(tiny_llama, config)
    own.fit(POOL)
    assert any(id(m) in shared for m in hooked)  # the spy sees hooks on the model a scorer is given
    np.testing.assert_allclose(scorer.score(QUERIES), own.score(QUERIES), rtol=1e-6, atol=1e-6)  # fp32 scores


@pytest.mark.parametrize("private", [False, True], ids=["command line", "server"])
def test_the_registry_method_hooks_a_copy_in_a_server(tiny_llama, monkeypatch, private):
    """The Evaluate page runs the registry's Bergson while other sessions run the same model: after
    `use_private_models()` (the app calls it) its hooks go on a copy alone; a one-thread process hooks the model it
    is given (no second copy of the weights). The scores are the same either way."""
    _needs_bergson()
    import threading

    monkeypatch.setattr(bergson_method, "_PRIVATE_MODELS", threading.Event())
    if private:
        bergson_method.use_private_models()
    hooked, register = [], torch.nn.Module.register_forward_hook

    def spy(module, *args, **kwargs):
        hooked.append(id(module))
        return register(module, *args, **kwargs)
    monkeypatch.setattr(torch.nn.Module, "register_forward_hook", spy)
    config = RiseConfig(seq_len=SEQ_LEN)
    cache = ReadoutCache(tiny_llama, seq_len=SEQ_LEN)
    cache.add(POOL + QUERIES)  # as `evaluate` reads them first (the costs charge their forward passes)
    hooked.clear()
    run = methods.get(BERGSON).score(TaskSource(POOL, QUERIES, cache, config, ScoreOptions()))
    shared = set(map(id, tiny_llama.model.modules()))
    assert hooked and (not shared & set(hooked)) == private
    direct = BergsonScorer(tiny_llama, config)
    direct.fit(POOL)
    np.testing.assert_allclose(run.scores, direct.score(QUERIES), rtol=1e-6, atol=1e-6)  # fp32 scores


def test_preconditioned_scores_run_and_differ(tiny_llama, tmp_path):
    _needs_bergson()
    plain = build(tiny_llama, POOL, tmp_path / "plain", SEQ_LEN).scores(tiny_llama, QUERIES)
    index = build(tiny_llama, POOL, tmp_path / "pre", SEQ_LEN, options=BergsonOptions(precondition=True))
    pre = index.scores(tiny_llama, QUERIES)
    assert pre.shape == plain.shape and np.isfinite(pre).all() and not np.allclose(pre, plain)
    assert np.abs(pre).max() <= 1 + 1e-9  # two-sided H^-1/2 then unit norm: still a cosine


def test_the_hessians_sampled_labels_are_seeded_under_the_lock(tiny_llama, tmp_path, monkeypatch):
    """The Hessian's labels are drawn in `seeded_global_rng(0)` (the model lock held: no other thread's draws
    interleave), so two fits give the same scores, and the caller's generator is as it was."""
    _needs_bergson()
    from rise_core.model_lock import MODEL_LOAD_LOCK

    seeds, real = [], bergson_method.seeded_global_rng

    @contextlib.contextmanager
    def spy(seed):
        with real(seed):
            seeds.append((seed, MODEL_LOAD_LOCK._is_owned()))
            yield

    monkeypatch.setattr(bergson_method, "seeded_global_rng", spy)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    options = BergsonOptions(precondition=True)
    first = build(tiny_llama, POOL, tmp_path / "a", SEQ_LEN, options=options).scores(tiny_llama, QUERIES)
    assert torch.equal(torch.random.get_rng_state(), before)
    torch.manual_seed(7)  # another draw state before the second fit: the labels do not depend on it
    second = build(tiny_llama, POOL, tmp_path / "b", SEQ_LEN, options=options).scores(tiny_llama, QUERIES)
    assert seeds == [(0, True), (0, True)]
    np.testing.assert_array_equal(first, second)


def test_it_runs_through_the_evaluation_harness(tiny_llama):
    _needs_bergson()
    assert BERGSON in methods.EVALUATE_METHODS and BERGSON not in methods.COMPARE_METHODS  # asked for by name there
    config = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=SEQ_LEN, counted_positions="completion")
    task = Task("tiny", POOL, np.array([s.label for s in POOL]), QUERIES, ks=(1, 2))
    cache = ReadoutCache(tiny_llama, seq_len=SEQ_LEN, k_max=config.k_max, seed=config.seed)
    report = evaluate(task, tiny_llama, ["RISE", "bergson"], config, cache=cache)
    assert list(report.costs.index) == ["RISE", BERGSON]
    assert report.costs.loc[BERGSON, "index_MB"] > 0 and report.costs.loc[BERGSON, "build_s"] > 0
    assert set(report.table.loc[report.table["method"] == BERGSON, "K"]) == {1, 2}
    run = methods.get(BERGSON).score(TaskSource(POOL, QUERIES, cache, config, ScoreOptions()))
    assert run.scores.shape == (len(QUERIES), len(POOL)) and run.ids == tuple(s.id for s in POOL)
    direct = BergsonScorer(tiny_llama, config)
    direct.fit(POOL)
    np.testing.assert_allclose(run.scores, direct.score(QUERIES), rtol=1e-6, atol=1e-6)


def test_it_scores_a_built_index_for_the_compare_page(tiny_llama, tmp_path):
    _needs_bergson()
    config = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=SEQ_LEN)
    build_index(tmp_path / "i.duckdb", pool_rows(8), tiny_llama, config, batch_size=4)
    with RiseIndex.open(tmp_path / "i.duckdb") as index:
        qfm = query_features(index, tiny_llama, QUERIES)
        out = compare_methods(index, QUERIES, qfm, methods=["RISE", BERGSON], lm=tiny_llama)
        assert out[BERGSON].available and out[BERGSON].scores.shape == (len(QUERIES), 8)
        assert out[BERGSON].ids == tuple(index.samples()["id"])
        bare = compare_methods(index, QUERIES, qfm, methods=[BERGSON])[BERGSON]
        assert not bare.available and "needs the model" in bare.missing

        # a peer fitted beforehand (the app builds it in the background) is used as given, not built again
        fitted = methods.peer_scorer(BERGSON, tiny_llama, index.config)
        fitted.fit(index.sample_list())
        built = dict(method_types._BUILT)
        given = compare_methods(index, QUERIES, qfm, methods=[BERGSON], peers={BERGSON: fitted})[BERGSON]
        assert method_types._BUILT == built
        np.testing.assert_array_equal(given.scores, fitted.score(QUERIES).astype(np.float64))
        with pytest.raises(ConfigError, match="not a peer method"):
            methods.peer_scorer("BM25", tiny_llama, index.config)


def test_without_bergson_it_names_the_install(monkeypatch, tiny_llama):
    monkeypatch.setattr(bergson_method, "installed", lambda: False)
    cache = ReadoutCache(tiny_llama, seq_len=SEQ_LEN)
    with pytest.raises(Unavailable, match="not installed") as info:
        methods.get(BERGSON).score(TaskSource(POOL, QUERIES, cache))
    assert "-c constraints/torch-cpu.txt" in str(info.value) and "pip install --no-deps bergson==" in str(info.value)
