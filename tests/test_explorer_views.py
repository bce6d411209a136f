"""The explorer's non-Streamlit modules: escaping, ranking comparison, sizes, exports, generation, demo data, build
jobs, uploads and the Diagnostics page's tables and figures."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from rise_core.bundled import pool_paths as bundled_pools
from rise_core.bundled import queries_for_pool
from rise_core.config import RiseConfig
from rise_core.errors import InputDataError
from rise_core.explain import TokenAttribution
from rise_core.metrics import binary_labels, spearman
from rise_core.ranking import Ranking
from rise_core.store import BuildReport, sample_from_row
from rise_core.units import format_bytes, format_seconds, one_line

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the explorer package lives beside app.py, where `streamlit run` finds it
    sys.path.insert(0, str(ROOT))

from explorer.build_plan import INDEX_BASE_BYTES, estimate_index_bytes, head_pool, index_file_name  # noqa: E402
from explorer.jobs import BuildJob  # noqa: E402
from explorer.plain import highlight_html  # noqa: E402
from explorer.uploads import parse_typed_queries  # noqa: E402
from explorer.views import (  # noqa: E402
    channel_values,
    heat_scale,
    overlap_at_k,
    ranking_frame,
    ranking_table,
    results_table,
    table_bytes,
    top_list,
)


def test_highlight_escapes_every_token():
    tokens = ["<script>", "alert(1)", "</script>", " <b>bold</b>", ' "q" & ', "\n"]
    out = highlight_html(tokens, [1.0, -0.5, 0.0, 0.2, float("nan"), 0.1], n_prompt_tokens=2)
    assert "&lt;script&gt;" in out and "&lt;/script&gt;" in out and "&lt;b&gt;bold&lt;/b&gt;" in out
    assert "<script>" not in out and "<b>" not in out
    assert "&quot;q&quot; &amp;" in out
    assert out.count("<span") == len(tokens)
    assert out.count("underline dotted") == 2  # prompt tokens
    assert "rgba(255,140,0,1.00)" in out  # the largest positive token gets full colour
    assert "rgba(30,120,255,0.50)" in out  # negative contributions are blue
    assert "<br>" in out  # a newline token breaks the line


def test_highlight_checks_lengths_and_handles_all_zero():
    with pytest.raises(InputDataError):
        highlight_html(["a", "b"], [1.0])
    assert "rgba(255,140,0,0.00)" in highlight_html(["a"], [0.0])


def test_token_views_of_a_hit_share_one_colour_scale():
    """A channel the weights leave near 0 is pale on the scale shared by every channel of the query and the example
    (the largest |contribution| anywhere), where on its own scale its noise was at full colour."""
    query = TokenAttribution(tokens=["a", "b"], rh=[0.2, -0.05], gh=[0.1, 0.0], n_prompt_tokens=0, hs=[1e-7, -2e-7])
    example = TokenAttribution(tokens=["c"], rh=[0.4], gh=[-0.1], n_prompt_tokens=0, hs=[3e-7])
    assert heat_scale([query, example]) == pytest.approx(0.4)
    assert heat_scale([TokenAttribution(tokens=["a"], rh=[0.0], gh=[0.0], n_prompt_tokens=0)]) is None

    def alphas(html: str) -> list[float]:
        return [float(a) for a in re.findall(r"rgba\([0-9,]+,([0-9.]+)\)", html)]

    assert alphas(highlight_html(query.tokens, query.hs)) == [0.5, 1.0]  # its own scale: noise at full colour
    assert alphas(highlight_html(query.tokens, query.hs, scale=heat_scale([query, example]))) == [0.0, 0.0]
    assert alphas(highlight_html(query.tokens, query.rh, scale=0.4)) == [0.5, 0.12]


def test_channel_values():
    attr = TokenAttribution(tokens=["a", "b"], rh=[1.0, 2.0], gh=[0.5, -1.0], n_prompt_tokens=0)
    assert channel_values(attr, "RH") == [1.0, 2.0]
    assert channel_values(attr, "GH") == [0.5, -1.0]
    assert channel_values(attr, "total") == [1.5, 1.0]
    with pytest.raises(InputDataError, match="RH"):
        channel_values(attr, "xx")


def test_overlap_at_k():
    assert overlap_at_k(["a", "b", "c"], ["c", "b", "a"], 3) == 1.0
    assert overlap_at_k(["a", "b", "c", "d"], ["b", "x", "a", "y"], 2) == 0.5
    assert overlap_at_k(["a"], ["b"], 5) == 0.0
    with pytest.raises(InputDataError):
        overlap_at_k(["a"], ["a"], 0)


def test_spearman_matches_pandas():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=50), rng.normal(size=50)
    b[:5] = b[5]  # ties
    expected = pd.Series(a).rank().corr(pd.Series(b).rank())
    assert spearman(a, b) == pytest.approx(expected)
    assert spearman(a, a * 3 + 1) == pytest.approx(1.0)
    assert spearman(a, -a) == pytest.approx(-1.0)
    assert np.isnan(spearman([1.0], [2.0]))
    with pytest.raises(InputDataError):
        spearman([1, 2], [1, 2, 3])


@pytest.mark.parametrize(
    ("values", "expected"),
    [([True, False], [1, 0]), ([1, 0, 1], [1, 0, 1]), (["yes", "No"], [1, 0]), ([1.0, 0.0], [1, 0]),
     (["cat", "dog"], None), ([1, None], None), (None, None), ([2, 0], None)],
)
def test_binary_labels(values, expected):
    out = binary_labels(values)
    assert (out is None) if expected is None else out.tolist() == expected


def test_sizes_and_names():
    cfg = RiseConfig(k_r=16, k_h=8, k_g=28)
    assert estimate_index_bytes(cfg, 100, 50) == INDEX_BASE_BYTES + 100 * (2 * 8 * (16 + 28) + 50 + 96)
    assert format_bytes(512) == "512 B" and format_bytes(2048) == "2.0 KB" and format_bytes(3 * 1024**3) == "3.0 GB"
    assert format_seconds(42) == "42 s" and format_seconds(125) == "2 min 05 s" and format_seconds(None) == "?"
    assert one_line("a\n b\t\tc", 10) == "a b c" and one_line("abcdef", 4) == "abc…" and one_line(None, 5) == ""
    assert one_line(float("nan"), 5) == "" and one_line(12345, 3) == "12…"
    assert index_file_name("/tmp/my model", "howdy") == "howdy__my-model.duckdb"
    assert index_file_name("HuggingFaceTB/SmolLM2-135M", "a b/c") == "a-b-c__SmolLM2-135M.duckdb"


def test_bundled_pools_and_their_queries(tmp_path):
    (tmp_path / "b_pool.jsonl").write_text("{}\n")
    (tmp_path / "a_pool.jsonl").write_text("{}\n")
    (tmp_path / "a_queries.jsonl").write_text("{}\n")
    (tmp_path / "notes.jsonl").write_text("{}\n")
    pools = bundled_pools(tmp_path)
    assert list(pools) == ["a", "b"]
    assert queries_for_pool(pools["a"]) == tmp_path / "a_queries.jsonl"
    assert queries_for_pool(pools["b"]) is None
    assert bundled_pools(tmp_path / "missing") == {}


def test_rows_to_samples_and_typed_queries():
    pair = sample_from_row({"id": "1", "prompt": "Q?", "completion": "A.", "text": float("nan")})
    assert pair.is_pair and pair.full_text == "Q?\nA."
    plain = sample_from_row(pd.Series({"id": "2", "text": "hello", "prompt": None, "completion": None}))
    assert plain.text == "hello"
    with pytest.raises(InputDataError):
        sample_from_row({"id": "3"})
    qs = parse_typed_queries("first query\nstill first\n\n  \nsecond\n")
    assert [q.text for q in qs] == ["first query\nstill first", "second"]
    with pytest.raises(InputDataError):
        parse_typed_queries("  \n\n ")


def test_table_bytes_round_trip():
    df = pd.DataFrame({"id": ["a", "b"], "score": [0.5, -1.0], "text": ["x, \"y\"", "<z>"]})
    rows = [json.loads(line) for line in table_bytes(df, "jsonl").decode().splitlines()]
    assert rows == df.to_dict("records")
    from io import BytesIO

    assert pd.read_csv(BytesIO(table_bytes(df, "csv"))).equals(df)
    with pytest.raises(InputDataError):
        table_bytes(df, "xml")


def test_csv_download_keeps_formulas_as_text():
    """A pool text that a spreadsheet would run (=, +, -, @, tab, CR first) starts with an apostrophe in the CSV; the
    JSONL keeps it exact, and numbers (a negative score) and other texts are untouched."""
    from io import BytesIO

    texts = ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-2+3", "@SUM(A1)", "\tcmd", "\r=1", "a = b", "", "plain"]
    df = pd.DataFrame({"id": [f"r{i}" for i in range(len(texts))], "score": [-1.5] * len(texts), "text": texts})
    back = pd.read_csv(BytesIO(table_bytes(df, "csv")), keep_default_na=False)
    assert back["text"].tolist() == ["'" + t for t in texts[:6]] + texts[6:]
    assert back["score"].tolist() == [-1.5] * len(texts) and back["id"].tolist() == df["id"].tolist()
    rows = [json.loads(line) for line in table_bytes(df, "jsonl").decode().splitlines()]
    assert [r["text"] for r in rows] == texts
    assert df["text"].tolist() == texts  # the caller's frame is not changed


def test_generate_continuation(tiny_llama_fp32):
    from rise_core.generation import GenerationSettings, generate

    text = generate(tiny_llama_fp32, "the cat sat on", GenerationSettings(max_new_tokens=5))
    assert isinstance(text, str) and text
    with pytest.raises(InputDataError, match="type a prompt"):
        generate(tiny_llama_fp32, "   ")


def test_build_job_reports_progress_and_errors(monkeypatch, tmp_path):
    import explorer.jobs as us

    calls = {}

    def fake_build(path, pool, lm, config, batch_size, progress, should_stop, overwrite, preset=None,
                   phase_progress=None, **provenance):
        calls["threads"] = torch.get_num_threads()
        for i in range(1, 4):
            progress(i, 3)
            phase_progress("computing features", i, 3)
            time.sleep(0.01)
        calls["stop"] = should_stop()
        if pool == "boom":
            raise InputDataError("bad pool")
        return BuildReport(n_added=3, n_already_present=0, n_skipped=0, skipped=[], seconds=0.0, stopped=False)

    fake_store = type(sys)("rise_core.store")
    fake_store.build_index = fake_build
    monkeypatch.setitem(sys.modules, "rise_core.store", fake_store)
    job = us.BuildJob(tmp_path / "x.duckdb", "pool", None, RiseConfig()).start()
    assert job.wait(10) and job.status == "done" and job.fraction == 1.0
    assert (job.done, job.total) == (3, 3) and calls["stop"] is False
    assert calls["threads"] == job.threads == us.build_threads(1)  # outside a queue: as one job at a time
    assert "3 samples added" in job.message() and f"({job.threads} threads: " in job.message()
    bad = us.BuildJob(tmp_path / "y.duckdb", "boom", None, RiseConfig())
    bad.stop()
    bad.start().wait(10)
    assert bad.status == "failed" and bad.friendly_error and "bad pool" in bad.message() and calls["stop"] is True


def test_build_threads_share_the_cores_among_the_jobs_run_at_once():
    from explorer.jobs import build_threads

    assert [build_threads(jobs, cores=8) for jobs in (1, 2, 3, 8, 16)] == [8, 4, 2, 1, 1]
    assert build_threads(1, cores=2) == 2


def test_build_job_eta():
    job = BuildJob(None, None, None, RiseConfig())  # type: ignore[arg-type]
    assert job.eta_seconds is None and job.fraction == 0.0
    job.started_at = time.monotonic()
    job.status = "running"
    assert "reading the pool" in job.message()
    job._phase_progress("fitting the hidden-state mean", 0, 40)
    time.sleep(0.05)
    job._phase_progress("fitting the hidden-state mean", 10, 40)
    assert 0 < job.eta_seconds < 10 and job.fraction == 0.25
    assert "fitting the hidden-state mean: 10/40 samples" in job.message()
    job._phase_progress("computing features", 0, 100)  # a new phase: its own count, and no rate yet
    assert job.eta_seconds is None and job.fraction == 0.0
    time.sleep(0.05)
    job._phase_progress("computing features", 10, 100)
    assert 0 < job.eta_seconds < 10
    assert "computing features: 10/100" in job.message()


# the explorer modules that are Streamlit glue; the others run without streamlit
GLUE = {"ui", "resources", "widgets", "compare_ui", "diagnostics_ui", "demo_ui", "finetune_ui", "shared_spans_ui",
        "counterfactual_ui", "feedback_ui", "auth", "contrast_ui"}


def test_explorer_modules_do_not_import_streamlit():
    modules = sorted(p.stem for p in (ROOT / "explorer").glob("*.py") if p.stem not in GLUE | {"__init__"})
    assert {"views", "jobs", "uploads", "diagnostics_charts"} <= set(modules)
    code = (f"import sys, importlib; [importlib.import_module('explorer.' + m) for m in {modules!r}]; "
            "assert 'streamlit' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_ranking_frame_and_results_table():
    pool = pd.DataFrame({"id": ["a", "b", "c"], "text": ["x", None, None], "prompt": [None, "p", None],
                         "completion": [None, "q", "r"], "label": [0, 1, 0], "topic": ["t", "u", "v"],
                         "n_counted": [1, 2, 3]})
    ranked = ranking_frame(pool, np.array([0.1, 0.9, 0.5]), k=2)
    assert list(ranked.columns[:3]) == ["rank", "id", "score"]
    assert list(ranked["id"]) == ["b", "c"] and list(ranked["rank"]) == [1, 2] and list(ranked["topic"]) == ["u", "v"]
    with pytest.raises(InputDataError):
        ranking_frame(pool, np.zeros(2), k=1)
    compact = top_list(ranked, labels=True)  # a method's ranking, as Compare shows it
    assert list(compact.columns) == ["rank", "id", "label", "score", "text"] and list(compact["id"]) == ["b", "c"]
    assert list(top_list(ranked, labels=False).columns) == ["rank", "id", "score", "text"]
    with pytest.raises(InputDataError, match="only 3 rows"):
        ranking_table(pool, Ranking.best(np.zeros(5), 5))
    table = results_table(ranked.assign(rh=[0.4, 0.2], gh=[0.5, 0.3]))
    assert list(table.columns) == ["rank", "id", "score", "label", "topic", "RH", "GH", "text"]
    assert list(table["text"]) == ["p\nq", "r"]
    # a ranking's attrs (a weighting's NaN surprise) would reach the browser as invalid JSON in the Arrow metadata
    weighted = ranked.assign(rh=[0.4, 0.2], gh=[0.5, 0.3])
    weighted.attrs["weighting"] = {"surprise": float("nan"), "gate": 0.5}
    import pyarrow as pa

    metadata = pa.Table.from_pandas(results_table(weighted)).schema.metadata or {}
    assert not any(b"NaN" in value for value in metadata.values()) and results_table(weighted).attrs == {}


def test_head_pool_keeps_the_first_source_rows(tmp_path):
    from rise_core.ingest import read_pool

    path = tmp_path / "p.jsonl"
    rows = [{"id": f"s{i}", "text": "" if i == 2 else f"text {i}"} for i in range(1, 7)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = read_pool(path)
    head = head_pool(pool, 3)
    assert [s.id for s in head.samples] == ["s1", "s3"] and [r for r, _ in head.skipped] == [2]
    assert head.rows == [1, 3] and head_pool(pool, 0) is pool


# --- diagnostics page helpers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_diagnostics(tiny_llama, tmp_path_factory):
    from conftest import CORPUS

    from rise_core.diagnostics import DiagnosticsOptions, run_diagnostics

    out = tmp_path_factory.mktemp("diag")
    results = run_diagnostics(tiny_llama, CORPUS[:4], options=DiagnosticsOptions(n_samples=4, n_seeds=2),
                              which=["energy", "sparsity", "rhgh", "fidelity"], out_dir=out)
    return out, results


def test_energy_bars_keep_forward_order_and_mark_the_head(tiny_diagnostics):
    from explorer.diagnostics_charts import energy_bars

    comps = tiny_diagnostics[1]["energy"]["components"]
    bars = energy_bars(comps.iloc[::-1])  # shuffled rows: back in forward order
    assert list(bars.columns) == ["component", "share", "share_std", "group"]
    assert list(bars["component"]) == list(comps["component"])
    assert bars["group"].iloc[-1] == "LM head" and bars["group"].iloc[0] == "embedding"
    assert (bars["group"] == "LM head").sum() == 1 and set(bars["group"]) <= {"LM head", "embedding",
                                                                               "transformer block", "other"}
    assert abs(bars["share"].sum() - 1) < 1e-9 and (bars["share_std"] >= 0).all()


def test_sweep_lines_long_format(tiny_diagnostics):
    from explorer.diagnostics_charts import SPARSITY_LINES, sweep_lines

    sweep = pd.DataFrame({"k": [16, 8], "mass": [0.9, 0.8], "e_full": [0.99, 0.97], "e_tail": [0.7, 0.5],
                          "gh_cos": [0.98, 0.95], "support_size": [16, 8]})
    long = sweep_lines(sweep, "k")
    assert list(long.columns) == ["k", "metric", "kept"] and len(long) == 8
    assert list(long["metric"].unique()) == list(SPARSITY_LINES.values())
    mass = long[long["metric"] == "probability mass"]
    assert list(mass["k"]) == [8, 16] and list(mass["kept"]) == [0.8, 0.9]
    with pytest.raises(InputDataError):
        sweep_lines(sweep, "tau")
    res = tiny_diagnostics[1]["sparsity"]
    for table, x in (("k_sweep", "k"), ("tau_sweep", "tau")):
        long = sweep_lines(res[table], x)
        assert len(long) == 4 * len(res[table]) and long["kept"].notna().all()


def test_rank_view_and_parse_lines(tiny_diagnostics):
    from explorer.diagnostics_charts import rank_view
    from explorer.uploads import parse_lines

    view = rank_view(tiny_diagnostics[1]["rhgh"]["examples"])
    assert list(view.columns[:8]) == ["candidate", "group", "semantic", "lexical", "RH rank", "GH rank",
                                      "RH+GH rank", "Δ (GH − RH)"]
    assert (view["Δ (GH − RH)"] == view["GH rank"] - view["RH rank"]).all() and len(view) == 8
    plain = rank_view(pd.DataFrame({"candidate": ["a"], "rank_rh": [1], "rank_gh": [1], "delta_gh": [0],
                                    "extra": [3]}))
    assert list(plain.columns) == ["candidate", "RH rank", "GH rank", "Δ (GH − RH)"]
    assert parse_lines("  one \n\n two\n") == ["one", "two"]
    with pytest.raises(InputDataError, match="candidate"):
        parse_lines(" \n ", "candidate")


def test_fidelity_views(tiny_diagnostics):
    from explorer.diagnostics_charts import fidelity_views

    res = tiny_diagnostics[1]["fidelity"]
    corr, stab = fidelity_views(res["correlation"], res["topk_stability"])
    assert list(corr["channel"]) == ["RH", "GH", "RH+GH"] and (corr["seeds"] == 2).all()
    assert (corr["pearson_min"] <= corr["pearson"] + 1e-12).all() and (corr["pairs"] == 6).all()
    assert set(stab["measure"]) == {"across seeds", "with exact"}
    assert set(stab["k"]) == {f"top-{k}" for k in res["topk_stability"]["k"]}
    assert len(stab) == 2 * len(res["topk_stability"]) and stab["overlap"].between(0, 1).all()


def test_diagnostics_provenance_and_index_identity(tiny_diagnostics, tiny_llama, tmp_path):
    """The page's provenance captions read `load_provenance` and compare with `RiseIndex.identity()`."""
    from conftest import CORPUS

    from explorer.diagnostics_charts import provenance_caption
    from rise_core.diagnostics.runner import load_provenance
    from rise_core.store import RiseIndex, build_index

    out, _ = tiny_diagnostics
    prov = load_provenance(out)
    assert set(prov) == {"energy", "sparsity", "rhgh", "fidelity"}
    assert prov["energy"]["n_samples"] == 4 and prov["energy"]["index"] is None and prov["energy"]["created_at"]
    assert load_provenance(tmp_path / "none") == {}
    path = tmp_path / "x.duckdb"
    build_index(path, CORPUS[:3], tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16))
    index = RiseIndex.open(path, read_only=True)
    try:
        m = index.manifest
        ident = index.identity()
        assert ident == {"path": str(path.resolve()), "model_fingerprint": m.model_fingerprint,
                         "config": RiseConfig(k_r=16, k_h=8, k_g=16).fingerprint(), "sketch_digest": m.sketch_digest,
                         "n_samples": 3, "updated_at": m.updated_at, "index_uuid": m.index_uuid}
    finally:
        index.close()
    assert "4 samples · computed" in provenance_caption("energy", prov["energy"], ident)
    assert "earlier state" not in provenance_caption("energy", dict(prov["energy"], index=ident), ident)
    assert "earlier state" in provenance_caption("energy", dict(prov["energy"], index={**ident, "n_samples": 2}), ident)
    assert provenance_caption("rhgh", None, None) == "built-in example set · computed ? in n/a s"


# --- uploads --------------------------------------------------------------------------------------------------------

UPLOAD_ROWS = [{"id": "a", "text": "hello there", "label": 1}, {"id": "b", "text": "the cat sat", "label": 0}]


class _Upload:
    """What Streamlit's file_uploader hands a page: a name and the bytes."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


def _encoded(fmt: str) -> bytes:
    df = pd.DataFrame(UPLOAD_ROWS)
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in UPLOAD_ROWS).encode()
    if fmt == "json":
        return json.dumps(UPLOAD_ROWS).encode()
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    from io import BytesIO

    buf = BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_upload_reads_each_supported_format(fmt):
    from explorer.uploads import UPLOAD_TYPES, PoolFile

    assert fmt in UPLOAD_TYPES
    pool_file = PoolFile.from_upload(_Upload(f"my pool.{fmt}", _encoded(fmt)))
    assert (pool_file.name, pool_file.fmt) == ("my pool", fmt)
    table = pool_file.table()
    assert list(table.columns) == ["id", "text", "label"] and len(table) == 2
    pool = pool_file.pool()
    assert [s.id for s in pool.samples] == ["a", "b"] and [s.text for s in pool.samples] == ["hello there", "the cat sat"]
    assert [int(s.label) for s in pool.samples] == [1, 0] and not pool.skipped


def test_upload_with_a_field_mapping_and_a_bundled_file(tmp_path):
    from explorer.uploads import PoolFile
    from rise_core.ingest import FieldMap

    csv = b"uid,body,kind\n1,the cat sat on the mat .,a\n2,the bank lost money .,b\n"
    pool = PoolFile.from_upload(_Upload("mine.csv", csv)).pool(FieldMap(text="body", id="uid"))
    assert [s.id for s in pool.samples] == ["1", "2"] and pool.samples[0].meta == {"kind": "a"}
    path = tmp_path / "howdy_pool.jsonl"
    path.write_bytes(_encoded("jsonl"))
    bundled = PoolFile.bundled("howdy", path)
    assert (bundled.name, bundled.fmt) == ("howdy", "jsonl") and len(bundled.table()) == 2
    assert [s.id for s in bundled.pool().samples] == ["a", "b"]


@pytest.mark.parametrize(("name", "data"), [
    ("pool.parquet", b"\x00garbage"),
    ("pool.jsonl", b'{"id": "a", "text": "x"}\n{not json\n'),
    ("pool.json", b'{"id": "a"'),
    ("pool.csv", b"\xff\xfe\x00 not utf-8"),
    ("pool.csv", b"   \n"),
])
def test_malformed_upload_is_an_input_error_naming_the_file(name, data):
    from explorer.uploads import PoolFile

    pool_file = PoolFile.from_upload(_Upload(name, data))
    for read in (pool_file.table, pool_file.pool):
        with pytest.raises(InputDataError, match=name.replace(".", r"\.")):
            read()


def test_upload_with_an_unknown_extension_is_an_input_error():
    from explorer.uploads import PoolFile

    with pytest.raises(InputDataError, match="pool.txt"):
        PoolFile.from_upload(_Upload("pool.txt", b"hello"))


# --- diagnostics figures --------------------------------------------------------------------------------------------


def _traces(fig) -> list[tuple[str, str]]:
    return [(t.type, t.name) for t in fig.data]


def test_energy_figure_has_a_bar_trace_per_group_in_forward_order():
    import plotly.graph_objects as go

    from explorer.diagnostics_charts import COLOURS, energy_figure

    comps = pd.DataFrame({"component": ["head", "block 1", "block 0", "embed"], "kind": ["head", "block", "block",
                                                                                        "embedding"],
                          "order": [3, 2, 1, 0], "share_mean": [0.7, 0.1, 0.1, 0.1], "share_std": [0.01, None, 0, 0]})
    fig = energy_figure(comps)
    assert isinstance(fig, go.Figure)
    assert sorted(_traces(fig)) == [("bar", "LM head"), ("bar", "embedding"), ("bar", "transformer block")]
    head = next(t for t in fig.data if t.name == "LM head")
    assert list(head.x) == ["head"] and list(head.y) == [0.7] and head.marker.color == COLOURS["LM head"]
    assert list(fig.layout.xaxis.categoryarray) == ["embed", "block 0", "block 1", "head"]
    assert fig.layout.height == 380 and fig.layout.legend.y == 1.0


def test_discriminativeness_figure_marks_the_minimum():
    from explorer.diagnostics_charts import discriminativeness_figure

    layers = pd.DataFrame({"layer": [0, 1, 2, 3], "cos_var": [0.3, 0.1, 0.05, 0.2], "name": list("abcd"),
                           "cos_mean": [0.1, 0.2, 0.3, 0.4]})
    fig = discriminativeness_figure(layers)
    assert [t.type for t in fig.data] == ["scatter", "scatter"]
    assert list(fig.data[0].y) == [0.3, 0.1, 0.05, 0.2]
    assert fig.data[1].name == "minimum (layer 2)" and list(fig.data[1].x) == [2] and list(fig.data[1].y) == [0.05]
    assert fig.layout.height == 320 and fig.layout.legend.orientation == "h"


def test_sweep_and_support_figures():
    from explorer.diagnostics_charts import SPARSITY_LINES, support_figure, sweep_figure

    sweep = pd.DataFrame({"k": [16, 8], "mass": [0.9, 0.8], "e_full": [0.99, 0.97], "e_tail": [0.7, 0.5],
                          "gh_cos": [0.98, 0.95]})
    fig = sweep_figure(sweep, "k", "Kept by TopK vs K")
    assert [t.name for t in fig.data] == list(SPARSITY_LINES.values()) and {t.type for t in fig.data} == {"scatter"}
    assert list(fig.data[0].x) == [8, 16] and list(fig.data[0].y) == [0.8, 0.9]
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == [8, 16]
    assert fig.layout.title.text == "Kept by TopK vs K" and tuple(fig.layout.yaxis.range) == (0.0, 1.05)
    tau = sweep_figure(sweep.rename(columns={"k": "tau"}), "tau", "vs tau")
    assert tau.layout.xaxis.type != "log"
    with pytest.raises(InputDataError):
        sweep_figure(sweep, "tau", "no such column")
    support = support_figure(pd.DataFrame({"support_size": [1, 2, 3], "count": [5, 2, 1]}))
    assert _traces(support) == [("bar", "")] and list(support.data[0].y) == [5, 2, 1] and support.layout.height == 260


def test_topk_figure_facets_by_measure_and_dims():
    from explorer.diagnostics_charts import fidelity_views, topk_figure

    stability = pd.DataFrame({"dims": [8, 8, 16, 16], "channel": ["rh", "gh", "rh", "gh"], "k": [5, 5, 5, 5],
                              "overlap_across_seeds": [0.9, 0.8, 1.0, 0.9], "overlap_with_exact": [0.7, 0.6, 0.8, 0.9]})
    correlation = pd.DataFrame({"dims": [8], "channel": ["rh"], "pearson": [0.9], "spearman": [0.8], "seed": [0],
                                "n_pairs": [6]})
    _, stab = fidelity_views(correlation, stability)
    fig = topk_figure(stab)
    # one bar trace per channel and facet: 2 channels x 2 measures x 2 dims
    assert len(fig.data) == 8 and {t.type for t in fig.data} == {"bar"} and {t.name for t in fig.data} == {"RH", "GH"}
    assert {a.text for a in fig.layout.annotations} == {"across seeds", "with exact", "8", "16"}
    one_dims = topk_figure(stab[stab["dims"] == 8])
    assert len(one_dims.data) == 4 and {a.text for a in one_dims.layout.annotations} == {"across seeds", "with exact"}


def test_chart_sections_from_real_results(tiny_diagnostics):
    import plotly.graph_objects as go

    from explorer.diagnostics_charts import CHART_SECTIONS, figures, headline, observation, outcome_message

    results = tiny_diagnostics[1]
    for name in ("energy", "sparsity"):
        assert name in CHART_SECTIONS
        assert len(headline(name, results[name])) == 3
        rows = figures(name, results[name])
        assert all(isinstance(fig, go.Figure) and key.startswith("diag_") for row in rows for key, fig in row)
        assert observation(name, results[name]).startswith("Observation")
    assert [[key for key, _ in row] for row in figures("sparsity", results["sparsity"])] == [["diag_k", "diag_tau"],
                                                                                             ["diag_support"]]
    metrics = {m.label: m.value for m in headline("energy", results["energy"])}
    assert metrics["LM head share"].endswith("%") and metrics["Head / average block"].endswith("×")
    with pytest.raises(InputDataError, match="energy"):
        headline("fidelity", results["fidelity"])
    assert outcome_message({"energy": "done", "rhgh": "cached"}) == (
        "Computed: Layer gradient energy · loaded from the cache (same inputs): RH vs GH rankings")
