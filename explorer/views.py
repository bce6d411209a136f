"""What the explorer's pages show: the channels of a token view, result tables, rankings of several methods side by
side, label metrics, and tables as downloadable bytes (tokens highlighted as escaped HTML: `plain.highlight_html`).

Plain functions over pandas and numpy, tested without Streamlit; the pages only render what they return.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from rise_core.agreement import ranking_overlap
from rise_core.csv_out import csv_text
from rise_core.errors import InputDataError
from rise_core.ranking import Ranking
from rise_core.samples import Sample
from rise_core.store import row_text, sample_from_row

from .plain import chart_text

if TYPE_CHECKING:
    from rise_core.explain import TokenAttribution

CHANNELS = ("total", "RH", "GH", "HS")
# stored per-sample statistics and raw fields that the result tables leave out (the text column shows the sample)
HIDDEN_COLUMNS = ("row", "text", "prompt", "completion", "messages", "n_counted", "loss", "mean_support", "n_tokens",
                  "truncated")


# --- token views ---------------------------------------------------------------------------------------------------


def channels(has_hs: bool) -> tuple[str, ...]:
    """The channels a token view offers: HS only for an index that stores it."""
    return CHANNELS if has_hs else tuple(c for c in CHANNELS if c != "HS")


def channel_values(attribution: TokenAttribution, channel: str) -> list[float]:
    """Per-token contributions of a `TokenAttribution` for 'RH', 'GH', 'HS' or 'total'."""
    key = channel.lower()
    if key in ("rh", "gh", "hs", "total"):
        return list(getattr(attribution, key))
    raise InputDataError(f"unknown channel {channel!r}; choose one of {', '.join(CHANNELS)}")


def heat_scale(attributions: Sequence[TokenAttribution]) -> float | None:
    """One colour scale for the token views of a hit: the largest |contribution| of any token, in any channel or
    the total, of these attributions (the query, the example, a contrast's other answer). On its own scale a channel
    the query's weights leave near 0 (HS at 1e-7 a token under the gradient view) was coloured as strongly as one
    that carries the score; on this one it is pale. None when every contribution is 0."""
    top = max((abs(float(v)) for a in attributions for c in ("rh", "gh", "hs", "total") for v in getattr(a, c)
               if v == v), default=0.0)
    return top or None


# --- comparing two rankings -----------------------------------------------------------------------------------------


def overlap_at_k(ids_a: Sequence[Any], ids_b: Sequence[Any], k: int) -> float:
    """Fraction of the top-k of ranking A that is also in the top-k of ranking B (1.0 = same set)."""
    return ranking_overlap(ids_a, ids_b, k)


# --- result tables --------------------------------------------------------------------------------------------------


def conversation_turns(item: Sample | dict[str, Any] | pd.Series) -> list[tuple[str, str]] | None:
    """The (role, text) turns of a conversation (a Sample, or a pool row of a ranking); None for text and pairs."""
    sample = item if isinstance(item, Sample) else sample_from_row(item)
    return None if sample.messages is None else [(t.role, t.content) for t in sample.messages]


def results_table(hits: pd.DataFrame) -> pd.DataFrame:
    """A ranking as shown to people: rank, id, score, the channel parts (RH, GH, HS) it has, label and metadata, then
    the sample's text. Without the ranking's `attrs` (search, weighting): pyarrow writes them into the table's
    metadata as JSON, where a NaN (a weighting's surprise) breaks the browser's table."""
    text = [row_text(r) for r in hits.to_dict("records")]
    table = hits.drop(columns=[c for c in HIDDEN_COLUMNS if c in hits.columns]).assign(text=text)
    table = table.rename(columns={"rh": "RH", "gh": "GH", "hs": "HS"}).reset_index(drop=True)
    table.attrs = {}
    return table


CHANNEL_NAMES = {"RH": "RH (lexical)", "GH": "GH (semantic)", "HS": "HS (representation)",
                 "span": "span (the behaviour test's lift)"}


def contribution_chart(hits: pd.DataFrame, shown: Sequence[str]) -> go.Figure:
    """Horizontal stacked bars: each hit's score split into its channel parts (`shown`, e.g. RH, GH, HS), best
    first from the top."""
    labels = [f"#{r} {chart_text(i)}" for r, i in zip(hits["rank"], hits["id"], strict=True)][::-1]
    fig = go.Figure([go.Bar(y=labels, x=hits[c.lower()][::-1], name=CHANNEL_NAMES.get(c, c), orientation="h")
                     for c in shown])
    fig.update_layout(barmode="relative", height=120 + 26 * len(hits), margin=dict(l=10, r=10, t=30, b=10),
                      title=f"{' / '.join(shown)} contribution to each example's score", legend=dict(orientation="h"))
    return fig


def top_list(hits: pd.DataFrame, labels: bool) -> pd.DataFrame:
    """A method's top k (`MethodScores.ranking(k).to_frame(index)`, or `ranking_table`) as a compact list for
    side-by-side display: rank, id, the label when the pool has labels (`labels`), score and text."""
    table = results_table(hits)
    return table[["rank", "id", *(["label"] if labels and "label" in table.columns else []), "score", "text"]]


def ranking_frame(pool: pd.DataFrame, scores: np.ndarray, k: int) -> pd.DataFrame:
    """The k best pool rows by `scores` (aligned with `pool`'s rows) as rank, id, score, then the pool's columns --
    the layout of `attribution.rank`, for scores from another method (e.g. BM25)."""
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (len(pool),):
        raise InputDataError(f"{scores.size} scores for a pool of {len(pool)} rows")
    return ranking_table(pool, Ranking.best(scores, k))


def ranking_table(pool: pd.DataFrame, ranking: Ranking) -> pd.DataFrame:
    """A ranking of `pool`'s rows as rank, id, score, then the pool's columns."""
    order = ranking.rows.numpy()
    if len(order) and int(order.max()) >= len(pool):
        raise InputDataError(f"the ranking has row {int(order.max())} but the pool only {len(pool)} rows")
    rest = pool.iloc[order].drop(columns=["id"]).reset_index(drop=True)
    head = pd.DataFrame({"rank": range(1, len(order) + 1), "id": pool["id"].to_numpy()[order],
                         "score": ranking.scores.numpy()})
    return pd.concat([head, rest], axis=1)


def table_bytes(df: pd.DataFrame, fmt: str) -> bytes:
    """The frame as downloadable bytes: 'jsonl' (one JSON object per line, texts as they are) or 'csv' (for
    spreadsheets: `csv_out.spreadsheet_safe`)."""
    if fmt == "jsonl":
        return df.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    if fmt == "csv":
        return csv_text(df, for_spreadsheet=True).encode("utf-8")
    raise InputDataError(f"unknown export format {fmt!r}; choose jsonl or csv")
