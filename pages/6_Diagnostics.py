"""Diagnostics: layer gradient energy and sparse-support statistics (placeholder until they land)."""

from __future__ import annotations

import explorer_ui as ui

ui.page("Diagnostics", ":material/monitor_heart:")
ui.not_available_yet(
    "Layer gradient energy (how much of the gradient the LM head carries) and sparse-support diagnostics "
    "(support sizes, residual mass kept at each rho_cum).",
    "the Attribute page shows which tokens carry each hit's score, per channel.",
)
