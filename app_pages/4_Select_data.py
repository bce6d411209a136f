"""Select data: score the pool against a set of queries (valuation), look at the scores, export a selection."""

from __future__ import annotations

import math

import plotly.express as px
import streamlit as st

from explorer import resources, ui, widgets
from explorer.counterfactual_ui import check_section
from explorer.request_limits import request_limits
from explorer.views import results_table, table_bytes
from rise_core import attribution

ui.page("select")
limits = request_limits()
path, index = widgets.picked_index()

left, right = st.columns([3, 1])
with right:
    options = widgets.score_controls(index.config, index=index)
with left:
    widgets.typed_or_uploaded("Queries", "sel", "Queries (separate several with a blank line)",
                              max_chars=limits.max_text_chars)
    with st.expander("Why these and not those? Contrast with other answers",
                     expanded=bool(st.session_state.get("sel_versus_on"))):
        st.checkbox("Score each example for the queries minus its score for these other answers", key="sel_versus_on",
                    help="E.g. the model's answers to the same prompts without the trigger: the examples behind the "
                    "queries and not the other answers rank first (the examples to remove, for a backdoor).")
        widgets.typed_or_uploaded("Other answers", "sel_versus", "Other answers (separate several with a blank "
                                  "line): one for all queries, or one per query in their order",
                                  max_chars=limits.max_text_chars, height=120)
    if st.button("Score the pool", type="primary", key="score_pool"):
        with ui.friendly("read the queries"):
            queries = widgets.read_typed_or_uploaded("sel", "queries")
            versus = None
            if st.session_state.get("sel_versus_on"):
                versus = widgets.read_typed_or_uploaded("sel_versus", "other answers to contrast the queries with "
                                                        "(or untick the contrast)")
                attribution.check_versus_count(len(queries), len(versus))
            # every query and every other answer is a forward pass of this click
            limits.check_count([*queries, *(versus or [])], "queries and other answers" if versus else "queries")
            st.session_state["sel_queries"] = queries
            st.session_state["sel_versus"] = versus

queries = st.session_state.get("sel_queries")
if not queries:
    st.stop()
with ui.friendly("score the pool"):
    versus = st.session_state.get("sel_versus")
    query_fm = resources.query_features(index, resources.model_for(index), list(queries), versus=versus)
    valued = attribution.valuation(index, query_fm, options, fraction=1.0)
    ranked = valued.to_frame(index)
    st.subheader(f"Scores of {len(ranked)} pool examples against {len(queries)} queries"
                 + ("" if versus is None else f", minus {len(versus)} other answer{'s' * (len(versus) > 1)}"))
    if versus is not None:
        st.caption("Contrast: each score is the example's score for the queries minus its score for the other answers "
                   "(the weights chosen for the queries, applied to both); positive: it supports the queries rather "
                   "than the other answers.")
    how = st.radio("Keep", ["top N", "a fraction"], horizontal=True, key="sel_how")
    if how == "top N":
        n = int(st.number_input("N", 1, len(ranked), min(100, len(ranked)), key="sel_n"))
    else:
        n = math.ceil(len(ranked) * st.slider("Fraction", 0.01, 1.0, 0.1, key="sel_fraction"))
    chosen = ranked.head(n).drop(columns=["row"], errors="ignore")
    fig = px.histogram(ranked, x="score", nbins=40, height=280)
    fig.add_vline(x=float(chosen["score"].min()), line_dash="dash", annotation_text=f"top {n}")
    st.plotly_chart(fig, key="score_hist")
    st.caption(f"{len(chosen)} examples selected, scores {chosen['score'].min():.4f} to {chosen['score'].max():.4f}; "
               "the downloads have every column, with the scores.")
    st.dataframe(results_table(chosen), hide_index=True)
    c1, c2 = st.columns(2)
    c1.download_button("Download JSONL", table_bytes(chosen, "jsonl"), "selection.jsonl", "application/jsonl",
                       key="dl_jsonl")
    c2.download_button("Download CSV", table_bytes(chosen, "csv"), "selection.csv", "text/csv", key="dl_csv",
                       help="For spreadsheets: a text that starts like a formula (=, +, -, @) starts with ' here; "
                            "the JSONL keeps every text as it is.")
    check_section("sel", path, index, resources.model_for(index), list(queries), options,  # retrain without them
                  valued.head, n, aggregate="mean_score")
