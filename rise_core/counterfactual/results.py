"""A check's results: each finished arm's row, the leave-k-out curve, the files written (`results.csv`,
`results.json`, `curve.html`) and read back, the past runs, the headline and the before/after table."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..csv_out import write_csv
from ..errors import InputDataError
from ..methods import RISE
from .config import (
    ARMS_DIR,
    CURVE_HTML,
    FORMAT,
    FULL,
    GENERATIONS,
    ORIGINAL,
    PLAN_FILE,
    RANDOM,
    RESULTS_CSV,
    RESULTS_JSON,
    Arm,
    CounterfactualPlan,
    read_json,
    write_json,
)
from .plan import load_plan


@dataclass(eq=False)
class CounterfactualResult:
    """A check's results so far: one row per finished arm, the leave-k-out curve, every arm's generations."""

    out_dir: Path
    plan: CounterfactualPlan
    arms: pd.DataFrame
    """one row per finished arm: method, k, seed, rows removed (and how many were positives), the retrain's pool
    hash and size, adapter digest, behaviour rates, time."""
    curve: pd.DataFrame
    """method x k: behaviour rates (random: mean, min and max over the seeds), training time."""
    generations: dict[str, list[dict[str, Any]]]
    stopped: bool = False

    @property
    def complete(self) -> bool:
        return len(self.arms) == len(self.plan.arms)

    def headline(self, method: str = RISE, k: int | None = None, behaviour: str = "behaviour") -> str | None:
        return headline(self, method, k, behaviour)


# --- each arm's row ---------------------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def _rate(generations: list[dict[str, Any]], kind: str) -> float | None:
    values = [g["shows"] for g in generations if g["kind"] == kind]
    return float(np.mean(values)) if values else None


def arm_row(arm: Arm, plan: CounterfactualPlan, manifest: dict[str, Any], generations: list[dict[str, Any]],
            labels: dict[str, Any] | None, n_train: int, wall_s: float) -> dict[str, Any]:
    """A finished arm's row of `results.csv` (`ARM_COLUMNS`): what it removed, its retrain (`manifest`: the adapter's;
    empty for the original model), and the behaviour rates of its judged `generations`."""
    original = plan.original
    row = {"arm": arm.arm_id, "method": arm.method, "k": arm.k, "seed": arm.seed, "n_removed": len(arm.removed),
           "n_positive_removed": (sum(1 for r in arm.removed if labels.get(r) == 1) if labels is not None else None),
           "n_train": n_train, "pool_hash": manifest.get("pool_hash", original["pool_hash"]),
           "adapter_digest": manifest.get("adapter_digest", original["adapter_digest"]),
           "triggered_rate": _rate(generations, "triggered"), "clean_behaviour_rate": _rate(generations, "clean"),
           "n_heldout": len(plan.config.heldout_prompts),
           "train_s": manifest.get("train_s", original.get("train_s")),
           "steps": manifest.get("steps"), "final_loss": manifest.get("final_loss"), "wall_s": round(wall_s, 2),
           "reproduces_original": (manifest.get("adapter_digest") == original["adapter_digest"]
                                   if arm.method == FULL else None),
           "removed": list(arm.removed)}
    return {k: _jsonable(v) for k, v in row.items()}


ARM_COLUMNS = ["arm", "method", "k", "seed", "n_removed", "n_positive_removed", "n_train", "pool_hash",
               "adapter_digest", "triggered_rate", "clean_behaviour_rate", "n_heldout", "train_s", "steps",
               "final_loss", "wall_s", "reproduces_original", "removed"]


# --- the curve and the files ------------------------------------------------------------------------------------------


def curve_table(arms: pd.DataFrame) -> pd.DataFrame:
    """The leave-k-out curve: per method and k, the behaviour rates after removing the top k (random: mean, min and
    max over the seeds); k = 0 is the original model on every method's line."""
    if arms.empty:
        return pd.DataFrame(columns=["method", "k", "triggered_rate", "triggered_min", "triggered_max",
                                     "clean_behaviour_rate", "n_positive_removed", "n_arms", "train_s"])
    original = arms[arms["method"] == ORIGINAL]
    rows = []
    methods = [m for m in dict.fromkeys(arms["method"]) if m not in (ORIGINAL, FULL)]
    for method in methods:
        part = arms[arms["method"] == method]
        if len(original):
            part = pd.concat([original.assign(method=method), part], ignore_index=True)
        for k, group in part.groupby("k", sort=True):
            rates = group["triggered_rate"].astype(float)
            rows.append({"method": method, "k": int(k), "triggered_rate": rates.mean(),
                         "triggered_min": rates.min(), "triggered_max": rates.max(),
                         "clean_behaviour_rate": group["clean_behaviour_rate"].astype(float).mean(),
                         "n_positive_removed": pd.to_numeric(group["n_positive_removed"]).mean(),
                         "n_arms": len(group), "train_s": pd.to_numeric(group["train_s"]).mean() if k else None})
    return pd.DataFrame(rows)


def collect_result(out: Path, plan: CounterfactualPlan, done: dict[str, dict[str, Any]], stopped: bool
                   ) -> CounterfactualResult:
    """The result of the arms `done` so far (arm id -> its row), with their generations read from the run directory."""
    rows = [done[a.arm_id] for a in plan.arms if a.arm_id in done]
    arms = pd.DataFrame(rows, columns=ARM_COLUMNS)
    generations = {}
    for a in plan.arms:
        path = out / ARMS_DIR / a.arm_id / GENERATIONS
        if a.arm_id in done and path.is_file():
            generations[a.arm_id] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                                     if line.strip()]
    return CounterfactualResult(out, plan, arms, curve_table(arms), generations, stopped)


def write_results(result: CounterfactualResult) -> None:
    """`results.csv` (one row per finished arm), `results.json` (plan, arms, curve, generations, headline) and
    `curve.html` (the leave-k-out curve; plotly.js from its CDN) in the run directory."""
    out = result.out_dir
    table = result.arms.copy()
    table["removed"] = [" ".join(r) for r in table["removed"]]
    write_csv(table, out / RESULTS_CSV)
    write_json(out / RESULTS_JSON, {
        "format": FORMAT, "complete": result.complete, "stopped": result.stopped,
        "headline": result.headline() if RISE in result.plan.config.methods else None,
        "plan": result.plan.to_dict(), "arms": json.loads(result.arms.to_json(orient="records")),
        "curve": json.loads(result.curve.to_json(orient="records")), "generations": result.generations})
    if len(result.curve):
        (out / CURVE_HTML).write_text(chart_page(curve_chart(result)), encoding="utf-8")


# --- reading results --------------------------------------------------------------------------------------------------


def load_result(out_dir: str | Path) -> CounterfactualResult | None:
    """The results written by a check (finished or not) in `out_dir`, or None when it has none yet."""
    out = Path(out_dir)
    data = read_json(out / RESULTS_JSON)
    if data is None:
        return None
    plan = CounterfactualPlan.from_dict(data["plan"])
    arms = pd.DataFrame(data.get("arms", []), columns=ARM_COLUMNS)
    return CounterfactualResult(out, plan, arms, curve_table(arms), data.get("generations", {}),
                                bool(data.get("stopped")))


def list_runs(root: str | Path) -> list[dict[str, Any]]:
    """The checks under `root` (one run directory each), newest first: when, queries, ks, methods, status."""
    runs = []
    root = Path(root)
    if not root.is_dir():
        return runs
    for d in sorted(p for p in root.iterdir() if (p / PLAN_FILE).is_file()):
        try:
            plan = load_plan(d)
        except InputDataError:
            continue
        assert plan is not None
        result = load_result(d)
        n_done = 0 if result is None else len(result.arms)
        config = plan.config
        query = next((q.get("prompt") or q.get("text") or "" for q in plan.queries or plan.request["queries"]), "")
        runs.append({"run": d.name, "path": str(d), "created": plan.created, "query": query,
                     "n_queries": len(plan.request["queries"]), "ks": ", ".join(map(str, config.ks)),
                     "methods": ", ".join([*config.methods, *([RANDOM] if config.seeds else [])]),
                     "arms done": f"{n_done}/{len(plan.arms)}",
                     "status": "complete" if n_done == len(plan.arms) else "stopped" if n_done or
                     (d / ARMS_DIR).is_dir() else "planned",
                     "headline": result.headline() if result is not None else None})
    return sorted(runs, key=lambda r: r["created"], reverse=True)


def headline(result: CounterfactualResult, method: str = RISE, k: int | None = None,
             behaviour: str = "behaviour") -> str | None:
    """'Removing the k examples RISE ranked highest takes the <behaviour> rate from A% to B%; removing k random
    examples leaves C% (mean of n seeds).' for the largest k (or `k`) with results; None when they are missing."""
    curve = result.curve
    if curve.empty or not (curve["method"] == method).any():
        return None
    mine = curve[(curve["method"] == method) & (curve["k"] > 0)]
    if k is None:
        if mine.empty:
            return None
        k = int(mine["k"].max())
    before = curve[(curve["method"] == method) & (curve["k"] == 0)]
    after = mine[mine["k"] == k]
    if before.empty or after.empty:
        return None
    text = (f"Removing the {k} examples {method} ranked highest takes the {behaviour} rate from "
            f"{before['triggered_rate'].iloc[0]:.0%} to {after['triggered_rate'].iloc[0]:.0%}")
    rand = curve[(curve["method"] == RANDOM) & (curve["k"] == k)]
    if len(rand):
        n = int(rand["n_arms"].iloc[0])
        text += (f"; removing {k} random examples leaves {rand['triggered_rate'].iloc[0]:.0%}"
                 + (f" (mean of {n} seeds)" if n > 1 else ""))
    return text + "."


def _values(column: pd.Series) -> list[Any]:
    """A column as JSON values: NaN (a rate with no answers) as None, a gap in the line."""
    return [None if isinstance(v, float) and math.isnan(v) else v for v in column.tolist()]


def curve_chart(result: CounterfactualResult, rate: str = "triggered_rate") -> dict[str, Any]:
    """The leave-k-out curve as a plotly.js figure (plain JSON: `data` and `layout`): the behaviour rate against k,
    one line per method (random: the mean over the seeds, with their range as error bars). `curve.html` draws it;
    the explorer's `counterfactual_charts.curve_figure` makes it a plotly figure."""
    curve = result.curve
    traces = []
    for method in dict.fromkeys(curve["method"]):
        part = curve[curve["method"] == method].sort_values("k")
        trace: dict[str, Any] = {"type": "scatter", "x": _values(part["k"]), "y": _values(part[rate]),
                                 "mode": "lines+markers", "name": method}
        if method == RANDOM and rate == "triggered_rate":
            trace["error_y"] = {"type": "data", "symmetric": False,
                                "array": _values(part["triggered_max"] - part["triggered_rate"]),
                                "arrayminus": _values(part["triggered_rate"] - part["triggered_min"])}
        if method == RANDOM:
            trace["line"] = {"dash": "dot"}
        traces.append(trace)
    what = "triggered" if rate == "triggered_rate" else "clean"
    layout = {"height": 320, "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
              "title": {"text": f"Behaviour rate on {what} held-out prompts after retraining without the top k"},
              "xaxis": {"title": {"text": "k (training examples removed)"}},
              "yaxis": {"range": [-0.02, 1.02], "title": {"text": "behaviour rate"}, "tickformat": ".0%"}}
    return {"data": traces, "layout": layout}


# plotly.js from its CDN, pinned with its hash (the version plotly 7.1 writes)
PLOTLY_JS = ('<script charset="utf-8" src="https://cdn.plot.ly/plotly-4.1.1.min.js" '
             'integrity="sha256-O24V1F27f8pb0glCkelh3cVHLNiHAJ5gCaVtq2aNch8=" crossorigin="anonymous"></script>')


def chart_page(chart: dict[str, Any]) -> str:
    """A standalone HTML page drawing a plotly.js figure (`curve_chart`); the JSON is escaped for a script tag."""
    data = (json.dumps(chart, allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))
    return ('<!doctype html>\n<html>\n<head><meta charset="utf-8" /><title>Leave-k-out curve</title></head>\n<body>\n'
            f'<div id="chart"></div>\n{PLOTLY_JS}\n<script>const chart = {data};\n'
            'Plotly.newPlot("chart", chart.data, chart.layout, {"responsive": true});</script>\n</body>\n</html>\n')


def side_by_side(result: CounterfactualResult, arm_id: str, kind: str = "triggered") -> pd.DataFrame:
    """The held-out prompts of `kind` with the original model's answer and `arm_id`'s, and whether each shows the
    behaviour: the before/after view."""
    before = [g for g in result.generations.get("original", []) if g["kind"] == kind]
    after = [g for g in result.generations.get(arm_id, []) if g["kind"] == kind]
    rows = [{"prompt": b["prompt"], "original": b["generation"], "original shows it": b["shows"],
             "retrained": a["generation"], "retrained shows it": a["shows"]}
            for b, a in zip(before, after, strict=False)]
    return pd.DataFrame(rows, columns=["prompt", "original", "original shows it", "retrained", "retrained shows it"])
