"""The blocked vocabulary pass (`rise_core.vocab_pass`) against the dense reference: one logits matrix, torch.topk and
logsumexp. Float64 throughout, so the only difference is the order of additions (blocked vs one matmul, per-block
sums combined vs one sum): a few ulps of the logits' magnitude, far inside the tolerances below."""

from __future__ import annotations

import pytest
import torch

from rise_core.config import RiseConfig
from rise_core.engine import RiseExtractor, readout_forward
from rise_core.vocab_pass import dense_vocab_pass, vocab_pass

# float64 rounding of sums over <= 50k terms of magnitude <= ~50: well under 1e-9
TOL = dict(rtol=1e-10, atol=1e-9)


def _case(vocab: int, d: int = 12, n: int = 40, seed: int = 0, integer: bool = False, bias: bool = True):
    g = torch.Generator().manual_seed(seed)
    if integer:  # small integer logits: many exact ties, at the top-C boundary too
        weight = torch.randint(-2, 3, (vocab, d), generator=g).double()
        hidden = torch.randint(-1, 2, (n, d), generator=g).double()
    else:
        weight = torch.randn(vocab, d, generator=g, dtype=torch.float64) * 2
        hidden = torch.randn(n, d, generator=g, dtype=torch.float64)
    b = torch.randn(vocab, generator=g, dtype=torch.float64) if bias and not integer else None
    targets = torch.randint(0, vocab, (n,), generator=g)
    return hidden, weight, b, targets


def _check(got, ref, hidden, weight, bias, tau):
    torch.testing.assert_close(got.values, ref.values, **TOL)
    z = (hidden @ weight.T + (0 if bias is None else bias)) / tau
    # the ids name those values (equal logits may be named in either order) and no id twice
    torch.testing.assert_close(z.gather(1, got.ids), got.values, **TOL)
    assert all(len(set(row.tolist())) == len(row) for row in got.ids)
    assert (got.values[:, :-1] >= got.values[:, 1:]).all()
    for name in ("lse", "p_sq_sum", "target_logit", "lse_untempered"):
        torch.testing.assert_close(getattr(got, name), getattr(ref, name), **TOL)


@pytest.mark.parametrize("vocab,c,tau,block,group", [
    (5000, 16, 1.0, 1024, 8),    # pruned by group maxima, last block padded
    (5003, 37, 0.7, 512, 8),     # a temperature; the vocabulary not a multiple of the group
    (4096, 64, 1.0, 1024, 16),   # whole blocks, no padding
    (777, 5, 2.0, 100, 4),       # a block that is not a multiple of the group is rounded up
    (300, 40, 1.0, 1024, 8),     # too few groups to prune: plain top-K over the vocabulary
    (50, 50, 1.0, 1024, 8),      # C = V
])
def test_equals_the_dense_reference(vocab, c, tau, block, group):
    hidden, weight, bias, targets = _case(vocab)
    got = vocab_pass(hidden, weight, bias, targets, c, tau, torch.float64, block=block, group=group)
    ref = dense_vocab_pass(hidden, weight, bias, targets, c, tau, torch.float64)
    assert torch.equal(got.ids.sort(dim=1).values, ref.ids.sort(dim=1).values)  # no ties: the same candidates
    _check(got, ref, hidden, weight, bias, tau)


@pytest.mark.parametrize("c", [3, 20])
def test_ties_at_the_boundary_give_the_same_top_values(c):
    hidden, weight, bias, targets = _case(2000, integer=True, seed=1)
    got = vocab_pass(hidden, weight, bias, targets, c, 1.0, torch.float64, block=256, group=8)
    ref = dense_vocab_pass(hidden, weight, bias, targets, c, 1.0, torch.float64)
    _check(got, ref, hidden, weight, bias, 1.0)


def test_the_reused_buffer_never_leaks_into_results():
    hidden, weight, bias, targets = _case(3000)
    first = vocab_pass(hidden, weight, bias, targets, 10, dtype=torch.float64)
    kept = [t.clone() for t in (first.values, first.ids, first.lse, first.target_logit)]
    small = _case(1200, seed=5)  # another shape through the same thread's buffer
    vocab_pass(*small, 10, dtype=torch.float64)
    for before, after in zip(kept, (first.values, first.ids, first.lse, first.target_logit), strict=True):
        assert torch.equal(before, after)


def test_bad_c_is_refused():
    hidden, weight, bias, targets = _case(100)
    with pytest.raises(ValueError, match="c must be in 1..100"):
        vocab_pass(hidden, weight, bias, targets, 0)


@pytest.mark.parametrize("tau", [1.0, 0.5])
def test_readout_forward_matches_the_dense_computation(tiny_lm, tau):
    """Candidates, logits, logsumexp, sum p^2 and loss of a real (tiny) model's readout, with a K_max small enough
    that the group-maximum pruning runs, against the dense logits of the same hidden states."""
    cfg = RiseConfig(k_r=8, k_h=4, k_g=8, k_max=3, min_top_l=1, rho_cum=0.5, tau=tau)
    ex = RiseExtractor(tiny_lm, cfg)
    ro = readout_forward(tiny_lm, ex.encode(["the cat sat on the mat", "a dog ran in the park today"]), cfg)
    assert tiny_lm.vocab_size >= 2 * 8 * 3  # enough groups of 8 to prune to the top 3
    z = tiny_lm.logits(ro.hidden).double()
    torch.testing.assert_close(ro.lse, torch.logsumexp(z / tau, dim=1), **TOL)
    torch.testing.assert_close(ro.p_sq_sum, torch.softmax(z / tau, dim=1).square().sum(dim=1), **TOL)
    torch.testing.assert_close(ro.nll, torch.logsumexp(z, dim=1) - z.gather(1, ro.targets[:, None])[:, 0], **TOL)
    top = torch.topk(z / tau, 3, dim=1)
    inside = (top.indices == ro.targets[:, None]).any(dim=1)  # where y_t is outside, it took the last slot
    torch.testing.assert_close(ro.cand_logit[inside], top.values[inside], **TOL)
    torch.testing.assert_close(ro.cand_logit[~inside, :2], top.values[~inside, :2], **TOL)
    torch.testing.assert_close(ro.cand_logit, (z / tau).gather(1, ro.cand_idx), **TOL)
