"""Build index: pick a model and a pool (bundled or uploaded), set the RISE hyperparameters, build with progress."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from explorer import auth, plain, resources, ui, widgets
from explorer.build_plan import (
    estimate_index_bytes,
    feature_summary,
    head_pool,
    index_file_name,
    mean_text_bytes,
    model_hidden_size,
    plan_index_write,
    slug,
)
from explorer.finetune_ui import finetune_section
from explorer.jobs import BuildJob
from explorer.paths import check_model_spec
from explorer.uploads import UPLOAD_TYPES, PoolFile
from rise_core.bundled import pool_paths
from rise_core.units import format_bytes

s = ui.page("build")


def existing_index(path: Path):  # noqa: ANN201 - (the manifest or None, why it does not open or "")
    """The manifest of the index at `path` (None when there is none), or why it cannot be read: then it is never
    appended to, and replacing it asks and keeps the file (`plan_index_write`)."""
    job = resources.registry().job(path)
    if not path.exists() or (job is not None and job.running):  # a build of this server's: its own line says so
        return None, ""
    try:
        return resources.open_index(path).manifest, ""
    except Exception as exc:  # noqa: BLE001 - whatever keeps it from opening is what the page says
        return None, str(exc) or type(exc).__name__


st.text_input("Model", value=s.model_id, key="build_model",
              help="'smollm2-135m-instruct' (the embedded default), a local checkpoint directory, or a hub id.")
source = st.radio("Pool", ["Bundled pool", "Upload a file"], horizontal=True, key="build_source")
fields = None
with ui.friendly("read the pool", stop=True):
    if source == "Bundled pool":
        pools = pool_paths(s.data_dir)
        if not pools:
            st.warning(f"No bundled pool (*_pool.jsonl) in {s.data_dir}; upload a file instead.")
            st.stop()
        pool_name = st.selectbox("Bundled pool", list(pools), key="build_pool")
        pool_file = PoolFile.bundled(pool_name, pools[pool_name])
        df = pool_file.table()
    else:
        up = st.file_uploader("JSONL, CSV or Parquet", type=UPLOAD_TYPES, key="build_file")
        if up is None:
            st.stop()
        pool_file = PoolFile.from_upload(up)
        df = pool_file.table()
        fields = widgets.field_mapping(df)
    limit = int(st.number_input("Rows to use (0 = all)", 0, None, 0, key="build_limit",
                                help="Index only the first rows, e.g. to try settings on a small slice first."))
    n_rows = min(len(df), limit) if limit else len(df)
    st.caption(f"{len(df)} rows, columns: {', '.join(map(plain.md, df.columns))}. Preview:")
    st.dataframe(df.head(5), hide_index=True)

with ui.friendly("check the model", stop=True):  # a local path must lie in the app's own folders
    model_id = check_model_spec(st.session_state["build_model"], s.model_id, s.index_dir, s.data_dir)

with ui.friendly("read the pool for fine-tuning"):
    finetune_section(model_id, lambda: head_pool(pool_file.pool(fields), limit).samples,
                     pool_file.name, s.index_dir)

with ui.friendly("check the settings", stop=True):
    config = widgets.config_form()
    default_name = index_file_name(model_id, pool_file.name)
    name = st.text_input("Index name", key="build_name", placeholder=default_name).strip()
    target = s.index_dir / (f"{slug(Path(name).stem)}.duckdb" if name else default_name)
    hidden_size = model_hidden_size(model_id)
    size = estimate_index_bytes(config, n_rows, mean_text_bytes(df.head(1000), list(df.columns)), hidden_size)
    st.info(f"Estimated index size: **{format_bytes(size)}** ({n_rows} samples × "
            f"{feature_summary(config, hidden_size)} fp16 features + text) → {plain.code(target.name)}.")
    overwrite = st.checkbox("Start from scratch (the existing index is kept under a timestamped name)",
                            key="build_overwrite", disabled=not target.exists())

user = auth.current_user()
existing, unreadable = existing_index(target)
write = plan_index_write(target.name, exists=target.exists(), owner=existing.owner if existing else "",
                         sources=existing.sources if existing else [],
                         n_samples=existing.n_samples if existing else None, user=user.name, can_edit=user.can_edit,
                         replace=overwrite, source=pool_file.name, unreadable=unreadable)
if write.action == "append" and not write.refusal:
    st.caption(f"{plain.md(target.name)} exists: building again resumes it and adds the rows it does not have yet.")
confirmed = True
if write.refusal:
    st.warning(plain.md(write.refusal), icon=":material/lock:")
elif write.question:
    confirmed = st.checkbox(plain.md(write.question), key=f"build_confirm_{write.action}")
job = resources.registry().job(target)
if st.button("Build the index", type="primary", key="build",
             disabled=bool(job and job.running) or bool(write.refusal) or not confirmed):
    with ui.friendly("start the build"):
        lm = resources.load_lm(model_id)
        pool = head_pool(pool_file.pool(fields), limit)
        target.parent.mkdir(parents=True, exist_ok=True)
        picked = widgets.config_preset()  # remembered by the index, as `rise build --preset`
        resources.start_build(BuildJob(target, pool, lm, config, replace=write.action == "replace",
                                       label=pool_file.name, built_by=user.name,
                                       preset=picked if picked != "default" else None,
                                       base_model=resources.base_model_for(lm)))
        st.session_state["build_path"] = str(target)
built = widgets.show_build(st.session_state.get("build_path"))
if built is not None and built.status == "done" and st.button(
        "Attribute with this index", key="build_open", icon=ui.PAGES["attribute"].icon,
        help="Opens the Attribute page with the index just built picked in the sidebar."):
    st.session_state["index_path"] = str(built.index_path)  # the sidebar's picker (not drawn on this page)
    st.switch_page(ui.PAGES["attribute"].path)
