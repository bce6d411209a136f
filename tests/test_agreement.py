"""Ranking agreement between methods: top-k overlap and rank correlations against hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rise_core.agreement import agreement_table, rank_correlation, top_k_indices, topk_overlap
from rise_core.errors import InputDataError


def test_topk_overlap_hand_computed():
    a = np.array([0.9, 0.8, 0.1, 0.5, 0.3])  # top-2: items 0, 1; top-3: 0, 1, 3
    b = np.array([0.7, 0.0, 0.6, 0.9, 0.2])  # top-2: items 3, 0; top-3: 3, 0, 2
    assert topk_overlap(a, b, 1) == 0.0
    assert topk_overlap(a, b, 2) == 0.5
    assert topk_overlap(a, b, 3) == pytest.approx(2 / 3)
    assert topk_overlap(a, b, 5) == 1.0 and topk_overlap(a, b, 50) == 1.0  # the whole pool
    assert topk_overlap(a, a * 10 - 3, 2) == 1.0  # only the order matters


def test_topk_overlap_ties_keep_pool_order():
    tied = np.array([1.0, 1.0, 1.0, 0.0])
    assert list(top_k_indices(tied, 2)) == [0, 1]
    assert topk_overlap(tied, np.array([0.0, 3.0, 2.0, 1.0]), 2) == 0.5  # {0, 1} vs {1, 2}
    assert topk_overlap(tied, np.array([5.0, 4.0, 0.0, 0.0]), 2) == 1.0


def test_topk_overlap_refuses_bad_input():
    with pytest.raises(InputDataError, match="positive integer"):
        topk_overlap([1.0, 2.0], [1.0, 2.0], 0)
    with pytest.raises(InputDataError, match="same length"):
        topk_overlap([1.0, 2.0], [1.0, 2.0, 3.0], 1)
    with pytest.raises(InputDataError, match="1-D"):
        topk_overlap(np.ones((2, 2)), np.ones((2, 2)), 1)


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_rank_correlation_identical_and_reversed(method):
    a = np.array([0.3, -1.0, 2.5, 0.0, 7.0])
    assert rank_correlation(a, 2 * a + 1, method) == pytest.approx(1.0)
    assert rank_correlation(a, -a, method) == pytest.approx(-1.0)


def test_rank_correlation_hand_computed():
    # one adjacent swap of four: sum d^2 = 2 -> rho = 1 - 6*2 / (4*15) = 0.8; 5 concordant, 1 discordant of 6 pairs
    assert rank_correlation([1, 2, 3, 4], [1, 3, 2, 4], "spearman") == pytest.approx(0.8)
    assert rank_correlation([1, 2, 3, 4], [1, 3, 2, 4], "kendall") == pytest.approx(4 / 6)


def test_rank_correlation_with_ties():
    # a ties its first two items: average ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4) -> Pearson of the ranks
    # = 4.5 / sqrt(4.5 * 5); Kendall tau-b: 5 concordant pairs, 1 pair tied in a only -> 5 / sqrt((6 - 1) * 6)
    a, b = [1.0, 1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]
    assert rank_correlation(a, b, "spearman") == pytest.approx(4.5 / math.sqrt(22.5))
    assert rank_correlation(a, b, "kendall") == pytest.approx(5 / math.sqrt(30))
    assert rank_correlation(a, b, "spearman") == pytest.approx(pd.Series(a).corr(pd.Series(b), method="spearman"))


def test_rank_correlation_undefined_and_unknown():
    assert math.isnan(rank_correlation([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))  # a constant ranking has no order
    assert math.isnan(rank_correlation([1.0], [2.0], "kendall"))
    with pytest.raises(InputDataError, match="spearman, kendall"):
        rank_correlation([1, 2], [1, 2], "pearson")  # type: ignore[arg-type]


def test_agreement_table_one_row_per_other_method():
    ref = np.array([4.0, 3.0, 2.0, 1.0])
    table = agreement_table({"RISE": ref, "same": ref * 2, "reversed": -ref, "swap": np.array([3.0, 4.0, 2.0, 1.0])},
                            reference="RISE", k=2)
    assert list(table.index) == ["same", "reversed", "swap"] and table.index.name == "method"
    assert list(table.columns) == ["top2_overlap", "spearman", "kendall"]
    assert table.loc["same"].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert table.loc["reversed"].tolist() == pytest.approx([0.0, -1.0, -1.0])
    assert table.loc["swap"].tolist() == pytest.approx([1.0, 0.8, 4 / 6])


def test_agreement_table_averages_per_query():
    ref = np.array([[4.0, 3.0, 2.0, 1.0], [1.0, 2.0, 3.0, 4.0]])
    other = np.array([[4.0, 3.0, 2.0, 1.0], [4.0, 3.0, 2.0, 1.0]])  # agrees on query 1, reversed on query 2
    row = agreement_table({"ref": ref, "other": other}, "ref", k=1).loc["other"]
    assert row.tolist() == pytest.approx([0.5, 0.0, 0.0])
    # a query where a method is constant has no correlation: the mean is over the other queries
    flat = np.array([[4.0, 3.0, 2.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    row = agreement_table({"ref": ref, "flat": flat}, "ref", k=1).loc["flat"]
    assert row["spearman"] == pytest.approx(1.0) and row["top1_overlap"] == pytest.approx(0.5)


def test_agreement_table_refusals():
    with pytest.raises(InputDataError, match="reference"):
        agreement_table({"a": np.ones(3)}, "RISE", 1)
    with pytest.raises(InputDataError, match="shape"):
        agreement_table({"RISE": np.ones((2, 3)), "b": np.ones(3)}, "RISE", 1)
    assert agreement_table({"RISE": np.arange(3.0)}, "RISE", 1).empty
