"""The one result type of every ranking over an index: `Ranking` (rows best first, their scores and weighted channel
parts, the weighting that chose them, notes, which search ran), and the one conversion to a table, `to_frame`.

Library paths (`attribution.top`, `top_each`, `valuation`, `top_with_feedback`, the ANN path `ann.rank_rows`) return
Rankings; only the fronts (CLI output, explorer pages, and the DataFrame wrappers `attribution.rank` & co. kept for
their callers) turn one into a table, here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from .adaptive import Weighting
from .config import CHANNELS
from .errors import InputDataError
from .scoring import Scores

if TYPE_CHECKING:
    from .store import RiseIndex


EXTRA_PARTS = ("span", "words", "pseudo")
"""parts of a score beside the channels': the span lift's (`rise_core.span_lift`), the marked words' and the pseudo
rows' (feedback: `FeedbackConfig.words`, `pseudo_rows`)."""


@dataclass(frozen=True)
class Ranking:
    """Pool rows of one query (or query set), best first, with their scores.

    `parts` holds each channel's weighted part (every channel of CHANNELS; zeros for one not weighed), so
    `scores` = rh + gh + hs (+ span: the span lift's part, `rise_core.span_lift`, where the behaviour test lifts; +
    words: the marked words' part and lift after relevance feedback; + pseudo: the pseudo rows' part, where feedback
    takes them); empty for a method's ranking by scores without channels (`best`: hidden cosine, BM25...).
    `weighting` is how the weights were resolved (`adaptive.resolve`; None for a ranking scored with options already
    fixed), `search` which path ran (`ann.search_summary`; None where the pool is always scanned), `query` the 0-based
    query number when each query of a set is ranked alone, `marks` the analyst's relevance marks {row: relevant?} and
    `feedback` the weights and evidence after them (relevance feedback only), `contrast` the line saying the query was
    contrasted with another answer (`scoring.ContrastFeatures.note`; None for a plain query): then every score is the
    query's minus the other answer's."""

    rows: torch.Tensor  # (k,) int64 index rows
    scores: torch.Tensor  # (k,) float32 totals (float64 from `best`)
    parts: dict[str, torch.Tensor]  # channel -> (k,) weighted part
    weighting: Weighting | None = None
    search: dict[str, Any] | None = None
    query: int | None = None
    marks: dict[int, bool] | None = None
    feedback: dict[str, Any] | None = None
    contrast: str | None = None

    @classmethod
    def of(cls, rows: torch.Tensor, scores: Scores, **kw: Any) -> Ranking:
        """A ranking of `rows` with their `Scores` (total and the weighted channel parts)."""
        return cls(rows=rows, scores=scores.total, parts={c: getattr(scores, c) for c in CHANNELS}, **kw)

    @classmethod
    def best(cls, scores: np.ndarray, k: int, **kw: Any) -> Ranking:
        """The k highest of (N,) `scores` (a method's, one per pool row), best first; equal scores keep pool order
        (`agreement.top_positions`'s order); no channel parts."""
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim != 1:
            raise InputDataError(f"a ranking needs one score per pool row, got shape {scores.shape}")
        if k < 1:
            raise InputDataError(f"k must be at least 1, got {k}")
        order = np.argsort(-scores, kind="stable")[:k]
        return cls(rows=torch.from_numpy(order.astype(np.int64)), scores=torch.from_numpy(scores[order]), parts={},
                   **kw)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def head(self, k: int) -> Ranking:
        """The first (best) k rows of this ranking, with their scores and parts (all of it when k >= its length)."""
        return dataclasses.replace(self, rows=self.rows[:k], scores=self.scores[:k],
                                   parts={c: v[:k] for c, v in self.parts.items()})

    @property
    def notes(self) -> list[str]:
        """The weights dropped because the index lacks their channel (`ScoreOptions.for_channels`), then the contrast's
        line when the query was contrasted with another answer."""
        notes = list(self.weighting.notes) if self.weighting is not None else []
        return notes + ([self.contrast] if self.contrast else [])

    @property
    def preset_note(self) -> str:
        return self.weighting.preset_note if self.weighting is not None else ""

    def ids(self, index: RiseIndex) -> list[str]:
        """The sample ids of the rows, best first."""
        return index.rows_frame(self.rows.tolist())["id"].tolist()

    def to_frame(self, index: RiseIndex) -> pd.DataFrame:
        """THE table of a ranking: rank, id, score, rh, gh, hs (span when the span lift applied; words and `mark` after
        relevance feedback), then the sample's text, prompt, completion, label, metadata columns and stats from
        `index`; `attrs` carry search, notes, weighting (the chosen weights and why), preset_note, feedback and
        contrast (the contrast's line; only for a contrastive query)."""
        samples = index.rows_frame(self.rows.tolist())
        head = pd.DataFrame({
            "rank": range(1, len(self) + 1), "id": samples["id"].tolist(), "score": self.scores.tolist(),
            **{c: self.parts[c].tolist() for c in (*CHANNELS, *EXTRA_PARTS) if c in self.parts},
        })
        df = pd.concat([head, samples.drop(columns=["id"]).reset_index(drop=True)], axis=1)
        if self.marks is not None:
            df.insert(1, "mark", ["yes" if self.marks.get(int(r)) is True else "no" if self.marks.get(int(r)) is False
                                  else "" for r in self.rows])
        if self.search is not None:
            df.attrs["search"] = self.search
        df.attrs["notes"] = self.notes
        df.attrs["weighting"] = self.weighting.choice.as_dict() if self.weighting is not None else {}
        df.attrs["preset_note"] = self.preset_note
        if self.contrast:
            df.attrs["contrast"] = self.contrast
        if self.feedback is not None:
            df.attrs["feedback"] = self.feedback
        return df


def frame_each(rankings: Sequence[Ranking], index: RiseIndex) -> pd.DataFrame:
    """One table of per-query rankings (`to_frame` of each) with a leading `query` column (1-based query number);
    attrs: the last ranking's search, notes and preset_note, and every query's weighting as a list."""
    frames = []
    for i, r in enumerate(rankings):
        df = r.to_frame(index)
        df.insert(0, "query", (r.query if r.query is not None else i) + 1)
        frames.append(df)
    out = pd.concat(frames, ignore_index=True)
    if "span" in out.columns:  # a query the span lift did not apply to has no lift
        out["span"] = out["span"].fillna(0.0)
    out.attrs["search"] = frames[-1].attrs.get("search", {}) if frames else {}
    out.attrs["notes"] = frames[-1].attrs["notes"] if frames else []
    out.attrs["weighting"] = [f.attrs["weighting"] for f in frames]
    out.attrs["preset_note"] = frames[-1].attrs["preset_note"] if frames else ""
    if frames and frames[-1].attrs.get("contrast"):
        out.attrs["contrast"] = frames[-1].attrs["contrast"]
    return out
