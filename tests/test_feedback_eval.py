"""The simulated analyst's evaluation (rise_core.feedback_eval) over every method with the feedback capability, on a
tiny task, against the numbers recorded before feedback became a capability of the registry's methods (#33).

Recorded by running this file with RISE_RECORD_FEEDBACK_EVAL=1. Tolerance 1e-9 on auPRC@k: a ranking change moves
it by at least 1/k of a step; float noise in the scores that does not reorder rows leaves it exact."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from index_helpers import pool_rows

from rise_core.config import RiseConfig, ScoreOptions
from rise_core.evaluation import Task
from rise_core.feedback_eval import feedback_curves
from rise_core.readout_cache import ReadoutCache, grad_sketch_dim
from rise_core.samples import Sample

RECORDED = Path(__file__).parent / "data" / "feedback_curves.csv"
RECORD = bool(os.environ.get("RISE_RECORD_FEEDBACK_EVAL"))
CFG = RiseConfig(k_r=16, k_h=8, k_g=16, hidden_channel=True, hs_depth=1.0)  # the HS layer the values were recorded with
QUERIES = [Sample(prompt="what did the cat do ?", completion="the cat sat on the blanket ."),
           Sample(text="the bank lost money and the stock market crashed ."),
           Sample(text="the doctor saw the fever and the moon .")]


@pytest.fixture(scope="module")
def task_and_cache(tiny_llama) -> tuple[Task, ReadoutCache]:
    pool = [Sample.coerce(r) for r in pool_rows(16)]
    task = Task("tiny", pool, np.array([s.label for s in pool]), QUERIES, (5,))
    cache = ReadoutCache.for_config(tiny_llama, CFG, grad_sketch_dim=grad_sketch_dim(CFG, tiny_llama.hidden_size))
    cache.add(pool + QUERIES)
    return task, cache


def test_feedback_curves_as_recorded(task_and_cache):
    task, cache = task_and_cache
    curves = feedback_curves(task, cache, CFG, ScoreOptions.preset("default"), n_marks=(1, 3), k=5)
    if RECORD:
        curves.to_csv(RECORDED, index=False)
    recorded = pd.read_csv(RECORDED)
    assert list(curves.columns) == list(recorded.columns)
    assert curves["method"].tolist() == recorded["method"].tolist()
    assert curves[["marks", "query"]].to_numpy().tolist() == recorded[["marks", "query"]].to_numpy().tolist()
    np.testing.assert_allclose(curves["auPRC@5"], recorded["auPRC@5"], rtol=0, atol=1e-9)
    assert recorded["method"].unique().tolist() == ["RISE", "Hidden cosine", "BM25"]
    assert recorded.groupby("method")["auPRC@5"].nunique().max() > 1  # the marks move something


def test_feedback_is_a_capability_of_the_registry_methods():
    """The evaluated methods are the registry's that take feedback, each holding its own strength; a method without
    the capability says so, and a strength without rankers (or the reverse) is refused."""
    from rise_core import methods
    from rise_core.errors import ConfigError
    from rise_core.feedback import FeedbackConfig
    from rise_core.feedback_eval import FEEDBACK_METHODS, METHOD_FEEDBACK

    assert FEEDBACK_METHODS == (methods.RISE, methods.HIDDEN_COSINE, methods.BM25)
    assert [METHOD_FEEDBACK[m].beta for m in FEEDBACK_METHODS] == [FeedbackConfig().beta, 0.5, 2.0]
    with pytest.raises(ConfigError, match="does not take relevance feedback"):
        methods.get(methods.GRAD_SKETCH).feedback_rankers(None)
    with pytest.raises(ConfigError, match="needs both"):
        methods.Method("x", "x", frozenset({"text"}), lambda src: None, feedback=FeedbackConfig())
    with pytest.raises(ConfigError, match="fused ranking"):
        methods.rise_variant(fusion=("rrf", 1.0), feedback=FeedbackConfig())
