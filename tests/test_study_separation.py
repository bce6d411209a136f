"""The feedback study's test of whether the tune sets separate a variant from the served one
(`studies.behaviour_rule.separation`), on frames whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studies.behaviour_rule import separation


def _frame(values: dict[str, dict[str, list[float]]], split: str = "tune") -> pd.DataFrame:
    """variant -> set -> per-query auPRC, the same at every mark count."""
    rows = [{"task": task, "split": split, "variant": variant, "marks": m, "query": q, "auPRC": v}
            for variant, sets in values.items() for task, qs in sets.items() for q, v in enumerate(qs)
            for m in (0, 1, 3, 5)]
    return pd.DataFrame(rows)


def test_a_variant_better_on_every_query_separates_and_a_symmetric_one_does_not():
    served = {"a": [0.5, 0.6, 0.7, 0.8], "b": [0.9, 0.4]}
    frame = _frame({"served": served,
                    "better": {t: [v + 0.1 for v in qs] for t, qs in served.items()},
                    "mixed": {"a": [0.6, 0.5, 0.8, 0.7], "b": [1.0, 0.3]},
                    "set b only": {"a": served["a"], "b": [1.0, 0.6]}})
    out = separation(frame, "served", n_boot=500).set_index("variant")
    assert list(out.index) == ["better", "set b only", "mixed"]  # best first; the reference is left out
    assert out.loc["better", ["diff", "lo", "hi"]].tolist() == pytest.approx([0.1, 0.1, 0.1])
    assert out.loc["better", "p_le0"] == 0.0
    # +0.1 and -0.1 in each set: mean 0, an interval around it
    assert out.loc["mixed", "diff"] == pytest.approx(0.0, abs=1e-12)
    assert out.loc["mixed", "lo"] < 0 < out.loc["mixed", "hi"]
    # each set weighs the same: +0.15 on set b's two queries, 0 on set a's four, is +0.075
    assert out.loc["set b only", "diff"] == pytest.approx(0.075)


def test_only_the_tune_queries_and_the_asked_marks_count():
    tune = _frame({"served": {"a": [0.5, 0.5]}, "v": {"a": [0.7, 0.7]}})
    report = _frame({"served": {"a": [0.5, 0.5]}, "v": {"a": [0.0, 0.0]}}, split="report")
    frame = pd.concat([tune, report], ignore_index=True)
    frame.loc[(frame["variant"] == "v") & (frame["marks"] == 0), "auPRC"] = 0.0  # 0 marks: not asked
    out = separation(frame, "served", n_boot=100)
    assert out["diff"].tolist() == pytest.approx([0.2]) and np.isclose(out["lo"].iloc[0], 0.2)


def test_a_feedback_csv_in_a_missing_folder_is_said_before_any_work(tmp_path, monkeypatch):
    """The feedback stage runs for tens of minutes and writes its CSV last: a folder that is not there is an error
    at the start, before any model or cache is read."""
    from studies import behaviour_rule

    def no_work(*args, **kwargs):
        raise AssertionError("the stage started")

    monkeypatch.setattr(behaviour_rule, "evaluate_feedback", no_work)
    monkeypatch.setattr(behaviour_rule, "load_model", no_work)
    monkeypatch.setattr("sys.argv", ["behaviour_rule", "--stage", "feedback", "--feedback-rule", "x", "--tasks",
                                     "brainrot", "--out", str(tmp_path / "br"),
                                     "--feedback-csv", str(tmp_path / "nowhere" / "f.csv")])
    with pytest.raises(SystemExit, match="--feedback-csv .*f.csv: no folder .*nowhere"):
        behaviour_rule.main()
    assert not (tmp_path / "br").exists()
