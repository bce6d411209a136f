"""Compare with BM25: the same query ranked by RISE and by lexical BM25, side by side, with agreement metrics."""

from __future__ import annotations

import streamlit as st

from explorer import ui
from explorer.views import binary_labels, label_metrics, overlap_at_k, ranking_frame, results_table
from rise_core import attribution
from rise_core.metrics import spearman
from rise_core.scoring import score_pool

ui.page("compare")
path = ui.index_picker()
if path is None:
    st.stop()

left, right = st.columns([3, 1])
with left:
    ui.query_inputs(path)
with right:
    options = ui.score_controls()
    k = int(st.number_input("k (top examples compared)", 1, 200, key="top_k", persist_state="session"))
if st.button("Compare", type="primary", key="compare"):
    st.session_state["cmp_query"] = ui.query_sample()

query = st.session_state.get("cmp_query")
if query is None:
    st.stop()
with ui.friendly("compare the rankings"):
    index = ui.open_index(path)
    query_fm = ui.query_features(index, ui.model_for(index), [query])
    pool = index.samples()  # feature-row order, as the scores below
    rise_scores = score_pool(index.feature_matrix(), query_fm, options).total.numpy().astype(float)
    bm25_scores = ui.bm25_for(path).score([query])[0].astype(float)
    rise = attribution.rank(index, query_fm, options, k=k)
    bm25 = ranking_frame(pool, bm25_scores, k)
    a, b = st.columns(2)
    for col, name, ranked in ((a, "RISE", rise), (b, "BM25", bm25)):
        col.markdown(f"**{name}**")
        col.dataframe(results_table(ranked).drop(columns=["RH", "GH"], errors="ignore"), hide_index=True)

    m = st.columns(4)
    m[0].metric(f"overlap@{k}", f"{overlap_at_k(list(rise['id']), list(bm25['id']), k):.0%}",
                help="Share of RISE's top-k that BM25 also puts in its top-k.")
    m[1].metric("Spearman ρ", f"{spearman(rise_scores, bm25_scores):.3f}",
                help="Rank correlation of the two methods' scores over the whole pool.")
    labels = binary_labels(pool["label"]) if "label" in pool.columns else None
    if labels is not None and labels.any():
        metrics = {name: label_metrics(s, labels, k) for name, s in (("RISE", rise_scores), ("BM25", bm25_scores))}
        st.markdown(f"**Against the pool's labels** ({int(labels.sum())} positives of {labels.size})")
        st.dataframe({name: {m_: round(v, 4) for m_, v in vals.items()} for name, vals in metrics.items()})
    else:
        m[2].caption("The pool has no binary labels: precision@k and AP are not available.")
