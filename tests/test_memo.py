"""The bounded memo the server's caches share (`rise_core.memo.BoundedMemo`)."""

from __future__ import annotations

from rise_core.memo import BoundedMemo


def test_bounded_memo_computes_only_what_it_lacks_in_one_call():
    memo: BoundedMemo[str] = BoundedMemo(3)
    memo.get("a", lambda: "A")
    calls = []

    def compute(positions):
        calls.append(positions)
        return [f"new{p}" for p in positions]
    assert memo.get_many(["b", "a", "c"], compute) == ["new0", "A", "new2"] and calls == [[0, 2]]
    assert memo.get_many(["a", "b", "c"], compute) == ["A", "new0", "new2"] and len(calls) == 1  # all kept
    memo.get_many(["d"], compute)  # a fourth: the least recently used ("a") goes
    assert memo.get_many(["a"], compute) == ["new0"] and len(memo) == 3
