"""The behaviour test: does a query ask what taught a behaviour, or for examples like it?

Two views of RISE's channels rank the pool differently: the gradient view (RH + GH, the paper's RISE) finds the rows
whose training pushed the model towards this answer, the representation view (HS) the rows that read like it. A
backdoor's rows share a span that the pool mostly lacks (its trigger, its frame) and the gradient view's top rows show
it, while the representation view's top rows are topical neighbours without it. The test reads both views' top
`adaptive.BEHAVIOUR_K` rows, runs the trigger test (`shared_spans.find_shared_spans`) on the gradient view's, and
counts how many of the representation view's hold the best span; `adaptive.BehaviourEvidence.fires` decides. When the
best span does not fire (both views hold it: a genre's words), the next most telling distinct ones are tried, up to
`adaptive.BEHAVIOUR_SPANS` spans in all, and the first that fires is the finding. When it fires the per-query rule
scores with the gradient view (`adaptive.choose`) and lifts the rows holding the span (`rise_core.span_lift`). No
labels, no model run: the features and the pool's span counts.

Evidence: studies/behaviour_rule.py (docs/EVALUATION.md, "Backdoors the loss cannot see").
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .adaptive import BEHAVIOUR_K, BEHAVIOUR_SPANS, BehaviourEvidence, BehaviourTest, representation_view
from .config import ScoreOptions
from .scoring import FeatureMatrix, channel_sum, top_k
from .shared_spans import PoolSpans, find_shared_spans, span_pattern

if TYPE_CHECKING:
    from .samples import Sample

RowsFrame = Callable[[Sequence[int]], pd.DataFrame]
"""pool rows -> their id, text, prompt and completion columns, in the given order."""


def top_rows(pool: FeatureMatrix, query: FeatureMatrix, options: ScoreOptions, k: int) -> np.ndarray:
    """The k best pool rows of one query under fixed `options` (an exact scan)."""
    return top_k(channel_sum(pool, query, options.for_channels(pool.channels).options).total, k)[0].numpy()


def evidence(spans: PoolSpans, gradient_hits: pd.DataFrame, representation_hits: pd.DataFrame,
             query: Sample | None = None) -> BehaviourEvidence | None:
    """The behaviour test on the two views' top rows (frames with id, text / prompt / completion columns): the best
    span the gradient hits share (None when they share none) and how many representation hits hold it; `query`, when
    given, says whether the query holds it too."""
    found = candidates(spans, gradient_hits, representation_hits, query, 1)
    return found[0] if found else None


SPANS_READ = 20
"""how many of the gradient view's most telling spans are read to find BEHAVIOUR_SPANS distinct ones."""


def candidates(spans: PoolSpans, gradient_hits: pd.DataFrame, representation_hits: pd.DataFrame,
               query: Sample | None = None, limit: int = SPANS_READ) -> list[BehaviourEvidence]:
    """`evidence` for each of the `limit` most telling spans the gradient hits share, most telling first."""
    out = []
    for _, best in find_shared_spans(spans, gradient_hits, limit=limit).iterrows():
        pattern = span_pattern(best["span"])
        field = best["where"]
        held = sum(1 for text in _field(representation_hits, field) if isinstance(text, str) and pattern.search(text))
        in_query = True
        if query is not None:
            text = {"prompt": query.prompt, "completion": query.completion, "text": query.text}.get(field)
            in_query = bool(text) and pattern.search(text) is not None
        out.append(BehaviourEvidence(span=str(best["span"]), where=str(field), in_top=int(best["in_top"]),
                                     top_k=len(gradient_hits), pool_fraction=float(best["pool_fraction"]),
                                     p_adjusted=float(best["p_adjusted"]), in_representation=int(held),
                                     in_query=in_query))
    return out


def _field(frame: pd.DataFrame, field: str) -> list:
    return frame[field].tolist() if field in frame.columns else [None] * len(frame)


ViewRows = Callable[[ScoreOptions, int], np.ndarray]
"""(fixed options of one view, k) -> the view's k best pool rows for the query at hand."""


def scan_rows(pool: FeatureMatrix, query: FeatureMatrix) -> ViewRows:
    """`ViewRows` by an exact scan of pool features."""
    return lambda options, k: top_rows(pool, query, options, k)


def behaviour_test_for(view_rows: ViewRows, spans: PoolSpans | Callable[[], PoolSpans], rows_frame: RowsFrame,
                       query_sample: Sample | None = None, k: int = BEHAVIOUR_K, has_hs: bool = True,
                       distinct: int | None = None) -> BehaviourTest:
    """The behaviour test for one query (or query set), as `adaptive.resolve` asks for it: given the gradient view's
    options, the evidence. `spans` may be a callable, so the pool's span counts are read only when the test runs;
    `distinct`: how many distinct spans it tries (None: `adaptive.BEHAVIOUR_SPANS`; the study varies it)."""

    def run(gradient: ScoreOptions) -> BehaviourEvidence | None:
        if not has_hs:
            return None
        grad_rows = view_rows(gradient, k)
        rep_rows = view_rows(representation_view(gradient), k)
        if len(grad_rows) < 2:
            return None
        counts = spans() if callable(spans) else spans
        grad_hits, rep_hits = rows_frame([int(r) for r in grad_rows]), rows_frame([int(r) for r in rep_rows])
        found = evidence(counts, grad_hits, rep_hits, query_sample)
        if found is None:
            return None
        rival = evidence(counts, rep_hits, grad_hits, query_sample)  # the representation view's own shared span

        def against_rival(e: BehaviourEvidence) -> BehaviourEvidence:
            return e if rival is None else dataclasses.replace(
                e, rival_span=rival.span, rival_in_top=rival.in_top, rival_p_adjusted=rival.p_adjusted,
                rival_in_query=rival.in_query)

        best = against_rival(found)
        if best.fires:
            return best
        # the most telling span may be one both views share (a genre's words): the next distinct ones may be the
        # trigger (a span inside one tried, or holding it, is the same finding and is skipped)
        tried = [best.span]
        for other in candidates(counts, grad_hits, rep_hits, query_sample, SPANS_READ):
            if len(tried) >= (BEHAVIOUR_SPANS if distinct is None else distinct):
                break
            if any(other.span in t or t in other.span for t in tried):
                continue
            tried.append(other.span)
            if (candidate := against_rival(other)).fires:
                return candidate
        return best

    return run


def per_query_tests(pool: FeatureMatrix, queries: FeatureMatrix, spans: Callable[[], PoolSpans],
                    rows_frame: RowsFrame, samples: Sequence[Sample]) -> Callable[[int], BehaviourTest]:
    """Query q of `queries` (its text `samples[q]`) -> its behaviour test against pool features, by exact scans (a
    method's scores of a task or an index, one query at a time)."""
    return lambda q: behaviour_test_for(scan_rows(pool, queries.select([q])), spans, rows_frame, samples[q],
                                        has_hs=pool.has_hs)


def samples_frame(samples: Sequence[Sample]) -> RowsFrame:
    """`RowsFrame` of an in-memory pool."""

    def frame(rows: Sequence[int]) -> pd.DataFrame:
        return pd.DataFrame([{"id": samples[r].id, "text": samples[r].text if samples[r].prompt is None else None,
                              "prompt": samples[r].prompt, "completion": samples[r].completion} for r in rows])

    return frame


def samples_spans(samples: Sequence[Sample]) -> PoolSpans:
    """The span counts of an in-memory pool."""
    return PoolSpans.from_texts(text=[s.text if s.prompt is None else None for s in samples],
                                prompt=[s.prompt for s in samples], completion=[s.completion for s in samples])


def features_digest(query: FeatureMatrix) -> str:
    """A digest of a query's features (every tensor it holds, a contrast's other answer included): two queries with
    the same digest rank every view alike."""
    h = hashlib.sha1()
    for name, value in sorted(vars(query).items()):
        if isinstance(value, FeatureMatrix):
            value = features_digest(value)
        if hasattr(value, "detach"):
            h.update(f"{name}:{tuple(value.shape)}:{value.dtype}".encode())
            h.update(value.detach().cpu().contiguous().numpy().tobytes())
        else:
            h.update(f"{name}:{value!r}".encode())
    return h.hexdigest()


class BehaviourMemo:
    """The behaviour test's result per (key, gradient view), so that one query's rank, explanations and feedback run
    the test once: the key names the index's state and the query (`features_digest`, its text). Bounded (the oldest
    go first) and safe across a server's threads."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[Hashable, BehaviourEvidence | None] = OrderedDict()
        self._lock = threading.Lock()

    def wrap(self, key: Hashable, test: BehaviourTest) -> BehaviourTest:
        """`test`, answered from the memo when this key and view ran before."""

        def run(gradient: ScoreOptions) -> BehaviourEvidence | None:
            full = (key, gradient)
            with self._lock:
                if full in self._data:
                    self._data.move_to_end(full)
                    return self._data[full]
            found = test(gradient)
            with self._lock:
                self._data[full] = found
                while len(self._data) > self.max_entries:
                    self._data.popitem(last=False)
            return found

        return run

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
