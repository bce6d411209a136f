"""The Compare methods page's view: the offers to run the pool's forward pass (Grad-Sketch), to build a peer's own
index over the pool (Bergson) and, on a large pool, to fit BM25 and MiniLM over it; RISE against the other methods --
agreement, the top-k lists side by side, and label metrics when the pool has binary labels."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st

from rise_core.metrics import binary_labels, label_table
from rise_core.units import format_bytes

from .plain import code, md
from .request_limits import request_limits
from .resources import (
    FORWARD_PASS,
    PoolFit,
    fitted_ready,
    forward_for,
    model_for,
    open_index,
    peer_pass,
    peer_ready,
    pool_pass,
    start_fit,
    start_forward,
    start_peer,
)
from .ui import friendly
from .views import top_list
from .widgets import stop_button

GRAD_SKETCH_NEEDS = ("**Grad-Sketch** (the exact LM-head gradient of each sample, sketched to this index's bytes per "
                     "sample)")

if TYPE_CHECKING:
    from rise_core.methods import MethodScores
    from rise_core.store import RiseIndex

    from .jobs import PoolPassJob


def forward_pass_offer(path: str, key: str = "cmp", needs: str = GRAD_SKETCH_NEEDS) -> bool:
    """A method that needs the model over the whole pool (`needs`: which, and what it is, in Markdown): say what that
    costs and run it, in the background, only when asked. True once the pass is done. `key`: the page's widget keys'
    prefix."""
    index = open_index(path)
    n = len(index)
    if forward_for(path) is not None:
        st.caption(f"The forward pass over the {n:,} pool samples is done (kept while this server runs).")
        return True
    extra = ("" if index.stores_final_hidden or needs != GRAD_SKETCH_NEEDS else
             " The same pass gives hidden cosine (this index stores no HS channel of the final hidden state).")
    _pass_offer(FORWARD_PASS, path, lambda: start_forward(path), f"{key}_grad",
                f"{needs} needs one forward pass of {code(index.manifest.model_id)} over all **{n:,} pool samples**, "
                f"about as long as building the index took.{extra}", f"Run the model over {n:,} pool samples", key)
    return False


def pool_fit_offer(path: str, kind: PoolFit, what: str, key: str = "cmp") -> bool:
    """A text baseline (`kind`: BM25's index, MiniLM's embeddings) on a pool too large to fit in a request
    (`PoolFit.max_inline_rows`): say what it costs and fit it, in the background, only when asked. `what`: what the
    fit does, for the message ("embeds every pool text once"). True when a request may use it: fitted, or small
    enough to fit there."""
    n = len(open_index(path))
    if n <= kind.max_inline_rows():
        return True
    if fitted_ready(kind, path) is not None:
        st.caption(f"{kind.name}: fitted over the {n:,} pool texts (kept while this server runs).")
        return True
    _pass_offer(kind.name, path, lambda: start_fit(kind, path), f"{key}_fit_{kind.limit}",
                f"**{kind.name}** {what}: **{n:,} texts**, {kind.cost(n)} on this server.",
                f"Fit the {kind.name} over the {n:,} pool texts", key)
    return False


def peer_offer(path: str, name: str, key: str = "cmp") -> Any:
    """A peer (`methods.PEER_METHODS`: Bergson) asked for on the index's pool: its fitted scorer once its own index is
    built, else None, with the offer to build it in the background (a forward and a backward pass per pool sample)."""
    from rise_core.methods import peer_bytes

    index = open_index(path)
    n = len(index)
    ready = peer_ready(name, path)
    if ready is not None:
        st.caption(f"{name}: its index over the {n:,} pool samples is built (kept while this server runs).")
        return ready
    need, limit = peer_bytes(name, model_for(index), n), request_limits().max_peer_bytes
    if need > limit:
        st.warning(f"**{name}** would hold about {format_bytes(need)} in this server's memory for its index over the "
                   f"{n:,} pool samples and its copy of the model; the limit is {format_bytes(limit)} "
                   "(RISE_MAX_PEER_BYTES). Run it from the command line instead: `rise evaluate --methods "
                   f"RISE,{name}` on the pool.", icon=":material/memory:")
        return None
    _pass_offer(peer_pass(name), path, lambda: start_peer(name, path), f"{key}_peer_build_{name}",
                f"**{name}** builds its own gradient index over the pool first: a forward and a backward pass of "
                f"{code(index.manifest.model_id)} per sample over all **{n:,} pool samples**, about 2.5 times as long "
                "as building this index took, on a copy of the model.", f"Build {name}'s index over {n:,} pool samples",
                key)
    return None


def _pass_offer(what: str, path: str, start: Callable[[], PoolPassJob], key: str, cost: str, label: str,
                page: str) -> None:
    """The offer of a pass over the pool (`resources.start_pool_pass`): its cost and a button, or, once started, its
    progress (live, with Stop) and its outcome. It runs in the background, in the server's queue: the page may be
    used or left meanwhile. `page`: the page's widget keys' prefix."""
    job = pool_pass(what, path)
    if job is not None and job.running:
        _live_pass(what, path, page)
        return
    if job is not None and job.status == "failed":
        st.error(md(job.message()), icon=":material/error:")
    elif job is not None and job.status in ("stopped", "cancelled"):
        st.caption(md(job.message()))
    st.info(f"{cost} It runs in the background, in the server's queue (the page stays usable), and is kept while "
            "this server runs.", icon=":material/info:")
    if st.button(label, key=key, icon=":material/play_arrow:"):
        with friendly(f"start the {what} over the pool"):
            start()
        st.rerun()


@st.fragment(run_every=1.0)
def _live_pass(what: str, path: str, page: str) -> None:
    job = pool_pass(what, path)
    if job is None or not job.running:
        st.rerun()
    st.progress(job.fraction, text=md(job.message()))
    stop_button(job, f"Stop the {what}", key=f"{page}_stop_{what}",
                help="Whoever started it, or an editor, may stop it; it ends at its next batch.")


def show_comparison(results: dict[str, MethodScores], index: RiseIndex, k: int) -> None:
    """Agreement of each method with RISE, the methods' top-k lists side by side, and label metrics when the pool has
    binary labels; of the pool it reads the top rows and the label column alone."""
    from rise_core.agreement import agreement_table
    from rise_core.methods import RISE

    ready = {name: r for name, r in results.items() if r.available}
    for name, r in results.items():
        if not r.available:
            st.caption(f"**{name}**: {md(r.missing)}.")
    n_queries = next(iter(ready.values())).scores.shape[0]
    per = " per query, averaged" if n_queries > 1 else ""
    st.markdown(f"**Agreement with RISE** over the whole pool{per}: the share of RISE's top {k} that each method also "
                "ranks in its top k, and the rank correlations of their scores (1: the same order, -1: reversed).")
    table = agreement_table({name: r.scores for name, r in ready.items()}, RISE, k)
    st.dataframe(table, key="cmp_agreement", column_config={
        c: st.column_config.NumberColumn(format="%.3f") for c in table.columns})

    label_values = index.column("label")
    st.markdown(f"**Top {k} of each method**")
    for col, (name, r) in zip(st.columns(len(ready)), ready.items(), strict=True):
        col.markdown(f"**{name}**")
        col.dataframe(top_list(r.ranking(k).to_frame(index), bool(label_values.notna().any())), hide_index=True,
                      column_config={"score": st.column_config.NumberColumn(format="%.4f")})

    labels = binary_labels(label_values)
    if labels is not None and labels.any():
        st.markdown(f"**Against the pool's labels** ({int(labels.sum())} positives of {labels.size})")
        st.dataframe(label_table({name: r.mean() for name, r in ready.items()}, labels, k).round(4), key="cmp_labels")
    else:
        st.caption("The pool has no binary labels: precision@k and AP are not available.")
