"""The Attribute page's "What the top hits share" section: spans over-represented in the hits against the pool, with
the query prompt's own family beside them as the behaviour test reads it (`rise_core.behaviour.shared_table`), and the
pool rows that contain the one you pick. Every text goes through st.dataframe /
st.selectbox (shown as text, never as HTML)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rise_core.behaviour import shared_table
from rise_core.config import ScoreOptions
from rise_core.models import LoadedModel
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix
from rise_core.shared_spans import pool_spans, span_rows
from rise_core.store import RiseIndex, row_text

from . import resources, ui
from .views import HIDDEN_COLUMNS

CORRECTED_OVER = {"hits": "the hits' spans", "prompt": "the query's prompt spans"}


def shared_spans_section(index: RiseIndex, lm: LoadedModel, path: str, hits: pd.DataFrame, query: Sample,
                         query_fm: FeatureMatrix, options: ScoreOptions) -> None:
    """Render the section for a ranking: the list (or the statement that nothing is shared) and a row browser."""
    st.subheader("What the top hits share")
    weigh = st.toggle("Weigh by the tokens that carry each hit's score", value=True, key="spans_weigh",
                      help="Explains every hit (one forward pass each, cached) and weighs each span by the share of "
                           "the hits' scores its tokens carry. Off: the over-representation evidence alone.")
    with ui.friendly("find what the top hits share"):
        explanations = None
        if weigh:
            explained = resources.explanations(index, lm, path, list(hits["id"]), query, query_fm, options)
            explanations = {sid: explained[str(sid)] for sid in hits["id"]}
        with st.spinner("Counting spans in the pool (once per index)…"):
            spans = shared_table(pool_spans(index), hits, query, explanations=explanations, limit=20)
        st.caption(f"{spans.attrs.get('verdict', '')} Spans are runs of up to 3 words in the prompt or the "
                   "completion; p: the chance that k hits drawn at random from the pool hold the span this often; "
                   "corrected over: the spans the p-value was corrected among (every span of the hits, or only "
                   "the query's own prompt spans, a family fixed before any hit is read).")
        if spans.empty:
            st.info("No pattern: the top hits share no span that the rest of the pool lacks.",
                    icon=":material/search_off:")
            return
        table = spans[["span", "where", "summary", "score_share", "p_value", "p_adjusted", "statistic"]].rename(
            columns={"summary": "count", "p_value": "p", "p_adjusted": "p corrected"}).assign(
            corrected_over=spans["family"].map(CORRECTED_OVER).to_numpy())
        st.dataframe(table, hide_index=True, key="spans_table", column_config={
            "score_share": st.column_config.NumberColumn("score share", format="%.3f"),
            "p": st.column_config.NumberColumn(format="%.2e"),
            "p corrected": st.column_config.NumberColumn(format="%.2e"),
            "corrected_over": st.column_config.TextColumn("corrected over"),
            "statistic": st.column_config.NumberColumn(format="%.2f")})
        choice = st.selectbox("Show the pool rows containing", range(len(spans)), key="spans_pick",
                              format_func=lambda i: f"{spans['span'].iloc[i]!r} in the {spans['where'].iloc[i]}")
        if choice is not None:
            row = spans.iloc[int(choice)]
            rows = span_rows(index, str(row["span"]), str(row["where"]), limit=200)
            in_top = rows["id"].isin(set(hits["id"]))
            shown = rows.drop(columns=[c for c in HIDDEN_COLUMNS if c in rows.columns]).assign(
                top_hit=in_top.to_numpy(), text=[row_text(r) for r in rows.to_dict("records")])
            st.caption(f"{len(rows)} of {int(row['pool_rows'])} rows shown ({row['summary']}); top_hit: among the "
                       "hits ranked above.")
            st.dataframe(shown.reset_index(drop=True), hide_index=True, key="spans_rows")
