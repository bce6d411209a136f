"""The pass over the vocabulary at each counted position: the top-C logits and the full-vocabulary sums.

RISE needs, per position, the C largest logits (the residual's candidates) and two sums over the whole vocabulary
(logsumexp and sum of p^2). Done plainly (`dense_vocab_pass`), that is a (positions, V) logits matrix written to
memory, a top-K over it and several exp/sum passes over it, each one a trip through memory: on this 2-core CPU
about 8% of SmolLM2's forward pass (V = 49152), on top of the 19% the head's matmul costs.

`vocab_pass` forms the logits in vocabulary blocks of `block` columns instead, each block a contiguous tile of one
reused buffer that the matmul writes in place, so the tile is still in cache when its sums and maxima are taken:

- **Sums.** Per block, the row maximum m_b, s_b = sum exp(z - m_b) and q_b = sum exp(2 (z - m_b)); then
  lse = M + log(sum_b s_b e^(m_b - M)) and sum p^2 = sum_b q_b e^(2 (m_b - M)) / (sum_b s_b e^(m_b - M))^2, with
  M = max_b m_b. Exact up to float rounding (the order of the additions differs from one pass over the row).
- **Top-C by group maxima.** The columns of a block fall into groups of `group` (strided, so the maxima are one
  vectorised elementwise max). The C-th largest group maximum is at most the C-th largest logit (C distinct groups
  each hold an element at least that large), so every top-C logit lies in one of the C groups with the largest
  maxima: a top-K over the V / group maxima, then over the C * group logits of those groups, gives the exact top C
  (up to the order of equal logits) for a fraction of a top-K over V.

`benchmarks/vocab_pass.py` times both and chose the block and group sizes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

VOCAB_BLOCK = 1024
"""vocabulary columns per logits block: a (512, 1024) float32 tile is 2 MB, in cache for its sums. Chosen by
`benchmarks/vocab_pass.py` on SmolLM2 (V = 49152): 1024 was the fastest of 1024, 2048 and 4096."""
GROUP = 8
"""columns per group maximum: 8 was faster than 4, 16 and 32 in the same benchmark."""

_local = threading.local()


def workspace(numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A reusable flat buffer of at least `numel` elements (per thread; on CPU only, where a fresh 100 MB tensor is
    page-faulted in on every call, which costs as much as the sums)."""
    if device.type != "cpu":
        return torch.empty(numel, dtype=dtype, device=device)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get(dtype)
    if buf is None or buf.numel() < numel:
        buf = buffers[dtype] = torch.empty(numel, dtype=dtype)
    return buf[:numel]


def release_workspace() -> None:
    """Drop this thread's buffer (`rise bench` does, so its peak memory counts the buffer being made)."""
    _local.__dict__.pop("buffers", None)


@dataclass
class VocabPass:
    """Per row: the top-C logits (descending) and their ids, logsumexp and sum of softmax^2 over the vocabulary,
    the target's logit, and logsumexp of the logits before the temperature (equal to lse when tau = 1)."""

    values: torch.Tensor  # (n, C)
    ids: torch.Tensor  # (n, C) long
    lse: torch.Tensor  # (n,)
    p_sq_sum: torch.Tensor  # (n,)
    target_logit: torch.Tensor  # (n,)
    lse_untempered: torch.Tensor  # (n,)


def _block_sums(z: torch.Tensor, row_max: torch.Tensor, scratch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """sum exp(z - m) and sum exp(2 (z - m)) per row, in `scratch` (z's shape)."""
    torch.sub(z, row_max, out=scratch)
    scratch.exp_()
    total = scratch.sum(dim=1)
    return total, scratch.square_().sum(dim=1)


def _combine(maxima: torch.Tensor, totals: torch.Tensor, squares: torch.Tensor | None
             ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """logsumexp (and sum p^2) over the whole row from per-block maxima and sums, (n, n_blocks) each."""
    top = maxima.amax(dim=1, keepdim=True)
    scale = (maxima - top).exp()
    total = (totals * scale).sum(dim=1)
    lse = top[:, 0] + total.log()
    if squares is None:
        return lse, None
    return lse, (squares * scale.square()).sum(dim=1) / total.square()


@torch.no_grad()
def vocab_pass(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor, c: int,
               tau: float = 1.0, dtype: torch.dtype = torch.float32, block: int = VOCAB_BLOCK, group: int = GROUP
               ) -> VocabPass:
    """The top-`c` logits of z = (W h + b) / tau per row of `hidden` (n, d), with the full-vocabulary sums; W (V, d).

    Logits are computed in the weight's dtype and summed in `dtype`. `block` is rounded up to a multiple of `group`;
    the vocabulary is padded to whole blocks with -inf logits, which no sum or top-C sees."""
    n, vocab = hidden.shape[0], weight.shape[0]
    if not 1 <= c <= vocab:
        raise ValueError(f"c must be in 1..{vocab}, got {c}")
    dev = hidden.device
    block = max(group, -(-min(block, vocab) // group) * group)
    n_blocks = -(-vocab // block)
    per_group = block // group  # a group's columns are `per_group` apart within its block
    # block-major: block b's logits are one contiguous (n, block) tile, written by the matmul in place
    z = workspace(n_blocks * n * block, dtype, dev).view(n_blocks, n, block)
    sums = torch.empty((5, n, n_blocks), dtype=dtype, device=dev)  # maxima, sums, squares; then at tau 1
    group_max = torch.empty((n, n_blocks, per_group), dtype=dtype, device=dev)
    scratch = torch.empty((n, block), dtype=dtype, device=dev)
    direct = weight.dtype == dtype and hidden.dtype == dtype
    for b in range(n_blocks):
        start, stop = b * block, min(vocab, (b + 1) * block)
        zb = z[b]
        w = weight[start:stop].T
        if direct and stop - start == block:
            if bias is None:
                torch.mm(hidden, w, out=zb)
            else:
                torch.addmm(bias[start:stop], hidden, w, out=zb)
        else:
            logits = hidden @ w
            zb[:, :stop - start] = logits if bias is None else logits + bias[start:stop]
            zb[:, stop - start:] = -torch.inf
        if tau != 1.0:
            m1 = zb.amax(dim=1, keepdim=True)
            sums[3, :, b], sums[4, :, b] = m1[:, 0], _block_sums(zb, m1, scratch)[0]
            zb.div_(tau)
        gm = torch.amax(zb.view(n, group, per_group), dim=1, out=group_max[:, b])
        m = gm.amax(dim=1, keepdim=True)
        sums[0, :, b] = m[:, 0]
        sums[1, :, b], sums[2, :, b] = _block_sums(zb, m, scratch)
    lse, p_sq = _combine(sums[0], sums[1], sums[2])
    lse1 = lse if tau == 1.0 else _combine(sums[3], sums[4], None)[0]
    rows = torch.arange(n, device=dev)[:, None]
    flat = z.view(-1)

    def at(column: torch.Tensor) -> torch.Tensor:
        """Position in the block-major buffer of vocabulary column `column` (n, k) of each row."""
        return ((column // block) * n + rows) * block + column % block

    if n_blocks * per_group >= 2 * c:
        top = torch.topk(group_max.view(n, -1), c, dim=1, sorted=False).indices  # group id: block * per_group + j
        first = (top // per_group) * block + top % per_group  # the group's first column
        cols = (first[:, :, None] + per_group * torch.arange(group, device=dev)).reshape(n, -1)
        values, pick = torch.topk(flat[at(cols)], c, dim=1)
        ids = cols.gather(1, pick)
    else:
        cols = torch.arange(vocab, device=dev).expand(n, vocab)
        values, ids = torch.topk(flat[at(cols)], c, dim=1)
    target_logit = flat[at(targets[:, None])][:, 0]
    return VocabPass(values=values, ids=ids, lse=lse, p_sq_sum=p_sq, target_logit=target_logit, lse_untempered=lse1)


@torch.no_grad()
def dense_vocab_pass(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                     c: int, tau: float = 1.0, dtype: torch.dtype = torch.float32) -> VocabPass:
    """The reference for `vocab_pass`, and the extraction's pass before it: one (n, V) logits matrix, `torch.topk`
    over it, then one in-place exp pass for the sums (the tests and `benchmarks/vocab_pass.py` compare against it)."""
    z = (hidden @ weight.T if bias is None else hidden @ weight.T + bias).to(dtype)
    lse1 = torch.logsumexp(z, dim=1) if tau != 1.0 else None
    if tau != 1.0:
        z.div_(tau)
    target_logit = z.gather(1, targets[:, None])[:, 0]
    values, ids = torch.topk(z, c, dim=1)
    row_max = values[:, :1].clone()
    total = z.sub_(row_max).exp_().sum(dim=1)
    lse = row_max[:, 0] + total.log()
    p_sq = z.square_().sum(dim=1) / total.square()
    return VocabPass(values=values, ids=ids, lse=lse, p_sq_sum=p_sq, target_logit=target_logit,
                     lse_untempered=lse if lse1 is None else lse1)
