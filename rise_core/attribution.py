"""Attribution over a stored index: query features, top-k ranking, valuation (select) and token explanations.

Thin over `rise_core.scoring` and `rise_core.explain`, with two additions for speed. First, `rank` uses the index's
ANN index when it has a valid one (`rise_core.ann`: large pools, sample_norm='channel'), with exact scores for the
rows it returns. Second, on the exact path: an index keeps its features as float16, and a ranking scores them with
one float16 matrix-vector product per channel (float32 accumulation, so it reads half the bytes of a float32 copy),
then rescores in float32 every row whose score could still reach the top k given the product's rounding bound. The
result equals `scoring.score_pool` + `top_k` on the same features.

Contrastive queries ("why this answer and not that one"): `query_features(..., versus=B)` returns A's features
contrasted with B's (`scoring.ContrastFeatures`); every path here scores them as score(A) - score(B), with the weights
chosen for A, and the ranking's notes say what was contrasted. `explain` and `explain_versus` split a hit's contrast
score over A's tokens (pushing up) and B's (pushing down).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Collection, Sequence, Sized
from typing import Any

import numpy as np
import pandas as pd
import torch

from . import adaptive, ann, span_lift
from .adaptive import Weighting
from .behaviour import BehaviourMemo, ViewRows, behaviour_test_for, features_digest, learned_reading
from .config import PRESET_SCORING, RiseConfig, ScoreOptions
from .engine import EXPLAIN_BATCH_TOKENS, RiseExtractor, SampleFeatures, TokenSketches
from .errors import IndexStoreError, InputDataError
from .explain import TokenAttribution, explain_hit, versus_attribution
from .feedback import (
    FeedbackConfig,
    FeedbackResult,
    MarkedWords,
    Marks,
    RowScores,
    SpanLift,
    TermScorer,
    apply_feedback,
    shown_order,
    unit_row_scores,
)
from .memo import BoundedMemo
from .models import LoadedModel
from .ranking import EXTRA_PARTS, Ranking, frame_each
from .samples import Sample, encode_sample
from .scoring import (
    ContrastFeatures,
    FeatureMatrix,
    Scores,
    channel_scales,
    channel_sum,
    matvec,
    query_vectors,
    top_k,
    weighted_channels,
)
from .shared_spans import pool_spans
from .store import RiseIndex, sample_from_row

_HALF_GEMV_OK: bool | None = None
logger = logging.getLogger(__name__)


QueryInput = Sequence[Sample | str | dict] | Sample | str | dict


def _samples(queries: QueryInput) -> list[Sample]:
    if isinstance(queries, (str, Sample, dict)):
        queries = [queries]
    return [Sample.coerce(q) for q in queries]


def _same_text(a: Sample, b: Sample) -> bool:
    return (a.text, a.prompt, a.completion, a.messages) == (b.text, b.prompt, b.completion, b.messages)


def query_features(index: RiseIndex, lm: LoadedModel, queries: QueryInput, batch_size: int = 8,
                   truncate: bool = False, config: RiseConfig | None = None, versus: QueryInput | None = None,
                   versus_label: str = "the other answer") -> FeatureMatrix:
    """Features (float32) of one query or a query set (text, prompt + completion, or conversations), with the index's
    sketches and config; refuses a query longer than the index's seq_len (its tokens past seq_len would silently not
    count; `truncate=True` counts its first seq_len tokens, as the build did for the pool's long samples) or one with
    no counted token. `config`, when given, is the config the caller means to query with: anything but the index's
    (another chat_template or chat_turns, say) is an IndexMismatchError naming the fields.

    `versus`: the other answer B of a contrastive query ("why these queries and not B"): one text (every query is
    contrasted with it) or one per query (paired); the result is a `ContrastFeatures`, which every ranking scores as
    score(query) - score(B). `versus_label` names B in the ranking's note. B identical to a query it is paired with
    (the contrast would score 0 everywhere) or empty is an InputDataError."""
    samples = _samples(queries)
    if not samples:
        raise InputDataError("the query set is empty")
    if versus is not None:
        try:
            others = _samples(versus)
        except InputDataError as exc:
            raise InputDataError(f"the contrast's other answer cannot be used: {exc}") from None
        if not others:
            raise InputDataError("the contrast's other answer is empty; give the answer to contrast the query with")
        check_versus_count(len(samples), len(others))
        for i, (a, b) in enumerate(zip(samples, others * len(samples) if len(others) == 1 else others, strict=False)):
            if _same_text(a, b):
                which = "the query" if len(samples) == 1 else f"query {i + 1}"
                raise InputDataError(f"the other answer is identical to {which}: the contrast would score 0 for every "
                                     "example; give a different answer (e.g. the model's answer without the trigger)")
        a_fm = query_features(index, lm, samples, batch_size, truncate, config)
        b_fm = _features(index, lm, others, batch_size, truncate, "the other answer")
        return ContrastFeatures.of(a_fm, b_fm, versus_label)
    if config is not None:
        index.check_config(config)
    return _features(index, lm, samples, batch_size, truncate, "the query")


def check_versus_count(n_queries: int, n_others: int) -> None:
    """InputDataError unless a contrast has one other answer for all queries or one per query."""
    if n_others not in (1, n_queries):
        raise InputDataError(f"give one other answer for all queries or one per query: {n_queries} queries, "
                             f"{n_others} other answers")


def _features(index: RiseIndex, lm: LoadedModel, samples: list[Sample], batch_size: int, truncate: bool,
              what: str) -> FeatureMatrix:
    """Features of `samples` (`what` names them in errors: 'the query' or 'the other answer')."""
    if len(index) == 0:  # a build stopped before its first sample (the hidden-state mean is fitted first)
        raise IndexStoreError(f"{index.path} holds no samples yet: its build was stopped or interrupted before the "
                              "first was stored; run the build again to resume it")
    extractor = index.extractor(lm)
    cfg = extractor.config
    encoded = extractor.encode(samples)
    for i, (sample, enc) in enumerate(zip(samples, encoded, strict=True)):
        which = what if len(samples) == 1 else f"{what.removeprefix('the ')} {i + 1}"
        if enc.truncated and not truncate:
            n = len(encode_sample(sample, lm.tokenizer, 10**9, cfg.counted_positions, extractor.rendering).input_ids)
            raise InputDataError(
                f"{which} has {n} tokens; this index counts at most seq_len={cfg.seq_len} tokens per sample. "
                "Shorten it, or build an index with a larger --seq-len.")
        if enc.n_counted == 0:
            raise InputDataError(f"{which} has no counted token: it needs at least two tokens (or a non-empty "
                                 "completion or assistant turn)")
    parts = [extractor.features_from_encoded(encoded[s:s + batch_size]) for s in range(0, len(encoded), batch_size)]
    fm = FeatureMatrix.from_features(SampleFeatures.concat(parts), dtype=torch.float32)
    fm.texts = tuple(samples)  # the behaviour test reads whether the query holds the span it finds
    return fm


def index_preset(index: RiseIndex) -> str | None:
    """The scoring preset `index` was built for (`IndexManifest.build_preset`), when this library has it; else None."""
    name = index.manifest.build_preset
    return name if name in PRESET_SCORING else None


ChannelProducts = dict[tuple, tuple[torch.Tensor, float]]
"""Half products already made in one ranking ((channel, matrix, query vector) -> `_half_product`'s answer): the
behaviour test's two views and the final scan share them."""


BEHAVIOUR_MEMO = BehaviourMemo()
"""The behaviour test's results on indexes, per index state, query and view (`index_weighting`)."""


def index_weighting(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None,
                    change: str = "pass options", search: str = "auto", query: Sample | None = None,
                    products: ChannelProducts | None = None) -> Weighting:
    """`adaptive.resolve` for a query on a stored index: its channels, the scoring of the preset it was built for when
    `options` is None (the line saying so is logged; `change` says how to choose another), its median loss
    (`RiseIndex.reference_loss`) as the per-query rule's reference, and the behaviour test (`rise_core.behaviour`) on
    its views' top rows (by the ANN index where `search` takes it), its span counts and its rows' losses
    (`RiseIndex.row_losses`, where they may overrule the rival; on a fine-tune's index that keeps them, what the
    fine-tune learned: `behaviour.learned_reading`); `query`, when at hand, lets
    the test check that the query holds the span (taken from `query_fm.texts` for a single query when not given: the
    text `query_features` keeps); `products`: the ranking's store of channel products (`top_rows`)."""
    if query is None and query_fm.texts is not None and len(query_fm.texts) == 1:
        query = query_fm.texts[0]
    spans = lambda: pool_spans(index)  # noqa: E731
    reading = learned_reading(index.learned_losses(), spans, index.row_losses)
    test = behaviour_test_for(_view_rows(index, query_fm, search, products), spans, index.rows_frame, query,
                              has_hs=index.config.hidden_channel, **reading)
    m = index.manifest
    key = (str(index.path), m.index_uuid, m.updated_at, len(index), search, features_digest(query_fm),
           None if query is None else Sample.coerce(query).full_text)
    test = BEHAVIOUR_MEMO.wrap(key, test)  # rank, explain and feedback of one query run the test once
    resolved = adaptive.resolve(options, index.config.channels, query_fm.loss, index.reference_loss,
                                index.manifest.build_preset, change, behaviour=test)
    if resolved.preset_note:
        logger.info(resolved.preset_note)
    return resolved


def _view_rows(index: RiseIndex, query_fm: FeatureMatrix, search: str, products: ChannelProducts | None = None
               ) -> ViewRows:
    """A view's top rows for the behaviour test: from the ANN index where a query under those options would use it,
    else by an exact scan (keeping its channel products in `products` for the final scan)."""

    def rows(options: ScoreOptions, k: int) -> np.ndarray:
        handle, _ = ann.usable_ann(index, options, search)
        if handle is not None:
            view = adaptive.resolve(options, index.config.channels, None, lambda: float("nan"))
            return ann.rank_rows(index, handle, query_fm, view, k).rows.numpy()
        fm, _ = _matrix_and_mask(index, None)
        return top_rows(fm, query_fm, options, k, products=products)[0].numpy()

    return rows


def _half_product(matrix: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Approximate matrix @ q for float16 unit rows with one float16 product (q scaled to unit length first), and
    the bound b with |approx - exact| <= 2^-10 |approx| + b on every row (exact: float32 rows @ q)."""
    q_norm = float(q.norm())
    if q_norm == 0.0:
        return torch.zeros(matrix.shape[0]), 0.0
    approx = torch.mv(matrix, (q / q_norm).half()).float() * q_norm
    # rounding q to float16 (2^-11 relative per entry) and summation order in float32, both <= ||u|| ||q|| terms
    bound = q_norm * 1.01 * (2.0**-11 + matrix.shape[1] * 2.0**-22) + q_norm * 2.0**-24
    return approx, bound


def _half_gemv_accumulates_in_fp32() -> bool:
    """Whether torch's float16 matrix-vector product accumulates in float32 (rounding only its outputs), as the error
    bound of `top_rows` assumes; checked once against float64."""
    global _HALF_GEMV_OK
    if _HALF_GEMV_OK is None:
        ones = torch.full((1, 4096), 0.01, dtype=torch.float16)  # float16 accumulation stalls at 32
        ref = 4096 * float(ones[0, 0])
        ok = abs(float(torch.mv(ones, torch.ones(4096, dtype=torch.float16))) - ref) <= ref * 2.0**-10
        gen = torch.Generator().manual_seed(0)
        m = torch.randn(256, 768, generator=gen, dtype=torch.float64)
        m = (m / m.norm(dim=1, keepdim=True)).half()
        q = torch.randn(768, generator=gen).float()
        approx, bound = _half_product(m, q)
        exact = m.float() @ q
        ok = ok and bool(((approx - exact).abs() <= approx.abs() * 2.0**-10 + bound).all())
        _HALF_GEMV_OK = ok
    return _HALF_GEMV_OK


def _weighted(fm: FeatureMatrix, query_fm: FeatureMatrix, options: ScoreOptions
              ) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(channel, per-row weight lambda_c * s_c, query vector) of every weighted channel, for resolved `options`."""
    q = query_vectors(query_fm, options)
    scales = channel_scales(fm, options)
    return [(c, lam * scales[c].float(), q[c]) for c, lam in weighted_channels(options, q)]


def top_rows(fm: FeatureMatrix, query_fm: FeatureMatrix, options: ScoreOptions | None = None, k: int = 10,
             allowed: torch.Tensor | None = None, products: ChannelProducts | None = None
             ) -> tuple[torch.Tensor, Scores]:
    """Rows of the k highest scores (descending) and their scores, among `allowed` rows if given.

    float16 features: one float16 product per weighted channel gives approximate scores with a rigorous error bound;
    only rows whose bound reaches the k-th best lower bound are rescored exactly, so the answer is exact. `products`:
    a ranking's own store of the channel products made so far (the same channel and query vector is multiplied once:
    the views differ from the final weights only in lambda)."""
    options = (options or ScoreOptions()).for_channels(fm.channels).options
    n = len(fm)
    k = max(0, min(int(k), n if allowed is None else int(allowed.sum())))
    if k == 0:
        return torch.empty(0, dtype=torch.long), Scores.from_parts({}, 0)
    channels = _weighted(fm, query_fm, options)
    if fm.rh.dtype == torch.float16 and _half_gemv_accumulates_in_fp32():
        approx, err = torch.zeros(n), torch.zeros(n)
        for c, w, q in channels:
            s, bound = _product(products, c, getattr(fm, c), q)
            approx += w * s
            err += w.abs() * (s.abs() * 2.0**-10 + bound)
        lower, upper = approx - err, approx + err
        threshold = top_k(lower, k, allowed)[1][-1]
        candidates = upper >= threshold
        if allowed is not None:
            candidates &= allowed
        cand = candidates.nonzero()[:, 0]
        exact = Scores.from_parts({c: w[cand] * matvec(getattr(fm, c)[cand], q).float() for c, w, q in channels},
                                  len(cand))
        best = torch.topk(exact.total, k).indices
        return cand[best], exact.take(best)
    return _exact_top_rows(fm, channels, k, allowed)


def _exact_top_rows(fm: FeatureMatrix, channels: list[tuple[str, torch.Tensor, torch.Tensor]], k: int,
                    allowed: torch.Tensor | None) -> tuple[torch.Tensor, Scores]:
    """`top_rows` by scoring every row in float32 (features not float16, or a float16 product without the float32
    accumulation the fast path's bound assumes)."""
    scores = Scores.from_parts({c: w * matvec(getattr(fm, c), q).float() for c, w, q in channels}, len(fm))
    rows = top_k(scores.total, k, allowed)[0]
    return rows, scores.take(rows)


def _matrix_and_mask(index: RiseIndex, where: str | None) -> tuple[FeatureMatrix, torch.Tensor | None]:
    """The feature matrix and the filter's row mask, of the same length (an append in between is caught)."""
    return _with_mask(index, where, index.feature_matrix)


def _row_mask(index: RiseIndex, where: str | None) -> torch.Tensor | None:
    """The filter's row mask over every row of `index` (None: no filter), without the feature matrix."""
    return _with_mask(index, where, lambda: index)[1]


def _with_mask(index: RiseIndex, where: str | None, rows: Callable[[], Sized]) -> tuple[Any, torch.Tensor | None]:
    """`rows()` (the feature matrix, or the index itself) and the filter's row mask over as many rows, read again
    when a build appends in between."""
    for _ in range(3):
        got = rows()
        allowed = index.row_mask(where) if where else None
        if allowed is None or len(allowed) == len(got):
            return got, allowed
    raise InputDataError(f"{index.path} keeps changing (a build is appending to it); try again when it finishes")


def _streamed_ann(index: RiseIndex, options: ScoreOptions) -> ann.AnnIndex | None:
    """The ANN index to read a whole pool from, a block at a time, when a query under `options` takes the ANN path
    (a large pool) and this process does not hold the feature matrix; None: use the matrix."""
    handle, _ = ann.usable_ann(index, options, "auto")
    return None if handle is None or index.features_loaded else handle


def top(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None, k: int = 10,
        where: str | None = None, search: str = "auto") -> Ranking:
    """Top-k pool samples for a query (or the mean of a query set), optionally among rows matching `where`.

    search: 'auto' (the ANN index when the index has a valid one, the pool is large and sample_norm='channel'),
    'exact' (always scan every row) or 'ann' (the ANN index whatever the pool size; an error without one); the
    ranking's `search` says which path ran (path 'ann' or 'exact', the reason, rows and candidates scored), its
    `weighting` how the weights were chosen (`index_weighting`: without `options`, the preset the index was built
    for, else the 'default' preset's) and its `notes` the weights dropped because the index lacks their channel."""
    if k < 1:
        raise InputDataError(f"k must be at least 1, got {k}")
    products: ChannelProducts = {}  # the behaviour test's view scans and the final scan share channel products
    resolved = index_weighting(index, query_fm, options, search=search, products=products)
    handle, info = ann.usable_ann(index, resolved.options, search)
    if handle is not None:
        def head(m: int) -> Ranking:
            return ann.rank_rows(index, handle, query_fm, resolved, m, where)
    else:
        fm, allowed = _matrix_and_mask(index, where)
        info.update(n_rows=len(fm), n_allowed=len(fm) if allowed is None else int(allowed.sum()))

        def head(m: int) -> Ranking:
            return Ranking.of(*top_rows(fm, query_fm, resolved.options, m, allowed, products), weighting=resolved,
                              search=info)
    found = span_lift.lifting(resolved.choice.behaviour)
    if found is None:
        ranking = head(k)
    else:  # the test fired, or both views share its span: the rows holding it are lifted (`rise_core.span_lift`)
        n_rows = len(index)

        def lift() -> float:  # the exact scan's products give every row's score; the ANN path scores sampled rows
            if handle is not None:  # from the ANN file: the pool's feature matrix is never loaded on this path
                sampled = ann.score_pool_rows(index, handle, query_fm, resolved.options, span_lift.spread_rows(n_rows))
                spread = float(sampled.total.double().std(unbiased=False))
            else:
                spread = _scan_spread(fm, query_fm, resolved.options, products)
            return found.lift_spreads * spread
        ranking = span_lift.lift_head(head, k, n_rows, lift, found, _index_holders(index))
    logger.info("rank: %s", ann.search_summary(ranking.search))
    return _noted(ranking, query_fm)


def _scan_spread(fm: FeatureMatrix, query_fm: FeatureMatrix, options: ScoreOptions, products: ChannelProducts
                 ) -> float:
    """The spread (population standard deviation) of every row's score under fixed, resolved `options`: from the
    float16 products the scan made (`top_rows`'s approximate scores, within 2^-10 of each score's size plus the
    products' bound), else an exact float32 scan."""
    if fm.rh.dtype != torch.float16 or not _half_gemv_accumulates_in_fp32():
        return float(channel_sum(fm, query_fm, options).total.double().std(unbiased=False))
    total = torch.zeros(len(fm), dtype=torch.float64)
    for c, w, q in _weighted(fm, query_fm, options):
        total += w.double() * _product(products, c, getattr(fm, c), q)[0].double()
    return float(total.std(unbiased=False))


def _product(products: ChannelProducts | None, c: str, matrix: torch.Tensor, q: torch.Tensor
             ) -> tuple[torch.Tensor, float]:
    """`_half_product` of one channel, from `products` when this channel and query vector were multiplied before."""
    key = (c, id(matrix), tuple(matrix.shape), q.detach().float().contiguous().numpy().tobytes())
    if products is not None and key in products:
        return products[key]
    out = _half_product(matrix, q)
    if products is not None:
        products[key] = out
    return out


def _index_holders(index: RiseIndex) -> span_lift.SpanHolders:
    """Which rows of `index` hold a span, read from their stored texts."""
    return span_lift.holders(span_lift.frame_texts(index.rows_frame))


def _noted(ranking: Ranking, query_fm: FeatureMatrix) -> Ranking:
    """`ranking` with the contrast's line when `query_fm` contrasts the query with another answer."""
    return dataclasses.replace(ranking, contrast=query_fm.note) if isinstance(query_fm, ContrastFeatures) else ranking


def top_each(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None, k: int = 10,
             where: str | None = None, search: str = "auto") -> list[Ranking]:
    """`top` for every query of a set separately (each ranking's `query` its 0-based number)."""
    return [dataclasses.replace(top(index, query_fm.select([q]), options, k, where, search), query=q)
            for q in range(len(query_fm))]


def selection_size(n_pool: int, top_n: int | None = None, fraction: float | None = None) -> int:
    """How many of `n_pool` rows a selection keeps: the `top_n` best (at most the pool), or the best `fraction`
    (rounded up); exactly one of them is given."""
    if (top_n is None) == (fraction is None):
        raise InputDataError("give exactly one of top_n and fraction")
    if top_n is not None:
        if top_n < 1:
            raise InputDataError(f"top_n must be at least 1, got {top_n}")
        return min(int(top_n), n_pool)
    if not 0.0 < float(fraction) <= 1.0:  # type: ignore[arg-type]
        raise InputDataError(f"fraction must be in (0, 1], got {fraction}")
    return math.ceil(float(fraction) * n_pool)  # type: ignore[arg-type]


def valuation(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None,
              top_n: int | None = None, fraction: float | None = None, where: str | None = None) -> Ranking:
    """Valuation: score the pool (or the rows matching `where`) against a query set and keep the `top_n` best or the
    best `fraction` of them (rounded up), best first; weighted as in `top` (always an exact scan)."""
    selection_size(0, top_n, fraction)  # a bad size is refused before the pool is scored
    resolved = index_weighting(index, query_fm, options)
    scores, allowed = _pool_scores(index, query_fm, resolved.options, where)
    n_pool = len(scores.total) if allowed is None else int(allowed.sum())
    n_keep = selection_size(n_pool, top_n, fraction)

    def head(m: int) -> Ranking:
        rows = top_k(scores.total, m, allowed)[0]
        return Ranking.of(rows, scores.take(rows), weighting=resolved)
    found = span_lift.lifting(resolved.choice.behaviour)
    if found is None:
        return _noted(head(n_keep), query_fm)
    lift = found.lift_spreads * float(scores.total.double().std(unbiased=False))
    ranking = span_lift.lift_head(head, n_keep, n_pool, lift, found, _index_holders(index))
    return _noted(dataclasses.replace(ranking, search=None), query_fm)


def streams_pool(index: RiseIndex, options: ScoreOptions) -> bool:
    """Whether a query under `options` reads this pool a block at a time (a large pool with an ANN index, its feature
    matrix not loaded: `_streamed_ann`) rather than from its feature matrix: what Compare asks before scoring."""
    return _streamed_ann(index, options) is not None


def pool_scores_each(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions, products: dict | None = None
                     ) -> np.ndarray:
    """(Q, N) float64: every pool row's score for each query, as `top` ranks the rows (the weights chosen for the
    query, the span lift where its behaviour test lifts), scored as a valuation scores them (`_pool_scores`: from the
    ANN file's codes a block at a time on a large pool): Compare's RISE on a pool it does not hold. `products`: a
    dict kept across calls for the same queries under other weights (`ann.score_pool_rows`): one pass over the codes
    serves them all."""
    out = []
    holds = None
    for q in range(len(query_fm)):
        one = query_fm if len(query_fm) == 1 else query_fm.select([q])
        resolved = index_weighting(index, one, options)
        total = _pool_scores(index, one, resolved.options, None, products)[0].total.double()
        found = span_lift.lifting(resolved.choice.behaviour)
        if found is not None:
            holds = holds or _index_holders(index)
            total = total + span_lift.lift_vector(total, found, holds)
        out.append(total.numpy())
    return np.stack(out) if out else np.zeros((0, len(index)))


def _pool_scores(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions, where: str | None,
                 products: dict | None = None) -> tuple[Scores, torch.Tensor | None]:
    """Every row's scores under fixed `options`, and the filter's row mask: from the ANN file's codes a block at a
    time where a query would take the ANN path and the feature matrix is not loaded (a large pool: it is never held
    whole), else from the feature matrix. Exact either way (float32 products of the same float16 rows)."""
    handle = _streamed_ann(index, options)
    if handle is not None:
        allowed = _row_mask(index, where)
        return ann.score_pool_rows(index, handle, query_fm, options, torch.arange(len(index)), products), allowed
    fm, allowed = _matrix_and_mask(index, where)
    return channel_sum(fm, query_fm, options), allowed


def rank(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None, k: int = 10,
         where: str | None = None, search: str = "auto") -> pd.DataFrame:
    """`top` as a table (`Ranking.to_frame`): rank, id, score, rh, gh, hs (score = rh + gh + hs, each weighted by its
    lambda), then the sample's text, prompt, completion, label, metadata columns and stats (n_counted, loss,
    mean_support, n_tokens, truncated); `df.attrs` holds search, notes, weighting and preset_note."""
    return top(index, query_fm, options, k, where, search).to_frame(index)


def rank_each(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None, k: int = 10,
              where: str | None = None, search: str = "auto") -> pd.DataFrame:
    """`top_each` as one table with a leading `query` column (1-based query number; `ranking.frame_each`)."""
    return frame_each(top_each(index, query_fm, options, k, where, search), index)


def select(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None,
           top_n: int | None = None, fraction: float | None = None, where: str | None = None) -> pd.DataFrame:
    """`valuation` as a table: the columns and attrs of `rank` (no search: the pool is always scanned)."""
    return valuation(index, query_fm, options, top_n, fraction, where).to_frame(index)


TOKEN_SKETCHES: BoundedMemo[TokenSketches] = BoundedMemo(16)
"""The token sketches of the last few queries (and contrasts' other answers) explained, so that explaining the ten
hits of one query runs its forward pass once, not ten times (`_token_sketches`)."""


HIT_SKETCHES: BoundedMemo[TokenSketches] = BoundedMemo(32)
"""The token sketches of the last hits explained. A hit's do not depend on the query or the weights, so when the
weights or the view change (the Attribute page explains its ten hits again under the new options) they are read back
instead of running the hits' forward passes again. About 15 KB a token at the default config (4 MB a hit of 300
tokens; 32 hits of 512 tokens, the most, 230 MB)."""


def _sketch_key(index: RiseIndex, lm: LoadedModel) -> tuple:
    """What token sketches depend on besides the text: the index's state, its model and config."""
    m = index.manifest
    return str(index.path), m.index_uuid, m.updated_at, lm.fingerprint(), m.config.fingerprint()


def _token_sketches(index: RiseIndex, lm: LoadedModel, extractor: RiseExtractor, sample: Sample) -> TokenSketches:
    """`extractor.token_sketches(sample)`, from `TOKEN_SKETCHES` when this index state, model and text ran before."""
    key = (*_sketch_key(index, lm), sample.prompt, sample.completion, sample.text, repr(sample.messages))
    return TOKEN_SKETCHES.get(key, lambda: extractor.token_sketches(sample))


def explain(index: RiseIndex, lm: LoadedModel, sample_id: str, query: Sample | str | dict,
            query_fm: FeatureMatrix | None = None, options: ScoreOptions | None = None
            ) -> tuple[TokenAttribution, TokenAttribution]:
    """Per-token, per-channel contributions of a hit (against the query) and of the query (against the hit),
    recomputing both texts' token sketches; the hit's contributions sum to its rh / gh / hs scores in `rank`.
    `query_fm`: the one-row features of `query` (computed when omitted). For a contrast (`query_fm` from
    `query_features(..., versus=B)`), the hit's contributions are against A - B (they sum to its contrast scores) and
    the query's are A's tokens, pushing up; `explain_versus` gives B's, pushing down."""
    return explain_many(index, lm, [sample_id], query, query_fm, options)[str(sample_id)]


def explain_many(index: RiseIndex, lm: LoadedModel, sample_ids: Sequence[str], query: Sample | str | dict,
                 query_fm: FeatureMatrix | None = None, options: ScoreOptions | None = None,
                 max_tokens: int = EXPLAIN_BATCH_TOKENS) -> dict[str, tuple[TokenAttribution, TokenAttribution]]:
    """`explain` for several hits of one query: {id: (hit's contributions, query's)}, the query's forward pass run
    once and the hits' grouped by length into passes of at most `max_tokens` tokens
    (`RiseExtractor.token_sketches_many`), for the hits whose sketches are not kept (`HIT_SKETCHES`)."""
    query = Sample.coerce(query)
    if query_fm is None:
        query_fm = query_features(index, lm, [query])
    if len(query_fm) != 1:
        raise InputDataError("explain needs the features of one query (query_fm has "
                             f"{len(query_fm)} rows)")
    ids = list(dict.fromkeys(str(i) for i in sample_ids))
    extractor = index.extractor(lm)
    options = index_weighting(index, query_fm, options).options
    query_sketches = _token_sketches(index, lm, extractor, query)
    examples = [index.sample(i) for i in ids]
    base = _sketch_key(index, lm)
    sketches = HIT_SKETCHES.get_many([(*base, "row", i) for i in ids], lambda missing: extractor.token_sketches_many(
        [examples[j] for j in missing], max_tokens))
    return {i: explain_hit(extractor, example, index.row_features(index.row_of(i)), query, query_fm, options,
                           query_sketches=query_sketches, example_sketches=sk)
            for i, example, sk in zip(ids, examples, sketches, strict=True)}


def explain_versus(index: RiseIndex, lm: LoadedModel, sample_id: str, versus: Sample | str | dict,
                   query_fm: ContrastFeatures, options: ScoreOptions | None = None) -> TokenAttribution:
    """Per-token contributions of a contrast's other answer B to a hit's contrast score, negated (B's tokens push the
    score down): with `explain`'s query tokens (A's, pushing up) they sum to the hit's contrast scores in `rank`.
    `query_fm`: the contrast of one query with one other answer, `versus` (B's text)."""
    if not isinstance(query_fm, ContrastFeatures) or query_fm.versus is None:
        raise InputDataError("explain_versus explains a contrast: give query_features(..., versus=...) of the query")
    if len(query_fm) != 1 or len(query_fm.versus) != 1:
        raise InputDataError("explain_versus needs the contrast of one query with one other answer")
    extractor = index.extractor(lm)
    example_fm = index.row_features(index.row_of(sample_id))
    options = index_weighting(index, query_fm, options).options  # A's weights, as the ranking used
    versus = Sample.coerce(versus)
    return versus_attribution(extractor, example_fm, versus, query_fm.versus, options,
                              versus_sketches=_token_sketches(index, lm, extractor, versus))


def feedback_ranker(fm: FeatureMatrix, query_fm: FeatureMatrix, options: ScoreOptions,
                    config: FeedbackConfig | None = None, start: ScoreOptions | None = None,
                    words: MarkedWords | None = None, span: SpanLift | None = None, turn: ScoreOptions | None = None
                    ) -> Callable[[Marks], FeedbackResult]:
    """marks {row: relevant?} -> the pool's scores after relevance feedback, for fixed `options` (weights already
    chosen, e.g. by `index_weighting`): each weighted channel's raw scores and marked-row similarities, with starting
    weights lambda_c times the channel's spread (z units), so no marks gives the same ranking as `options`. `start`
    (fixed options; None: `options`): the weights the marks start from (`adaptive.feedback_start`: the shown ones,
    with every channel kept within the marks' reach). `words`: the marked words' reader (`marked_words`; None:
    channels only). `span`: the behaviour test's span lift, kept after marks unless they reject it
    (`span_lift.kept_after_marks`; None: none). `turn`: the other view's fixed options, which the weights turn to
    while the marks all miss (`adaptive.feedback_turn`; None: never)."""
    q = query_vectors(query_fm, options)
    scales = channel_scales(fm, options)
    raw, rows_fn = {}, {}
    for c in _feedback_channels(options, q, start, turn):
        raw[c] = (scales[c] * matvec(getattr(fm, c), q[c])).double().numpy()
        rows_fn[c] = unit_row_scores(getattr(fm, c), scales[c])
    return _ranker(raw, rows_fn, options, start, q, config, words, span, turn)


def _feedback_channels(options: ScoreOptions, q: dict[str, torch.Tensor], *more: ScoreOptions | None) -> list[str]:
    """Every channel the shown weights or any of `more` (the marks' start, the view they turn to) weigh."""
    return list(dict.fromkeys(c for o in (*more, options) if o is not None for c in dict(weighted_channels(o, q))))


def _ranker(raw: dict[str, np.ndarray], rows_fn: dict[str, RowScores], options: ScoreOptions,
            start: ScoreOptions | None, q: dict[str, torch.Tensor], config: FeedbackConfig | None,
            words: MarkedWords | None, span: SpanLift | None, turn: ScoreOptions | None = None
            ) -> Callable[[Marks], FeedbackResult]:
    """`feedback_ranker` from each channel's raw scores and marked-row similarities however they were computed."""
    shown, started = dict(weighted_channels(options, q)), dict(weighted_channels(start or options, q))
    other = dict(weighted_channels(turn, q)) if turn is not None else None
    spread = {c: float(values.std()) for c, values in raw.items()}
    base = {c: started.get(c, 0.0) * s for c, s in spread.items()}
    unmarked = {c: shown.get(c, 0.0) * s for c, s in spread.items()}
    turned = None if other is None else {c: other.get(c, 0.0) * s for c, s in spread.items()}
    return lambda marks: apply_feedback(raw, rows_fn, marks, base if marks else unmarked, config, words, span,
                                        turned)


def _streamed_feedback_ranker(index: RiseIndex, handle: ann.AnnIndex, query_fm: FeatureMatrix,
                              options: ScoreOptions, marked: Sequence[int], config: FeedbackConfig | None,
                              start: ScoreOptions | None, words: MarkedWords | None, span: SpanLift | None,
                              turn: ScoreOptions | None = None) -> Callable[[Marks], FeedbackResult]:
    """`feedback_ranker` for the `marked` rows of a pool the process does not hold (`options` under
    sample_norm='channel', as the ANN path requires): the query's and the marked rows' products with every row,
    in one pass over the ANN file's codes (`ann.pool_channel_products`), the marked rows' features read alone. Other
    rows asked for (the pseudo rows, `FeedbackConfig.pseudo_rows`) take one more pass."""
    q = query_vectors(query_fm, options)
    channels = _feedback_channels(options, q, start, turn)
    by_row: dict[int, dict[str, torch.Tensor]] = {}

    def read(rows: Sequence[int], query: bool = False) -> dict[str, torch.Tensor]:
        """One pass over the codes for the query (when asked) and the rows not read yet: the query's products."""
        missing = list(dict.fromkeys(int(r) for r in rows if int(r) not in by_row))
        if not missing and not query:
            return {}
        feats = [index.row_features(r) for r in missing]
        got = ann.pool_channel_products(index, handle, {
            c: torch.stack([*([q[c].float()] if query else []), *(getattr(f, c)[0].float() for f in feats)], dim=1)
            for c in channels})
        for i, r in enumerate(missing):
            by_row[r] = {c: got[c][:, i + int(query)] for c in channels}
        return {c: got[c][:, 0] for c in channels} if query else {}

    raw = {c: v.double().numpy() for c, v in read(marked, query=True).items()}

    def row_scores(c: str) -> RowScores:
        def scores(wanted: list[int]) -> np.ndarray:
            read(wanted)
            return torch.stack([by_row[int(r)][c] for r in wanted]).double().numpy()
        return scores

    rows_fn = {c: row_scores(c) for c in channels}
    return _ranker(raw, rows_fn, options, start, q, config, words, span, turn)


def marked_words(index: RiseIndex, query: Sample | str | dict, bm25: TermScorer, refused: Collection[str] = ()
                 ) -> MarkedWords:
    """The marked-words reader of feedback on `index`: the query's words, the marked rows' stored texts, and `bm25`
    (a scorer fitted on this index's pool, `compare.fit_bm25`) to score them over the pool; `refused`: words the
    analyst said not to lift (`MarkedWords.without`)."""
    if bm25.n_pool != len(index):
        raise InputDataError(f"the BM25 scorer was fitted on {bm25.n_pool} samples but {index.path.name} has "
                             f"{len(index)}: fit it on this index's pool")

    def row_text(rows: list[int]) -> list[str]:
        return [sample_from_row(r).full_text for r in index.rows_frame(rows).reset_index().to_dict("records")]

    return MarkedWords.from_bm25(bm25, Sample.coerce(query).full_text, row_text).without(refused)


def top_with_feedback(index: RiseIndex, query_fm: FeatureMatrix, marks: dict[str, bool],
                      options: ScoreOptions | None = None, k: int = 10, where: str | None = None,
                      config: FeedbackConfig | None = None, words: MarkedWords | None = None) -> Ranking:
    """`top` after an analyst's marks: {sample id: True (relevant) / False (irrelevant)} move the ranking by
    relevance feedback (`rise_core.feedback`: Rocchio per channel, channel re-weighting, in z units over the pool,
    and the marked words when `words` is given: `marked_words`).

    The rows come as the analyst sees them (`feedback.shown_order`): the rows marked yes first, then the k best
    unmarked rows, then the rows marked no, each group by its new score (marked rows outside the filter `where` left
    out). The simulated analyst's figures measure this order. The parts are each channel's weighted part in z units
    and the marked words' ("words"; scores their sum); the ranking's `marks` are the marks by row and its `feedback`
    the weights, evidence and marked words. Always scans the pool exactly."""
    if k < 1:
        raise InputDataError(f"k must be at least 1, got {k}")
    resolved = index_weighting(index, query_fm, options)
    row_marks = {}
    for sid, relevant in marks.items():
        try:
            row_marks[index.row_of(str(sid))] = bool(relevant)
        except InputDataError:
            raise InputDataError(f"marked example {sid!r} is not in {index.path.name}") from None
    start = adaptive.feedback_start(resolved.applied.options, resolved.choice)
    turn = adaptive.feedback_turn(resolved.applied.options, resolved.choice)
    span = span_lift.kept_after_marks(resolved.choice.behaviour, _index_holders(index))
    handle = _streamed_ann(index, resolved.options)
    if handle is not None:  # a large pool the process does not hold: one pass over the ANN file's codes
        allowed = _row_mask(index, where)
        ranker = _streamed_feedback_ranker(index, handle, query_fm, resolved.options, list(row_marks), config, start,
                                           words, span, turn)
    else:
        fm, allowed = _matrix_and_mask(index, where)
        ranker = feedback_ranker(fm, query_fm, resolved.options, config, start, words, span, turn)
    result = ranker(row_marks)
    total = torch.from_numpy(result.total).float()
    parts = {c: torch.from_numpy(v).float() for c, v in result.parts.items()}
    rows = _shown_rows(total, row_marks, k, allowed)
    n_relevant = sum(row_marks.values())
    ranking = Ranking.of(rows, Scores.from_parts(parts, len(total)).take(rows), weighting=resolved, marks=row_marks,
                         feedback={"weights": result.weights, "evidence": result.evidence, "words": result.words,
                                   "n_relevant": n_relevant, "n_irrelevant": len(row_marks) - n_relevant,
                                   "span": result.span, "span_rejected": result.span_rejected,
                                   "lifted_word": result.lifted_word, "lifted_rows": result.lifted_rows,
                                   "refused_words": list(result.refused_words),
                                   "turned": result.turned, "orthogonal_no": result.orthogonal_no,
                                   "pseudo_rows": list(result.pseudo_rows)})
    extra = {c: parts[c][rows] for c in EXTRA_PARTS if c in parts}
    if extra:  # the lifts and the marked words join the channels' parts (the total is their sum)
        ranking = dataclasses.replace(ranking, scores=total[rows], parts={**ranking.parts, **extra})
    return _noted(ranking, query_fm)


def _shown_rows(total: torch.Tensor, marks: dict[int, bool], k: int, allowed: torch.Tensor | None) -> torch.Tensor:
    """The rows marked yes, the k best unmarked rows, the rows marked no (`feedback.shown_order` within each group),
    among the `allowed` rows."""
    unmarked = torch.ones(len(total), dtype=torch.bool) if allowed is None else allowed.clone()
    unmarked[list(marks)] = False
    best = top_k(total, k, unmarked)[0].tolist()
    kept = sorted(r for r in marks if allowed is None or bool(allowed[r]))
    order = shown_order(total[kept].double().numpy(), {i: marks[r] for i, r in enumerate(kept)}) if kept else []
    marked = [kept[i] for i in order]  # the yes rows, then the no rows
    n_yes = sum(marks[r] for r in kept)
    return torch.tensor(marked[:n_yes] + best + marked[n_yes:], dtype=torch.long)


def rank_with_feedback(index: RiseIndex, query_fm: FeatureMatrix, marks: dict[str, bool],
                       options: ScoreOptions | None = None, k: int = 10, where: str | None = None,
                       config: FeedbackConfig | None = None, words: MarkedWords | None = None) -> pd.DataFrame:
    """`top_with_feedback` as a table: the columns of `rank` plus `mark` ('yes', 'no' or ''); `df.attrs["feedback"]`
    holds the weights, evidence and marked words."""
    return top_with_feedback(index, query_fm, marks, options, k, where, config, words).to_frame(index)
