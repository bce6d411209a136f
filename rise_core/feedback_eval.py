"""Relevance feedback, evaluated: a simulated analyst marks the top-ranked rows by their true label (`rise evaluate
--feedback 1,3,5`), on RISE's stored features and, the same way, on the strongest baselines' (hidden-state cosine,
BM25), so the comparison is like for like."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .attribution import feedback_ranker
from .baselines import BM25Scorer
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError
from .evaluation import Task
from .feedback import FeedbackConfig, Marks, apply_feedback, simulate_analyst
from .methods import BM25, HIDDEN_COSINE, RISE, canonical
from .metrics import EvalResult
from .readout_cache import HiddenCosineScorer, ReadoutCache, RiseScorer
from .scoring import channel_choice

FEEDBACK_METHODS = (RISE, HIDDEN_COSINE, BM25)
K = 10
METHOD_FEEDBACK = {RISE: FeedbackConfig(), HIDDEN_COSINE: FeedbackConfig(beta=0.5), BM25: FeedbackConfig(beta=2.0)}
"""Each method's own feedback strength, the best tune mean at 3 marks over beta 0.5, 1, 2 on every tune set
(`studies/feedback_choice.py`; figures in docs/EVALUATION.md, "Relevance feedback"), so the comparison gives each
method its best."""


def _rise_rankers(task: Task, cache: ReadoutCache, config: RiseConfig, options: ScoreOptions,
                  feedback: FeedbackConfig) -> list[Callable[[Marks], np.ndarray]]:
    scorer = RiseScorer(cache, config, options)
    scorer.fit(task.pool)
    pool, queries = scorer.pool_fm, scorer.query_features(task.queries)
    rankers = []
    for q in range(len(queries)):
        one = queries.select([q])
        rank = feedback_ranker(pool, one, channel_choice(pool, one, options).options, feedback)
        rankers.append(lambda marks, rank=rank: rank(marks).total)
    return rankers


def _single_channel(query_scores: np.ndarray, rows: Callable[[list[int]], np.ndarray],
                    feedback: FeedbackConfig) -> list[Callable[[Marks], np.ndarray]]:
    return [lambda marks, s=s: apply_feedback({"x": s}, {"x": rows}, marks, {"x": 1.0}, feedback).total
            for s in query_scores]


def _hidden_rankers(task: Task, cache: ReadoutCache, config: RiseConfig, feedback: FeedbackConfig):
    scorer = HiddenCosineScorer(cache, config.counted_positions)
    scorer.fit(task.pool)
    vecs = scorer.pool_vecs
    return _single_channel(scorer.score(task.queries), lambda r: (vecs[r] @ vecs.T).numpy(), feedback)


def _bm25_rankers(task: Task, feedback: FeedbackConfig):
    scorer = BM25Scorer()
    scorer.fit(task.pool)
    return _single_channel(scorer.score(task.queries), lambda r: scorer.score([task.pool[i] for i in r]), feedback)


def feedback_curves(task: Task, cache: ReadoutCache | None, config: RiseConfig | None = None,
                    options: ScoreOptions | None = None, n_marks: Sequence[int] = (1, 3, 5),
                    methods: Sequence[str] = FEEDBACK_METHODS, feedback: FeedbackConfig | None = None,
                    k: int = K) -> pd.DataFrame:
    """auPRC@k per (method, number of marks, query) of the simulated analyst (`feedback.simulate_analyst`): one row
    per query and mark count (0: no marks). Methods: RISE (its stored channels), hidden-state cosine, BM25. `feedback`
    applies to every method; None gives each its own chosen strength (METHOD_FEEDBACK)."""
    config = config or RiseConfig()
    options = options or ScoreOptions.preset("default")
    rows = []
    for name in methods:
        method = canonical(name)
        if method not in FEEDBACK_METHODS:
            raise ConfigError(f"relevance feedback is evaluated for {list(FEEDBACK_METHODS)}, not {name!r}")
        if method != BM25 and cache is None:
            raise ConfigError(f"{method} needs a model (a ReadoutCache) for feedback")
        strength = feedback or METHOD_FEEDBACK[method]
        rankers = (_rise_rankers(task, cache, config, options, strength) if method == RISE
                   else _hidden_rankers(task, cache, config, strength) if method == HIDDEN_COSINE
                   else _bm25_rankers(task, strength))
        for q, rank_with in enumerate(rankers):
            for m, scores in simulate_analyst(rank_with, task.labels, n_marks).items():
                res = EvalResult.from_scores(scores[None, :], task.labels, (k,))
                rows.append({"method": method, "marks": m, "query": q,
                             f"auPRC@{k}": float(res.per_query["auPRC"].iloc[0])})
    return pd.DataFrame(rows)


def feedback_table(curves: pd.DataFrame, k: int = K) -> pd.DataFrame:
    """Mean auPRC@k per method (rows) and number of marks (columns)."""
    return curves.pivot_table(index="method", columns="marks", values=f"auPRC@{k}", aggfunc="mean", sort=False)
