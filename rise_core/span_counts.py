"""Pool span counts: for every field and every span of 1 to `max_n` words, the number of rows that contain it.

A word is a `\\w+` run or a single punctuation mark, case kept (`TOKEN_RE`); a span is a run of adjacent words inside
one field (prompt, completion, or a plain sample's text). Words get ids 1, 2, ... in the order they are first seen,
reading the rows in order and each row's fields in `FIELDS` order, so counting rows 0..N-1 at once or rows 0..M-1 and
then M..N-1 (`count_rows(..., base=)`) gives the same ids and the same arrays. Ids are packed `BITS` bits apiece, so
a span of up to 3 words is one int64, exactly (no hashing); the span's length is readable from its code (a code of
n words is at least 2**(BITS * (n - 1))). The store persists these arrays beside the index (`store.spans`);
`shared_spans` ranks the spans of a query's top hits against them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InputDataError

TOKEN_RE = re.compile(r"\w+|[^\w\s]")
FIELDS = ("prompt", "completion", "text")
BITS = 21  # word ids packed 21 bits apiece: an n-gram of up to 3 words is one int64, exactly
OVER = (1 << BITS) - 1  # the id of every word first seen after the 2,097,150 distinct ones before it
Table = tuple[np.ndarray, np.ndarray]  # (sorted span codes, rows containing each)


class Vocab(dict):
    """word -> id (1-based, in first-seen order); a word past the id space maps to OVER."""

    reserved = 0  # entries that are not words (they take no id)

    def __missing__(self, word: str) -> int:
        size = len(self) - self.reserved
        if size >= OVER - 1:
            return OVER
        v = self[word] = size + 1
        return v


def row_fields(text: Any, prompt: Any, completion: Any) -> dict[str, str]:
    """The text fields of one row: {'text': ...} for a plain sample, else prompt (if any) and completion."""
    if isinstance(text, str):
        return {"text": text}
    out = {}
    if isinstance(prompt, str) and prompt:
        out["prompt"] = prompt
    if isinstance(completion, str):
        out["completion"] = completion
    return out


@dataclass
class SpanCounts:
    """The counts of a pool's first `n_rows` rows. `kept`: the spans in 2+ rows (what a ranking needs: a span in 2+
    top hits is in 2+ rows); `single`: the codes of the spans in exactly one row (what an append needs to count on;
    None when not loaded). A field has a table when any row has that field."""

    n_rows: int
    max_n: int
    words: list[str]  # words[i] has id i + 1
    kept: dict[str, Table]
    single: dict[str, np.ndarray] | None = None
    _vocab: dict[str, int] | None = field(default=None, repr=False, compare=False)

    @property
    def vocab(self) -> dict[str, int]:
        """word -> id."""
        if self._vocab is None:
            self._vocab = dict(zip(self.words, range(1, len(self.words) + 1), strict=True))
        return self._vocab

    def full(self, where: str) -> Table:
        """(codes, rows) of every span of a field, singles included."""
        if self.single is None:
            raise InputDataError("these span counts were loaded without their single-row spans")
        codes, counts = self.kept.get(where, _EMPTY)
        single = self.single.get(where, _EMPTY[0])
        return merge((codes, counts), (single, np.ones(len(single), dtype=np.int32)))

    def limited(self, max_n: int) -> SpanCounts:
        """These counts for spans of at most `max_n` words (max_n <= self.max_n; single-row spans dropped)."""
        if max_n >= self.max_n:
            return self
        bound = 1 << (BITS * max_n)
        kept = {f: (c[c < bound], n[c < bound]) for f, (c, n) in self.kept.items()}
        return SpanCounts(self.n_rows, max_n, self.words, kept, None, self._vocab)


_EMPTY: Table = (np.zeros(0, np.int64), np.zeros(0, np.int32))


def check_max_n(max_n: int) -> None:
    if not 1 <= max_n <= 3:
        raise InputDataError(f"max_n must be 1, 2 or 3, got {max_n}")


def count_rows(text: Sequence[Any] | None = None, prompt: Sequence[Any] | None = None,
               completion: Sequence[Any] | None = None, max_n: int = 3, base: SpanCounts | None = None,
               chunk: int = 20_000) -> SpanCounts:
    """The counts of per-row columns (equal lengths; None/NaN where a row lacks a field), as an index stores them;
    with `base` (counts of the rows before these, singles loaded, same max_n), the counts of base's rows followed by
    these: equal to counting all the rows at once."""
    check_max_n(max_n)
    cols = [c for c in (text, prompt, completion) if c is not None]
    n = len(cols[0]) if cols else 0
    if any(len(c) != n for c in cols):
        raise InputDataError("text, prompt and completion columns differ in length")
    if base is not None and base.max_n != max_n:
        raise InputDataError(f"counts of spans up to {base.max_n} words cannot be extended to {max_n}")
    vocab = Vocab()
    stacks: dict[str, list[Table]] = {}
    if base is not None:
        vocab.update(base.vocab)
        for f in FIELDS:
            if f in base.kept or (base.single is not None and f in base.single):
                stacks[f] = [base.full(f)]
    blank = [None] * n
    columns = (text or blank, prompt or blank, completion or blank)
    for start in range(0, n, chunk):
        ids = _chunk_ids([row_fields(*r) for r in zip(*(col[start:start + chunk] for col in columns), strict=True)],
                         vocab)
        for f, rows in ids.items():
            if not rows:
                continue
            stack = stacks.setdefault(f, [])
            stack.append(_chunk_counts(rows, max_n))
            while len(stack) >= 2 and 2 * len(stack[-1][0]) >= len(stack[-2][0]):
                stack.append(merge(stack.pop(), stack.pop()))
    kept, single = {}, {}
    for f, stack in stacks.items():
        while len(stack) >= 2:
            stack.append(merge(stack.pop(), stack.pop()))
        codes, total = stack[0]
        kept[f] = (codes[total >= 2], total[total >= 2])
        single[f] = codes[total == 1]
    words = list(vocab)
    return SpanCounts((base.n_rows if base is not None else 0) + n, max_n, words, kept, single)


_KEY_BITS = 63  # what a packed (span, row) key may use
_SEP = "\ue000"  # joins a chunk's texts for one regex pass (a private-use character: neither \w nor \s, so a word)


def _chunk_ids(rows: list[dict[str, str]], vocab: Vocab) -> dict[str, list[np.ndarray]]:
    """field -> each row's word ids, for the rows having that field; ids assigned reading the rows in order and each
    row's fields in order (so they do not depend on how rows are chunked). One regex pass over the chunk's texts
    joined by _SEP; a chunk whose texts hold _SEP themselves is read text by text."""
    texts = [s for fields in rows for s in fields.values()]
    where = [f for fields in rows for f in fields]
    out: dict[str, list[np.ndarray]] = {f: [] for f in FIELDS}
    if not texts:
        return out
    words = TOKEN_RE.findall(_SEP.join(texts))
    vocab[_SEP] = 0  # never an id: removed below (a Vocab numbers new words after the entries it holds, less this one)
    vocab.reserved += 1
    try:
        flat = np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))
    finally:
        del vocab[_SEP]
        vocab.reserved -= 1
    sep = flat == 0
    if int(sep.sum()) != len(texts) - 1:  # a text holds the separator: its words got ids, in the same order
        for f, s in zip(where, texts, strict=True):
            out[f].append(np.fromiter(map(vocab.__getitem__, TOKEN_RE.findall(s)), dtype=np.int64))
        return out
    bounds = np.flatnonzero(sep)
    starts = np.r_[0, bounds + 1]
    stops = np.r_[bounds, len(words)]
    for f, a, b in zip(where, starts.tolist(), stops.tolist(), strict=True):
        out[f].append(flat[a:b])
    return out


def _chunk_counts(ids: list[np.ndarray], max_n: int) -> Table:
    """(span codes, rows containing each) of a chunk of rows (each an array of word ids): each span counted once per
    row. Per span length, (span, row) pairs are packed into one int64 and sorted as values (no argsort): a span of n
    words is packed as (rank of its first n - 1 words among the chunk's (n-1)-word spans, last word), which sorts as
    its code does. Codes of n words lie above those of n - 1 words (ids are >= 1), so the levels concatenate sorted."""
    lens = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    rows = np.repeat(np.arange(len(ids), dtype=np.int64), lens)
    row_bits = max(1, (len(ids) - 1).bit_length())
    codes_out, counts_out = [], []
    prev: np.ndarray | None = None  # sorted distinct codes of the previous length
    for n in range(1, max_n + 1):
        same = rows[:len(rows) - n + 1] == rows[n - 1:]
        owner = rows[:len(rows) - n + 1][same]
        last = flat[n - 1:][same]
        if n == 1:
            head, head_bits = np.zeros(len(last), np.int64), 0
        else:
            prefix = np.zeros(int(same.sum()), dtype=np.int64)
            for j in range(n - 1):
                prefix = (prefix << BITS) | flat[j:len(flat) - n + 1 + j][same]
            head = np.searchsorted(prev, prefix) if n > 2 else prefix
            head_bits = max(1, len(prev).bit_length()) if n > 2 else BITS
        if head_bits + BITS + row_bits > _KEY_BITS:
            uniq, counts = _count_by_argsort(head, last, owner, prev if n > 2 else None)
        else:
            key = np.sort((((head << BITS) | last) << row_bits) | owner)
            key = key[np.r_[True, key[1:] != key[:-1]]] >> row_bits if len(key) else key  # once per row
            start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, np.int64)
            packed = key[start]
            if n > 2:
                packed = (prev[packed >> BITS] << BITS) | (packed & OVER)
            uniq, counts = packed, np.diff(np.r_[start, len(key)]).astype(np.int32)
        codes_out.append(uniq)
        counts_out.append(counts)
        prev = uniq
    return np.concatenate(codes_out), np.concatenate(counts_out)


def _count_by_argsort(head: np.ndarray, last: np.ndarray, owner: np.ndarray, prev: np.ndarray | None) -> Table:
    """`_chunk_counts`'s count of one length when (head, last, row) does not fit one int64: a stable argsort of the
    codes (owners ascending, so a row's repeats of a span sit side by side)."""
    code = (((prev[head] if prev is not None else head) << BITS) | last) if len(head) else head
    order = np.argsort(code, kind="stable")
    code, owner = code[order], owner[order]
    first = np.ones(len(code), dtype=bool)
    first[1:] = (code[1:] != code[:-1]) | (owner[1:] != owner[:-1])
    code = code[first]
    start = np.flatnonzero(np.r_[True, code[1:] != code[:-1]]) if len(code) else np.zeros(0, np.int64)
    return code[start], np.diff(np.r_[start, len(code)]).astype(np.int32)


def merge(a: Table, b: Table) -> Table:
    """Two sorted (codes, counts) tables as one (a stable sort of two sorted runs is a linear merge)."""
    code = np.concatenate([a[0], b[0]])
    count = np.concatenate([a[1], b[1]])
    order = np.argsort(code, kind="stable")
    code, count = code[order], count[order]
    start = np.flatnonzero(np.r_[True, code[1:] != code[:-1]]) if len(code) else np.zeros(0, np.int64)
    return code[start], (np.add.reduceat(count, start) if len(code) else count).astype(np.int32)
