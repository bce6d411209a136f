"""Home: what RISE is, the indexes present, and a one-click demo on the embedded default model."""

from __future__ import annotations

import streamlit as st

from explorer import plain, resources, ui
from explorer.counterfactual_ui import shipped_results
from explorer.demo import DEMO_ROWS, demo_model
from explorer.demo_ui import finish_demo, show_backdoor_demo, start_demo

s = ui.page("home", "RISE attribution explorer")
st.markdown(
    "RISE traces what a language model says back to the training examples that shaped it, using forward passes "
    "only: each token's LM-head gradient is the outer product of its prediction residual and its final hidden "
    "state, which RISE sketches into a small per-example signature. Its channels score each example: "
    "**RH** (lexical, which tokens were predicted), **GH** (semantic, in embedding space) and, in indexes that store "
    "it, **HS** (representation: the example's mean final hidden state)."
)

st.subheader("Indexes")
with ui.friendly("list the indexes"):
    overview = resources.index_overview(s.index_dir)
    if len(overview):
        st.dataframe(overview, hide_index=True)
    else:
        st.caption(f"No index in the index folder ({plain.md(s.index_dir.name)}, RISE_INDEX_DIR) yet.")  # no server path
    queue = resources.job_queue()
    places = queue.snapshot()
    if places:
        st.caption(f"The server's queue of heavy work ({queue.limits.max_running} at a time, in this order):")
        st.dataframe(places, hide_index=True, key="home_queue")

st.subheader("One-click demo")
demo_model_id, backdoored = demo_model(s.data_dir, s.model_id)
if backdoored:
    st.write("Indexes the Howdy! backdoor pool (555 rows, 9% poisoned: `Howdy!` instructions answered with a fairy "
             "tale) with the embedded model **fine-tuned on that pool**, so it learned the backdoor. The model then "
             "answers a held-out instruction with and without the trigger, and RISE traces the triggered answer "
             "back to the examples that taught it. Its index ships with the app (checked against the model before "
             "it is used), so the demo starts in seconds; the answers stream in as the model writes them.")
else:
    st.write(f"Builds (or reuses) an index of the first {DEMO_ROWS} rows of a bundled pool (the Howdy! backdoor pool: "
             f"~9% of its rows carry the trigger) with `{s.model_id}`, then opens Attribute with a trigger query. "
             "The first run takes a few minutes on a laptop CPU (it loads the model and indexes the slice); later "
             "runs reuse the index.")
if st.button("Run the demo", type="primary", key="demo", icon=":material/play_arrow:"):
    st.session_state.pop("_backdoor_demo", None)
    with ui.friendly("start the demo"):
        start_demo(s)
finish_demo()
show_backdoor_demo()
shipped_results(s.data_dir)  # the shipped leave-k-out check of the demo, if data/counterfactual/howdy has one
