"""Diagnostics: the paper's three observations on the selected index's model (layer gradient energy, hidden-state
discriminativeness, sparse active tokens), RH vs GH rankings and sketch fidelity, as charts. Results are cached
beside the index (`<index>.diagnostics/`): shown again on load, and a run with the same inputs loads them."""

from __future__ import annotations

import streamlit as st

from explorer import diagnostics_charts as charts
from explorer import ui
from explorer.uploads import UPLOAD_TYPES, PoolFile, parse_lines, parse_typed_queries
from rise_core.diagnostics import (
    DIAGNOSTICS,
    EXAMPLE_CANDIDATES,
    EXAMPLE_QUERY,
    DiagnosticsOptions,
    default_output_dir,
    load_results,
    rh_gh_ranking,
    run_diagnostics,
)
from rise_core.diagnostics.runner import load_provenance
from rise_core.errors import InputDataError
from rise_core.samples import Sample
from rise_core.store import RiseIndex

POOL = "The index's pool"
LABELS = charts.DIAGNOSTIC_LABELS


def diag_samples(index: RiseIndex, source: str) -> list[Sample]:
    if source == POOL:
        return index.sample_list(limit=int(st.session_state["diag_n"]))
    up = st.session_state.get("diag_file")
    if up is not None:
        return PoolFile.from_upload(up).pool().samples
    if not (st.session_state.get("diag_text") or "").strip():
        raise InputDataError("type some texts (separate them with a blank line) or upload a file")
    return parse_typed_queries(st.session_state["diag_text"])


ui.page("diagnostics")
path = ui.index_picker()
if path is None:
    st.stop()
out_dir = default_output_dir(path)
st.caption(f"The paper's observations, measured on this index's model with its RISE config and sketches. Results are "
           f"cached in `{out_dir.name}/` beside the index: a run with the same inputs loads them instead of computing.")

left, right = st.columns([3, 1])
with left:
    source = st.radio("Samples to diagnose", [POOL, "Type or upload texts"], horizontal=True, key="diag_source")
    if source == POOL:
        st.number_input("Pool samples (the first N)", 1, None, 16, key="diag_n",
                        help="Energy runs one backward pass per sample; fidelity compares every pair.")
    else:
        st.text_area("Texts (separate several with a blank line)", key="diag_text", height=120)
        st.file_uploader("…or upload JSONL, CSV or Parquet with a text column, or prompt and completion",
                         type=UPLOAD_TYPES, key="diag_file")
    which = st.multiselect("Diagnostics", DIAGNOSTICS, default=[d for d in DIAGNOSTICS if d != "energy"],
                           key="diag_which", format_func=LABELS.get,
                           help="Layer gradient energy runs a backward pass per sample: the slowest by far.")
with right:
    with st.expander("Score options (RH vs GH, fidelity)"):
        options = ui.score_controls()
    force = st.checkbox("Recompute", key="diag_force", help="Compute again even when cached results match the inputs.")

if st.button("Run diagnostics", type="primary", key="diag_run", icon=":material/play_arrow:"):
    with ui.friendly("run the diagnostics"):
        if not which:
            raise InputDataError("pick at least one diagnostic")
        index = ui.open_index(path)
        lm = ui.model_for(index)
        samples = diag_samples(index, source)
        extractor = index.extractor(lm)
        outcome: dict[str, str] = {}
        with st.status(f"Running {len(which)} diagnostics on {len(samples)} samples…", expanded=True) as status:
            def progress(name: str, state: str) -> None:
                outcome[name] = state
                status.write(f"{LABELS[name]}: {charts.RUN_STATES.get(state, state)}")

            run_diagnostics(lm, samples, index.config, options, DiagnosticsOptions(n_samples=len(samples)), which,
                            out_dir, force, sketches=extractor.sketches, hidden_mean=extractor.hidden_mean,
                            index_identity=index.identity(), progress=progress)
            status.update(label="Diagnostics done", state="complete", expanded=False)
        st.session_state["diag_outcome"] = (path, outcome)

last = st.session_state.get("diag_outcome")
if last and last[0] == path:
    st.success(charts.outcome_message(last[1]))

results, prov, current = {}, {}, None
with ui.friendly("read the cached diagnostics"):
    results, prov = load_results(out_dir), load_provenance(out_dir)
    current = ui.open_index(path).identity()
if not results:
    st.info("No diagnostics for this index yet: pick the samples and the diagnostics above, then Run.")

for name, (heading, action) in charts.CHART_SECTIONS.items():
    if name not in results:
        continue
    st.subheader(heading)
    with ui.friendly(action):
        for col, metric in zip(st.columns(3), charts.headline(name, results[name]), strict=True):
            col.metric(metric.label, metric.value, help=metric.help)
        for row in charts.figures(name, results[name]):
            for col, (key, fig) in zip(st.columns(len(row)) if len(row) > 1 else [st.container()], row, strict=True):
                col.plotly_chart(fig, key=key)
        st.caption(charts.provenance_caption(name, prov.get(name), current))
        st.caption(charts.observation(name, results[name]))

st.subheader("4 · RH vs GH rankings")
with ui.friendly("show the RH vs GH rankings"):
    if "rhgh" in results:
        st.markdown(f"**Built-in example** · query: *{EXAMPLE_QUERY}*")
        st.dataframe(charts.rank_view(results["rhgh"]["examples"]), hide_index=True)
        st.caption(charts.provenance_caption("rhgh", prov.get("rhgh"), current))
    st.caption(charts.observation("rhgh"))
st.markdown("**Your own query**")
st.text_input("Query", key="diag_query", placeholder=EXAMPLE_QUERY)
st.text_area("Candidates (one per line)", key="diag_candidates", height=120,
             placeholder="\n".join(c[0] for c in EXAMPLE_CANDIDATES[:4]))
if st.button("Rank the candidates", key="diag_rank"):
    with ui.friendly("rank the candidates"):
        query = (st.session_state.get("diag_query") or "").strip()
        if not query:
            raise InputDataError("type a query")
        candidates = parse_lines(st.session_state.get("diag_candidates", ""), "candidate")
        index = ui.open_index(path)
        lm = ui.model_for(index)
        extractor = index.extractor(lm)
        with st.spinner("Ranking the candidates…"):
            mine = rh_gh_ranking(lm, query, candidates, index.config, options, sketches=extractor.sketches,
                                 hidden_mean=extractor.hidden_mean)
        st.session_state["diag_custom"] = (path, mine)
custom = st.session_state.get("diag_custom")
if custom and custom[0] == path:
    with ui.friendly("show your ranking"):
        st.text(f"Query: {custom[1].params.get('query')}")
        st.dataframe(charts.rank_view(custom[1]["ranking"]), hide_index=True)
        st.caption(f"{custom[1].summary.get('n_moved_by_gh', 0)} of {custom[1].summary.get('n_candidates')} "
                   "candidates move between the RH and the GH ranking.")

if "fidelity" in results:
    st.subheader("5 · Sketch fidelity")
    with ui.friendly("show the sketch fidelity"):
        corr, stab = charts.fidelity_views(results["fidelity"]["correlation"], results["fidelity"]["topk_stability"])
        st.dataframe(corr.round(4), hide_index=True)
        st.plotly_chart(charts.topk_figure(stab), key="diag_topk")
        st.caption(charts.provenance_caption("fidelity", prov.get("fidelity"), current))
        st.caption(charts.observation("fidelity"))
