"""What every ranking method is and what it returns: a `Method` (a display name, what it needs, its one scoring
function), the two sources it scores from, which give it the same things (`TaskSource`: a labelled task's pool and
queries through a shared readout cache, as an in-memory index; `IndexSource`: a built index and its queries'
features), the one result type `MethodScores`, and `Unavailable`, what a method raises to say what its source lacks. The registry of methods is `rise_core.methods`; an optional peer
(`bergson_method`) builds its `Method` from these types.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import torch

from . import attribution, compare, learned, span_lift
from .adaptive import BehaviourTest
from .baselines import BM25Scorer, EmbeddingScorer, Scorer
from .behaviour import per_query_tests, samples_frame, samples_spans
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError, RiseError
from .feedback import FeedbackConfig, Marks
from .models import LoadedModel
from .ranking import Ranking
from .readout_cache import ReadoutCache
from .samples import Sample
from .scoring import FeatureMatrix
from .shared_spans import PoolSpans, pool_spans
from .store import RiseIndex

NEEDS = ("lm", "text", "embedder")
EMBEDDING_BYTES_PER_SAMPLE = 384 * 2  # all-MiniLM-L6-v2: 384 float16 values


@dataclass(frozen=True, eq=False)
class MethodScores:
    """One method's (Q, N) scores of the pool (column j: pool sample `ids[j]`), with its costs, or why it has none."""

    name: str
    scores: np.ndarray | None = None  # (Q, N) float64; `ranking` gives one query's (or the set's) `Ranking`
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

    def ranking(self, k: int, query: int | None = None) -> Ranking:
        """The `Ranking` of this method's k best pool rows (columns) for one query (0-based), or for the query set
        (None: by `mean`), best first."""
        if query is None:
            return Ranking.best(self.mean(), k)
        if self.scores is None:
            raise InputDataError(f"{self.name} has no scores: {self.missing}")
        if not 0 <= query < self.scores.shape[0]:
            raise InputDataError(f"query {query} is not one of the {self.scores.shape[0]} queries")
        return Ranking.best(self.scores[query], k, query=query)


class Unavailable(RiseError):
    """A method cannot run from what its source has; the message says why (becomes `MethodScores.missing`)."""


# --- sources ----------------------------------------------------------------------------------------------------------


@dataclass
class _Ledger:
    """What a task source spent on the pool side during one method's run (`Method.score` charges it as build)."""

    seconds: float = 0.0
    forward_seconds: float = 0.0
    index_bytes: int = 0


@dataclass
class TaskSource:
    """A pool and queries read through a readout cache (None: text methods only), under a RISE config and options.

    It gives a method what an `IndexSource` gives, computed from the cache: the pool's and queries' RISE features,
    mean hidden states and Grad-Sketches, and text scorers fitted on the pool; the pool side is timed as building.
    `memo`: shared by the methods scored from this source, so RISE variants that differ only in query-time choices
    compute each config's features once (None: every method computes its own, as `rise evaluate` times them)."""

    pool: list[Sample]
    queries: list[Sample]
    cache: ReadoutCache | None
    config: RiseConfig = field(default_factory=RiseConfig)
    options: ScoreOptions = field(default_factory=lambda: ScoreOptions.preset("default"))
    memo: dict | None = None

    def __post_init__(self) -> None:
        self.ledger = _Ledger()

    def need_cache(self, name: str) -> ReadoutCache:
        if self.cache is None:
            raise ConfigError(f"{name} needs a model: give a ReadoutCache")
        return self.cache

    @property
    def ids(self) -> tuple:
        return tuple(Sample.coerce(s).id for s in self.pool)

    @contextlib.contextmanager
    def _building(self) -> Iterator[None]:
        fwd0, t0 = self.cache.forward_seconds if self.cache else 0.0, time.perf_counter()
        try:
            yield
        finally:
            self.ledger.seconds += time.perf_counter() - t0
            self.ledger.forward_seconds += (self.cache.forward_seconds if self.cache else 0.0) - fwd0

    def behaviour_tests(self, pool_fm: FeatureMatrix, query_fm: FeatureMatrix) -> Callable[[int], BehaviourTest]:
        """Query q -> its behaviour test (`rise_core.behaviour`) on the pool's features and span counts."""
        held: dict[str, PoolSpans] = {}

        def counts() -> PoolSpans:  # read once, and only when a query's test runs
            if "spans" not in held:
                held["spans"] = self._memoised(("pool spans",), lambda: samples_spans(self.pool))
            return held["spans"]

        return per_query_tests(pool_fm, query_fm, counts, samples_frame(self.pool), self.queries,
                               self.learned_losses(pool_fm))

    def learned_losses(self, pool_fm: FeatureMatrix) -> learned.LearnedLosses | None:
        """What the fine-tune learned, where the source's model carries an adapter whose base model reloads: each
        pool row's loss under the base model (one more pass over the pool, without the sketches; computed once per
        readout cache: `ReadoutCache.base_model_losses`) beside the fine-tune's own (`pool_fm.loss`). None for a plain
        model, or with `RETRO_LEARNED` off."""
        lm = None if self.cache is None else self.cache.lm
        if not learned.RETRO_LEARNED or lm is None or pool_fm.loss is None or learned.base_model_spec(lm) is None:
            return None
        return learned.LearnedLosses(base=self.cache.base_model_losses(self.pool, self.config),
                                     tuned=pool_fm.loss.double().numpy())

    def span_holders(self) -> span_lift.SpanHolders:
        """Which pool rows hold a span (the span lift, `rise_core.span_lift`), read from the pool's texts."""
        return span_lift.holders(span_lift.frame_texts(samples_frame(self.pool)))

    def _memoised(self, key: tuple, make: Callable[[], Any]) -> Any:
        if self.memo is None:
            return make()
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def streamed_rise_scores(self, options: Callable[[RiseConfig], ScoreOptions]) -> np.ndarray | None:
        """None: a task's pool is always scored from its features (`rise_inputs`)."""
        return None

    def rise_inputs(self, name: str, changes: dict) -> tuple[FeatureMatrix, FeatureMatrix, RiseConfig]:
        """The pool's and queries' RISE features under the source's config with `changes`, and that config."""
        cache = self.need_cache(name)
        config = self.config.replace(**changes) if changes else self.config
        pool_keys = tuple(map(cache.key, self.pool))
        with self._building():
            cache.add(self.pool)

            def fit() -> tuple[torch.Tensor | None, FeatureMatrix]:
                # the pool's mean is fixed once, from the seeded subset an index build fits it on
                mean = cache.pool_hidden_mean(self.pool, config) if config.needs_hidden_mean else None
                return mean, cache.rise_features(self.pool, config, mean)

            mean, pool_fm = self._memoised(("pool", config, pool_keys), fit)
            self.ledger.index_bytes += len(self.pool) * config.bytes_per_sample(cache.lm.hidden_size)
        cache.add(self.queries)
        query_fm = self._memoised(("queries", config, pool_keys, tuple(map(cache.key, self.queries))),
                                  lambda: cache.rise_features(self.queries, config, mean))
        return pool_fm, query_fm, config

    def _vectors(self, name: str, of: Callable[[ReadoutCache, list[Sample]], torch.Tensor]
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        cache = self.need_cache(name)
        with self._building():
            cache.add(self.pool)
            pool = compare.unit_rows(of(cache, self.pool).double())
            self.ledger.index_bytes += int(pool.shape[0]) * int(pool.shape[1]) * 2
        cache.add(self.queries)
        return compare.unit_rows(of(cache, self.queries).double()), pool

    def hidden_vectors(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, pool) unit mean final hidden states over the config's counted positions."""
        return self._vectors(name, lambda c, s: c.mean_hidden(s, self.config.counted_positions))

    def grad_vectors(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, pool) unit Grad-Sketches at the cache's dimension."""
        if not self.need_cache(name).grad_sketch_dim:
            raise ConfigError("the readout cache was built without a gradient sketch dimension")
        return self._vectors(name, lambda c, s: c.grad_sketch(s, self.config.counted_positions))

    @property
    def lm(self) -> LoadedModel | None:
        return None if self.cache is None else self.cache.lm

    def fitted(self, what: str, make: Callable[[], Scorer]) -> Scorer:
        """A scorer fitted on the pool (once per memo): `what` is "bm25", "embeddings" or a peer's name."""
        with self._building():
            key = (what, self.config if what not in ("bm25", "embeddings") else None,
                   tuple(map(ReadoutCache.key, self.pool)))

            def fit() -> Scorer:
                scorer = make()
                scorer.fit(self.pool)
                return scorer

            scorer = self._memoised(key, fit)
            self.ledger.index_bytes += _index_bytes(scorer, len(self.pool))
        return scorer

    def text_scores(self, what: str, name: str) -> np.ndarray:
        """(Q, N) scores of the text scorer `what` ("bm25" or "embeddings") fitted on the pool."""
        make = {"bm25": BM25Scorer, "embeddings": EmbeddingScorer}[what]
        return compare.text_scores(self.fitted(what, make), self.queries)


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
    peers: Mapping[str, Scorer] = field(default_factory=dict)
    """peers already fitted on the index's pool, by method name (the app builds them in the background); a peer not
    given is built here, once per process (`fitted`)."""

    def __post_init__(self) -> None:
        self.queries = [Sample.coerce(q) for q in self.queries]
        if len(self.queries) != len(self.query_fm):
            raise InputDataError(f"{len(self.queries)} queries but {len(self.query_fm)} rows of query features")
        if self.forward is not None and len(self.forward) != len(self.index):
            raise InputDataError(f"the forward-pass vectors cover {len(self.forward)} pool samples but the index has "
                                 f"{len(self.index)}: run the forward pass again")
        self._fitted: dict[str, Scorer] = {}
        self._pool_products: dict = {}  # the streamed RISE methods' channel products, shared (`ann.score_pool_rows`)

    @property
    def config(self) -> RiseConfig:
        return self.index.config

    @cached_property
    def q_forward(self) -> compare.ForwardVectors | None:
        """The queries' forward-pass vectors, when the pool's are given and the model to run them."""
        if self.forward is None or self.lm is None:
            return None
        return compare.forward_vectors(self.lm, self.queries, self.index.config)

    @cached_property
    def ids(self) -> tuple:
        """The pool's ids in row order (the id column alone: not every text of a large pool)."""
        return tuple(self.index.column("id"))

    def behaviour_tests(self, pool_fm: FeatureMatrix, query_fm: FeatureMatrix) -> Callable[[int], BehaviourTest]:
        """Query q -> its behaviour test (`rise_core.behaviour`) on the index's features and span counts."""
        index = self.index
        return per_query_tests(pool_fm, query_fm, lambda: pool_spans(index), index.rows_frame, self.queries,
                               index.learned_losses())

    def span_holders(self) -> span_lift.SpanHolders:
        """Which pool rows hold a span (the span lift, `rise_core.span_lift`), read from the index's stored texts."""
        return span_lift.holders(span_lift.frame_texts(self.index.rows_frame))

    @cached_property
    def pool(self) -> list[Sample]:
        """The index's pool samples, in row order."""
        return self.index.sample_list()

    @cached_property
    def streams_pool(self) -> bool:
        """Whether a query under the source's options reads this index's pool a block at a time (a large pool with an
        ANN index, its feature matrix not loaded: `attribution.streams_pool`): then no method loads that matrix."""
        return attribution.streams_pool(self.index, self.options or ScoreOptions.preset("default"))

    def streamed_rise_scores(self, options: Callable[[RiseConfig], ScoreOptions]) -> np.ndarray | None:
        """(Q, N) RISE scores under `options(config)` as `attribution.top` ranks the rows, read a block at a time
        (`attribution.pool_scores_each`) when the source `streams_pool`; None: score the features (`rise_inputs`)."""
        if not self.streams_pool:
            return None
        return attribution.pool_scores_each(self.index, self.query_fm, options(self.index.config),
                                            self._pool_products)

    def rise_inputs(self, name: str, changes: dict) -> tuple[FeatureMatrix, FeatureMatrix, RiseConfig]:
        """The index's stored features, the queries' and the index's config (its own: `changes` are refused)."""
        if changes:
            raise Unavailable(f"the index was built with its own config; {name} changes {sorted(changes)}")
        return self.index.feature_matrix(), self.query_fm, self.index.config

    def hidden_vectors(self, name: str) -> tuple[torch.Tensor, compare.StoredHidden | torch.Tensor]:
        """(queries, pool) unit mean final hidden states: rebuilt from the HS channel, or from the forward pass."""
        if self.index.stores_final_hidden:
            pool = compare.StoredHidden(self.index, streamed=self.streams_pool)
            return pool.rebuild(self.query_fm), pool
        if self.q_forward is None:
            raise Unavailable(compare.no_hs_reason(self.index))
        return self.q_forward.hidden, self.forward.hidden

    def grad_vectors(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, pool) unit Grad-Sketches from the forward pass."""
        if self.q_forward is None:
            raise Unavailable(f"{name} needs one forward pass over the {len(self.index)} pool samples"
                              + ("" if self.forward is None else " (and the model, to run the queries)"))
        return self.q_forward.grad, self.forward.grad

    def fitted(self, what: str, make: Callable[[], Scorer]) -> Scorer:
        """A scorer fitted on the index's pool: "bm25" and "embeddings" as given (Unavailable when not asked for),
        a peer's as given in `peers`, else built here once per process for this index, model and config."""
        if what in ("bm25", "embeddings"):
            given = getattr(self, what)
            if given is None:
                raise Unavailable("not asked for")
            if what not in self._fitted:
                self._fitted[what] = given if isinstance(given, Scorer) else given()
            return self._fitted[what]
        if what in self.peers:
            return self.peers[what]
        cfg = self.index.config
        key = (what, str(self.index.path), hash(self.ids), self.lm.fingerprint() if self.lm else None, cfg.seq_len,
               cfg.counted_positions, cfg.chat_template, cfg.chat_turns)
        if key not in _BUILT:
            scorer = make()
            scorer.fit(self.pool)
            _BUILT[key] = scorer
        return _BUILT[key]

    def text_scores(self, what: str, name: str) -> np.ndarray:
        """(Q, N) scores of the text scorer given as `what` ("bm25" or "embeddings"), checked against the pool."""
        scores = compare.text_scores(self.fitted(what, lambda: None), self.queries)
        if scores.shape[1] != len(self.index):
            raise InputDataError(f"{name} scored {scores.shape[1]} pool samples but the index has {len(self.index)}: "
                                 "fit it on this index's pool")
        return scores


_BUILT: dict[tuple, Scorer] = {}  # scorers a method builds over an index's pool itself (Bergson), once per process
Source = TaskSource | IndexSource
Ranker = Callable[[Marks], np.ndarray]  # an analyst's marks {pool row: relevant?} -> one query's (N,) scores after them


# --- methods ----------------------------------------------------------------------------------------------------------


def applies_always(config: RiseConfig) -> bool:
    """A method's `applies` that runs under every RISE config (the default)."""
    return True


@dataclass(frozen=True)
class Method:
    """One ranking method: its display name, what it needs, and its one scoring function.

    `scores(source)`: (Q, N) scores of a `TaskSource` or an `IndexSource` (both give the same shapes: RISE features,
    hidden and gradient vectors, text scorers fitted on the pool), raising `Unavailable` to say what the source
    lacks. `applies(config)`: whether it runs under a RISE config at all (RISE HS only needs the HS channel).

    Relevance feedback, for the methods that take it: `feedback`, the method's own strength (chosen per method,
    `studies/feedback_choice.py`), and `rankers(source, feedback)`, one `Ranker` per query of the source."""

    name: str
    description: str
    needs: frozenset[str]
    scores: Callable[[Source], np.ndarray]
    aliases: tuple[str, ...] = ()
    applies: Callable[[RiseConfig], bool] = applies_always
    feedback: FeedbackConfig | None = None
    rankers: Callable[[Source, FeedbackConfig], list[Ranker]] | None = None
    contrasts: bool = False
    """whether `scores` takes a contrastive query's features itself (`ContrastFeatures`: RISE's channels, the weights
    chosen for the query applied to both answers); the others are contrasted as the difference of their two plain
    scores (`methods.compare_methods`)."""

    def __post_init__(self) -> None:
        unknown = set(self.needs) - set(NEEDS)
        if unknown:
            raise ConfigError(f"{self.name}: unknown needs {sorted(unknown)}; choose from {list(NEEDS)}")
        if (self.feedback is None) != (self.rankers is None):
            raise ConfigError(f"{self.name}: relevance feedback needs both a strength (feedback) and rankers")

    def feedback_rankers(self, source: Source, feedback: FeedbackConfig | None = None) -> list[Ranker]:
        """One `Ranker` per query of the source, at `feedback` (None: this method's own strength)."""
        if self.rankers is None or self.feedback is None:
            raise ConfigError(f"{self.name} does not take relevance feedback")
        return self.rankers(source, feedback or self.feedback)

    @property
    def needs_lm(self) -> bool:
        return "lm" in self.needs

    def score(self, source: Source) -> MethodScores:
        """This method's scores of the source's pool for each of its queries, timed. From an index, what the index
        lacks becomes `missing`; from a task it raises (the task asked for this method)."""
        if isinstance(source, IndexSource):
            t0 = time.perf_counter()
            try:
                scores = np.asarray(self.scores(source), dtype=np.float64)
            except Unavailable as exc:
                return MethodScores(self.name, missing=str(exc))
            seconds = (time.perf_counter() - t0) / max(len(source.queries), 1)
            return MethodScores(self.name, scores, ids=source.ids, query_seconds=seconds)
        return self._score_task(source)

    def _score_task(self, source: TaskSource) -> MethodScores:
        cache = source.cache if self.needs_lm else None
        source.ledger = _Ledger()
        fwd0, t0 = cache.forward_seconds if cache else 0.0, time.perf_counter()
        scores = np.asarray(self.scores(source), dtype=np.float64)
        total, ledger = time.perf_counter() - t0, source.ledger
        build, query = ledger.seconds, total - ledger.seconds
        if cache is not None:
            # charge the shared forward time of pool and queries even when another method already paid it
            query_fwd = cache.forward_seconds - fwd0 - ledger.forward_seconds
            build += cache_time(cache, source.pool) - ledger.forward_seconds
            query += cache_time(cache, source.queries) - query_fwd
        return MethodScores(self.name, scores, ids=source.ids, build_seconds=build,
                            query_seconds=query / max(len(source.queries), 1), index_bytes=ledger.index_bytes)


# --- costs ------------------------------------------------------------------------------------------------------------


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
