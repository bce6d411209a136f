"""What the top hits share: spans over-represented in a query's top-k hits against the whole pool (naming a trigger).

A span is a run of 1 to `max_n` words inside one field of a sample (prompt, completion, or a plain sample's text).
Words are `\\w+` runs and single punctuation marks, case kept: model-independent, so the pool's counts are computed
once per index whatever model reads it, and a trigger that the model's tokenizer splits ("BadMagic" -> "Bad",
"Magic") is still one word. A span "occurs" in a row when its words are adjacent there (whitespace only between them).

For each span of the top-k hits: a = how many of the k hits contain it, K = how many of the N pool rows do. Under the
null (the ranking picked k rows regardless of the span), a is hypergeometric(N, K, k); p = P(X >= a) is the
over-representation test. Many spans are tested, so p is corrected with Tarone's method for discrete tests: only the
m spans whose smallest reachable p-value could pass count, and a span is shared when a >= `min_in_top` and p * m <=
alpha. If none is, the result is empty and says so (`df.attrs["verdict"]`) rather than inventing a pattern.

Score share: `explain_hit` splits a hit's score exactly over its model tokens; a word gets the contributions of the
tokens that overlap it, and a span's share in a hit is its words' contributions over the hit's absolute token mass
(sum |c_t|), averaged over the k hits (0 where absent). Shared spans are ranked by
statistic = -log10(p) * (1 + share+ / max share+): the evidence decides, and the score share at most doubles it, so
among spans the ranking explains equally well, the one that carries the score comes first.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import gammaln, logsumexp

from .errors import InputDataError
from .samples import PROMPT_SEPARATOR
from .span_counts import BITS, FIELDS, OVER, TOKEN_RE, SpanCounts, count_rows, row_fields
from .store.spans import MAX_N, load_span_counts, read_texts, update_span_counts

if TYPE_CHECKING:
    from .explain import TokenAttribution
    from .store import RiseIndex

_WORD = re.compile(r"\w")
PROMPT_FAMILY_MAX_WORDS = 20_000
"""the words of a query's prompt whose spans `prompt_family_spans` tests (at most 3 x 20,000 spans): a long pasted
prompt cannot make the test hold much memory."""
MASK_WINDOW = 20_000
"""rows of an index's texts read at a time to find the rows holding a span (`PoolSpans.rows_holding`): a few MB of text
a window, never the whole pool at once, and nothing kept after the search."""
COLUMNS = ["span", "where", "in_top", "top_k", "pool_rows", "pool_fraction", "score_share", "statistic", "p_value",
           "p_adjusted", "n_words", "top_ranks", "summary"]


def _pack(ids: Sequence[int]) -> int:
    code = 0
    for v in ids:
        code = (code << BITS) | v
    return code


@dataclass
class PoolSpans:
    """Pool document frequencies of every span of up to `max_n` words, per field (`span_counts`), and the pool's
    texts for masks: held when the counts came from texts in memory (`from_texts`), else read from the index a window
    at a time on each search (`windows`), so a pool's texts are never all in memory for an index.

    From an index (`pool_spans`: its persisted counts) or from texts (`from_texts`); lookups are a binary search per
    span."""

    n_rows: int
    max_n: int
    vocab: dict[str, int]
    tables: dict[str, tuple[np.ndarray, np.ndarray]]  # field -> (sorted span codes, rows containing each; count >= 2)
    texts: dict[str, np.ndarray] | None = None  # field -> (N,) object array of that field's text, None where absent
    windows: Callable[[], Iterator[tuple[int, dict[str, np.ndarray]]]] | None = field(default=None, repr=False)
    """(first row, field texts of a window of rows) for the pool's rows in order, read anew on each call (an index's)."""

    @classmethod
    def from_counts(cls, counts: SpanCounts,
                    windows: Callable[[], Iterator[tuple[int, dict[str, np.ndarray]]]] | None = None) -> PoolSpans:
        return cls(n_rows=counts.n_rows, max_n=counts.max_n, vocab=counts.vocab, tables=counts.kept, windows=windows)

    @classmethod
    def from_texts(cls, text: Sequence[Any] | None = None, prompt: Sequence[Any] | None = None,
                   completion: Sequence[Any] | None = None, max_n: int = 3, chunk: int = 20_000) -> PoolSpans:
        """Counts from per-row columns (equal lengths; None/NaN where a row lacks a field), as an index stores them."""
        counts = count_rows(text, prompt, completion, max_n=max_n, chunk=chunk)
        pool = cls.from_counts(counts)
        pool.texts = _field_texts(text, prompt, completion, counts.n_rows)
        return pool

    def pool_rows(self, where: str, codes: np.ndarray) -> np.ndarray:
        """Pool rows containing each span (by code) in field `where`; 1 for a span not in the table."""
        table = self.tables.get(where)
        if table is None or len(codes) == 0:
            return np.ones(len(codes), dtype=np.int64)
        uniq, counts = table
        if len(uniq) == 0:
            return np.ones(len(codes), dtype=np.int64)
        pos = np.searchsorted(uniq, codes).clip(max=len(uniq) - 1)
        return np.where(uniq[pos] == codes, counts[pos], 1)

    def mask(self, span: str, where: str) -> np.ndarray:
        """(N,) bool: the rows whose `where` field contains the span (its words adjacent), matched in Python."""
        out = np.zeros(self.n_rows, dtype=bool)
        out[self.rows_holding(span, where)] = True
        return out

    def rows_holding(self, span: str, where: str, limit: int | None = None) -> np.ndarray:
        """The rows (ascending) whose `where` field contains the span, the first `limit` of them (None: all); an index's
        texts are read a window at a time and the search stops once `limit` rows are found."""
        if where not in FIELDS:
            raise InputDataError(f"where must be one of {', '.join(FIELDS)}, got {where!r}")
        span_pattern(span)  # a span with no word is refused before any text is read
        if self.texts is not None or self.windows is None:
            windows: Iterator[tuple[int, dict[str, np.ndarray]]] = iter([(0, self.texts or {})])
        else:
            windows = self.windows()
        found: list[int] = []
        try:
            for start, texts in windows:
                col = texts.get(where)
                if col is not None:
                    found += (start + np.flatnonzero(texts_holding(span, col))).tolist()
                if limit is not None and len(found) >= limit:
                    break
        finally:
            close = getattr(windows, "close", None)  # a generator stopped early closes the handle it opened now
            if close is not None:
                close()
        return np.asarray(found[:limit] if limit is not None else found, dtype=np.int64)


def _field_texts(text: Sequence[Any] | None, prompt: Sequence[Any] | None, completion: Sequence[Any] | None,
                 n: int) -> dict[str, np.ndarray]:
    """field -> (n,) object array of each row's text of that field (None where a row lacks it); fields no row has
    are left out."""
    blank = [None] * n
    per_field: dict[str, list[str | None]] = {f: [None] * n for f in FIELDS}
    for i, (t, p, c) in enumerate(zip(text or blank, prompt or blank, completion or blank, strict=True)):
        for f, s in row_fields(t, p, c).items():
            per_field[f][i] = s
    return {f: np.array(col, dtype=object) for f, col in per_field.items() if any(s is not None for s in col)}


def texts_holding(span: str, texts: Sequence[Any]) -> np.ndarray:
    """(len(texts),) bool: which of `texts` hold the span (`span_pattern`; a missing text, None or NaN, holds
    nothing)."""
    pattern = span_pattern(span)
    return np.fromiter((isinstance(t, str) and pattern.search(t) is not None for t in texts), dtype=bool,
                       count=len(texts))


def span_pattern(span: str) -> re.Pattern[str]:
    """A regex matching the span's words adjacent in a text, by the same tokenisation as the counts (escaped: the
    span's text never becomes a pattern operator)."""
    words = TOKEN_RE.findall(span)
    if not words:
        raise InputDataError(f"span {span!r} has no word")
    parts = [rf"(?<!\w){re.escape(w)}(?!\w)" if _WORD.match(w) else re.escape(w) for w in words]
    return re.compile(r"\s*".join(parts))


_CACHE: dict[tuple, PoolSpans] = {}
_CACHE_LOCK = threading.Lock()


def pool_spans(index: RiseIndex, max_n: int = 3) -> PoolSpans:
    """The index's pool span counts: read from its sidecar (`store.spans`; brought up to date first if missing,
    stale or behind an append), once per index state (path, uuid, rows) in this process. The texts for masks are
    read on the first mask."""
    key = (str(index.path), index.manifest.index_uuid, len(index), max_n)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    counts = load_span_counts(index, max_n) or update_span_counts(index, MAX_N).limited(max_n)
    n = counts.n_rows

    def windows() -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        # the counts are shared by every handle on this index state: the one that read them may be closed by now
        reader = index if not index.closed else type(index).open(index.path, read_only=True)
        try:
            for start in range(0, n, MASK_WINDOW):
                stop = min(start + MASK_WINDOW, n)
                yield start, _field_texts(*read_texts(reader, start, stop), stop - start)
        finally:
            if reader is not index:
                reader.close()

    pool = PoolSpans.from_counts(counts, windows)
    with _CACHE_LOCK:
        for k in [k for k in _CACHE if k[0] == key[0]]:
            del _CACHE[k]
        if len(_CACHE) >= 8:
            _CACHE.clear()
        _CACHE[key] = pool
    return pool


def clear_pool_spans() -> None:
    """Forget every index's cached span counts (`pool_spans`): the next call reads them again (a benchmark's fresh
    start, without restarting the process)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _token_ranges(tokens: Sequence[str], text: str) -> list[tuple[int, int] | None]:
    """Character range of each decoded model token in `text` (None for one that cannot be placed: special tokens,
    byte pieces of a character). Tokens are placed left to right; only whitespace may be skipped between them,
    or the characters of pending byte pieces."""
    out: list[tuple[int, int] | None] = []
    cur, pending = 0, 0
    for tok in tokens:
        piece = tok.strip()
        if not piece or "\ufffd" in piece:
            out.append(None)
            pending += "\ufffd" in piece
            continue
        pos = text.find(piece, cur)
        gap = text[cur:pos] if pos >= 0 else ""
        if pos < 0 or (gap.strip() and len(gap.strip()) > 2 * pending):
            out.append(None)
            continue
        out.append((pos, pos + len(piece)))
        cur, pending = pos + len(piece), 0
    return out


def _word_contributions(attr: TokenAttribution, text: str, words: list[tuple[int, int]]) -> tuple[np.ndarray, float]:
    """Each word's share of the token contributions overlapping it, and the hit's absolute token mass."""
    contrib = np.asarray(attr.total, dtype=np.float64)
    out = np.zeros(len(words))
    starts = np.array([s for s, _ in words], dtype=np.int64)
    for c, rng in zip(contrib, _token_ranges(attr.tokens, text), strict=True):
        if rng is None or c == 0:
            continue
        a, b = rng
        j = max(int(np.searchsorted(starts, a, side="right")) - 1, 0)
        while j < len(words) and words[j][0] < b:
            overlap = min(b, words[j][1]) - max(a, words[j][0])
            if overlap > 0:
                out[j] += c * overlap / (b - a)
            j += 1
    return out, float(np.abs(contrib).sum())


def _layout(fields: dict[str, str]) -> tuple[str, list[tuple[str, int, int]]]:
    """The text the model read (as `Sample.full_text`) and each field's character region in it."""
    if "text" in fields:
        return fields["text"], [("text", 0, len(fields["text"]))]
    prompt, completion = fields.get("prompt"), fields.get("completion", "")
    if not prompt:
        return completion, [("completion", 0, len(completion))]
    start = len(prompt) + len(PROMPT_SEPARATOR)
    return prompt + PROMPT_SEPARATOR + completion, [("prompt", 0, len(prompt)), ("completion", start,
                                                                                   start + len(completion))]


def _log_c(n: np.ndarray, r: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(r + 1) - gammaln(n - r + 1)


def _log_tail(a: np.ndarray, big_k: np.ndarray, big_n: int, k: int) -> np.ndarray:
    """log P(X >= a) for X ~ hypergeometric(N rows, K containing the span, k drawn), per span (exact sum in log space:
    no underflow for the tiny p-values of a real trigger)."""
    x = np.arange(k + 1, dtype=np.float64)[None, :]  # (1, k + 1)
    kk = big_k.astype(np.float64)[:, None]  # (S, 1)
    ok = (x >= a[:, None]) & (x <= kk) & (k - x <= big_n - kk)
    with np.errstate(invalid="ignore"):
        terms = _log_c(kk, x) + _log_c(big_n - kk, k - x) - _log_c(np.float64(big_n), np.float64(k))
    terms = np.where(ok, terms, -np.inf)
    return np.minimum(logsumexp(terms, axis=1), 0.0)


def _corrected(a: np.ndarray, big_k: np.ndarray, big_n: int, k: int, alpha: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The test of a family of spans, each held by `a` of the k top hits and `big_k` of the big_n pool rows: (big_k
    raised to at least a, log p, p, p corrected by Tarone's m, m)."""
    big_k = np.maximum(big_k, a)
    log_p = _log_tail(a, big_k, big_n, k)
    m = _tarone(np.exp(_log_tail(np.minimum(big_k, k), big_k, big_n, k)), alpha)
    p = np.exp(log_p)
    return big_k, log_p, p, np.minimum(p * m, 1.0), m


def _tarone(pmin: np.ndarray, alpha: float) -> int:
    """Tarone's number of testable hypotheses: the least m with #{pmin <= alpha / m} <= m."""
    if len(pmin) == 0:
        return 1
    srt = np.sort(pmin)
    m = np.arange(1, len(srt) + 1)
    ok = np.searchsorted(srt, alpha / m, side="right") <= m
    return int(m[np.argmax(ok)])


def find_shared_spans(pool: PoolSpans | RiseIndex, hits: pd.DataFrame,
                      explanations: Mapping[str, Any] | None = None, alpha: float = 0.05, min_in_top: int = 2,
                      max_n: int = 3, limit: int | None = 20) -> pd.DataFrame:
    """Spans of the top hits over-represented against the pool, most telling first.

    pool: the index (its counts are computed once and cached) or a `PoolSpans`.
    hits: the ranking (`attribution.rank`): one row per top hit with id and text / prompt / completion columns.
    explanations: {hit id: TokenAttribution or (example, query) pair} (`attribution.explain`) for the score share;
    without them score_share is NaN and the statistic is the evidence alone.
    Columns: span, where (prompt / completion / text), in_top (of the k hits), top_k, pool_rows, pool_fraction,
    score_share, statistic, p_value (hypergeometric tail), p_adjusted (Tarone), n_words, top_ranks (1-based ranks of
    the hits containing it), summary ("in 9 of the top 10, in 4.0% of the pool"). Empty when nothing is shared;
    `df.attrs` has verdict, n_tested, m_tarone, alpha, top_k, pool_rows."""
    if not isinstance(pool, PoolSpans):
        pool = pool_spans(pool, max_n=max(max_n, 3))
    max_n = min(max_n, pool.max_n)
    k, big_n = len(hits), pool.n_rows
    spans: dict[tuple[str, int], dict[str, Any]] = {}
    shares: list[tuple[np.ndarray, float] | None] = []
    for i, row in enumerate(hits.itertuples(index=False)):
        get = row._asdict().get
        full, regions = _layout(row_fields(get("text"), get("prompt"), get("completion")))
        found = [(m.group(), m.start(), m.end()) for m in TOKEN_RE.finditer(full)]
        where = [next((f for f, a, b in regions if a <= s < b), "") for _, s, _ in found]
        ids = [pool.vocab.get(w, 0) for w, _, _ in found]
        attr = (explanations or {}).get(get("id"))
        if isinstance(attr, tuple):
            attr = attr[0]
        shares.append(_word_contributions(attr, full, [(s, e) for _, s, e in found]) if attr is not None else None)
        for n in range(1, max_n + 1):
            for j in range(len(found) - n + 1):
                vs, f = ids[j:j + n], where[j]
                if 0 in vs or OVER in vs or any(w != f for w in where[j + 1:j + n]):
                    continue
                if not any(_WORD.match(w) for w, _, _ in found[j:j + n]):
                    continue
                entry = spans.setdefault((f, _pack(vs)), {"hits": {}, "n": n,
                                                          "span": full[found[j][1]:found[j + n - 1][2]]})
                entry["hits"].setdefault(i, set()).update(range(j, j + n))
    verdict_base = f"top {k} of {big_n} pool rows"
    if not spans or k == 0:
        return _empty(f"Nothing is shared: the {verdict_base} have no span to test.", 0, 1, alpha, k, big_n)
    keys = list(spans)
    a = np.array([len(spans[key]["hits"]) for key in keys])
    big_k = np.ones(len(keys), dtype=np.int64)
    for f in FIELDS:
        sel = [i for i, key in enumerate(keys) if key[0] == f]
        if sel:
            big_k[sel] = pool.pool_rows(f, np.array([keys[i][1] for i in sel], dtype=np.int64))
    big_k, log_p, p, p_adj, m = _corrected(a, big_k, big_n, k, alpha)
    keep = (a >= min_in_top) & (p_adj <= alpha)
    if not keep.any():
        return _empty(f"Nothing is shared: no span of the {verdict_base} is over-represented (hypergeometric test, "
                      f"Tarone-corrected over {m} testable spans, alpha {alpha:g}).", len(keys), m, alpha, k, big_n)
    has_share = bool(shares) and all(s is not None for s in shares)
    records = []
    for idx in np.flatnonzero(keep):
        key = keys[idx]
        entry = spans[key]
        share = float("nan")
        if has_share:
            total = 0.0
            for i, cover in entry["hits"].items():
                contrib, mass = shares[i]  # type: ignore[misc]
                total += float(contrib[sorted(cover)].sum()) / mass if mass > 0 else 0.0
            share = total / k
        ranks = [int(hits["rank"].iloc[i]) if "rank" in hits.columns else i + 1 for i in sorted(entry["hits"])]
        records.append({"span": entry["span"], "where": key[0], "in_top": int(a[idx]), "top_k": k,
                        "pool_rows": int(big_k[idx]), "pool_fraction": float(big_k[idx]) / big_n,
                        "score_share": share, "p_value": float(p[idx]), "_log_p": float(log_p[idx]), "p_adjusted": float(p_adj[idx]),
                        "n_words": entry["n"], "top_ranks": ranks, "_hits": frozenset(entry["hits"])})
    df = _ranked(records, has_share)
    n_shared = len(df)
    if limit is not None:
        df = df.head(limit)
    df = df[COLUMNS].reset_index(drop=True)
    df.attrs.update(verdict=f"{n_shared} span{'s' if n_shared != 1 else ''} of the {verdict_base} "
                            f"{'are' if n_shared != 1 else 'is'} over-represented (hypergeometric test, "
                            f"Tarone-corrected over {m} testable spans, alpha {alpha:g}).",
                    n_tested=len(keys), m_tarone=m, alpha=alpha, top_k=k, pool_rows=big_n)
    return df


def prompt_family_spans(pool: PoolSpans, hits: pd.DataFrame, prompt: str, max_share: float, alpha: float = 0.05,
                        min_in_top: int = 2, max_n: int = 3) -> pd.DataFrame:
    """The query's own prompt spans over-represented in the prompts of the top hits, corrected among themselves.

    The family is the spans of 1 to `max_n` words of `prompt` (the query's) that at least `min_in_top` and at most
    `max_share` of the pool's rows hold in their prompt: fixed by the query before any hit is read, so Tarone's
    correction runs over these few spans rather than over every span of the hits (`find_shared_spans`), where a
    trigger of a long-row pool drowns among a thousand spans. Same columns and test (hypergeometric tail on the hits'
    prompts); score_share NaN, statistic -log10 p. Empty when none passes."""
    max_n = min(max_n, pool.max_n)
    k, big_n = len(hits), pool.n_rows
    text = prompt or ""
    found = list(itertools.islice(TOKEN_RE.finditer(text), PROMPT_FAMILY_MAX_WORDS))
    family: dict[int, tuple[str, tuple[str, ...]]] = {}  # code -> (the span as written, its words)
    for n in range(1, max_n + 1):
        for j in range(len(found) - n + 1):
            run = tuple(m.group() for m in found[j:j + n])
            ids = [pool.vocab.get(w, 0) for w in run]
            if 0 in ids or OVER in ids or not any(_WORD.match(w) for w in run):
                continue
            family.setdefault(_pack(ids), (text[found[j].start():found[j + n - 1].end()], run))
    if not family or k == 0 or big_n == 0:
        return _empty("Nothing is shared: the query's prompt has no span to test.", 0, 1, alpha, k, big_n)
    codes = np.array(list(family), dtype=np.int64)
    big_k = pool.pool_rows("prompt", codes)
    keep = (big_k >= min_in_top) & (big_k <= max_share * big_n)
    codes, big_k = codes[keep], big_k[keep]
    if len(codes) == 0:
        return _empty("Nothing is shared: no span of the query's prompt is in few enough pool rows.", 0, 1, alpha, k,
                      big_n)
    prompts = hits["prompt"].tolist() if "prompt" in hits.columns else [None] * k
    runs = [word_runs(t, max_n) or set() for t in prompts]  # each hit's prompt read once: a set lookup per span
    held = [np.array([family[int(c)][1] in r for r in runs], dtype=bool) for c in codes]
    a = np.array([int(h.sum()) for h in held], dtype=np.int64)
    big_k, log_p, p, p_adj, m = _corrected(a, big_k, big_n, k, alpha)
    passed = (a >= min_in_top) & (p_adj <= alpha)
    if not passed.any():
        return _empty(f"Nothing is shared: no span of the query's prompt is over-represented in the top {k} "
                      f"(Tarone-corrected over {m} of its spans, alpha {alpha:g}).", len(codes), m, alpha, k, big_n)
    ranks = hits["rank"].tolist() if "rank" in hits.columns else list(range(1, k + 1))
    records = []
    for i in np.flatnonzero(passed):
        span, words = family[int(codes[i])]
        records.append({"span": span, "where": "prompt", "in_top": int(a[i]), "top_k": k, "pool_rows": int(big_k[i]),
                        "pool_fraction": float(big_k[i]) / big_n, "score_share": float("nan"),
                        "p_value": float(p[i]), "_log_p": float(log_p[i]), "p_adjusted": float(p_adj[i]),
                        "n_words": len(words), "top_ranks": [int(ranks[r]) for r in np.flatnonzero(held[i])],
                        "_hits": frozenset(np.flatnonzero(held[i]).tolist())})
    df = _ranked(records, has_share=False)[COLUMNS].reset_index(drop=True)
    df.attrs.update(verdict=f"{len(df)} span{'s' if len(df) != 1 else ''} of the query's prompt over-represented in "
                            f"the top {k} (Tarone-corrected over {m} of its spans, alpha {alpha:g}).",
                    n_tested=len(codes), m_tarone=m, alpha=alpha, top_k=k, pool_rows=big_n)
    return df


def _ranked(records: list[dict[str, Any]], has_share: bool) -> pd.DataFrame:
    """The spans that passed, windows of one phrase folded (`_dedupe`), with their statistic (-log10 p, at most
    doubled by the score share where every hit has one) and summary, most telling first."""
    df = _dedupe(pd.DataFrame(records))
    evidence = -df["_log_p"] / math.log(10)
    pos = df["score_share"].clip(lower=0.0)
    top = float(pos.max()) if has_share else 0.0
    df["statistic"] = evidence * (1.0 + (pos / top if top > 0 else 0.0))
    df["summary"] = [describe(r) for r in df.itertuples(index=False)]
    return df.sort_values(["statistic", "in_top", "n_words"], ascending=[False, False, False], kind="stable")


def word_runs(text: Any, max_n: int, max_words: int | None = None) -> set[tuple[str, ...]] | None:
    """Every run of 1 to `max_n` adjacent words of a text (`TOKEN_RE`: every non-space character is in a word, so
    neighbours have only whitespace between them, as `span_pattern` matches a span); empty for a missing text; None
    for a text of more than `max_words` words (it is read no further)."""
    if not isinstance(text, str):
        return set()
    words = [m.group() for m in itertools.islice(TOKEN_RE.finditer(text), None if max_words is None
                                                 else max_words + 1)]
    if max_words is not None and len(words) > max_words:
        return None
    return {tuple(words[i:i + n]) for n in range(1, max_n + 1) for i in range(len(words) - n + 1)}


def _dedupe(df: pd.DataFrame) -> pd.DataFrame:
    """Fold spans that are windows of one phrase. Spans of the same field that occur in exactly the same top hits and
    the same number of pool rows, and that chain by overlaps (one holds the other, or one ends with the words the
    other starts with), keep only the one with the most words, then the fewest punctuation marks ("vek zq mor" over
    "zq" and ". vek zq", "zzkey" over "? zzkey"). One span holding another with equal counts occurs in exactly the
    same rows; for a chain of overlaps that is likely, not certain, so this folds the display, not the counts."""
    drop: set[Any] = set()
    for _, group in df.groupby(["where", "_hits", "pool_rows"], sort=False):
        if len(group) < 2:
            continue
        items = sorted(group.itertuples(), key=lambda r: _preference(r.span), reverse=True)
        roots = overlap_chains([r.span for r in items])
        drop.update(r.Index for i, r in enumerate(items) if roots[i] != i)  # a chain keeps its best window
    return df.drop(index=list(drop))


def overlap_chains(spans: Sequence[str]) -> list[int]:
    """For each span, the first span (by position) of its chain of overlaps: two spans overlap when one holds the other
    (its words contiguous in the other's) or one ends with words (at least one a word, not only punctuation) that the
    other starts with, fewer than either has. Found through each span's own windows, prefixes and suffixes (a hash
    lookup each), not by comparing every pair: the top hits of a pool with long duplicated rows share thousands of
    spans."""
    words = [tuple(TOKEN_RE.findall(s)) for s in spans]
    by_words: dict[tuple[str, ...], list[int]] = {}
    by_prefix: dict[tuple[str, ...], list[int]] = {}  # the first j words of spans longer than j
    for i, w in enumerate(words):
        by_words.setdefault(w, []).append(i)
        for j in range(1, len(w)):
            by_prefix.setdefault(w[:j], []).append(i)
    parent = list(range(len(spans)))

    def join(a: int, b: int) -> None:
        a, b = _root(parent, a), _root(parent, b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    for i, w in enumerate(words):
        for start in range(len(w)):  # every window of this span: the spans it holds
            for end in range(start + 1, len(w) + 1):
                for other in by_words.get(w[start:end], ()):
                    join(i, other)
        for j in range(1, len(w)):  # its last j words, the first j words of a span longer than j
            tail = w[-j:]
            if any(_WORD.match(t) for t in tail):
                for other in by_prefix.get(tail, ()):
                    join(i, other)
    return [_root(parent, i) for i in range(len(spans))]


def _root(parent: list[int], i: int) -> int:
    while parent[i] != i:
        i = parent[i]
    return i


def _preference(span: str) -> tuple[int, int]:
    words = TOKEN_RE.findall(span)
    n_words = sum(bool(_WORD.match(w)) for w in words)
    return n_words, n_words - len(words)


def _empty(verdict: str, n_tested: int, m: int, alpha: float, k: int, n: int) -> pd.DataFrame:
    df = pd.DataFrame({c: [] for c in COLUMNS})
    df.attrs.update(verdict=verdict, n_tested=n_tested, m_tarone=m, alpha=alpha, top_k=k, pool_rows=n)
    return df


def describe(row: Any) -> str:
    """'in 9 of the top 10, in 4.0% of the pool' for a row of `find_shared_spans`."""
    frac = row.pool_fraction
    pct = f"{100 * frac:.1f}%" if frac >= 0.001 else f"{100 * frac:.2g}%"
    return f"in {row.in_top} of the top {row.top_k}, in {pct} of the pool ({row.pool_rows} rows)"


def span_mask(pool: PoolSpans | RiseIndex, span: str, where: str) -> np.ndarray:
    """(N,) bool over the pool's rows (feature-row order): which contain `span` in field `where`."""
    if not isinstance(pool, PoolSpans):
        pool = pool_spans(pool)
    return pool.mask(span, where)


def span_rows(index: RiseIndex, span: str, where: str, limit: int | None = 200) -> pd.DataFrame:
    """The pool rows containing `span` in field `where` (the `samples` columns, indexed by row), at most `limit`."""
    rows = pool_spans(index).rows_holding(span, where, limit)
    return index.rows_frame(rows.tolist())


def format_table(df: pd.DataFrame, width: int = 40) -> str:
    """The list as plain text for a terminal (the verdict line, then one line per span; a span whose p-value was
    corrected over the query's prompt spans, `behaviour.shared_table`'s family "prompt", says so)."""
    lines = [str(df.attrs.get("verdict", ""))]
    for i, r in enumerate(df.itertuples(index=False), 1):
        span = r.span.replace("\n", " ")
        span = span if len(span) <= width else span[:width - 1] + "…"
        share = "" if math.isnan(r.score_share) else f", score share {r.score_share:+.3g}"
        family = ", corrected over the query's prompt spans" if getattr(r, "family", "hits") == "prompt" else ""
        lines.append(f"{i:>3}. {span!r} [{r.where}] {r.summary}; p {r.p_value:.2g}{share}, statistic "
                     f"{r.statistic:.2f}{family}")
    return "\n".join(lines)
