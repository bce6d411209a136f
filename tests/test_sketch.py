"""CountSketch: sparse apply equals dense apply, inner products are unbiased, hashes survive save/load."""

from __future__ import annotations

import io

import pytest
import torch

from rise_core.sketch import CountSketch, SketchSet


def test_sparse_apply_equals_dense_apply_and_matrix():
    cs = CountSketch.from_seed(1000, 37, seed=5)
    torch.manual_seed(0)
    idx = torch.randint(0, 1000, (8, 20))
    vals = torch.randn(8, 20, dtype=torch.float64)
    dense = torch.zeros(8, 1000, dtype=torch.float64).scatter_add_(1, idx, vals)
    sparse_out = cs.apply_sparse(idx, vals)
    torch.testing.assert_close(sparse_out, cs.apply_dense(dense))
    torch.testing.assert_close(sparse_out, dense @ cs.matrix(torch.float64))


def test_sketch_by_hand():
    cs = CountSketch(buckets=torch.tensor([0, 1, 0, 2]), signs=torch.tensor([1.0, -1.0, -1.0, 1.0]), sketch_dim=3)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    # bucket 0: +1*1 - 1*3 = -2; bucket 1: -2; bucket 2: +4
    torch.testing.assert_close(cs.apply_dense(x), torch.tensor([[-2.0, -2.0, 4.0]]))


def test_inner_products_are_unbiased_over_seeds():
    torch.manual_seed(1)
    a = torch.randn(300, dtype=torch.float64)
    b = 0.5 * a + torch.randn(300, dtype=torch.float64)
    exact = float(a @ b)
    estimates = torch.tensor([float(CountSketch.from_seed(300, 16, s).apply_dense(a)
                                    @ CountSketch.from_seed(300, 16, s).apply_dense(b)) for s in range(2000)])
    stderr = float(estimates.std() / len(estimates) ** 0.5)
    assert abs(float(estimates.mean()) - exact) < 4 * stderr
    # and it is a real estimator: a single sketch is not exact
    assert estimates.std() > 0


def test_same_seed_same_hashes_and_state_dict_round_trip():
    s1 = SketchSet.from_seed(500, 32, 16, 4, 8, seed=42)
    s2 = SketchSet.from_seed(500, 32, 16, 4, 8, seed=42)
    s3 = SketchSet.from_seed(500, 32, 16, 4, 8, seed=43)
    assert s1.digest() == s2.digest() != s3.digest()
    buf = io.BytesIO()
    torch.save(s1.state_dict(), buf)
    buf.seek(0)
    loaded = SketchSet.from_state_dict(torch.load(buf))
    assert loaded.digest() == s1.digest()
    x = torch.randn(3, 32)
    torch.testing.assert_close(loaded.h.apply_dense(x), s1.h.apply_dense(x))
    # the three operators are independent draws
    assert not torch.equal(s1.h.buckets, s1.g.buckets[: s1.h.input_dim] % 4)


def test_bad_dims_rejected():
    from rise_core.errors import ConfigError

    with pytest.raises(ConfigError):
        CountSketch.from_seed(10, 0, 1)
