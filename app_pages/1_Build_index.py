"""Build index: pick a model and a pool (bundled or uploaded), set the RISE hyperparameters, build with progress."""

from __future__ import annotations

import io
from pathlib import Path

import streamlit as st

import explorer_ui as ui
from rise_core.ingest import read_pool, read_table
from rise_core.ui_support import (
    BuildJob,
    bundled_pools,
    estimate_index_bytes,
    format_bytes,
    head_pool,
    index_file_name,
    mean_text_bytes,
    slug,
)

s = ui.page("Build index", ":material/construction:")
st.text_input("Model", value=s.model_id, key="build_model",
              help="'smollm2-135m-instruct' (the embedded default), a local checkpoint directory, or a hub id.")
source = st.radio("Pool", ["Bundled pool", "Upload a file"], horizontal=True, key="build_source")
fields = None
with ui.friendly("read the pool", stop=True):
    if source == "Bundled pool":
        pools = bundled_pools(s.data_dir)
        if not pools:
            st.warning(f"No bundled pool (*_pool.jsonl) in {s.data_dir}; upload a file instead.")
            st.stop()
        pool_name = st.selectbox("Bundled pool", list(pools), key="build_pool")
        data, fmt = pools[pool_name], "jsonl"
        df = read_table(data, fmt)
    else:
        up = st.file_uploader("JSONL, CSV or Parquet", type=["jsonl", "json", "csv", "parquet"], key="build_file")
        if up is None:
            st.stop()
        pool_name, fmt, data = Path(up.name).stem, up.name.rsplit(".", 1)[-1].lower(), up.getvalue()
        df = read_table(io.BytesIO(data), fmt)
        fields = ui.field_mapping(df)
    limit = int(st.number_input("Rows to use (0 = all)", 0, None, 0, key="build_limit",
                                help="Index only the first rows, e.g. to try settings on a small slice first."))
    n_rows = min(len(df), limit) if limit else len(df)
    st.caption(f"{len(df)} rows, columns: {', '.join(map(str, df.columns))}. Preview:")
    st.dataframe(df.head(5), hide_index=True)

with ui.friendly("check the settings", stop=True):
    config = ui.config_form()
    default_name = index_file_name(st.session_state["build_model"], pool_name)
    name = st.text_input("Index name", key="build_name", placeholder=default_name).strip()
    target = s.index_dir / (f"{slug(Path(name).stem)}.duckdb" if name else default_name)
    size = estimate_index_bytes(config, n_rows, mean_text_bytes(df.head(1000), list(df.columns)))
    resume = " It exists: building again resumes it and adds the rows it does not have yet." if target.exists() else ""
    st.info(f"Estimated index size: **{format_bytes(size)}** ({n_rows} samples × {config.k_h}·({config.k_r}+"
            f"{config.k_g}) fp16 features + text) → `{target}`.{resume}")
    overwrite = st.checkbox("Start from scratch (delete the existing index first)", key="build_overwrite")

job = ui.registry().job(target)
if st.button("Build the index", type="primary", key="build", disabled=bool(job and job.running)):
    with ui.friendly("start the build"):
        lm = ui.load_lm(st.session_state["build_model"].strip())
        pool = head_pool(read_pool(io.BytesIO(data) if isinstance(data, bytes) else data, fields, fmt), limit)
        target.parent.mkdir(parents=True, exist_ok=True)
        ui.start_build(BuildJob(target, pool, lm, config, overwrite=overwrite, label=pool_name))
        st.session_state["build_path"] = str(target)
ui.show_build(st.session_state.get("build_path"))
