"""What every ranking method is and what it returns: a `Method` (a display name, what it needs, how it scores), the
two sources it scores from (`TaskSource`: a labelled task's pool and queries through a shared readout cache;
`IndexSource`: a built index and its queries' features), the one result type `MethodScores`, and `Unavailable`, what
a method raises to say what its source lacks. The registry of methods is `rise_core.methods`; an optional peer
(`bergson_method`) builds its `Method` from these types.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import compare
from .baselines import EmbeddingScorer, Scorer
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError, RiseError
from .fusion import FusionScorer
from .models import LoadedModel
from .readout_cache import CachedLMScorer, ReadoutCache
from .samples import Sample
from .scoring import FeatureMatrix
from .store import RiseIndex

NEEDS = ("lm", "text", "embedder")
EMBEDDING_BYTES_PER_SAMPLE = 384 * 2  # all-MiniLM-L6-v2: 384 float16 values


@dataclass(frozen=True, eq=False)
class MethodScores:
    """One method's (Q, N) scores of the pool (column j: pool sample `ids[j]`), with its costs, or why it has none."""

    name: str
    scores: np.ndarray | None = None  # (Q, N) float64
    ids: tuple = ()  # pool sample ids in column order
    build_seconds: float = 0.0  # fitting on the pool (0: fitted before, by the caller)
    query_seconds: float = 0.0  # per query
    index_bytes: int = 0  # what it stores per pool (0: nothing of fixed size per sample, or not measured)
    missing: str = ""

    @property
    def available(self) -> bool:
        return self.scores is not None

    def mean(self) -> np.ndarray:
        """(N,) the query set's scores: the mean over its queries."""
        if self.scores is None:
            raise InputDataError(f"{self.name} has no scores: {self.missing}")
        return self.scores.mean(axis=0)


class Unavailable(RiseError):
    """A method cannot run from what its source has; the message says why (becomes `MethodScores.missing`)."""


# --- sources ----------------------------------------------------------------------------------------------------------


@dataclass
class TaskSource:
    """A pool and queries read through a readout cache (None: text methods only), under a RISE config and options.

    `memo`: shared by the methods scored from this source, so RISE variants that differ only in query-time choices
    compute each config's features once (None: every method computes its own, as `rise evaluate` times them)."""

    pool: list[Sample]
    queries: list[Sample]
    cache: ReadoutCache | None
    config: RiseConfig = field(default_factory=RiseConfig)
    options: ScoreOptions = field(default_factory=lambda: ScoreOptions.preset("default"))
    memo: dict | None = None

    def need_cache(self, name: str) -> ReadoutCache:
        if self.cache is None:
            raise ConfigError(f"{name} needs a model: give a ReadoutCache")
        return self.cache


@dataclass
class IndexSource:
    """A built index and queries with their features from the index's extractor (`query_fm`).

    `bm25`, `embeddings`: a scorer fitted on the index's pool (`compare.fit_bm25`, `compare.fit_embeddings`) or a
    function returning one, called on first use so that an embedding model that is not installed becomes a message;
    None: not asked for. `forward`: the pool's `compare.forward_vectors`, with `lm` to run the queries."""

    index: RiseIndex
    queries: list[Sample]
    query_fm: FeatureMatrix
    options: ScoreOptions | None = None
    bm25: Scorer | Callable[[], Scorer] | None = None
    embeddings: Scorer | Callable[[], Scorer] | None = None
    forward: compare.ForwardVectors | None = None
    lm: LoadedModel | None = None

    def __post_init__(self) -> None:
        self.queries = [Sample.coerce(q) for q in self.queries]
        if len(self.queries) != len(self.query_fm):
            raise InputDataError(f"{len(self.queries)} queries but {len(self.query_fm)} rows of query features")
        if self.forward is not None and len(self.forward) != len(self.index):
            raise InputDataError(f"the forward-pass vectors cover {len(self.forward)} pool samples but the index has "
                                 f"{len(self.index)}: run the forward pass again")
        self._fitted: dict[str, Scorer] = {}

    @cached_property
    def q_forward(self) -> compare.ForwardVectors | None:
        """The queries' forward-pass vectors, when the pool's are given and the model to run them."""
        if self.forward is None or self.lm is None:
            return None
        return compare.forward_vectors(self.lm, self.queries, self.index.config)

    @cached_property
    def ids(self) -> tuple:
        return tuple(self.index.samples()["id"])

    def text_scores(self, what: str, name: str) -> np.ndarray:
        """(Q, N) scores of the text scorer given as `what` ("bm25" or "embeddings"), checked against the pool."""
        source = getattr(self, what)
        if source is None:
            raise Unavailable("not asked for")
        if what not in self._fitted:
            self._fitted[what] = source if isinstance(source, Scorer) else source()
        scores = compare.text_scores(self._fitted[what], self.queries)
        if scores.shape[1] != len(self.index):
            raise InputDataError(f"{name} scored {scores.shape[1]} pool samples but the index has {len(self.index)}: "
                                 "fit it on this index's pool")
        return scores


# --- methods ----------------------------------------------------------------------------------------------------------


def applies_always(config: RiseConfig) -> bool:
    """A method's `applies` that runs under every RISE config (the default)."""
    return True


@dataclass(frozen=True)
class Method:
    """One ranking method: its display name, what it needs, and how it scores from a task or from an index.

    `scorer(source)`: a `Scorer` to fit on a `TaskSource`'s pool; `from_index(source)`: (Q, N) scores from an
    `IndexSource` (None: not available from an index), raising `Unavailable` to say what it lacks. `applies(config)`:
    whether it runs under a RISE config at all (RISE HS only needs the HS channel)."""

    name: str
    description: str
    needs: frozenset[str]
    scorer: Callable[[TaskSource], Scorer]
    from_index: Callable[[IndexSource], np.ndarray] | None = None
    aliases: tuple[str, ...] = ()
    applies: Callable[[RiseConfig], bool] = applies_always

    def __post_init__(self) -> None:
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ConfigError(f"{self.name}: unknown needs {sorted(unknown)}; choose from {list(NEEDS)}")

    @property
    def needs_lm(self) -> bool:
        return "lm" in self.needs

    def score(self, source: TaskSource | IndexSource) -> MethodScores:
        """This method's scores of the source's pool for each of its queries."""
        if isinstance(source, IndexSource):
            return self._score_index(source)
        return run_scorer(self.scorer(source), source.pool, source.queries, self.name)

    def _score_index(self, source: IndexSource) -> MethodScores:
        if self.from_index is None:
            return MethodScores(self.name, missing="not available from an index")
        t0 = time.perf_counter()
        try:
            scores = np.asarray(self.from_index(source), dtype=np.float64)
        except Unavailable as exc:
            return MethodScores(self.name, missing=str(exc))
        seconds = (time.perf_counter() - t0) / max(len(source.queries), 1)
        return MethodScores(self.name, scores, ids=source.ids, query_seconds=seconds)


# --- timing a fitted scorer -------------------------------------------------------------------------------------------


def shared_cache(scorer: Scorer) -> ReadoutCache | None:
    """The readout cache an LM scorer (or a fusion with one) reads its forward passes from."""
    if isinstance(scorer, CachedLMScorer):
        return scorer.cache
    if isinstance(scorer, FusionScorer):
        return next((c for c in map(shared_cache, scorer.parts) if c is not None), None)
    return None


def cache_time(cache: ReadoutCache, samples: Sequence[Sample]) -> float:
    """Forward seconds attributable to `samples` (by token share of the cache's total)."""
    total = sum(r.completion.numel() for r in cache.readouts.values())
    mine = sum(cache.readouts[cache.key(s)].completion.numel() for s in samples)
    return cache.forward_seconds * mine / max(total, 1)


def _index_bytes(scorer: Scorer, n_pool: int) -> int:
    if hasattr(scorer, "index_bytes"):
        return int(scorer.index_bytes)
    if isinstance(scorer, EmbeddingScorer):
        return n_pool * EMBEDDING_BYTES_PER_SAMPLE
    return 0  # BM25: an inverted index, not a fixed-size vector per sample


def run_scorer(scorer: Scorer, pool: Sequence[Sample], queries: Sequence[Sample], name: str | None = None
               ) -> MethodScores:
    """Fit on the pool and score the queries, timing both (shared forward time included for LM methods)."""
    pool, queries = list(pool), list(queries)
    cache = shared_cache(scorer)
    fwd0 = cache.forward_seconds if cache else 0.0
    t0 = time.perf_counter()
    scorer.fit(pool)
    build = time.perf_counter() - t0
    fwd1 = cache.forward_seconds if cache else 0.0
    t1 = time.perf_counter()
    scores = scorer.score(queries)
    query = time.perf_counter() - t1
    fwd2 = cache.forward_seconds if cache else 0.0
    if cache is not None:
        # charge the shared forward time of pool and queries even when another method already paid it
        build += cache_time(cache, pool) - (fwd1 - fwd0)
        query += cache_time(cache, queries) - (fwd2 - fwd1)
    return MethodScores(name or scorer.name, np.asarray(scores, dtype=np.float64),
                        ids=tuple(Sample.coerce(s).id for s in pool), build_seconds=build,
                        query_seconds=query / max(len(queries), 1), index_bytes=_index_bytes(scorer, len(pool)))
