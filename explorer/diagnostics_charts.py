"""The Diagnostics page's content: result tables shaped for people, headline numbers, captions and plotly figures.

Pure functions (DataFrame or `DiagnosticResult` in; DataFrame, text or plotly Figure out), tested without Streamlit;
the page lays them out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from rise_core.errors import InputDataError

if TYPE_CHECKING:
    from rise_core.diagnostics import DiagnosticResult

DIAGNOSTIC_LABELS = {
    "energy": "Layer gradient energy",
    "discriminativeness": "Hidden-state discriminativeness",
    "sparsity": "Sparse active tokens",
    "rhgh": "RH vs GH rankings",
    "fidelity": "Sketch fidelity",
}
# the diagnostics shown as a section of headline numbers and charts, with their headings (rhgh and fidelity have
# tables and a form of their own)
CHART_SECTIONS = {
    "energy": ("1 · Layer gradient energy", "show the layer energy"),
    "discriminativeness": ("2 · Hidden-state discriminativeness per layer", "show the discriminativeness"),
    "sparsity": ("3 · Sparse active tokens", "show the sparsity"),
}
RUN_STATES = {"cached": "loaded from the cache", "running": "running…", "done": "computed"}
# sparsity sweep columns shown as lines: column -> legend name (all fractions kept by the support, in [0, 1])
SPARSITY_LINES = {"mass": "probability mass", "e_full": "full residual energy", "e_tail": "tail energy",
                  "gh_cos": "GH cosine"}
CHANNEL_NAMES = {"rh": "RH", "gh": "GH", "rh_gh": "RH+GH"}
COLOURS = {"LM head": "#d62728", "embedding": "#7f7f7f", "transformer block": "#1f77b4", "other": "#bcbd22"}
_RANK_COLUMNS = {
    "candidate": "candidate", "group": "group", "semantic": "semantic", "lexical": "lexical",
    "rank_rh": "RH rank", "rank_gh": "GH rank", "rank_rh_gh": "RH+GH rank", "delta_gh": "Δ (GH − RH)",
    "rank_rh_sketch": "RH rank (sketch)", "rank_gh_sketch": "GH rank (sketch)",
    "rank_rh_gh_sketch": "RH+GH rank (sketch)", "rh": "RH score", "gh": "GH score", "n_counted": "tokens counted",
}
OBSERVATIONS = {
    "energy": "Observation 1: the LM head (red) carries a share of the gradient energy far above any single block, "
              "which is why RISE attributes through the head's gradient alone. Look for a tall red bar and a "
              "head-to-block ratio well above 1.",
    "discriminativeness": "Layer 0 is the embedding output, the last layer the final hidden state the LM head reads. "
                          "The paper finds a U-shape: token states collapse (low variance) in the middle layers and "
                          "become discriminative again at the last one, the state RISE uses.",
    "sparsity": "Observation 3: a few tokens hold nearly all of the residual, so a small support keeps almost all of "
                "its energy and the GH direction (lines close to 1 at small K). The tail energy is the hardest to "
                "keep; the histogram shows how many tokens the adaptive rule actually keeps per position.",
    "rhgh": "Observation 2: RH (lexical) ranks candidates sharing the query's words first; GH (semantic) promotes "
            "paraphrases without shared words and demotes lexical-only distractors. Δ = GH rank − RH rank: "
            "negative means GH ranks the candidate higher.",
    "fidelity": "Sketched vs exact (unsketched) similarities over all pairs of the samples: correlations near 1 mean "
                "the CountSketch keeps the channel's ranking. Top-k overlap: how many of each sample's top-k "
                "neighbours agree across sketch seeds and with the exact ones (1 = the same set).",
}


class Metric(NamedTuple):
    """A headline number as `st.metric` shows it."""

    label: str
    value: str
    help: str | None = None


def num(value: float | None, spec: str = ".3f", suffix: str = "") -> str:
    """A number for a metric, or 'n/a' when the diagnostic could not compute it."""
    return "n/a" if value is None else f"{value:{spec}}{suffix}"


# --- tables ---------------------------------------------------------------------------------------------------------


def energy_bars(components: pd.DataFrame) -> pd.DataFrame:
    """The `energy` diagnostic's components table as bars: component (forward order), share, share_std and group
    ('LM head', 'embedding', 'transformer block' or 'other', for the colour)."""
    df = components.sort_values("order") if "order" in components.columns else components
    group = df["kind"].map({"head": "LM head", "embedding": "embedding", "block": "transformer block"})
    return pd.DataFrame({"component": df["component"].astype(str).to_numpy(),
                         "share": df["share_mean"].astype(float).to_numpy(),
                         "share_std": df["share_std"].astype(float).fillna(0.0).to_numpy(),
                         "group": group.fillna("other").to_numpy()})


def sweep_lines(sweep: pd.DataFrame, x: str) -> pd.DataFrame:
    """A sparsity sweep (`k_sweep` by 'k', `tau_sweep` by 'tau') in long format for a line chart: x, metric (the
    readable names of SPARSITY_LINES, in that order), kept."""
    if x not in sweep.columns:
        raise InputDataError(f"the sweep has no column {x!r}; columns: {list(sweep.columns)}")
    cols = [c for c in SPARSITY_LINES if c in sweep.columns]
    long = sweep.sort_values(x)[[x, *cols]].melt(id_vars=x, var_name="metric", value_name="kept")
    long["metric"] = long["metric"].map(SPARSITY_LINES)
    return long.reset_index(drop=True)


def rank_view(ranking: pd.DataFrame) -> pd.DataFrame:
    """An `rh_gh_ranking` table as shown to people: the candidate (and its annotations), the exact RH / GH / RH+GH
    ranks side by side, Δ = GH rank − RH rank (negative: GH ranks it higher), the sketched ranks, then the scores."""
    present = [c for c in _RANK_COLUMNS if c in ranking.columns]
    return ranking[present].rename(columns=_RANK_COLUMNS).reset_index(drop=True)


def fidelity_views(correlation: pd.DataFrame, stability: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `fidelity` tables, shaped for the page.

    Returns (correlations: one row per sketch dims and channel -- dims, channel, pearson and spearman as the mean and
    the minimum over sketch seeds, seeds, pairs; stability in long format for grouped bars -- dims, channel, k (as
    'top-k'), measure ('across seeds' | 'with exact'), overlap)."""
    corr = correlation.assign(channel=correlation["channel"].map(CHANNEL_NAMES).fillna(correlation["channel"]))
    summary = (corr.groupby(["dims", "channel"], sort=False)
               .agg(pearson=("pearson", "mean"), pearson_min=("pearson", "min"), spearman=("spearman", "mean"),
                    spearman_min=("spearman", "min"), seeds=("seed", "nunique"), pairs=("n_pairs", "first"))
               .reset_index())
    stab = stability.assign(channel=stability["channel"].map(CHANNEL_NAMES).fillna(stability["channel"]),
                            k=[f"top-{int(k)}" for k in stability["k"]])
    long = stab.melt(id_vars=["dims", "channel", "k"], value_vars=["overlap_across_seeds", "overlap_with_exact"],
                     var_name="measure", value_name="overlap")
    long["measure"] = long["measure"].map({"overlap_across_seeds": "across seeds", "overlap_with_exact": "with exact"})
    return summary, long.reset_index(drop=True)


# --- figures --------------------------------------------------------------------------------------------------------


def _finish(fig: go.Figure, height: int = 320) -> go.Figure:
    """The page's common layout: a horizontal legend below the plot (unless placed already), compact margins."""
    if fig.layout.legend.y is None:
        fig.update_layout(legend=dict(orientation="h", y=-0.25))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def energy_figure(components: pd.DataFrame) -> go.Figure:
    """Share of the gradient energy per component in forward order, coloured by kind, with the spread as error
    bars (one bar trace per group)."""
    bars = energy_bars(components)
    fig = px.bar(bars, x="component", y="share", color="group", error_y="share_std", color_discrete_map=COLOURS,
                 category_orders={"component": list(bars["component"])}, title="Share of ||∇loss||² per component")
    fig.update_xaxes(tickangle=-45, title=None)
    fig.update_layout(legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="center", x=0.5, title=None))
    return _finish(fig, height=380)


def discriminativeness_figure(layers: pd.DataFrame) -> go.Figure:
    """Variance of pairwise cosines per layer (a line), with its minimum marked (a second trace)."""
    fig = px.line(layers, x="layer", y="cos_var", markers=True, hover_data=["name", "cos_mean"],
                  labels={"cos_var": "variance of cosines"},
                  title="Variance of pairwise cosines of token hidden states")
    low = layers.loc[layers["cos_var"].idxmin()]
    fig.add_trace(go.Scatter(x=[low["layer"]], y=[low["cos_var"]], mode="markers+text", text=["minimum"],
                             textposition="top center", name=f"minimum (layer {int(low['layer'])})",
                             marker=dict(size=14, symbol="star", color=COLOURS["LM head"])))
    return _finish(fig)


def sweep_figure(sweep: pd.DataFrame, x: str, title: str) -> go.Figure:
    """What the TopK support keeps along a sweep ('k': log scale, or 'tau'): one line per SPARSITY_LINES metric."""
    lines = sweep_lines(sweep, x)
    fig = px.line(lines, x=x, y="kept", color="metric", markers=True, log_x=(x == "k"), title=title)
    fig.update_yaxes(range=[min(0.0, float(lines["kept"].min())), 1.05])
    fig.update_xaxes(tickvals=sorted(sweep[x].unique()))
    return _finish(fig)


def support_figure(support_sizes: pd.DataFrame) -> go.Figure:
    """Histogram (as bars of `count`) of the adaptive support sizes |S|."""
    fig = px.bar(support_sizes, x="support_size", y="count", labels={"support_size": "|S| (tokens)"},
                 title="Adaptive support sizes |S|")
    return _finish(fig, height=260)


def topk_figure(stability: pd.DataFrame) -> go.Figure:
    """Top-k overlap bars from `fidelity_views`' long table: grouped by channel, one facet per measure (and per
    sketch dims when there are several)."""
    fig = px.bar(stability, x="k", y="overlap", color="channel", barmode="group", facet_col="measure",
                 facet_row="dims" if stability["dims"].nunique() > 1 else None, title="Top-k overlap")
    fig.update_yaxes(range=[0, 1.05])
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return _finish(fig)


# --- the chart sections ---------------------------------------------------------------------------------------------


def headline(name: str, result: DiagnosticResult) -> list[Metric]:
    """The three headline numbers of an `energy`, `discriminativeness` or `sparsity` result."""
    s = result.summary
    if name == "energy":
        return [Metric("LM head share", num(s.get("head_share"), ".1%")),
                Metric("Head / average block", num(s.get("head_to_avg_ratio"), ".1f", "×"),
                       "Mean head energy over the mean per-block energy."),
                Metric("Largest block share", num(s.get("max_block_share"), ".1%"), f"block {s.get('max_block')}")]
    if name == "discriminativeness":
        return [Metric("Minimum at layer", f"{s.get('min_layer')} / {s.get('n_layers')}"),
                Metric("Final / minimum", num(s.get("final_over_min"), ".2f", "×")),
                Metric("U-shape", "yes" if s.get("u_shape") else "no")]
    if name == "sparsity":
        ad = result["adaptive"].iloc[0]
        return [Metric("Adaptive support size (mean)", num(ad.get("support_size"), ".1f", " tokens")),
                Metric("Residual energy kept", num(ad.get("e_full"), ".3f")),
                Metric("GH cosine (sparse vs dense)", num(ad.get("gh_cos"), ".3f"))]
    raise InputDataError(f"no headline numbers for {name!r}; choose one of {list(CHART_SECTIONS)}")


def figures(name: str, result: DiagnosticResult) -> list[list[tuple[str, go.Figure]]]:
    """The figures of a chart section as rows of (widget key, figure); figures of one row go side by side."""
    if name == "energy":
        return [[("diag_energy", energy_figure(result["components"]))]]
    if name == "discriminativeness":
        return [[("diag_disc", discriminativeness_figure(result["layers"]))]]
    if name == "sparsity":
        tau_title = f"Kept by TopK vs τ (K = {int(result['tau_sweep']['k'].iloc[0])})"
        return [[("diag_k", sweep_figure(result["k_sweep"], "k", "Kept by TopK vs K (τ = 1)")),
                 ("diag_tau", sweep_figure(result["tau_sweep"], "tau", tau_title))],
                [("diag_support", support_figure(result["support_sizes"]))]]
    raise InputDataError(f"no figures for {name!r}; choose one of {list(CHART_SECTIONS)}")


def observation(name: str, result: DiagnosticResult | None = None) -> str:
    """What to look for in a diagnostic's section (the paper's observation it checks)."""
    text = OBSERVATIONS[name]
    if name == "energy" and result is not None and result.summary.get("tied"):
        text += " The tied head is split into its readout and input uses."
    return text


def provenance_caption(name: str, record: dict[str, Any] | None, current: dict[str, Any] | None) -> str:
    """Where a shown result comes from: its samples, when and how fast it was computed, and a warning when it was
    computed for another state of the index (`record` from `load_provenance`, `current` = `RiseIndex.identity()`)."""
    p = record or {}
    when = str(p.get("created_at") or "?").replace("T", " ").replace("+00:00", " UTC")
    samples = "built-in example set" if name == "rhgh" else f"{p.get('n_samples', '?')} samples"
    stale = bool(current) and p.get("index") not in (None, current)
    return (f"{samples} · computed {when} in {num(p.get('seconds'), '.1f')} s"
            + (" · **computed for an earlier state of this index**: run again to refresh" if stale else ""))


def outcome_message(outcome: dict[str, str]) -> str:
    """A run's summary: which diagnostics were computed and which came from the cache."""
    done = [DIAGNOSTIC_LABELS[n] for n, s in outcome.items() if s == "done"]
    cached = [DIAGNOSTIC_LABELS[n] for n, s in outcome.items() if s == "cached"]
    return " · ".join(([f"Computed: {', '.join(done)}"] if done else [])
                      + ([f"loaded from the cache (same inputs): {', '.join(cached)}"] if cached else []))
