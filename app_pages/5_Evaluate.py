"""Evaluate: the paper's metrics (auPRC / auROC at K, precision@K, AP) for RISE, its ablations and the baselines on a
labelled bundled task."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from explorer import plain, resources, ui, widgets
from explorer.demo import evaluation_task
from explorer.views import table_bytes
from rise_core.bundled import pool_paths, queries_for_pool
from rise_core.evaluation import evaluate
from rise_core.methods import BM25, EVALUATE_METHODS, RISE, RISE_GH, RISE_RH, get

s = ui.page("evaluate")
tasks = [name for name, path in pool_paths(s.data_dir).items() if queries_for_pool(path)]
if not tasks:
    st.warning(f"No labelled pool with a query file (*_pool.jsonl + *_queries.jsonl) in {s.data_dir}.")
    st.stop()
left, right = st.columns([3, 1])
with left:
    task_name = st.selectbox("Task", tasks, index=tasks.index("howdy") if "howdy" in tasks else 0, key="eval_task",
                             help="A bundled pool with labels and its query set.")
    c1, c2 = st.columns(2)
    max_pool = c1.number_input("Pool rows (0 = all)", 0, None, 200, key="eval_pool",
                               help="Evaluate on the first rows only: the model reads every one of them.")
    max_queries = c2.number_input("Queries (0 = all)", 0, None, 10, key="eval_queries")
    methods = st.multiselect("Methods", EVALUATE_METHODS, default=[RISE, RISE_RH, RISE_GH, BM25], key="eval_methods",
                             help="\n\n".join(f"**{m}**: {get(m).description}" for m in EVALUATE_METHODS))
    with ui.friendly("check the settings", stop=True):
        config = widgets.config_form("eval_")
with right:
    options = widgets.score_controls(config,
                                     hs_note="hidden_channel is off in the RISE hyperparameters, so λ_hs stays 0.")
st.caption(f"Model: `{s.model_id}`. The Stop button at the top right cancels a run at its next stage.")
if st.button("Run the evaluation", type="primary", key="evaluate"):
    with ui.friendly("run the evaluation"):
        task = evaluation_task(s.data_dir, task_name, int(max_pool), int(max_queries))
        lm = resources.load_lm(s.model_id) if any(get(m).needs_lm for m in methods) else None
        with resources.heavy_work("evaluation", task_name, task_name), \
                st.status(f"Evaluating on {len(task.pool)} pool rows and {len(task.queries)} queries…",
                          expanded=True) as status:
            report = evaluate(task, lm, methods, config, options, progress=status.write)
            status.update(label="Evaluation done", state="complete", expanded=False)
        st.session_state["eval_report"] = report

report = st.session_state.get("eval_report")
if report is None:
    st.stop()
with ui.friendly("show the evaluation"):
    m = report.meta
    st.subheader(f"{plain.md(report.task)}: {m['n_pool']} pool rows ({m['n_positive']} positives), "
                 f"{m['n_queries']} queries")
    auprc = report.wide("auPRC")
    st.plotly_chart(px.bar(auprc.reset_index(), x="method", y="unified", height=300,
                           title="Unified auPRC (mean over K; higher is better)"), key="eval_chart")
    for metric in ("auPRC", "auROC", "precision@K"):
        st.markdown(f"**{metric}**")
        st.dataframe(report.wide(metric).round(4))
    st.markdown("**AP over the full ranking, and costs**")
    ap = report.table.groupby("method")["AP"].first()
    st.dataframe(report.costs.assign(AP=ap).round(4))
    st.download_button("Download the report (Markdown)", report.markdown(), f"{report.task}_evaluation.md",
                       "text/markdown", key="eval_download")
    if report.per_query is not None:
        per_query = report.per_query_wide("auPRC")
        st.markdown(f"**auPRC@{per_query.attrs['K']} of each query**")
        st.caption("The queries each method loses, which the means above hide (rows: the query set's ids).")
        st.dataframe(per_query.reset_index(level="query", drop=True).round(4), key="eval_per_query")
        st.download_button("Download every query's values (CSV)", table_bytes(report.per_query, "csv"),
                           f"{report.task}_per_query.csv", "text/csv", key="eval_per_query_download")
