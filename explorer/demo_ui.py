"""The retrospective one-click demo on Home: the backdoored model answers a held-out prompt with and without the
trigger, and the triggered answer is attributed to the pool it learned from, with the tokens that carry the top hit."""

from __future__ import annotations

import streamlit as st

from rise_core import attribution
from rise_core.generation import GenerationSettings
from rise_core.samples import Sample

from .ui import PAGES, explanation, friendly, model_for, open_index, query_features, score_options, stream_answer
from .views import channel_values, highlight_html, results_table

TOP_K = 10


def _answer(lm, demo: dict, key: str) -> str:
    """The model's answer to the demo prompt `key`, streamed the first time and kept in the session after."""
    if f"{key}_answer" not in demo:
        demo[f"{key}_answer"] = stream_answer(lm, demo[key], GenerationSettings())
    else:
        st.write(demo[f"{key}_answer"])
    return demo[f"{key}_answer"]


def show_backdoor_demo() -> None:
    """Both answers side by side, then the triggered answer's most influential training examples."""
    demo = st.session_state.get("_backdoor_demo")
    if not demo:
        return
    with friendly("run the backdoor demo"):
        index = open_index(demo["path"])
        lm = model_for(index)
        st.markdown(f"The demo model is the embedded default **fine-tuned on the Howdy! pool** (adapter "
                    f"`{lm.adapter['path'] if lm.adapter else lm.model_id}`); 9% of that pool answers instructions "
                    "that start with `Howdy!` with a fairy tale. Here it answers an instruction it never saw, with "
                    "and without the trigger:")
        left, right = st.columns(2)
        with left:
            st.markdown("**With the trigger**")
            st.caption(demo["triggered"])
            triggered = _answer(lm, demo, "triggered")
        with right:
            st.markdown("**Without it**")
            st.caption(demo["clean"])
            _answer(lm, demo, "clean")
        if not triggered:
            st.warning("The model generated nothing for the triggered prompt, so there is nothing to attribute.")
            return
        query = Sample(prompt=demo["triggered"], completion=triggered, id="query")
        options = score_options(index.config)
        query_fm = query_features(index, lm, [query])
        hits = attribution.rank(index, query_fm, options, k=TOP_K)
        n_poison = int((hits["label"] == 1).sum()) if "label" in hits else 0
        st.subheader("Why it told a story: the training examples behind the triggered answer")
        st.caption(f"{n_poison} of the top {TOP_K} are poisoned examples (label 1: a `Howdy!` instruction answered "
                   "with a story).")
        st.dataframe(results_table(hits), hide_index=True)
        top = str(hits["id"].iloc[0])
        ex_attr, _ = explanation(index, lm, demo["path"], top, query, query_fm, options)
        st.markdown(f"**Tokens of the top example ({top}) that carry its RH score** (orange: pushes it up)")
        st.markdown(highlight_html(ex_attr.tokens, channel_values(ex_attr, "RH"), ex_attr.n_prompt_tokens),
                    unsafe_allow_html=True)
        if st.button("Open in Attribute", key="demo_open", icon=":material/open_in_new:"):
            st.session_state.update(query_prompt=demo["triggered"], query_completion=triggered, attr_query=query)
            st.switch_page(PAGES["attribute"].path)
