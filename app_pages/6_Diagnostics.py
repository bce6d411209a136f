"""Diagnostics: the paper's three observations on the selected index's model (layer gradient energy, hidden-state
discriminativeness, sparse active tokens), RH vs GH rankings and sketch fidelity, as charts. Results are cached
beside the index (`<index>.diagnostics/`): shown again on load, and a run with the same inputs loads them."""

from __future__ import annotations

import io

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

import explorer_ui as ui
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
from rise_core.errors import InputDataError
from rise_core.ingest import read_pool
from rise_core.ui_support import (
    DIAGNOSTIC_LABELS,
    diagnostics_provenance,
    energy_bars,
    fidelity_views,
    index_identity,
    parse_lines,
    parse_typed_queries,
    rank_view,
    samples_from_frame,
    sweep_lines,
)

POOL = "The index's pool"
STATES = {"cached": "loaded from the cache", "running": "running…", "done": "computed"}
COLOURS = {"LM head": "#d62728", "embedding": "#7f7f7f", "transformer block": "#1f77b4", "other": "#bcbd22"}


def num(value, spec: str = ".3f", suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


def chart(fig, key: str, height: int = 320) -> None:
    if fig.layout.legend.y is None:
        fig.update_layout(legend=dict(orientation="h", y=-0.25))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10))
    st.plotly_chart(fig, key=key)


def diag_samples(index, source: str) -> list:
    if source == POOL:
        return samples_from_frame(index.samples().head(int(st.session_state["diag_n"])))
    up = st.session_state.get("diag_file")
    if up is not None:
        return read_pool(io.BytesIO(up.getvalue()), fmt=up.name.rsplit(".", 1)[-1]).samples
    if not (st.session_state.get("diag_text") or "").strip():
        raise InputDataError("type some texts (separate them with a blank line) or upload a file")
    return parse_typed_queries(st.session_state["diag_text"])


ui.page("Diagnostics", ":material/monitor_heart:")
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
                         type=["jsonl", "json", "csv", "parquet"], key="diag_file")
    which = st.multiselect("Diagnostics", DIAGNOSTICS, default=[d for d in DIAGNOSTICS if d != "energy"],
                           key="diag_which", format_func=DIAGNOSTIC_LABELS.get,
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
                status.write(f"{DIAGNOSTIC_LABELS[name]}: {STATES.get(state, state)}")

            run_diagnostics(lm, samples, index.config, options, DiagnosticsOptions(n_samples=len(samples)), which,
                            out_dir, force, sketches=extractor.sketches, hidden_mean=extractor.hidden_mean,
                            index_identity=index_identity(index), progress=progress)
            status.update(label="Diagnostics done", state="complete", expanded=False)
        st.session_state["diag_outcome"] = (path, outcome)

last = st.session_state.get("diag_outcome")
if last and last[0] == path:
    done = [DIAGNOSTIC_LABELS[n] for n, s in last[1].items() if s == "done"]
    cached = [DIAGNOSTIC_LABELS[n] for n, s in last[1].items() if s == "cached"]
    st.success(" · ".join(([f"Computed: {', '.join(done)}"] if done else [])
                          + ([f"loaded from the cache (same inputs): {', '.join(cached)}"] if cached else [])))

results, prov, current = {}, {}, None
with ui.friendly("read the cached diagnostics"):
    results, prov = load_results(out_dir), diagnostics_provenance(out_dir)
    current = index_identity(ui.open_index(path))
if not results:
    st.info("No diagnostics for this index yet: pick the samples and the diagnostics above, then Run.")


def provenance(name: str) -> None:
    p = prov.get(name) or {}
    when = str(p.get("created_at") or "?").replace("T", " ").replace("+00:00", " UTC")
    samples = "built-in example set" if name == "rhgh" else f"{p.get('n_samples', '?')} samples"
    st.caption(f"{samples} · computed {when} in {num(p.get('seconds'), '.1f')} s"
               + (" · **computed for an earlier state of this index**: run again to refresh"
                  if current and p.get("index") not in (None, current) else ""))


if "energy" in results:
    st.subheader("1 · Layer gradient energy")
    with ui.friendly("show the layer energy"):
        s = results["energy"].summary
        c1, c2, c3 = st.columns(3)
        c1.metric("LM head share", num(s.get("head_share"), ".1%"))
        c2.metric("Head / average block", num(s.get("head_to_avg_ratio"), ".1f", "×"),
                  help="Mean head energy over the mean per-block energy.")
        c3.metric("Largest block share", num(s.get("max_block_share"), ".1%"), help=f"block {s.get('max_block')}")
        bars = energy_bars(results["energy"]["components"])
        fig = px.bar(bars, x="component", y="share", color="group", error_y="share_std", color_discrete_map=COLOURS,
                     category_orders={"component": list(bars["component"])}, title="Share of ||∇loss||² per component")
        fig.update_xaxes(tickangle=-45, title=None)
        fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="center", x=0.5, title=None))
        chart(fig, "diag_energy", height=380)
        provenance("energy")
        st.caption("Observation 1: the LM head (red) carries a share of the gradient energy far above any single block, "
                   "which is why RISE attributes through the head's gradient alone. Look for a tall red bar and a "
                   "head-to-block ratio well above 1." + (" The tied head is split into its readout and input uses."
                                                         if s.get("tied") else ""))

if "discriminativeness" in results:
    st.subheader("2 · Hidden-state discriminativeness per layer")
    with ui.friendly("show the discriminativeness"):
        s = results["discriminativeness"].summary
        layers = results["discriminativeness"]["layers"]
        c1, c2, c3 = st.columns(3)
        c1.metric("Minimum at layer", f"{s.get('min_layer')} / {s.get('n_layers')}")
        c2.metric("Final / minimum", num(s.get("final_over_min"), ".2f", "×"))
        c3.metric("U-shape", "yes" if s.get("u_shape") else "no")
        fig = px.line(layers, x="layer", y="cos_var", markers=True, hover_data=["name", "cos_mean"],
                      labels={"cos_var": "variance of cosines"},
                      title="Variance of pairwise cosines of token hidden states")
        low = layers.loc[layers["cos_var"].idxmin()]
        fig.add_trace(go.Scatter(x=[low["layer"]], y=[low["cos_var"]], mode="markers+text", text=["minimum"],
                                 textposition="top center", name=f"minimum (layer {int(low['layer'])})",
                                 marker=dict(size=14, symbol="star", color=COLOURS["LM head"])))
        chart(fig, "diag_disc")
        provenance("discriminativeness")
        st.caption("Layer 0 is the embedding output, the last layer the final hidden state the LM head reads. The paper "
                   "finds a U-shape: token states collapse (low variance) in the middle layers and become "
                   "discriminative again at the last one, the state RISE uses.")

if "sparsity" in results:
    st.subheader("3 · Sparse active tokens")
    with ui.friendly("show the sparsity"):
        res = results["sparsity"]
        ad = res["adaptive"].iloc[0]
        c1, c2, c3 = st.columns(3)
        c1.metric("Adaptive support size (mean)", num(ad.get("support_size"), ".1f", " tokens"))
        c2.metric("Residual energy kept", num(ad.get("e_full"), ".3f"))
        c3.metric("GH cosine (sparse vs dense)", num(ad.get("gh_cos"), ".3f"))
        k_col, tau_col = st.columns(2)
        for col, table, x, key, title in ((k_col, "k_sweep", "k", "diag_k", "Kept by TopK vs K (τ = 1)"),
                                          (tau_col, "tau_sweep", "tau", "diag_tau",
                                           f"Kept by TopK vs τ (K = {int(res['tau_sweep']['k'].iloc[0])})")):
            lines = sweep_lines(res[table], x)
            fig = px.line(lines, x=x, y="kept", color="metric", markers=True, log_x=(x == "k"), title=title)
            fig.update_yaxes(range=[min(0.0, float(lines["kept"].min())), 1.05])
            fig.update_xaxes(tickvals=sorted(res[table][x].unique()))
            with col:
                chart(fig, key)
        fig = px.bar(res["support_sizes"], x="support_size", y="count", labels={"support_size": "|S| (tokens)"}, title="Adaptive support sizes |S|")
        chart(fig, "diag_support", height=260)
        provenance("sparsity")
        st.caption("Observation 3: a few tokens hold nearly all of the residual, so a small support keeps almost all of "
                   "its energy and the GH direction (lines close to 1 at small K). The tail energy is the hardest to "
                   "keep; the histogram shows how many tokens the adaptive rule actually keeps per position.")

st.subheader("4 · RH vs GH rankings")
with ui.friendly("show the RH vs GH rankings"):
    if "rhgh" in results:
        st.markdown(f"**Built-in example** · query: *{EXAMPLE_QUERY}*")
        st.dataframe(rank_view(results["rhgh"]["examples"]), hide_index=True)
        provenance("rhgh")
    st.caption("Observation 2: RH (lexical) ranks candidates sharing the query's words first; GH (semantic) promotes "
               "paraphrases without shared words and demotes lexical-only distractors. Δ = GH rank − RH rank: "
               "negative means GH ranks the candidate higher.")
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
        st.dataframe(rank_view(custom[1]["ranking"]), hide_index=True)
        st.caption(f"{custom[1].summary.get('n_moved_by_gh', 0)} of {custom[1].summary.get('n_candidates')} "
                   "candidates move between the RH and the GH ranking.")

if "fidelity" in results:
    st.subheader("5 · Sketch fidelity")
    with ui.friendly("show the sketch fidelity"):
        corr, stab = fidelity_views(results["fidelity"]["correlation"], results["fidelity"]["topk_stability"])
        st.dataframe(corr.round(4), hide_index=True)
        fig = px.bar(stab, x="k", y="overlap", color="channel", barmode="group", facet_col="measure",
                     facet_row="dims" if stab["dims"].nunique() > 1 else None, title="Top-k overlap")
        fig.update_yaxes(range=[0, 1.05])
        fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
        chart(fig, "diag_topk")
        provenance("fidelity")
        st.caption("Sketched vs exact (unsketched) similarities over all pairs of the samples: correlations near 1 mean "
                   "the CountSketch keeps the channel's ranking. Top-k overlap: how many of each sample's top-k "
                   "neighbours agree across sketch seeds and with the exact ones (1 = the same set).")
