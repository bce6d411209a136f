"""Compare methods: the same query ranked by RISE and by hidden-state cosine, Grad-Sketch, MiniLM embeddings and BM25,
with how far each agrees with RISE and, when the pool has labels, how well each finds them; with the contrast on
("why this and not that", shared with Attribute), every method ranks by its score for the query minus its score for
the other answer."""

from __future__ import annotations

import streamlit as st

from explorer import compare_ui, contrast_ui, resources, ui, widgets
from rise_core.methods import COMPARE_METHODS, PEER_METHODS, compare_methods

ui.page("compare")
path, index = widgets.picked_index()

left, right = st.columns([3, 1])
with left:
    widgets.query_inputs(path)
    contrast_ui.versus_inputs(path)  # why this and not that: the same contrast as on Attribute, for every method
with right:
    options = widgets.score_controls(index.config, index=index)
    k = int(st.number_input("k (top examples compared)", 1, 200, key="top_k", persist_state="session"))
    embed = st.checkbox("MiniLM embeddings", value=True, key="cmp_embed",
                        help="Embeds every pool text once (all-MiniLM-L6-v2 on the CPU), then reuses the embeddings; a "
                        "large pool only when you start it (the button below the query).")
    peers = [name for name in PEER_METHODS
             if st.checkbox(name, value=False, key=f"cmp_peer_{name}",
                            help=f"{name} builds its own gradient index over the pool first, in the background "
                            f"once you start it: a forward and a backward pass per sample, about 2.5 times as long as "
                            f"building this index took ({len(index)} samples). It is kept while this server runs "
                            "(docs/BERGSON.md).")]
if st.button("Compare", type="primary", key="compare"):
    contrast_ui.remember_query("cmp", widgets.query_sample())

query, versus = contrast_ui.remembered("cmp")
if query is None:
    st.stop()
compare_ui.forward_pass_offer(path)
compare_ui.pool_fit_offer(path, resources.BM25_FIT, "indexes every pool text once")
if embed:
    compare_ui.pool_fit_offer(path, resources.MINILM_FIT, "embeds every pool text once")
built = {name: scorer for name in peers if (scorer := compare_ui.peer_offer(path, name)) is not None}
with ui.friendly("compare the rankings"):
    lm = resources.model_for(index)
    results = compare_methods(index, [query], resources.query_features(index, lm, [query], versus=versus), options,
                              bm25=lambda: resources.bm25_for(path),
                              embeddings=(lambda: resources.embeddings_for(path)) if embed else None,
                              forward=resources.forward_for(path), lm=lm, methods=[*COMPARE_METHODS, *built],
                              versus=None if versus is None else [versus], peers=built)
    if versus is not None:
        contrast_ui.caption(versus)
        st.caption("Every method ranks by its score for this answer minus its score for the other one: RISE through "
                   "the contrast (as on Attribute), the others as the difference of their two scores.")
    compare_ui.show_comparison(results, index, k)
