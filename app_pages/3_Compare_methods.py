"""Compare methods: the same query ranked by RISE and by hidden-state cosine, Grad-Sketch, MiniLM embeddings and BM25,
with how far each agrees with RISE and, when the pool has labels, how well each finds them; with the contrast on
("why this and not that", shared with Attribute), every method ranks by its score for the query minus its score for
the other answer."""

from __future__ import annotations

import contextlib
from pathlib import Path

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
                            help=f"{name} builds its own gradient index over the pool the first time: a forward and "
                            f"a backward pass per sample, about 2.5 times as long as building this index took "
                            f"({len(index)} samples). It is kept while this server runs (docs/BERGSON.md).")]
if st.button("Compare", type="primary", key="compare"):
    contrast_ui.remember_query("cmp", widgets.query_sample())

query, versus = contrast_ui.remembered("cmp")
if query is None:
    st.stop()
compare_ui.forward_pass_offer(path)
compare_ui.pool_fit_offer(path, resources.BM25_FIT, "indexes every pool text once")
if embed:
    compare_ui.pool_fit_offer(path, resources.MINILM_FIT, "embeds every pool text once")
with ui.friendly("compare the rankings"):
    lm = resources.model_for(index)
    queue_peers = resources.heavy_work("peer build", Path(path).name, path) if peers else contextlib.nullcontext()
    with queue_peers:  # a peer builds its own gradient index over the pool: heavy work takes its place in the queue
        results = compare_methods(index, [query], resources.query_features(index, lm, [query], versus=versus),
                                  options, bm25=lambda: resources.bm25_for(path),
                                  embeddings=(lambda: resources.embeddings_for(path)) if embed else None,
                                  forward=resources.forward_for(path), lm=lm, methods=[*COMPARE_METHODS, *peers],
                                  versus=None if versus is None else [versus])
    if versus is not None:
        contrast_ui.caption(versus)
        st.caption("Every method ranks by its score for this answer minus its score for the other one: RISE through "
                   "the contrast (as on Attribute), the others as the difference of their two scores.")
    compare_ui.show_comparison(results, index, k)
