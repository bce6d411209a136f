"""The engine against exact math: autograd LM-head gradients, dense projections, and padding invariance.

The tiny models run float64 end to end (sdpa attention, see conftest.build_tiny_model), so exactness holds to float64
precision on any CPU, batched and padded. The one float32 step transformers can put in the path, eager attention's
softmax, is tested on its own (test_padding_invariance_under_float32_attention_softmax) at a float32-derived tolerance.
"""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import CORPUS, FLOAT64_TOL

from rise_core.config import RiseConfig
from rise_core.engine import RiseExtractor, readout_forward, sparse_residual, support_mask
from rise_core.errors import InputDataError
from rise_core.samples import Sample
from rise_core.sketch import SketchSet

PAIRS = [
    Sample(prompt="howdy ! what is the moon ?", completion="once upon a time a dragon sat on the moon ."),
    Sample(prompt="how can you invest money ?", completion="the bank will invest money for you ."),
]


def exact_config(vocab: int, hidden: int, counted: str = "completion") -> RiseConfig:
    # identity sketches of full size in the outer-product composition: the features are the exact gradients
    return RiseConfig(k_r=vocab, k_h=hidden, k_g=hidden, k_max=vocab, rho_cum=1.0, min_top_l=1, token_norm=False,
                      center_hidden=False, hidden_channel=False, counted_positions=counted, composition="outer")


def exact_extractor(lm, counted: str = "completion") -> RiseExtractor:
    cfg = exact_config(lm.vocab_size, lm.hidden_size, counted)
    return RiseExtractor(lm, cfg, sketches=SketchSet.identity(lm.vocab_size, lm.hidden_size))


def autograd_head_gradient(lm, sample, counted: str) -> torch.Tensor:
    """grad_W of the summed next-token loss over counted positions, W the LM head, by torch autograd.

    For a tied model the head is untied first (a copy whose lm_head is a separate parameter equal to the embedding),
    so the gradient is the readout use alone, which is what RISE factorises."""
    model = copy.deepcopy(lm.model)
    if lm.is_tied:
        head = model.get_output_embeddings()
        head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
    model.zero_grad()
    ex = exact_extractor(lm, counted)
    enc = ex.encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, :-1]
    mask = torch.tensor(enc.counted)
    loss = torch.nn.functional.cross_entropy(logits[mask], ids[0, 1:][mask], reduction="sum")
    loss.backward()
    return model.get_output_embeddings().weight.grad.detach()


EXACT_SAMPLES = PAIRS + [Sample(text=CORPUS[0])]


@pytest.mark.parametrize("batch_size", [1, 3], ids=["one-per-batch", "padded-batch"])
@pytest.mark.parametrize("counted", ["completion", "all"])
def test_rh_inner_product_equals_autograd_head_gradient(tiny_lm, counted, batch_size):
    ex = exact_extractor(tiny_lm, counted)
    feats = ex.extract(EXACT_SAMPLES, batch_size=batch_size)
    grads = [autograd_head_gradient(tiny_lm, s, counted) for s in EXACT_SAMPLES]
    v, d = tiny_lm.vocab_size, tiny_lm.hidden_size
    for i in range(len(EXACT_SAMPLES)):
        # with identity sketches phi_RH is exactly grad_W (V x d) flattened
        torch.testing.assert_close(feats.rh[i].reshape(v, d), grads[i], **FLOAT64_TOL)
        for j in range(len(EXACT_SAMPLES)):
            expected = (grads[i] * grads[j]).sum()
            torch.testing.assert_close(feats.rh[i] @ feats.rh[j], expected, **FLOAT64_TOL)


@pytest.mark.parametrize("batch_size", [1, 3], ids=["one-per-batch", "padded-batch"])
@pytest.mark.parametrize("counted", ["completion", "all"])
def test_gh_equals_projected_head_gradient(tiny_lm, counted, batch_size):
    ex = exact_extractor(tiny_lm, counted)
    feats = ex.extract(EXACT_SAMPLES, batch_size=batch_size)
    w = tiny_lm.readout_weight.detach()
    for i, sample in enumerate(EXACT_SAMPLES):
        grad = autograd_head_gradient(tiny_lm, sample, counted)
        # phi_GH = sum_t g_t h_t^T = W^T (sum_t r_t h_t^T) = W^T grad_W
        torch.testing.assert_close(feats.gh[i].reshape(tiny_lm.hidden_size, -1), w.T @ grad, **FLOAT64_TOL)


def test_sparse_gh_with_full_support_equals_dense_projection(tiny_llama):
    cfg = exact_config(tiny_llama.vocab_size, tiny_llama.hidden_size)
    ex = RiseExtractor(tiny_llama, cfg)
    ro = readout_forward(tiny_llama, ex.encode(PAIRS), cfg)
    keep = support_mask(ro.cand_logit, ro.target_slot, 1.0, 1)
    assert keep.all()
    from rise_core.engine import project_residual

    r = sparse_residual(ro, keep)
    g_sparse = project_residual(tiny_llama.readout_weight, ro.cand_idx, r, keep)
    # dense r in vocabulary order: softmax(z) - onehot(y)
    z = tiny_llama.logits(ro.hidden)
    dense_r = torch.softmax(z, dim=1) - torch.nn.functional.one_hot(ro.targets, tiny_llama.vocab_size)
    torch.testing.assert_close(g_sparse, dense_r @ tiny_llama.readout_weight, **FLOAT64_TOL)


def test_support_rule_properties():
    torch.manual_seed(0)
    logits = torch.sort(torch.randn(200, 50) * 3, dim=1, descending=True).values.double()
    target_slot = torch.randint(0, 50, (200,))
    for rho in (0.3, 0.8, 0.92, 0.99):
        for min_l in (1, 4):
            keep = support_mask(logits, target_slot, rho, min_l)
            p = torch.softmax(logits, dim=1)
            assert keep[torch.arange(200), target_slot].all(), "y_t must be in S_t"
            assert (keep.sum(1) >= min_l).all()
            # the kept top prefix (ignoring a forced-in y_t) is the smallest prefix whose mass reaches rho
            cum = torch.cumsum(p, dim=1)
            smallest = (cum < rho).sum(dim=1) + 1  # number of leading items needed to reach rho
            expected_prefix = torch.maximum(smallest.clamp_max(50), torch.tensor(min_l))
            ranks = torch.arange(50)[None, :]
            prefix_mask = ranks < expected_prefix[:, None]
            forced = torch.zeros_like(keep)
            forced[torch.arange(200), target_slot] = True
            assert torch.equal(keep, prefix_mask | forced)


def test_target_outside_topk_is_forced_in(tiny_llama):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, k_max=2, min_top_l=1, rho_cum=0.5)
    ex = RiseExtractor(tiny_llama, cfg)
    ro = readout_forward(tiny_llama, ex.encode(CORPUS), cfg)
    assert ro.cand_idx.shape[1] == 2
    assert torch.equal(ro.cand_idx[torch.arange(len(ro.targets)), ro.target_slot], ro.targets)
    # every candidate row is sorted by descending logit, including rows where y_t took the last slot
    assert (ro.cand_logit[:, 0] >= ro.cand_logit[:, 1]).all()


def test_batched_equals_one_at_a_time_and_is_deterministic(tiny_lm):
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16, seed=3, center_hidden=True, hs_depth=1.0)
    ex = RiseExtractor(tiny_lm, cfg)
    samples = CORPUS + PAIRS
    ex.fit_hidden_mean(samples)
    batched = ex.extract(samples, batch_size=4)
    single = [ex.extract([s]) for s in samples]
    for i in range(len(samples)):
        # float64 throughout (sdpa attention): padding changes nothing beyond float64 rounding
        torch.testing.assert_close(batched.rh[i], single[i].rh[0], **FLOAT64_TOL)
        torch.testing.assert_close(batched.gh[i], single[i].gh[0], **FLOAT64_TOL)
        assert batched.n_counted[i] == single[i].n_counted[0]
    again = RiseExtractor(tiny_lm, cfg, hidden_mean=ex.hidden_mean).extract(samples, batch_size=2)
    torch.testing.assert_close(again.rh, batched.rh, **FLOAT64_TOL)


# float32 unit roundoff: eager attention rounds its softmax probabilities to float32 (relative error <= 2^-24 each).
FLOAT32_EPS = 2.0**-24


@pytest.mark.parametrize("arch", ["llama", "gpt-neox"])
def test_padding_invariance_under_float32_attention_softmax(arch):
    """Padding invariance where transformers' eager attention puts a float32 softmax inside a float64 model.

    A padded row and the same sample unpadded can then round differently (whether they do depends on the CPU's
    vector paths: they do under AVX-512 kernels, not under AVX2). The deviation is bounded by float32 rounding of
    the attention weights, carried through two layers; the tolerances below are that bound with a wide margin."""
    from conftest import make_lm

    from rise_core.samples import collate

    lm = make_lm(arch, attn="eager")
    samples = CORPUS + PAIRS
    ex = RiseExtractor(lm, RiseConfig(k_r=16, k_h=8, k_g=16, seed=3, center_hidden=False, hidden_channel=False))
    encoded = ex.encode(samples)
    batch = collate(encoded, lm.pad_id)
    with torch.no_grad():
        padded = lm.final_hidden(batch.input_ids, batch.attention_mask)
        for i, enc in enumerate(encoded):
            ids = torch.tensor([enc.input_ids])
            alone = lm.final_hidden(ids, torch.ones_like(ids))[0]
            # the mechanism: hidden states move by float32 rounding at most (measured <= 8e-8 relative under
            # AVX-512, 0 elsewhere); 100 eps covers its growth through 2 layers and the residual stream
            shift = (padded[i, : len(enc.input_ids)] - alone).abs().max() / alone.abs().max()
            assert shift <= 100 * FLOAT32_EPS, f"sample {i}: padded hidden state moved by {shift:.2e} (relative)"
    batched = ex.extract(samples, batch_size=4)
    for i, s in enumerate(samples):
        single = ex.extract([s])
        for name in ("rh", "gh"):
            a, b = getattr(batched, name)[i], getattr(single, name)[0]
            # features are smooth in h (softmax residuals times sketched h), so they move by the same relative
            # order as h: measured <= 3e-8 under AVX-512; bound it like h, relative to the feature's scale
            err = (a - b).abs().max() / b.abs().max()
            assert err <= 1000 * FLOAT32_EPS, f"sample {i} {name}: {err:.2e}"


def test_completion_only_counts_completion_tokens(tiny_llama):
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, counted_positions="completion")
    enc = RiseExtractor(tiny_llama, cfg).encode(PAIRS)
    for e, s in zip(enc, PAIRS, strict=False):
        n_completion = len(s.completion.split())
        assert e.n_counted == n_completion
        assert not any(e.counted[: e.n_prompt_tokens - 1])
    enc_all = RiseExtractor(tiny_llama, cfg.replace(counted_positions="all")).encode(PAIRS)
    assert all(e.n_counted == len(e.input_ids) - 1 for e in enc_all)


def test_token_sketches_sum_to_sample_features(tiny_llama):
    # outer composition: a token's sketched outer product of two unit vectors has norm 1 (checked below)
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16, token_norm=True, center_hidden=True, composition="outer", hs_depth=1.0)
    ex = RiseExtractor(tiny_llama, cfg)
    with pytest.raises(InputDataError, match="fit_hidden_mean"):
        ex.token_sketches(PAIRS[0])  # centring needs a mean: a single sample cannot provide one
    ex.fit_hidden_mean(CORPUS)
    ts = ex.token_sketches(PAIRS[0])
    feats = ex.extract([PAIRS[0]])
    torch.testing.assert_close(ts.rh.sum(dim=0), feats.rh[0], **FLOAT64_TOL)
    torch.testing.assert_close(ts.gh.sum(dim=0), feats.gh[0], **FLOAT64_TOL)
    torch.testing.assert_close(ts.hs.sum(dim=0), feats.hs[0], **FLOAT64_TOL)
    assert len(ts.tokens) == len(ex.encode([PAIRS[0]])[0].input_ids)
    # normalised per-token factors: each token's outer product of two unit vectors has norm 1
    torch.testing.assert_close(ts.rh.norm(dim=1), torch.ones(len(ts.positions), dtype=ts.rh.dtype), **FLOAT64_TOL)


def test_token_sketches_of_several_samples_equal_each_alone(tiny_llama, monkeypatch):
    """`token_sketches_many` (a query's hits explained together) gives each sample the sketches it gets alone: the
    passes are right-padded and every sketch is per position, so only float64 rounding of the larger products
    differs. Samples of similar length share a pass within the token budget; a longer one runs alone."""
    import rise_core.engine as engine

    ex = RiseExtractor(tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16, center_hidden=True, hs_depth=1.0))
    ex.fit_hidden_mean(CORPUS)
    samples = [*CORPUS, *PAIRS]
    lengths = [len(e.input_ids) for e in ex.encode(samples)]
    passes = []
    real = engine.readout_forward
    monkeypatch.setattr(engine, "readout_forward", lambda lm, enc, cfg: (passes.append(len(enc)), real(lm, enc, cfg))[1])
    many = ex.token_sketches_many(samples, max_tokens=4 * max(lengths))
    assert len(passes) < len(samples) and sum(passes) == len(samples)
    passes.clear()
    for sample, got in zip(samples, many, strict=True):
        want = ex.token_sketches(sample)
        assert (got.tokens, got.n_prompt_tokens) == (want.tokens, want.n_prompt_tokens)
        assert torch.equal(got.positions, want.positions) and torch.equal(got.support_size, want.support_size)
        for name in ("rh", "gh", "hs"):
            torch.testing.assert_close(getattr(got, name), getattr(want, name), **FLOAT64_TOL)
    assert passes == [1] * len(samples)


def test_length_groups_keep_each_pass_within_its_token_budget():
    from rise_core.engine import length_groups

    assert length_groups([30, 5, 10, 600, 8], 32) == [[1, 4, 2], [0], [3]]  # 3 x 10 <= 32; 600 alone
    assert length_groups([], 512) == [] and length_groups([7, 7], 14) == [[0, 1]]


def test_float32_model_gives_finite_features(tiny_llama_fp32):
    ex = RiseExtractor(tiny_llama_fp32, RiseConfig())
    ex.fit_hidden_mean(CORPUS)
    feats = ex.extract(CORPUS)
    assert feats.rh.dtype == torch.float32 and torch.isfinite(feats.rh).all() and torch.isfinite(feats.gh).all()
    assert feats.hs.dtype == torch.float32 and torch.isfinite(feats.hs).all()
    assert feats.rh.shape == (len(CORPUS), 64 * 24)


def test_bfloat16_model_tracks_float32():
    from conftest import make_lm

    lm32, lm16 = make_lm("llama", torch.float32), make_lm("llama", torch.bfloat16)
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16)
    ex32, ex16 = RiseExtractor(lm32, cfg), RiseExtractor(lm16, cfg)
    ex32.fit_hidden_mean(CORPUS)
    ex16.fit_hidden_mean(CORPUS)
    f32, f16 = ex32.extract(CORPUS), ex16.extract(CORPUS)
    assert f16.rh.dtype == torch.float32  # sketches are accumulated in float32 whatever the model dtype
    cos = torch.nn.functional.cosine_similarity(f16.gh, f32.gh, dim=1)
    assert (cos > 0.9).all(), cos


@pytest.mark.parametrize("changes", [dict(center_hidden=True, hidden_channel=False),
                                     dict(center_hidden=False, hidden_channel=True)])
def test_extract_refuses_to_fit_the_mean_on_what_it_is_given(tiny_llama, changes):
    """A config that needs the pool's mean refuses to extract before `fit_hidden_mean`: fitting on the first samples
    it sees would centre a pool on its queries. With the mean fitted, later extractions keep it."""
    ex = RiseExtractor(tiny_llama, RiseConfig(k_r=8, k_h=4, k_g=8, **changes))
    with pytest.raises(InputDataError, match="fit_hidden_mean"):
        ex.extract(CORPUS[:4])
    with pytest.raises(InputDataError, match="fit_hidden_mean"):
        ex.token_sketches(CORPUS[0])
    expected = ex.fit_hidden_mean(CORPUS[:4]).clone()
    first = ex.extract(CORPUS[:4])
    ex.extract(CORPUS[4:])
    torch.testing.assert_close(ex.hidden_mean, expected)
    torch.testing.assert_close(ex.extract(CORPUS[:4]).rh, first.rh)


def test_pool_mean_subset_is_a_seeded_random_sample(tiny_llama):
    """The mean is fitted on a seeded random subset of HIDDEN_MEAN_SAMPLES rows, not the first rows in file order
    (a label-sorted pool would bias it)."""
    from rise_core.config import HIDDEN_MEAN_SAMPLES, mean_fit_rows

    n = 3 * HIDDEN_MEAN_SAMPLES
    rows = mean_fit_rows(n, 42)
    assert len(rows) == len(set(rows)) == HIDDEN_MEAN_SAMPLES and rows == sorted(rows)
    assert rows == mean_fit_rows(n, 42) and rows != mean_fit_rows(n, 43)
    assert max(rows) >= HIDDEN_MEAN_SAMPLES  # not the first rows (a fixed seed: deterministic)
    assert mean_fit_rows(10, 42) == list(range(10))
    ex = RiseExtractor(tiny_llama, RiseConfig(k_r=8, k_h=4, k_g=8, seed=42))
    pool = [f"row {i}" for i in range(n)]
    assert ex.pool_mean_subset(pool) == [pool[i] for i in rows]
