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
from itertools import chain
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

    def __missing__(self, word: str) -> int:
        if len(self) >= OVER - 1:
            return OVER
        v = self[word] = len(self) + 1
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
    find, get = TOKEN_RE.findall, vocab.__getitem__
    for start in range(0, n, chunk):
        ids: dict[str, list[list[int]]] = {f: [] for f in FIELDS}
        for t, p, c in zip(*(col[start:start + chunk] for col in columns), strict=True):
            for f, s in row_fields(t, p, c).items():  # row by row, fields in order: ids do not depend on chunks
                ids[f].append(list(map(get, find(s))))
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


def _chunk_counts(ids: list[list[int]], max_n: int) -> Table:
    """(span codes, rows containing each) of a chunk of rows (each a list of word ids): each span counted once per
    row."""
    lens = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lens.sum()))
    rows = np.repeat(np.arange(len(ids), dtype=np.int64), lens)
    codes, owners = [flat], [rows]
    for n in range(2, max_n + 1):
        same = rows[:len(rows) - n + 1] == rows[n - 1:]
        code = np.zeros(int(same.sum()), dtype=np.int64)
        for j in range(n):
            code = (code << BITS) | flat[j:len(flat) - n + 1 + j][same]
        codes.append(code)
        owners.append(rows[:len(rows) - n + 1][same])
    code, owner = np.concatenate(codes), np.concatenate(owners)
    # a code belongs to one n, whose owners are ascending: a stable sort puts a row's repeats of a span side by side
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
