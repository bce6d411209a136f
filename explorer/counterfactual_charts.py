"""The leave-k-out check's plotly figure: the curve `rise_core.counterfactual.curve_chart` describes (the same one
`curve.html` draws), as a figure for `st.plotly_chart`. Tested without Streamlit."""

from __future__ import annotations

import plotly.graph_objects as go

from rise_core.counterfactual import CounterfactualResult, curve_chart


def curve_figure(result: CounterfactualResult, rate: str = "triggered_rate") -> go.Figure:
    """The behaviour rate against k, one line per method (random: the mean over the seeds, with their range as error
    bars); `rate`: 'triggered_rate' or 'clean_behaviour_rate'."""
    return go.Figure(curve_chart(result, rate))
