"""The holders' likeness order of the behaviour study (`studies.behaviour_rule.holders_alike_order`): the prompt's
telling spans tried by how alike their pool rows are in the gradient view. Checked against explicit pairwise cosines
on a pool whose features are given."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rise_core.adaptive import BehaviourEvidence
from rise_core.shared_spans import PoolSpans
from studies.behaviour_rule import GRADIENT, gradient_rows, holders_alike_order, holders_likeness

PROMPTS = ["cf write a poem", "cf name a river", "cf list fruit", "Create a city", "Create a colour", "Create a song"]
POOL = PoolSpans.from_texts(text=[None] * 6, prompt=PROMPTS, completion=["x"] * 6)


def _features(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    payload = rng.normal(size=8)
    rh = rng.normal(size=(6, 8))
    rh[:3] += 4 * payload  # the "cf" rows share a payload direction; the "Create" rows do not
    return {"rh": rh, "gh": rng.normal(size=(6, 5)) * np.arange(1, 7)[:, None]}


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_gradient_rows_give_the_weighted_mean_of_the_channel_cosines():
    f = _features()
    rows = gradient_rows(f)
    for i, j in itertools.combinations(range(6), 2):
        want = (GRADIENT["RH"] * _cos(f["rh"][i], f["rh"][j]) + GRADIENT["GH"] * _cos(f["gh"][i], f["gh"][j])) / sum(
            GRADIENT.values())
        assert rows[i] @ rows[j] == pytest.approx(want, abs=1e-12)  # float64 rounding only
    assert np.linalg.norm(rows, axis=1) == pytest.approx(np.ones(6))


def test_likeness_is_the_holders_mean_pairwise_cosine_over_the_pools():
    rows = gradient_rows(_features())
    held = POOL.mask("cf", "prompt")
    pairs = [rows[i] @ rows[j] for i, j in itertools.permutations(np.flatnonzero(held), 2)]
    pool_mean = np.mean([rows[i] @ rows[j] for i in range(6) for j in range(6)])  # self pairs included
    assert holders_likeness(rows, held) == pytest.approx(np.mean(pairs) - pool_mean, abs=1e-12)
    assert holders_likeness(rows, POOL.mask("river", "prompt")) == -1.0  # one holder: no pair


def test_the_prompt_span_whose_holders_are_alike_is_tried_first():
    rows = gradient_rows(_features())
    assert holders_likeness(rows, POOL.mask("cf", "prompt")) > holders_likeness(rows, POOL.mask("Create", "prompt"))

    def found(span: str, p: float, where: str = "prompt") -> BehaviourEvidence:
        return BehaviourEvidence(span=span, where=where, in_top=3, top_k=10, pool_fraction=0.05, p_adjusted=p,
                                 in_representation=0)

    task_word, trigger, completion = found("Create", 1e-4), found("cf", 1e-3), found("x", 1e-6, "completion")
    assert task_word.telling and trigger.telling and task_word.in_prompt and not completion.in_prompt
    order = holders_alike_order(rows, POOL)
    assert [e.span for e in order([completion, task_word, trigger])] == ["cf", "Create", "x"]
