"""Attribute: which training examples drive a generation, with their RH / GH / HS contributions and the tokens behind
them."""

from __future__ import annotations

import streamlit as st

from explorer import contrast_ui, plain, resources, ui, widgets
from explorer.counterfactual_ui import check_section
from explorer.feedback_ui import feedback_section
from explorer.shared_spans_ui import shared_spans_section
from explorer.views import (
    HIDDEN_COLUMNS,
    channel_values,
    channels,
    contribution_chart,
    conversation_turns,
    heat_scale,
    results_table,
)
from rise_core import ann, attribution

ui.page("attribute")
path, index = widgets.picked_index()
has_hs = index.config.hidden_channel

left, right = st.columns([3, 1])
with left:
    widgets.query_inputs(path)
    contrast_ui.versus_inputs(path)  # why this and not that: another answer to contrast with
with right:
    options = widgets.intent_control(widgets.score_controls(index.config, index=index), has_hs)
    st.number_input("Examples to show", 1, 200, key="top_k", persist_state="session")
    st.text_input("Filter (optional)", key="where", persist_state="session", placeholder="topic = 'cooking'",
                  help="An SQL condition over the pool's columns (label, metadata, n_counted, ...): rank only the "
                       "examples that match.")
if st.button("Attribute", type="primary", key="attribute"):
    contrast_ui.remember_query("attr", widgets.query_sample())

query, versus = contrast_ui.remembered("attr")
if query is None:
    st.stop()
if query.messages is not None:
    with st.expander("The query conversation", expanded=True):
        widgets.show_turns(conversation_turns(query))
with ui.friendly("attribute the query"):
    lm = resources.model_for(index)
    query_fm = resources.query_features(index, lm, [query], versus=versus)
    hits = attribution.rank(index, query_fm, options, k=int(st.session_state["top_k"]),
                            where=st.session_state["where"].strip() or None)
    if not has_hs:
        hits = hits.drop(columns=["hs"], errors="ignore")
    if hits.empty:
        st.warning("No example matches the filter.")
        st.stop()
    spans_slot = st.container()  # what the top hits share (a trigger?): shown above the hits, drawn last (below)
    st.subheader("Most influential training examples" if versus is None else
                 "Training examples behind this answer and not the other")
    shown = [c for c in channels(has_hs) if c != "total"] + (["span"] if "span" in hits.columns else [])
    st.caption(f"score = {' + '.join(shown)}: each channel's similarity to the query, weighted by its λ"
               + ("; span: the lift of the examples holding the span the behaviour test found" if "span" in shown
                  else "") + ". Label and metadata columns come from the pool.")
    if versus is not None:
        contrast_ui.caption(versus)
    st.caption(ann.search_summary(hits.attrs.get("search")))
    if hits.attrs.get("weighting", {}).get("reason") and options.weighting == "auto":
        st.caption("Channels for this query: " + plain.md(hits.attrs["weighting"]["reason"]))  # may quote pool text
    st.dataframe(results_table(hits), hide_index=True, column_config={
        c: st.column_config.NumberColumn(format="%.4f") for c in ("score", *shown)})
    st.plotly_chart(contribution_chart(hits, shown), key="contrib_chart")
    where = st.session_state["where"].strip() or None  # does removing these remove the behaviour? (leave-k-out)
    feedback_section(index, query, query_fm, options, hits, int(st.session_state["top_k"]), where)
    check_section("attr", path, index, lm, [query], options,
                  lambda k: attribution.top(index, query_fm, options, k=k, where=where), int(st.session_state["top_k"]),
                  where=where)

    st.subheader("Tokens that carry the score")
    c1, c2 = st.columns([2, 1])
    hit_id = c1.selectbox("Example", list(hits["id"]), key="explain_id",
                          format_func=lambda i: f"#{int(hits.set_index('id').loc[i, 'rank'])} {i}")
    channel = c2.radio("Channel", channels(has_hs), horizontal=True, key="explain_channel", persist_state="session")
    ex_attr, q_attr = resources.explanation(index, lm, path, hit_id, query, query_fm, options)
    st.caption("Orange: pushes the score up; blue: pulls it down; dotted underline: prompt tokens. Every channel "
               "shares one colour scale, so a pale channel adds little to this score. Hover a token for its "
               "contribution.")
    v_attr = (resources.versus_explanation(index, lm, path, hit_id, versus, query_fm, options)
              if versus is not None else None)
    scale = heat_scale([a for a in (q_attr, ex_attr, v_attr) if a is not None])
    st.markdown("**Query**")
    plain.token_heatmap(q_attr.tokens, channel_values(q_attr, channel), q_attr.n_prompt_tokens, scale)
    if v_attr is not None:
        st.markdown("**The other answer** (its tokens count against the example)")
        plain.token_heatmap(v_attr.tokens, channel_values(v_attr, channel), v_attr.n_prompt_tokens, scale)
    row = hits.set_index("id").loc[hit_id]
    meta = {k: v for k, v in row.items() if k not in (*HIDDEN_COLUMNS, "score", "rh", "gh", "hs", "span", "rank")}
    st.markdown(f"**Example {plain.md(hit_id)}**")
    st.caption(" · ".join(f"{plain.md(k)}: {plain.md(v)}" for k, v in meta.items()))
    if (turns := conversation_turns(row)) is not None:
        widgets.show_turns(turns)
    plain.token_heatmap(ex_attr.tokens, channel_values(ex_attr, channel), ex_attr.n_prompt_tokens, scale)
    with spans_slot:  # it explains every hit, the page's longest step: the hits are on the page meanwhile
        shared_spans_section(index, lm, path, hits, query, query_fm, options)
