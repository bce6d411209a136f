"""One registry of ranking methods, one result type: what the Compare page, `rise evaluate` and the benchmarks share.

Every ranking method (RISE and its channel variants, hidden-state cosine, Grad-Sketch, BM25, MiniLM embeddings, the
RISE+BM25 fusion, and whatever is registered later) is one `Method`: a display name used on every screen and in every
table, a description, what it needs (`lm`, `text`, `embedder`) and how it scores from either source:

- `TaskSource`: a labelled task's pool and queries with a shared `ReadoutCache` (the model runs once per sample however
  many methods read it), seen as an in-memory index: features computed from the cache, the pool side timed as
  building (`rise evaluate`).
- `IndexSource`: a built index, its queries' features, and what the caller fitted on its pool or ran over it (BM25,
  embeddings, the forward pass of `compare.forward_vectors`); the Compare page.

Both give a method the same things (RISE features, hidden and gradient vectors, text scorers fitted on the pool), so
each method has one scoring function. `Method.score(source)` returns a `MethodScores` either way; a method that cannot run from what the source has says
why in `missing` (index source) instead of raising. `get(name)` accepts the display name or an old spelling
("Hidden-cosine", "RISE-RH", "Embedding"...) and lists the valid names when it knows neither.

The types (`Method`, `MethodScores`, `TaskSource`, `IndexSource`, `Unavailable`) are `rise_core.method_types`'s,
re-exported here; `compare_methods` scores an index's pool with several methods for the Compare page.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

from . import adaptive, bergson_method, compare, span_lift
from .attribution import feedback_ranker
from .baselines import BM25Scorer, Scorer
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError, ModelLoadError
from .feedback import FeedbackConfig, MarkedWords, apply_feedback
from .fusion import FUSION_RULES, fuse
from .method_types import (
    EMBEDDING_BYTES_PER_SAMPLE,
    NEEDS,
    IndexSource,
    Method,
    MethodScores,
    Ranker,
    Source,
    TaskSource,
    Unavailable,
    applies_always,
    cache_time,
)
from .models import LoadedModel
from .readout_cache import channel_options
from .samples import Sample
from .scoring import ContrastFeatures, FeatureMatrix, channel_choice
from .store import RiseIndex

__all__ = ["BM25", "COMPARE_METHODS", "EMBEDDING", "EMBEDDING_BYTES_PER_SAMPLE", "EVALUATE_METHODS", "GRAD_SKETCH",
           "HIDDEN_COSINE", "NEEDS", "PEER_METHODS", "REGISTRY", "RISE", "RISE_BM25", "RISE_FIXED", "RISE_GH", "RISE_HS",
           "RISE_RH", "RISE_RH_GH", "TEXT_METHODS", "IndexSource", "Method", "MethodScores", "TaskSource",
           "Source", "Unavailable", "cache_time", "canonical", "compare_methods", "get", "names", "needs_forward_pass",
           "peer_bytes", "peer_scorer", "register", "resolve", "rise_variant"]

# --- the registry -----------------------------------------------------------------------------------------------------

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


# --- RISE and its variants --------------------------------------------------------------------------------------------


def _variant_options(options: ScoreOptions, config: RiseConfig, channels: Sequence[str] | None,
                     sample_norm: str | None, lambdas: tuple[float, float, float] | None,
                     weighting: str | None = None) -> ScoreOptions:
    lam = dict(zip(("lambda_rh", "lambda_gh", "lambda_hs"), lambdas, strict=True)) if lambdas is not None else {}
    options = options.with_overrides(sample_norm=sample_norm, weighting=weighting, **lam)  # hand weights: fixed
    options = options.applied_to(config).options  # the one channel rule (ScoreOptions.for_channels)
    return channel_options(options, channels) if channels is not None else options


def rise_variant(config_changes: dict | None = None, *, channels: Sequence[str] | None = None,
                 sample_norm: str | None = None, lambdas: tuple[float, float, float] | None = None,
                 fusion: tuple[str, float] | None = None, name: str | None = None, description: str = "",
                 aliases: tuple[str, ...] = (), weighting: str | None = None,
                 feedback: FeedbackConfig | None = None) -> Method:
    """A RISE method: the source's config with `config_changes` (feature-time), scored with the source's options
    changed by `sample_norm`, `lambdas` (rh, gh, hs), `weighting` ('fixed' or 'auto': the per-query rule) and
    `channels` (only these weighted; query-time), and fused with
    BM25 when `fusion` = (rule, BM25 weight); with `feedback`, it takes relevance feedback at that strength (on its
    stored channels, each query's weights chosen first). The sweep and the benchmarks generate their grids with it; the
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
    if changes.get("center_hidden") and "hs_depth" not in changes:
        changes["hs_depth"] = 1.0  # centring reads the final layer's mean, which the HS channel then shares

    def options_for(source_options: ScoreOptions, config: RiseConfig) -> ScoreOptions:
        return _variant_options(source_options, config, channels, sample_norm, lambdas, weighting)

    def checked_options(config: RiseConfig, source_options: ScoreOptions | None) -> ScoreOptions:
        if channels is not None and not set(channels) & set(config.channels):
            raise Unavailable(f"no {'+'.join(channels).upper()} channel here (the features were computed with "
                              "hidden_channel off, or before it existed)")
        return options_for(source_options or ScoreOptions.preset("default"), config)

    def scores(src: Source) -> np.ndarray:
        if fusion is None and not changes:  # a large pool the source does not hold: read a block at a time
            streamed = src.streamed_rise_scores(lambda config: checked_options(config, src.options))
            if streamed is not None:
                return streamed
        pool_fm, query_fm, config = src.rise_inputs(name, changes)
        options = checked_options(config, src.options)
        tests = src.behaviour_tests(pool_fm, query_fm) if options.weighting == "auto" else None
        rise = span_lift.lifted_scores(pool_fm, query_fm, options, tests, src.span_holders()).double().numpy()
        if fusion is None:
            return rise
        return fuse([rise, src.text_scores("bm25", BM25)], fusion[0], [1.0, fusion[1]])

    def rankers(src: Source, strength: FeedbackConfig) -> list[Ranker]:
        pool_fm, query_fm, config = src.rise_inputs(name, changes)
        options = options_for(src.options or ScoreOptions.preset("default"), config)
        out = []
        tests = src.behaviour_tests(pool_fm, query_fm) if options.weighting == "auto" else None
        words = _words_of(src)
        holds = src.span_holders()
        for q in range(len(query_fm)):
            one = query_fm.select([q])
            choice = channel_choice(pool_fm, one, options, tests(q) if tests is not None else None)
            rank = feedback_ranker(pool_fm, one, choice.options, strength, adaptive.feedback_start(options, choice),
                                   words(q) if words is not None else None,
                                   span_lift.kept_after_marks(choice.behaviour, holds),
                                   adaptive.feedback_turn(options, choice))
            # no marks yet: the ranking shown first, with the span lift where the test lifts (fired, or shared)
            first = (span_lift.lifted_row(pool_fm, one, choice, holds).double().numpy()
                     if span_lift.lifting(choice.behaviour) is not None else None)
            out.append(lambda marks, rank=rank, first=first: rank(marks).total if marks or first is None else first)
        return out

    if feedback is not None and fusion is not None:
        raise ConfigError("relevance feedback is not defined for a fused ranking")
    needs = frozenset({"lm", "text"} if fusion is not None else {"lm"})
    needs_hs = channels is not None and list(channels) == ["hs"]
    applies = (lambda config: config.replace(**changes).hidden_channel) if needs_hs else applies_always
    return Method(name, description or f"RISE with {name[len('RISE'):].strip() or 'the given options'}", needs,
                  scores, aliases, applies, feedback, rankers if feedback is not None else None,
                  contrasts=fusion is None)


# --- the registered methods -------------------------------------------------------------------------------------------

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


def _words_of(src: Source) -> Callable[[int], MarkedWords] | None:
    """Query q -> the marked-words reader of RISE's feedback (`feedback.MarkedWords`) over the source's pool texts,
    from its BM25 scorer; None where the source has no BM25 (an index source not given one)."""
    try:
        scorer = src.fitted("bm25", BM25Scorer)
    except Unavailable:
        return None
    return lambda q: MarkedWords.from_bm25(scorer, src.queries[q].full_text,
                                           lambda rows: [src.pool[i].full_text for i in rows])


def _hidden_cosine(src: Source) -> np.ndarray:
    return compare.cosine_scores(*src.hidden_vectors(HIDDEN_COSINE))


def _single_channel(query_scores: np.ndarray, rows: Callable[[list[int]], np.ndarray],
                    strength: FeedbackConfig) -> list[Ranker]:
    """Rankers of a one-vector method: its (Q, N) scores, moved by the marked rows' scores (`rows(marked)`)."""
    return [lambda marks, s=s: apply_feedback({"x": s}, {"x": rows}, marks, {"x": 1.0}, strength).total
            for s in query_scores]


def _hidden_cosine_rankers(src: Source, strength: FeedbackConfig) -> list[Ranker]:
    queries, pool = src.hidden_vectors(HIDDEN_COSINE)
    return _single_channel(compare.cosine_scores(queries, pool),
                           lambda r: compare.cosine_scores(pool[r], pool), strength)


def _bm25_rankers(src: Source, strength: FeedbackConfig) -> list[Ranker]:
    scorer = src.fitted("bm25", BM25Scorer)
    return _single_channel(src.text_scores("bm25", BM25), lambda r: scorer.score([src.pool[i] for i in r]), strength)


def _grad_sketch(src: Source) -> np.ndarray:
    return compare.cosine_scores(*src.grad_vectors(GRAD_SKETCH))


def _embedding(src: Source) -> np.ndarray:
    try:
        return src.text_scores("embeddings", EMBEDDING)
    except ModelLoadError as exc:
        raise Unavailable(f"the MiniLM embedding model is not available: {exc}") from exc


# relevance feedback: each method's own strength is the best tune mean at 3 marks over beta 0.5, 1, 2 on every tune
# set (`studies/feedback_choice.py`; figures in docs/EVALUATION.md, "Relevance feedback")
register(rise_variant(name=RISE, description="RISE with the given scoring options (the default: weights chosen per "
                      "query by how much it surprises the model, rise_core.adaptive; or fixed lambdas).",
                      feedback=FeedbackConfig()))
register(rise_variant(name=RISE_FIXED, weighting="fixed", aliases=("RISE fixed",),
                      description="RISE with the fixed weights lambda_rh, lambda_gh, lambda_hs (no per-query choice)."))
register(rise_variant(channels=("rh", "gh"), name=RISE_RH_GH, aliases=("RISE-RH+GH",),
                      description="RISE's two readout channels (the paper's, no HS): the backdoor setting."))
register(rise_variant(channels=("rh",), name=RISE_RH, aliases=("RISE-RH",),
                      description="RISE's RH (lexical, readout-residual) channel alone."))
register(rise_variant(channels=("gh",), name=RISE_GH, aliases=("RISE-GH",),
                      description="RISE's GH (semantic, gradient-of-hidden) channel alone."))
register(rise_variant(channels=("hs",), name=RISE_HS, aliases=("RISE-HS",),
                      description="RISE's HS channel (centred mean hidden state of the layer hs_depth names) alone; needs "
                      "hidden_channel."))
register(Method(HIDDEN_COSINE, "Cosine of mean final hidden states over the counted positions (the representation "
                "baseline).", frozenset({"lm"}),
                _hidden_cosine, aliases=("Hidden-cosine",), feedback=FeedbackConfig(beta=0.5, gamma=1.0),
                rankers=_hidden_cosine_rankers))
register(Method(GRAD_SKETCH, "The exact LM-head gradient sum_t r_t h_t^T, TensorSketched to as many values per "
                "sample as RISE stores, cosine-scored.", frozenset({"lm"}),
                _grad_sketch))
register(Method(BM25, "Lexical overlap of the full texts (bm25s, Lucene BM25).", frozenset({"text"}),
                lambda src: src.text_scores("bm25", BM25), feedback=FeedbackConfig(beta=2.0, gamma=1.0),
                rankers=_bm25_rankers))
register(Method(EMBEDDING, "Cosine of all-MiniLM-L6-v2 sentence embeddings of the full texts.",
                frozenset({"text", "embedder"}), _embedding,
                aliases=("Embedding", "MiniLM", "Embeddings")))
register(rise_variant(fusion=("rrf", 1.0), name=RISE_BM25, aliases=("RISE+BM25",),
                      description="RISE's ranking and BM25's fused per query by reciprocal rank, equally weighted."))

# optional peers: always registered (without their package they say what to install), offered by `rise evaluate`,
# the Evaluate page and the Compare page only where installed, and on Compare never run unasked (Bergson builds its
# own gradient index over the pool first: a backward pass per sample)
register(bergson_method.method())
PEER_METHODS = (bergson_method.BERGSON,) if bergson_method.installed() else ()


class Peer(NamedTuple):
    """How the app builds a peer's own index (`peer_scorer`) and what that index holds in memory (`peer_bytes`)."""

    scorer: Callable[[LoadedModel, RiseConfig], Scorer]  # unfitted; `fit(pool, progress)` builds its index
    row_bytes: Callable[[LoadedModel], int]  # its index's bytes per pool row


_PEERS = {bergson_method.BERGSON: Peer(lambda lm, config: bergson_method.BergsonScorer(lm, config),
                                       bergson_method.row_bytes)}


def _peer(name: str) -> Peer:
    if name not in _PEERS:
        raise ConfigError(f"{name!r} is not a peer method; choose from {sorted(_PEERS)}")
    return _PEERS[name]


def peer_scorer(name: str, lm: LoadedModel, config: RiseConfig) -> Scorer:
    """The unfitted scorer of the peer `name` (one of PEER_METHODS) on `lm`, reading tokens as `config` says; its
    `fit(pool, progress)` builds the peer's own index of the pool (a backward pass per sample)."""
    return _peer(name).scorer(lm, config)


def peer_bytes(name: str, lm: LoadedModel, n_rows: int) -> int:
    """The memory the peer `name` holds once fitted on `n_rows` pool rows with `lm`, run on a copy of the model as the
    app runs it: its index's rows (as its scorer keeps them) and the copy's weights."""
    weights = sum(p.numel() * p.element_size() for p in lm.model.parameters())
    return n_rows * _peer(name).row_bytes(lm) + weights


# the methods each front offers by default, in display order
COMPARE_METHODS = (RISE, RISE_FIXED, HIDDEN_COSINE, GRAD_SKETCH, EMBEDDING, BM25)
EVALUATE_METHODS = (RISE, RISE_FIXED, RISE_RH_GH, RISE_RH, RISE_GH, RISE_HS, HIDDEN_COSINE, GRAD_SKETCH, BM25, EMBEDDING,
                    RISE_BM25, *PEER_METHODS)
TEXT_METHODS = tuple(m.name for m in REGISTRY.values() if not m.needs_lm)  # need no model


# --- every method at once (the Compare page) --------------------------------------------------------------------------


def needs_forward_pass(method_names: Sequence[str], index: RiseIndex) -> bool:
    """Whether any of these methods needs the model over the whole pool (`compare.forward_vectors`): Grad-Sketch
    always, hidden cosine on an index whose HS channel is not the final hidden state's (`stores_final_hidden`)."""
    chosen = {m.name for m in resolve(method_names)}
    return GRAD_SKETCH in chosen or (HIDDEN_COSINE in chosen and not index.stores_final_hidden)


def compare_methods(index: RiseIndex, queries: Sequence[Sample], query_fm: FeatureMatrix,
                    options: ScoreOptions | None = None, *, bm25: Scorer | Callable[[], Scorer] | None = None,
                    embeddings: Scorer | Callable[[], Scorer] | None = None,
                    forward: compare.ForwardVectors | None = None, lm: LoadedModel | None = None,
                    methods: Sequence[str] | None = None, versus: Sequence[Sample] | None = None,
                    peers: Mapping[str, Scorer] | None = None) -> dict[str, MethodScores]:
    """Each of `methods` (default `COMPARE_METHODS`: RISE, Hidden cosine, Grad-Sketch, MiniLM embedding, BM25) for
    `queries` (with `query_fm`, their features from the index's extractor), scored through the registry, in that
    order; a method that cannot run says why in `missing`.

    `bm25`, `embeddings`: a scorer fitted on the index's pool (`compare.fit_bm25`, `compare.fit_embeddings`) or a
    function returning one, called here so that an embedding model that is not installed becomes a message; None: not
    asked for. `forward`: the pool's `compare.forward_vectors` (Grad-Sketch, and hidden cosine without HS), with `lm`
    to run the queries; None: those methods say they need the forward pass. `peers`: peers already fitted on the
    index's pool (`peer_scorer(...).fit`), by name; a peer named in `methods` and not given builds its index here.

    A contrast ("why this and not that": `query_fm` from `query_features(..., versus=B)`, `versus` the other answers
    B, one for every query or one per query): every method scores score(query) - score(B), RISE's through the
    contrast (the weights chosen for the query, applied to both, as on the Attribute page), the others as the
    difference of their two plain scores."""
    kinds = resolve(COMPARE_METHODS if methods is None else methods)

    def source(qs: Sequence[Sample], fm: FeatureMatrix) -> IndexSource:
        return IndexSource(index, list(qs), fm, options, bm25=bm25, embeddings=embeddings, forward=forward, lm=lm,
                           peers=dict(peers or {}))
    if not isinstance(query_fm, ContrastFeatures):
        plain = source(queries, query_fm)
        return {m.name: m.score(plain) for m in kinds}
    if versus is None or query_fm.versus is None:
        raise InputDataError("a contrast needs its other answers (versus) to score the methods that are not RISE")
    contrast, a, b = source(queries, query_fm), source(queries, query_fm.plain), source(versus, query_fm.versus)
    return {m.name: m.score(contrast) if m.contrasts else contrast_scores(m.score(a), m.score(b)) for m in kinds}


def contrast_scores(a: MethodScores, b: MethodScores) -> MethodScores:
    """A method's contrast from its plain scores of the queries (`a`, (Q, N)) and of their other answers (`b`, one row
    for every query or one per query): a - b, its query cost both answers'; missing when either is."""
    if not a.available or not b.available:
        return a if not a.available else b
    assert a.scores is not None and b.scores is not None
    return MethodScores(a.name, a.scores - b.scores, ids=a.ids, build_seconds=a.build_seconds + b.build_seconds,
                        query_seconds=a.query_seconds + b.query_seconds, index_bytes=a.index_bytes)
