"""Relevance feedback, evaluated: a simulated analyst marks the top-ranked rows by their true label (`rise evaluate
--feedback 1,3,5`), on RISE's stored features and, the same way, on the strongest baselines' (hidden-state cosine,
BM25), so the comparison is like for like. Which methods take feedback, how, and at what strength is each registry
method's own (`Method.feedback`, `Method.feedback_rankers`)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .config import RiseConfig, ScoreOptions
from .errors import ConfigError
from .evaluation import Task
from .feedback import FeedbackConfig, simulate_analyst
from .methods import REGISTRY, TaskSource, canonical
from .metrics import EvalResult
from .readout_cache import ReadoutCache

# the registry's methods that take relevance feedback (RISE, hidden-state cosine, BM25), each at its own strength
FEEDBACK_METHODS = tuple(m.name for m in REGISTRY.values() if m.feedback is not None)
METHOD_FEEDBACK = {name: REGISTRY[name].feedback for name in FEEDBACK_METHODS}
K = 10


def feedback_curves(task: Task, cache: ReadoutCache | None, config: RiseConfig | None = None,
                    options: ScoreOptions | None = None, n_marks: Sequence[int] = (1, 3, 5),
                    methods: Sequence[str] = FEEDBACK_METHODS, feedback: FeedbackConfig | None = None,
                    k: int = K) -> pd.DataFrame:
    """auPRC@k per (method, number of marks, query) of the simulated analyst (`feedback.simulate_analyst`): one row
    per query and mark count (0: no marks). Methods: those of the registry that take feedback (FEEDBACK_METHODS:
    RISE on its stored channels, hidden-state cosine, BM25), through their own `Method.feedback_rankers`. `feedback`
    applies to every method; None gives each its own chosen strength (`Method.feedback`)."""
    config = config or RiseConfig()
    options = options or ScoreOptions.preset("default")
    source = TaskSource(task.pool, task.queries, cache, config, options)
    rows = []
    for name in methods:
        method = canonical(name)
        if method not in FEEDBACK_METHODS:
            raise ConfigError(f"relevance feedback is evaluated for {list(FEEDBACK_METHODS)}, not {name!r}")
        if REGISTRY[method].needs_lm and cache is None:
            raise ConfigError(f"{method} needs a model (a ReadoutCache) for feedback")
        for q, rank_with in enumerate(REGISTRY[method].feedback_rankers(source, feedback)):
            for m, scores in simulate_analyst(rank_with, task.labels, n_marks).items():
                res = EvalResult.from_scores(scores[None, :], task.labels, (k,))
                rows.append({"method": method, "marks": m, "query": q,
                             f"auPRC@{k}": float(res.per_query["auPRC"].iloc[0])})
    return pd.DataFrame(rows)


def feedback_table(curves: pd.DataFrame, k: int = K) -> pd.DataFrame:
    """Mean auPRC@k per method (rows) and number of marks (columns)."""
    return curves.pivot_table(index="method", columns="marks", values=f"auPRC@{k}", aggfunc="mean", sort=False)
