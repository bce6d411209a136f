"""One registry of ranking methods, one result type: what the Compare page, `rise evaluate` and the benchmarks share.

Every ranking method (RISE and its channel variants, hidden-state cosine, Grad-Sketch, BM25, MiniLM embeddings, the
RISE+BM25 fusion, and whatever is registered later) is one `Method`: a display name used on every screen and in every
table, a description, what it needs (`lm`, `text`, `embedder`) and how it scores from either source:

- `TaskSource`: a labelled task's pool and queries with a shared `ReadoutCache` (the model runs once per sample however
  many methods read it); the method builds a `baselines.Scorer`, fitted on the pool and timed (`rise evaluate`).
- `IndexSource`: a built index, its queries' features, and what the caller fitted on its pool or ran over it (BM25,
  embeddings, the forward pass of `compare.forward_vectors`); the Compare page.

`Method.score(source)` returns a `MethodScores` either way; a method that cannot run from what the source has says
why in `missing` (index source) instead of raising. `get(name)` accepts the display name or an old spelling
("Hidden-cosine", "RISE-RH", "Embedding"...) and lists the valid names when it knows neither.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import compare
from .baselines import BM25Scorer, EmbeddingScorer, Scorer
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError, ModelLoadError, RiseError
from .fusion import FUSION_RULES, FusionScorer, fuse
from .models import LoadedModel
from .readout_cache import (
    CachedLMScorer,
    GradSketchScorer,
    HiddenCosineScorer,
    ReadoutCache,
    RiseScorer,
    channel_options,
)
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


# --- sources --------------------------------------------------------------------------------------------------------


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


# --- methods --------------------------------------------------------------------------------------------------------


def _always(config: RiseConfig) -> bool:
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
    applies: Callable[[RiseConfig], bool] = _always

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


REGISTRY: dict[str, Method] = {}
_LOOKUP: dict[str, str] = {}


def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", " ", name.strip().lower())


def register(method: Method) -> Method:
    """Add a method (a later peer) to the registry; its name and aliases must be new."""
    keys = [_key(n) for n in (method.name, *method.aliases)]
    taken = [k for k in keys if k in _LOOKUP]
    if taken:
        raise ConfigError(f"method names {taken} are taken (by {sorted({_LOOKUP[k] for k in taken})})")
    REGISTRY[method.name] = method
    _LOOKUP.update(dict.fromkeys(keys, method.name))
    return method


def names() -> tuple[str, ...]:
    """The registered methods' display names, in registry order."""
    return tuple(REGISTRY)


def canonical(name: str, default: str | None = None) -> str | None:
    """The display name of `name` (a display name or an old spelling, any case); `default` when unknown."""
    return _LOOKUP.get(_key(name), default)


def get(name: str) -> Method:
    """The method called `name` (display name or alias); ConfigError listing the valid names otherwise."""
    found = canonical(name)
    if found is None:
        raise ConfigError(f"unknown method {name!r}; choose from {list(REGISTRY)}")
    return REGISTRY[found]


def resolve(names_: Sequence[str]) -> list[Method]:
    """Methods by name, in the order given (duplicates dropped); one error naming every unknown one."""
    unknown = [n for n in names_ if canonical(n) is None]
    if unknown:
        raise ConfigError(f"unknown methods {unknown}; choose from {list(REGISTRY)}")
    return [REGISTRY[n] for n in dict.fromkeys(canonical(n) for n in names_)]


# --- timing a fitted scorer -----------------------------------------------------------------------------------------


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


# --- RISE and its variants ------------------------------------------------------------------------------------------


def _variant_options(options: ScoreOptions, config: RiseConfig, channels: Sequence[str] | None,
                     sample_norm: str | None, lambdas: tuple[float, float, float] | None,
                     weighting: str | None = None) -> ScoreOptions:
    if sample_norm is not None:
        options = dataclasses.replace(options, sample_norm=sample_norm)
    if lambdas is not None:  # weights given are used as given
        options = dataclasses.replace(options, lambda_rh=lambdas[0], lambda_gh=lambdas[1], lambda_hs=lambdas[2],
                                      weighting="fixed")
    if weighting is not None:
        options = dataclasses.replace(options, weighting=weighting)
    options = options.applied_to(config).options  # the one channel rule (ScoreOptions.for_channels)
    return channel_options(options, channels) if channels is not None else options


def rise_variant(config_changes: dict | None = None, *, channels: Sequence[str] | None = None,
                 sample_norm: str | None = None, lambdas: tuple[float, float, float] | None = None,
                 fusion: tuple[str, float] | None = None, name: str | None = None, description: str = "",
                 aliases: tuple[str, ...] = (), weighting: str | None = None) -> Method:
    """A RISE method: the source's config with `config_changes` (feature-time), scored with the source's options
    changed by `sample_norm`, `lambdas` (rh, gh, hs), `weighting` ('fixed' or 'auto': the per-query rule) and
    `channels` (only these weighted; query-time), and fused with
    BM25 when `fusion` = (rule, BM25 weight). The sweep and the benchmarks generate their grids with it; the
    registry's RISE entries are some of them. Its name defaults to one that spells the choices out."""
    changes = dict(config_changes or {})
    if fusion is not None and fusion[0] not in FUSION_RULES:
        raise ConfigError(f"unknown fusion rule {fusion[0]!r}; choose one of {FUSION_RULES}")
    if name is None:
        parts = [f"{k}={v}" for k, v in changes.items()]
        parts += [f"channels={'+'.join(channels).upper()}"] if channels is not None else []
        parts += [f"sample_norm={sample_norm}"] if sample_norm is not None else []
        parts += [f"lambdas={','.join(f'{x:g}' for x in lambdas)}"] if lambdas is not None else []
        parts += [f"weighting={weighting}"] if weighting is not None else []
        parts += [f"+BM25 {fusion[0]}:{fusion[1]:g}"] if fusion is not None else []
        name = "RISE" + (f" ({'; '.join(parts)})" if parts else "")

    def options_for(source_options: ScoreOptions, config: RiseConfig) -> ScoreOptions:
        return _variant_options(source_options, config, channels, sample_norm, lambdas, weighting)

    def scorer(src: TaskSource) -> Scorer:
        config = src.config.replace(**changes) if changes else src.config
        rise = RiseScorer(src.need_cache(name), config, options_for(src.options, config), name, memo=src.memo)
        if fusion is None:
            return rise
        return FusionScorer([rise, _memo_text(src, "BM25", BM25Scorer)], fusion[0], [1.0, fusion[1]], name=name)

    def from_index(src: IndexSource) -> np.ndarray:
        if changes:
            raise Unavailable(f"the index was built with its own config; {name} changes {sorted(changes)}")
        config = src.index.config
        if channels is not None and not set(channels) & set(config.channels):
            raise Unavailable(f"{src.index.path.name} has no {'+'.join(channels).upper()} channel (built with "
                              "hidden_channel off, or before it existed)")
        options = options_for(src.options or ScoreOptions.preset("default"), config)
        rise = compare.rise_scores(src.index, src.query_fm, options)
        if fusion is None:
            return rise
        return fuse([rise, src.text_scores("bm25", "BM25")], fusion[0], [1.0, fusion[1]])

    needs = frozenset({"lm", "text"} if fusion is not None else {"lm"})
    needs_hs = channels is not None and list(channels) == ["hs"]
    applies = (lambda config: config.replace(**changes).hidden_channel) if needs_hs else _always
    return Method(name, description or f"RISE with {name[len('RISE'):].strip() or 'the given options'}", needs,
                  scorer, from_index, aliases, applies)


class _Memoised(Scorer):
    """A text scorer fitted once per source memo (fusion variants share one BM25 over the pool)."""

    def __init__(self, inner: Scorer, memo: dict, key: str) -> None:
        self.inner, self.memo, self.key, self.name = inner, memo, key, inner.name

    def fit(self, pool: Sequence[Sample]) -> None:
        key = (self.key, "fit", tuple(map(ReadoutCache.key, pool)))
        if key not in self.memo:
            self.inner.fit(pool)
            self.memo[key] = self.inner
        self.inner = self.memo[key]

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        return self.inner.score(queries)


def _memo_text(src: TaskSource, key: str, make: Callable[[], Scorer]) -> Scorer:
    return make() if src.memo is None else _Memoised(make(), src.memo, key)


# --- the registry ---------------------------------------------------------------------------------------------------

RISE = "RISE"
RISE_FIXED = "RISE fixed weights"
RISE_RH_GH = "RISE RH+GH"
RISE_RH = "RISE RH only"
RISE_GH = "RISE GH only"
RISE_HS = "RISE HS only"
HIDDEN_COSINE = "Hidden cosine"
GRAD_SKETCH = "Grad-Sketch"
BM25 = "BM25"
EMBEDDING = "MiniLM embedding"
RISE_BM25 = "RISE+BM25 RRF"


def _hidden_cosine_index(src: IndexSource) -> np.ndarray:
    if src.index.config.hidden_channel:
        return compare.hidden_cosine_scores(src.index, src.query_fm)
    if src.q_forward is None:
        raise Unavailable(compare._no_hs(src.index))
    return compare.cosine_scores(src.q_forward.hidden, src.forward.hidden)


def _grad_sketch_index(src: IndexSource) -> np.ndarray:
    if src.q_forward is None:
        raise Unavailable(f"Grad-Sketch needs one forward pass over the {len(src.index)} pool samples"
                          + ("" if src.forward is None else " (and the model, to run the queries)"))
    return compare.cosine_scores(src.q_forward.grad, src.forward.grad)


def _embedding_index(src: IndexSource) -> np.ndarray:
    try:
        return src.text_scores("embeddings", EMBEDDING)
    except ModelLoadError as exc:
        raise Unavailable(f"the MiniLM embedding model is not available: {exc}") from exc


register(rise_variant(name=RISE, description="RISE with the given scoring options (the default: weights chosen per "
                      "query by how much it surprises the model, rise_core.adaptive; or fixed lambdas)."))
register(rise_variant(name=RISE_FIXED, weighting="fixed", aliases=("RISE fixed",),
                      description="RISE with the fixed weights lambda_rh, lambda_gh, lambda_hs (no per-query choice)."))
register(rise_variant(channels=("rh", "gh"), name=RISE_RH_GH, aliases=("RISE-RH+GH",),
                      description="RISE's two readout channels (the paper's, no HS): the backdoor setting."))
register(rise_variant(channels=("rh",), name=RISE_RH, aliases=("RISE-RH",),
                      description="RISE's RH (lexical, readout-residual) channel alone."))
register(rise_variant(channels=("gh",), name=RISE_GH, aliases=("RISE-GH",),
                      description="RISE's GH (semantic, gradient-of-hidden) channel alone."))
register(rise_variant(channels=("hs",), name=RISE_HS, aliases=("RISE-HS",),
                      description="RISE's HS channel (centred final hidden state) alone; needs hidden_channel."))
register(Method(HIDDEN_COSINE, "Cosine of mean final hidden states over the counted positions (the representation "
                "baseline).", frozenset({"lm"}),
                lambda src: HiddenCosineScorer(src.need_cache(HIDDEN_COSINE), src.config.counted_positions),
                _hidden_cosine_index, aliases=("Hidden-cosine",)))
register(Method(GRAD_SKETCH, "The exact LM-head gradient sum_t r_t h_t^T, TensorSketched to as many values per "
                "sample as RISE stores, cosine-scored.", frozenset({"lm"}),
                lambda src: GradSketchScorer(src.need_cache(GRAD_SKETCH), src.config.counted_positions),
                _grad_sketch_index))
register(Method(BM25, "Lexical overlap of the full texts (bm25s, Lucene BM25).", frozenset({"text"}),
                lambda src: BM25Scorer(), lambda src: src.text_scores("bm25", BM25)))
register(Method(EMBEDDING, "Cosine of all-MiniLM-L6-v2 sentence embeddings of the full texts.",
                frozenset({"text", "embedder"}), lambda src: EmbeddingScorer(), _embedding_index,
                aliases=("Embedding", "MiniLM", "Embeddings")))
register(rise_variant(fusion=("rrf", 1.0), name=RISE_BM25, aliases=("RISE+BM25",),
                      description="RISE's ranking and BM25's fused per query by reciprocal rank, equally weighted."))

# optional peers: always registered (without their package they say what to install), offered by `rise evaluate`,
# the Evaluate page and the Compare page only where installed, and on Compare never run unasked (Bergson builds its
# own gradient index over the pool first: a backward pass per sample); imported here, at the end: they build their entries from
# this module's names
from . import bergson_method  # noqa: E402

register(bergson_method.method())
PEER_METHODS = (bergson_method.BERGSON,) if bergson_method.installed() else ()

# the methods each front offers by default, in display order
COMPARE_METHODS = (RISE, RISE_FIXED, HIDDEN_COSINE, GRAD_SKETCH, EMBEDDING, BM25)
EVALUATE_METHODS = (RISE, RISE_FIXED, RISE_RH_GH, RISE_RH, RISE_GH, RISE_HS, HIDDEN_COSINE, GRAD_SKETCH, BM25, EMBEDDING,
                    RISE_BM25, *PEER_METHODS)
TEXT_METHODS = tuple(m.name for m in REGISTRY.values() if not m.needs_lm)  # need no model
