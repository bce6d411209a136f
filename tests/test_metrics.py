"""Ranking metrics: small cases computed by hand, edge cases, and cross-checks against brute force."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pandas as pd
import pytest

from rise_core.errors import InputDataError
from rise_core.metrics import (
    METRICS,
    EvalResult,
    auprc_at_k,
    auroc_at_k,
    average_precision,
    evaluate_rankings,
    extremes_at_k,
    precision_at_k,
    rank_order,
    roc_auc,
)

# scores 6..1 over a pool whose labels in rank order are [1, 0, 0, 1, 0, 1]
SCORES6 = np.array([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
LABELS6 = np.array([1, 0, 0, 1, 0, 1])


# ---------------------------------------------------------------- average precision


def test_ap_by_hand():
    # ranking [1, 0, 1, 0]: positives at ranks 1 and 3 -> AP = (1/1 + 2/3) / 2
    assert average_precision(np.array([4.0, 3.0, 2.0, 1.0]), np.array([1, 0, 1, 0])) == pytest.approx((1 + 2 / 3) / 2)
    # ranking [0, 1, 0, 0, 1]: positives at ranks 2 and 5 -> AP = (1/2 + 2/5) / 2 = 0.45
    assert average_precision(np.array([0.9, 0.8, 0.7, 0.6, 0.5]), np.array([0, 1, 0, 0, 1])) == pytest.approx(0.45)
    # ranking [1, 0, 0, 1, 0, 1] -> AP = (1/1 + 2/4 + 3/6) / 3 = 2/3
    assert average_precision(SCORES6, LABELS6) == pytest.approx(2 / 3)


def test_ap_order_of_input_does_not_matter():
    # same items as [1, 0, 1, 0] ranked by score, listed in another order -> still (1 + 2/3) / 2
    assert average_precision(np.array([2.0, 4.0, 1.0, 3.0]), np.array([1, 1, 0, 0])) == pytest.approx((1 + 2 / 3) / 2)


def test_ap_ties():
    scores, labels = np.array([1.0, 1.0, 0.0]), np.array([1, 0, 0])
    # pessimistic: inside the tie the negative comes first -> ranking [0, 1, 0] -> AP = 1/2
    assert average_precision(scores, labels) == pytest.approx(0.5)
    # stable: pool order inside the tie -> ranking [1, 0, 0] -> AP = 1
    assert average_precision(scores, labels, ties="stable") == pytest.approx(1.0)
    # a constant scorer: pessimistic ranking [0, 0, 1, 1] -> AP = (1/3 + 2/4) / 2 = 5/12 ...
    const, lab = np.zeros(4), np.array([1, 0, 1, 0])
    assert average_precision(const, lab) == pytest.approx(5 / 12)
    # ... whatever the pool order; stable keeps pool order [1, 0, 1, 0] -> (1 + 2/3) / 2
    assert average_precision(const, lab[::-1].copy()) == pytest.approx(5 / 12)
    assert average_precision(const, lab, ties="stable") == pytest.approx((1 + 2 / 3) / 2)


def test_ap_no_positive_is_nan():
    assert math.isnan(average_precision(np.array([3.0, 2.0, 1.0]), np.array([0, 0, 0])))


def test_ap_bool_labels_and_single_item():
    assert average_precision(np.array([0.5, 0.1]), np.array([False, True])) == pytest.approx(0.5)  # [0, 1] -> 1/2
    assert average_precision(np.array([0.3]), np.array([1])) == 1.0


def test_ap_matches_sklearn_without_ties():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores = rng.normal(size=40)  # continuous: no ties, so every tie rule agrees with sklearn
        labels = rng.integers(0, 2, size=40)
        if labels.sum() == 0:
            continue
        expected = sklearn_metrics.average_precision_score(labels, scores)
        assert average_precision(scores, labels) == pytest.approx(expected)
        assert average_precision(scores, labels, ties="stable") == pytest.approx(expected)


# ---------------------------------------------------------------- ROC AUC


def test_roc_auc_by_hand():
    # pos {0.9, 0.7}, neg {0.8, 0.6}: pairs (0.9>0.8) (0.9>0.6) (0.7<0.8) (0.7>0.6) -> 3/4
    assert roc_auc(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 1, 0])) == pytest.approx(0.75)


def test_roc_auc_ties_by_hand():
    # pos {2, 1}, neg {1, 0}: (2>1) (2>0) (1=1 -> 1/2) (1>0) -> 3.5/4
    # via ranks: ascending 0 -> 1, the two 1s -> 2.5 each, 2 -> 4; pos rank sum 6.5 - 2*3/2 = 3.5; / (2*2)
    assert roc_auc(np.array([2.0, 1.0, 1.0, 0.0]), np.array([1, 1, 0, 0])) == pytest.approx(0.875)
    # all equal -> every pair is a tie -> 1/2
    assert roc_auc(np.ones(5), np.array([1, 0, 1, 0, 0])) == pytest.approx(0.5)


def test_roc_auc_one_class_is_nan():
    assert math.isnan(roc_auc(np.array([1.0, 2.0]), np.array([0, 0])))
    assert math.isnan(roc_auc(np.array([1.0, 2.0]), np.array([1, 1])))


def _brute_force_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    total = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in product(pos, neg))
    return total / (len(pos) * len(neg))


def test_roc_auc_matches_brute_force_with_ties():
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 30))
        scores = rng.integers(0, 4, size=n).astype(float)  # few distinct values: many ties
        labels = rng.integers(0, 2, size=n)
        if labels.min() == labels.max():
            assert math.isnan(roc_auc(scores, labels))
            continue
        assert roc_auc(scores, labels) == pytest.approx(_brute_force_auc(scores, labels)), seed


def test_roc_auc_matches_sklearn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 6, size=200).astype(float)
    labels = rng.integers(0, 2, size=200)
    assert roc_auc(scores, labels) == pytest.approx(sklearn_metrics.roc_auc_score(labels, scores))


# ---------------------------------------------------------------- precision@K


def test_precision_at_k_by_hand():
    scores, labels = np.array([5.0, 4.0, 3.0, 2.0, 1.0]), np.array([1, 0, 1, 1, 0])
    assert precision_at_k(scores, labels, 1) == 1.0  # [1]
    assert precision_at_k(scores, labels, 2) == 0.5  # [1, 0]
    assert precision_at_k(scores, labels, 3) == pytest.approx(2 / 3)  # [1, 0, 1]
    assert precision_at_k(scores, labels, 10) == pytest.approx(3 / 5)  # K > N: all 5 items, denominator N


def test_precision_at_k_tie_at_boundary():
    scores, labels = np.array([3.0, 2.0, 2.0, 1.0]), np.array([0, 1, 0, 1])
    # top 2: the 3, then one of the two 2s; pessimistic takes the negative -> [0, 0] -> 0
    assert precision_at_k(scores, labels, 2) == 0.0
    # stable takes the earlier one in the pool (the positive) -> [0, 1] -> 1/2
    assert precision_at_k(scores, labels, 2, ties="stable") == 0.5


# ---------------------------------------------------------------- extremes, auPRC@K, auROC@K


def test_extremes_k1():
    s, y = extremes_at_k(SCORES6, LABELS6, 1)  # top 1 = score 6, bottom 1 = score 1
    np.testing.assert_array_equal(s, [6.0, 1.0])
    np.testing.assert_array_equal(y, [1, 1])
    # ranked [1, 1] -> AP = (1/1 + 2/2) / 2 = 1; one class only -> AUC undefined
    assert auprc_at_k(SCORES6, LABELS6, 1) == 1.0
    assert math.isnan(auroc_at_k(SCORES6, LABELS6, 1))


def test_extremes_k2_by_hand():
    s, y = extremes_at_k(SCORES6, LABELS6, 2)
    np.testing.assert_array_equal(s, [6.0, 5.0, 2.0, 1.0])
    np.testing.assert_array_equal(y, [1, 0, 0, 1])
    # ranked [1, 0, 0, 1] -> AP = (1/1 + 2/4) / 2 = 0.75
    assert auprc_at_k(SCORES6, LABELS6, 2) == pytest.approx(0.75)
    # pos {6, 1}, neg {5, 2}: (6>5) (6>2) (1<5) (1<2) -> 2/4
    assert auroc_at_k(SCORES6, LABELS6, 2) == pytest.approx(0.5)


@pytest.mark.parametrize("k", [3, 4, 100])
def test_extremes_k_at_least_half_uses_every_item_once(k):
    # 2K >= N = 6: all items, each once, in rank order
    s, y = extremes_at_k(SCORES6, LABELS6, k)
    np.testing.assert_array_equal(s, SCORES6)
    np.testing.assert_array_equal(y, LABELS6)
    # ranked [1, 0, 0, 1, 0, 1] -> AP = (1/1 + 2/4 + 3/6) / 3 = 2/3
    assert auprc_at_k(SCORES6, LABELS6, k) == pytest.approx(2 / 3)
    # pos {6, 3, 1} vs neg {5, 4, 2}: 6 beats 3, 3 beats 1 (the 2), 1 beats 0 -> 4/9
    assert auroc_at_k(SCORES6, LABELS6, k) == pytest.approx(4 / 9)


def test_extremes_in_rank_order_from_shuffled_pool():
    perm = np.array([3, 0, 5, 1, 4, 2])
    s, y = extremes_at_k(SCORES6[perm], LABELS6[perm], 2)
    np.testing.assert_array_equal(s, [6.0, 5.0, 2.0, 1.0])
    np.testing.assert_array_equal(y, [1, 0, 0, 1])


def test_positives_only_in_the_middle():
    labels = np.array([0, 0, 1, 1, 0, 0])
    # K=2 extremes hold labels [0, 0, 0, 0]: the pool has positives but the scorer surfaced none -> 0, not nan
    assert auprc_at_k(SCORES6, labels, 2) == 0.0
    assert math.isnan(auroc_at_k(SCORES6, labels, 2))  # one class among the extremes
    assert precision_at_k(SCORES6, labels, 2) == 0.0


def test_all_negative_pool():
    labels = np.zeros(6, dtype=int)
    assert math.isnan(average_precision(SCORES6, labels))
    assert math.isnan(roc_auc(SCORES6, labels))
    assert math.isnan(auprc_at_k(SCORES6, labels, 2))
    assert math.isnan(auroc_at_k(SCORES6, labels, 2))
    assert precision_at_k(SCORES6, labels, 2) == 0.0


def test_perfect_and_reversed_scorer():
    rng = np.random.default_rng(3)
    labels = rng.permutation(np.r_[np.ones(7, dtype=int), np.zeros(23, dtype=int)])
    perfect = labels + rng.uniform(0, 0.5, size=labels.size)  # every positive above every negative
    for k in (1, 3, 7, 15, 40):
        assert auprc_at_k(perfect, labels, k) == 1.0
        assert auroc_at_k(perfect, labels, k) == 1.0
        assert auroc_at_k(-perfect, labels, k) == 0.0
    assert average_precision(perfect, labels) == 1.0
    assert roc_auc(-perfect, labels) == 0.0
    assert precision_at_k(perfect, labels, 7) == 1.0
    assert precision_at_k(-perfect, labels, 7) == 0.0


# ---------------------------------------------------------------- evaluate_rankings / EvalResult


def test_evaluate_rankings_by_hand():
    # query A = SCORES6 (values worked out above):
    #   K=1: auPRC 1, auROC nan, P@1 1;  K=2: auPRC 0.75, auROC 0.5, P@2 1/2;  AP 2/3
    # query B ranks the three positives (idx 0, 3, 5) above the three negatives (tied at 0):
    #   K=1: extremes [1, 0] -> auPRC 1, auROC 1, P@1 1;  K=2: [1, 1, 0, 0] -> auPRC 1, auROC 1, P@2 1;  AP 1
    score_matrix = np.vstack([SCORES6, [3.0, 0.0, 0.0, 2.0, 0.0, 1.0]])
    table = evaluate_rankings(score_matrix, LABELS6, ks=[1, 2])
    assert list(table["K"]) == [1, 2]
    k1, k2 = table.iloc[0], table.iloc[1]
    assert k1["auPRC"] == pytest.approx(1.0)  # (1 + 1) / 2
    assert k1["auROC"] == pytest.approx(1.0)  # only B is defined
    assert k1["n_undefined_auROC"] == 1
    assert k1["precision@K"] == pytest.approx(1.0)
    assert k2["auPRC"] == pytest.approx(0.875)  # (0.75 + 1) / 2
    assert k2["auROC"] == pytest.approx(0.75)  # (0.5 + 1) / 2
    assert k2["n_undefined_auROC"] == 0
    assert k2["precision@K"] == pytest.approx(0.75)  # (0.5 + 1) / 2
    assert list(table["AP"]) == pytest.approx([5 / 6, 5 / 6])  # (2/3 + 1) / 2 on every row
    assert list(table["n_queries"]) == [2, 2]
    assert (table[["n_undefined_auPRC", "n_undefined_precision@K", "n_undefined_AP"]] == 0).all().all()


def test_evaluate_rankings_all_undefined_and_column_layout():
    table = evaluate_rankings(np.array([[3.0, 2.0, 1.0]]), np.zeros(3, dtype=int), ks=[1])
    expected_columns = ["K", *METRICS] + [f"n_undefined_{m}" for m in METRICS] + ["n_queries"]
    assert list(table.columns) == expected_columns
    row = table.iloc[0]
    assert math.isnan(row["auPRC"]) and math.isnan(row["auROC"]) and math.isnan(row["AP"])
    assert row["precision@K"] == 0.0
    assert row["n_undefined_auPRC"] == row["n_undefined_auROC"] == row["n_undefined_AP"] == 1


def test_evaluate_rankings_agrees_with_single_query_functions():
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, size=50)
    matrix = rng.integers(0, 10, size=(6, 50)).astype(float)  # with ties
    ks = [1, 5, 25, 60]
    result = EvalResult.from_scores(matrix, labels, ks)
    pd.testing.assert_frame_equal(result.table, evaluate_rankings(matrix, labels, ks))
    for k in ks:
        expected = {
            "auPRC": np.nanmean([auprc_at_k(q, labels, k) for q in matrix]),
            "auROC": np.nanmean([auroc_at_k(q, labels, k) for q in matrix]),
            "precision@K": np.mean([precision_at_k(q, labels, k) for q in matrix]),
            "AP": np.mean([average_precision(q, labels) for q in matrix]),
        }
        for metric, value in expected.items():
            assert result.value(metric, k) == pytest.approx(value), (metric, k)
            assert result.as_dict()[(metric, k)] == pytest.approx(value)
    assert len(result.per_query) == 6 * len(ks)
    # a subset of the queries: the table of those rows alone
    mask = np.array([True, False, False, True, True, False])
    pd.testing.assert_frame_equal(result.of_queries(mask), evaluate_rankings(matrix[mask], labels, ks))


def test_evaluate_rankings_repeated_k_counted_once():
    table = evaluate_rankings(np.array([SCORES6]), LABELS6, ks=[2, 2, 1])
    assert list(table["K"]) == [2, 1]
    assert list(table["n_queries"]) == [1, 1]


# ---------------------------------------------------------------- input checks


@pytest.mark.parametrize(
    "call",
    [
        lambda: average_precision(np.array([1.0, np.nan]), np.array([1, 0])),
        lambda: average_precision(np.array([1.0, 2.0]), np.array([1, 0, 1])),
        lambda: average_precision(np.array([1.0, 2.0]), np.array([1, 2])),
        lambda: average_precision(np.array([]), np.array([])),
        lambda: precision_at_k(SCORES6, LABELS6, 0),
        lambda: extremes_at_k(SCORES6, LABELS6, -1),
        lambda: rank_order(SCORES6, LABELS6, ties="optimistic"),
        lambda: evaluate_rankings(SCORES6, LABELS6, ks=[1]),  # 1-D matrix
        lambda: evaluate_rankings(np.array([SCORES6]), LABELS6[:5], ks=[1]),
        lambda: evaluate_rankings(np.array([SCORES6]), LABELS6, ks=[]),
        lambda: EvalResult.from_scores(np.array([SCORES6]), LABELS6, ks=[1]).value("MRR", 1),
        lambda: EvalResult.from_scores(np.array([SCORES6]), LABELS6, ks=[1]).value("AP", 5),
    ],
)
def test_bad_inputs_raise(call):
    with pytest.raises(InputDataError):
        call()
