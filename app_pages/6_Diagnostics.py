"""Diagnostics: the paper's three observations on the selected index's model (layer gradient energy, hidden-state
discriminativeness, sparse active tokens), RH vs GH rankings and sketch fidelity, as charts. Results are cached
beside the index (`<index>.diagnostics/`): shown again on load, and a run with the same inputs loads them."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from explorer import diagnostics_ui as diag
from explorer import plain, resources, ui, widgets
from rise_core.diagnostics import default_output_dir

ui.page("diagnostics")
path = widgets.index_picker()
if path is None:
    st.stop()
out_dir, shared = diag.output_dirs(path, default_output_dir(path))
where = (plain.code(shared.name + "/") if out_dir == shared else
         f"{plain.code(str(out_dir.relative_to(shared.parent)) + '/')} (yours: only whoever built the index writes "
         f"{plain.code(shared.name + '/')}, whose results show where you have none)")
st.caption(f"The paper's observations, measured on this index's model with its RISE config and sketches. Results are "
           f"cached in {where} beside the index: a run with the same inputs loads them instead of computing.")

choice = diag.run_form()
if st.button("Run diagnostics", type="primary", key="diag_run", icon=":material/play_arrow:"):
    with ui.friendly("run the diagnostics"), resources.heavy_work("diagnostics", Path(path).name, path):
        diag.run(path, out_dir, choice)
diag.show_last_outcome(path)

cached = diag.load(path, out_dir, shared)
diag.observation_sections(cached)
diag.rhgh_section(path, cached, choice.options)
diag.fidelity_section(cached)
