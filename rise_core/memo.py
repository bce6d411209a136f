"""A bounded memo for a server's threads: the last few results of a costly computation, by key (the oldest go first).

The behaviour test's results per query (`behaviour.BehaviourMemo`), the token sketches of the queries and hits being
explained (`attribution.TOKEN_SKETCHES`, `attribution.HIT_SKETCHES`) and the opened ANN files and appended rows'
features (`ann.rank`) are kept in one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedMemo(Generic[V]):
    """At most `max_entries` results by key, the least recently used dropped first; safe across threads (a result
    computed twice at once is stored once; the computation runs outside the lock)."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The result kept under `key` (None included), else `compute()`, kept."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute()
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return value

    def get_many(self, keys: Sequence[Hashable], compute: Callable[[list[int]], list[V]]) -> list[V]:
        """The results of `keys`, in order: those kept, and for the others `compute(positions)` (their positions in
        `keys`) in one call, kept: a batch of work for what is missing alone."""
        found: dict[int, V] = {}
        with self._lock:
            for i, key in enumerate(keys):
                if key in self._data:
                    self._data.move_to_end(key)
                    found[i] = self._data[key]
        missing = [i for i in range(len(keys)) if i not in found]
        if missing:
            values = compute(missing)
            with self._lock:
                for i, value in zip(missing, values, strict=True):
                    found[i] = self._data[keys[i]] = value
                    self._data.move_to_end(keys[i])
                while len(self._data) > self.max_entries:
                    self._data.popitem(last=False)
        return [found[i] for i in range(len(keys))]

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
