"""A team sharing one server (docs/SECURITY.md): who is who (roles), who may write an index (owners; replacing keeps
the old index; appending another pool asks), bounded counterfactual checks, and marks only on rows the page showed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from explorer_env import INDEX_NAME, N_POOL, build_explorer_env

from explorer.auth import EDITOR, VIEWER, AccessDeniedError, AccessSettings, User, is_loopback
from explorer.build_plan import plan_index_write
from explorer.counterfactual_ui import CheckRequest
from explorer.request_limits import CheckLimits
from rise_core.errors import ConfigError
from rise_core.store import list_indexes

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 90
ALICE_TOKEN, BOB_TOKEN, VIV_TOKEN = "alice-token-0123456789", "bob-token-0123456789ab", "viv-token-0123456789abc"
USERS = {"users": {"alice": {"token": ALICE_TOKEN, "role": "editor"}, "bob": {"token": BOB_TOKEN, "role": "editor"},
                   "viv": {"token": VIV_TOKEN, "role": "viewer"}}}

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

# --- who is who ---------------------------------------------------------------------------------------------------


def test_loopback_addresses():
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(a) for a in ("0.0.0.0", "192.168.1.4", "::", "example.org", "", None))


def test_access_modes_follow_what_is_configured():
    assert AccessSettings.resolve({}, {}, "127.0.0.1").mode == "local"
    assert AccessSettings.resolve({}, {}, "0.0.0.0").mode == "closed"  # served beyond loopback with no login
    assert AccessSettings.resolve({}, {}, None).mode == "closed"  # Streamlit's own default listens everywhere
    anon = AccessSettings.resolve({}, {"RISE_ANONYMOUS_ROLE": "viewer"}, "0.0.0.0")
    assert (anon.mode, anon.anonymous_role) == ("anonymous", VIEWER)
    with pytest.raises(AccessDeniedError, match="RISE_ANONYMOUS_ROLE"):
        AccessSettings.resolve({}, {"RISE_ANONYMOUS_ROLE": "admin"}, "0.0.0.0")
    tokens = AccessSettings.resolve({"rise": USERS}, {}, "0.0.0.0")
    assert tokens.mode == "token"
    assert tokens.token_user(ALICE_TOKEN) == User("alice", EDITOR, "token")
    assert tokens.token_user(VIV_TOKEN) == User("viv", VIEWER, "token")
    assert tokens.token_user("alice-token") is None and tokens.token_user("") is None
    with pytest.raises(AccessDeniedError, match="at least 16"):
        AccessSettings.resolve({"rise": {"users": {"x": {"token": "short", "role": "editor"}}}}, {}, "0.0.0.0")
    oidc = AccessSettings.resolve({"auth": {"redirect_uri": "x"}, "rise": {"editors": ["Ann@Lab.org"]}},
                                  {"RISE_EDITORS": "bo@lab.org"}, "0.0.0.0")
    assert oidc.mode == "oidc"
    assert oidc.oidc_user("ann@lab.org").role == EDITOR and oidc.oidc_user("BO@lab.org").role == EDITOR
    assert oidc.oidc_user("eve@lab.org").role == VIEWER


# --- who may write an index ---------------------------------------------------------------------------------------


def plan(**kw):
    args = dict(exists=True, owner="alice", sources=["howdy"], n_samples=10, user="alice", can_edit=True,
                replace=False, source="howdy")
    args.update(kw)
    return plan_index_write("i.duckdb", **args)


def test_who_may_write_an_index():
    assert plan(exists=False, owner="", sources=[]).action == "create" and not plan(exists=False).refusal
    assert plan() == plan_index_write("i.duckdb", exists=True, owner="alice", sources=["howdy"], n_samples=10,
                                      user="alice", can_edit=True, replace=False, source="howdy")
    assert (plan().action, plan().question, plan().refusal) == ("append", "", "")
    assert "viewer" in plan(can_edit=False).refusal and "viewer" in plan(exists=False, can_edit=False).refusal
    assert "built by alice" in plan(user="bob").refusal and "built by alice" in plan(user="bob", replace=True).refusal
    assert plan(owner="", user="bob").refusal == ""  # an index that records no owner: any editor
    replace = plan(replace=True)
    assert replace.action == "replace" and "kept" in replace.question and "10 samples" in replace.question
    other = plan(source="tweets")
    assert other.action == "append" and "built from howdy" in other.question and "tweets" in other.question
    # a file that does not open: no owner to check against, so it is never appended to, and replacing it asks
    broken = plan(owner="", sources=[], n_samples=None, user="bob", unreadable="not a DuckDB database file")
    assert broken.action == "append" and "cannot be read (not a DuckDB database file)" in broken.refusal
    assert "Start from scratch" in broken.refusal
    replaced = plan(owner="", sources=[], n_samples=None, user="bob", replace=True, unreadable="locked")
    assert replaced.action == "replace" and not replaced.refusal and "who built it is not known" in replaced.question
    assert "viewer" in plan(owner="", can_edit=False, unreadable="locked").refusal


def test_builds_record_their_owner_and_sources_and_set_aside_keeps_every_file(tiny_llama, tmp_path):
    from rise_core.config import RiseConfig
    from rise_core.store import RiseIndex, build_index
    from rise_core.store.files import set_aside

    path = tmp_path / "i.duckdb"
    rows = [{"id": f"r{i}", "text": "the cat sat on the mat ."} for i in range(3)]
    config = RiseConfig(k_r=8, k_h=4, k_g=8)
    build_index(path, rows, tiny_llama, config, built_by="alice", source="cats")
    build_index(path, [{"id": "x", "text": "the dog ran ."}], tiny_llama, config, built_by="bob", source="dogs")
    build_index(path, [{"id": "y", "text": "a dog ."}], tiny_llama, config)  # the command line: nothing recorded
    with RiseIndex.open(path) as index:
        m = index.manifest
        assert m.owner == "alice" and m.sources == ["cats", "dogs"]
        assert [b["by"] for b in m.provenance["builds"]] == ["alice", "bob"]
        n = len(index)
    companion = path.with_name(path.name + ".ann.json")
    companion.write_text("{}")
    (tmp_path / "i.duckdb.diagnostics").mkdir()
    # another user's indexes whose names start with this one's (the Build page saves "i.duckdb.x" as i.duckdb.duckdb),
    # and their own files: none of them is this index's
    others = [tmp_path / n for n in ("i.duckdb.duckdb", "i.duckdb.duckdb.wal", "i.duckdb.b.duckdb",
                                     "i.duckdb.b.duckdb.ann.json", "i.duckdb.wal.duckdb")]
    for other in others:
        other.write_text("bob's")
    kept = set_aside(path)
    assert not path.exists() and kept.exists() and kept.name.startswith("i.") and kept.suffix == ".duckdb"
    assert kept.with_name(kept.name + ".ann.json").read_text() == "{}"
    assert kept.with_name(kept.name + ".diagnostics").is_dir() and not (tmp_path / "i.duckdb.diagnostics").exists()
    assert all(other.read_text() == "bob's" for other in others)
    with RiseIndex.open(kept) as index:
        assert len(index) == n and index.manifest.owner == "alice"


# --- the pages, with two users logged in by token -----------------------------------------------------------------


@pytest.fixture(scope="module")
def token_env(tmp_path_factory):
    env = build_explorer_env(tmp_path_factory.mktemp("shared"))
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT))
        yield env


def login(token: str, page: str | None = "app_pages/1_Build_index.py") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.secrets["rise"] = USERS
    at.run()
    assert at.text_input(key="_auth_token") is not None and not at.title  # nothing but the login
    at.text_input(key="_auth_token").input(token).run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def wait_for(at: AppTest, done, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not done(at):
        assert time.monotonic() < end, "timed out waiting for the app"
        time.sleep(0.3)
        at.run()


def test_a_wrong_token_shows_nothing_but_the_login(token_env):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.secrets["rise"] = USERS
    at.run()
    at.text_input(key="_auth_token").input("not-a-token-at-all").run()
    assert [e.value for e in at.error] == ["That token is not known here."]
    assert not at.title and not at.dataframe


def test_a_viewer_queries_but_cannot_build(token_env):
    at = login(VIV_TOKEN)
    assert any("viewer" in w.value for w in at.warning)
    assert at.button(key="build").disabled
    at.switch_page("app_pages/2_Attribute.py").run()
    assert not at.exception and at.title  # a viewer reads indexes


def test_nobody_writes_another_users_index_and_replacing_keeps_the_old_one(token_env):
    index_dir = Path(token_env["RISE_INDEX_DIR"])
    alice = login(ALICE_TOKEN)
    alice.text_input(key="build_name").input("alices").run()
    for name, value in (("k_r", 8), ("k_h", 4), ("k_g", 8)):
        alice.number_input(key=f"cfg_{name}").set_value(value).run()
    alice.number_input(key="build_limit").set_value(6).run()
    alice.button(key="build").click().run()
    wait_for(alice, lambda a: bool(a.success))
    assert "6 samples added" in alice.success[0].value

    bob = login(BOB_TOKEN)
    bob.text_input(key="build_name").input("alices").run()
    assert any("built by alice" in w.value for w in bob.warning) and bob.button(key="build").disabled
    bob.checkbox(key="build_overwrite").check().run()
    assert bob.button(key="build").disabled  # replacing is refused too
    assert next(e for e in list_indexes(index_dir) if Path(e["path"]).name == "alices.duckdb")["n_samples"] == 6

    alice.checkbox(key="build_overwrite").check().run()
    assert alice.button(key="build").disabled  # the owner is asked first
    alice.checkbox(key="build_confirm_replace").check().run()
    alice.number_input(key="build_limit").set_value(3).run()
    alice.button(key="build").click().run()
    wait_for(alice, lambda a: bool(a.success) and "3 samples added" in a.success[0].value)
    sizes = {Path(e["path"]).name: e["n_samples"] for e in list_indexes(index_dir)}
    kept = [n for n in sizes if n.startswith("alices.") and n != "alices.duckdb"]
    assert sizes["alices.duckdb"] == 3 and len(kept) == 1 and sizes[kept[0]] == 6
    assert INDEX_NAME in sizes and sizes[INDEX_NAME] == N_POOL + 1  # the prebuilt index untouched


# --- bounded checks -----------------------------------------------------------------------------------------------


def test_a_check_from_the_app_is_bounded_and_estimated(monkeypatch):
    ok = CheckRequest(ks=(25, 50), seeds=1, baselines=("BM25",), prompts=("a",) * 40, new_tokens=64)
    assert ok.check(CheckLimits()) is ok
    assert ok.retrains == (1 + 1 + 1) * 2 and ok.answers == (6 + 1) * 40 * 2
    assert ok.estimate_s(600.0) == pytest.approx(6 * 600.0 + 560 * 64 / 20.0)
    assert ok.estimate_s(None) is None
    attack = CheckRequest(ks=tuple(range(1, 18)), seeds=10, baselines=("BM25", "MiniLM"), prompts=("p",) * 3000,
                          new_tokens=512)  # the form an attacker sent: 205 arms
    with pytest.raises(ConfigError, match="17 values of k.*at most 3.*RISE_CHECK_MAX_KS"):
        attack.check(CheckLimits())
    for request, match in ((CheckRequest((5,), 10, (), ("p",), 8), "10 random seeds.*RISE_CHECK_MAX_SEEDS"),
                           (CheckRequest((5,), 1, (), ("p",) * 101, 8), "101 held-out prompts"),
                           (CheckRequest((5,), 1, (), ("p",), 129), "129 answer tokens.*RISE_CHECK_MAX_TOKENS"),
                           (CheckRequest((5, 10, 20), 3, ("BM25", "MiniLM"), ("p",), 8), "18 retrains")):
        with pytest.raises(ConfigError, match=match):
            request.check(CheckLimits())
    monkeypatch.setenv("RISE_CHECK_MAX_KS", "20")
    assert CheckLimits.from_env().max_ks == 20
    monkeypatch.setenv("RISE_CHECK_MAX_KS", "-1")
    with pytest.raises(ConfigError, match="RISE_CHECK_MAX_KS"):
        CheckLimits.from_env()


# --- what one click may run through the model ----------------------------------------------------------------------


def test_request_limits_count_and_read_the_environment(monkeypatch):
    from explorer.request_limits import RequestLimits
    from rise_core.errors import InputDataError

    limits = RequestLimits(max_queries=2)
    assert limits.check_count(["a", "b"], "queries") == ["a", "b"]
    with pytest.raises(InputDataError, match=r"3 queries in one request; the limit is 2 \(RISE_MAX_QUERIES\)"):
        limits.check_count(["a", "b", "c"], "queries")
    monkeypatch.setenv("RISE_MAX_TEXT_CHARS", "40")
    monkeypatch.setenv("RISE_MAX_QUERIES", "7")
    assert RequestLimits.from_env() == RequestLimits(max_text_chars=40, max_queries=7)
    monkeypatch.setenv("RISE_MAX_QUERIES", "0")
    with pytest.raises(ConfigError, match="RISE_MAX_QUERIES"):
        RequestLimits.from_env()


def test_one_click_runs_a_bounded_number_of_queries(token_env, monkeypatch):
    """Select data and Diagnostics refuse a query set past RISE_MAX_QUERIES (typed) before any forward pass, say
    which limit, and score one at the limit; the diagnostics' pool samples stop at the limit."""
    monkeypatch.setenv("RISE_MAX_QUERIES", "3")
    at = login(VIV_TOKEN, "app_pages/4_Select_data.py")
    at.text_area(key="sel_text").input("\n\n".join(["the cat sat", "the dog ran", "a bank", "a loan"])).run()
    at.button(key="score_pool").click().run()
    assert not at.exception
    assert any("4 queries in one request; the limit is 3" in e.value for e in at.error) and not at.dataframe
    at.text_area(key="sel_text").input("\n\n".join(["the cat sat", "the dog ran", "a bank"])).run()
    at.button(key="score_pool").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("against 3 queries" in h.value for h in at.subheader)
    # a contrast's other answers run through the model too: 2 queries and 2 other answers pass the limit of 3
    at.text_area(key="sel_text").input("the cat sat\n\nthe dog ran").run()
    at.checkbox(key="sel_versus_on").check().run()
    at.text_area(key="sel_versus_text").input("a bank\n\na loan").run()
    at.button(key="score_pool").click().run()
    assert not at.exception
    assert any("4 queries and other answers in one request; the limit is 3" in e.value for e in at.error)
    at.checkbox(key="sel_versus_on").uncheck().run()
    at.switch_page("app_pages/6_Diagnostics.py").run()
    assert at.number_input(key="diag_n").max == 3
    at.radio(key="diag_source").set_value("Type or upload texts").run()
    at.text_area(key="diag_text").input("\n\n".join(["one", "two", "three", "four"])).run()
    at.button(key="diag_run").click().run()
    assert not at.exception
    assert any("4 samples in one request; the limit is 3" in e.value for e in at.error)


def test_the_hyperparameters_a_form_may_ask_for_are_bounded(token_env, monkeypatch):
    """A viewer's evaluation with sketches of 20,000 (12.8 GB in one allocation before the bound) is refused on the
    page before anything runs, naming the limit; the sequence length and candidates too; within them it runs."""
    from explorer.request_limits import ConfigLimits
    from rise_core.config import RiseConfig
    from rise_core.errors import InputDataError

    limits = ConfigLimits()
    assert limits.check(RiseConfig()) == RiseConfig()
    assert limits.check(RiseConfig(k_r=256, k_h=128, k_g=256)).k_h == 128  # 65,536: at the limit
    for config, said in ((RiseConfig(k_r=257, k_h=128, k_g=256), "RISE_MAX_SIGNATURE_VALUES"),
                         (RiseConfig(seq_len=4097), "RISE_MAX_SEQ_LEN"),
                         (RiseConfig(k_max=1025), "RISE_MAX_CANDIDATES")):
        with pytest.raises(InputDataError, match=said):
            limits.check(config)
    at = login(VIV_TOKEN, "app_pages/5_Evaluate.py")
    for name in ("k_r", "k_h", "k_g"):
        at.number_input(key=f"eval_cfg_{name}").set_value(20_000).run()
    assert not at.exception
    said = [e.value.replace("\\", "") for e in at.error]  # shown as text: Markdown's characters escaped
    assert any("the limit here is 65,536 (RISE_MAX_SIGNATURE_VALUES)" in e for e in said), said
    assert "evaluate" not in [b.key for b in at.button]  # the page stopped before its Run button
    monkeypatch.setenv("RISE_MAX_SEQ_LEN", "64")
    for name, value in (("k_r", 8), ("k_h", 4), ("k_g", 8)):
        at.number_input(key=f"eval_cfg_{name}").set_value(value).run()
    assert any("RISE_MAX_SEQ_LEN" in e.value for e in at.error)
    at.number_input(key="eval_cfg_seq_len").set_value(64).run()
    assert not at.error and "evaluate" in [b.key for b in at.button]


def test_a_fine_tune_from_the_app_is_bounded(token_env, monkeypatch):
    """Samples x epochs past RISE_FINETUNE_MAX_PASSES: Start says which limit and what it would cost, and queues
    nothing."""
    from explorer import resources
    from explorer.request_limits import FinetuneLimits
    from rise_core.errors import InputDataError

    assert FinetuneLimits().check(555, 4) == 2_220  # the shipped Howdy! adapter's fine-tune
    with pytest.raises(InputDataError, match=r"100,000 samples x 50 epochs = 5,000,000 sample passes \(about 1013 h"):
        FinetuneLimits().check(100_000, 50)
    monkeypatch.setenv("RISE_FINETUNE_MAX_PASSES", str(N_POOL))
    alice = login(ALICE_TOKEN)
    alice.text_input(key="ft_out").input("bounded-lora").run()
    alice.number_input(key="ft_epochs").set_value(2).run()
    alice.button(key="ft_start").click().run()
    assert not alice.exception
    said = " ".join(e.value.replace("\\", "") for e in alice.error)
    assert re.search(r"\d+ samples x 2 epochs = \d+ sample passes \(about \d+", said), said
    assert f"the limit here is {N_POOL} (RISE_FINETUNE_MAX_PASSES)" in said
    assert not [k for k in resources.finetune_jobs() if k.endswith("bounded-lora")]


def test_a_diagnostics_run_replaces_nobody_elses_results(token_env):
    """The index's diagnostics folder is written by whoever may write the index (here, an index with no owner: an
    editor); a viewer's run, forced, goes to a folder of their own, shown to them over the shared results."""
    import json

    from rise_core.diagnostics import default_output_dir

    index = Path(token_env["RISE_INDEX_DIR"]) / INDEX_NAME
    shared = default_output_dir(index)

    def run(at, text):
        at.selectbox(key="index_path").set_value(str(index)).run()  # not another test's index, listed first
        at.radio(key="diag_source").set_value("Type or upload texts").run()
        at.text_area(key="diag_text").input(text).run()
        at.multiselect(key="diag_which").set_value(["sparsity"]).run()
        at.checkbox(key="diag_force").check().run()
        at.button(key="diag_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]

    alice = login(ALICE_TOKEN, "app_pages/6_Diagnostics.py")
    run(alice, "the cat sat on the mat .\n\nthe dog sat .")
    stored = (shared / "sparsity" / "result.json").read_text()
    viv = login(VIV_TOKEN, "app_pages/6_Diagnostics.py")
    run(viv, "the bank lost money .")
    assert any("users/viv/" in c.value for c in viv.caption)
    assert (shared / "sparsity" / "result.json").read_text() == stored  # alice's result stands
    own = json.loads((shared / "users" / "viv" / "sparsity" / "result.json").read_text())
    assert own["key"] != json.loads(stored)["key"] and own["context"]["n_samples"] == 1


def test_typed_texts_are_bounded_on_the_server(token_env, monkeypatch):
    """A query text longer than RISE_MAX_TEXT_CHARS, sent past the browser's own bound, is cut to it by the server;
    the contrast's other answer and Select data's query set too."""
    monkeypatch.setenv("RISE_MAX_TEXT_CHARS", "40")
    at = login(VIV_TOKEN, "app_pages/2_Attribute.py")
    long_text = "the cat sat on the mat . " * 20
    for key in ("query_prompt", "query_completion", "query_messages", "versus_prompt", "versus_completion"):
        widget = at.text_area(key=key)
        assert widget.max_chars == 40, key
        widget.set_value(long_text).run()  # what a crafted client sends; the browser's field stops at 40
        assert at.session_state[key] == long_text[:40], key
    at.switch_page("app_pages/4_Select_data.py").run()
    at.text_area(key="sel_text").set_value(long_text).run()
    assert at.text_area(key="sel_text").max_chars == 40 and at.session_state["sel_text"] == long_text[:40]


# --- marks --------------------------------------------------------------------------------------------------------


def test_marks_only_for_rows_the_page_showed_and_capped():
    from explorer.feedback_ui import MAX_MARKS, apply_marks

    marks: dict[str, bool] = {}
    shown = {"a", "b", "c"}
    refused = apply_marks(marks, ["a", "b", "zz", "c"], ["yes", "no", "yes", ""], shown)
    assert marks == {"a": True, "b": False} and refused == ["zz"]  # a row never shown is not marked
    apply_marks(marks, ["a"], [""], shown)
    assert marks == {"b": False}
    many = {f"r{i}" for i in range(MAX_MARKS + 10)}
    marks = {}
    refused = apply_marks(marks, sorted(many), ["yes"] * len(many), many)
    assert len(marks) == MAX_MARKS and len(refused) == 10


def _held_job_class():
    """A BackgroundJob that runs until its gate opens (at most 30 s): a queue place that stays taken."""
    import threading
    from dataclasses import dataclass, field

    from explorer.jobs import BackgroundJob

    @dataclass
    class Held(BackgroundJob):
        gate: threading.Event = field(default_factory=threading.Event)

        def _work(self) -> str:
            self.gate.wait(30)
            return "done"

    return Held


def test_the_home_page_lists_the_servers_queue(token_env):
    from explorer import resources

    Held = _held_job_class()

    queue = resources.job_queue()  # the server's one queue, shared with the app's sessions (st.cache_resource)
    running, waiting = Held(), Held()
    queue.submit(running, owner="alice", kind="build", label="big.duckdb", key="home-test-1")
    queue.submit(waiting, owner="bob", kind="check", label="howdy-check", key="home-test-2")
    try:
        at = login(VIV_TOKEN, page=None)
        table = next(d.value for d in at.dataframe if "label" in d.value.columns)
        assert list(table["label"]) == ["big.duckdb", "howdy-check"]
        assert list(table["state"]) == ["running", "waiting"] and list(table["user"]) == ["alice", "bob"]
    finally:
        running.gate.set()
        waiting.stop()
        running.wait(10)


def test_only_whoever_started_a_job_stops_it(token_env, monkeypatch):
    """A fine-tune Alice queued: Viv (a viewer) and Bob (another editor), typing the same adapter name, see its Stop
    disabled, and a Stop sent anyway (the button's callback, as a crafted client would call it) leaves it queued;
    Alice's own Stop takes it out of the queue. A pass over a shared pool may be stopped by an editor as well; a job
    started outside the queue names no owner."""
    from explorer import resources, widgets
    from explorer.jobs import PoolPassJob

    Held = _held_job_class()
    held = Held()
    resources.job_queue().submit(held, owner="carol", kind="build", label="other", key="stop-test-held")
    try:
        alice = login(ALICE_TOKEN)
        alice.text_input(key="ft_out").input("team-lora").run()
        alice.button(key="ft_start").click().run()
        job = resources.finetune_jobs()[str(next(k for k in resources.finetune_jobs() if k.endswith("team-lora")))]
        assert job.status == "queued" and job.owner == "alice"
        for token in (VIV_TOKEN, BOB_TOKEN):
            other = login(token)
            other.text_input(key="ft_out").input("team-lora").run()
            stop = other.button(key="ft_stop")
            assert stop.disabled and "Only alice" in stop.help
        for user in (User("viv", VIEWER, "token"), User("bob", EDITOR, "token")):
            monkeypatch.setattr(widgets.auth, "current_user", lambda user=user: user)
            widgets._stop_if_allowed(job)
            assert job.status == "queued"
        monkeypatch.undo()
        assert not alice.button(key="ft_stop").disabled
        alice.button(key="ft_stop").click().run()
        assert job.status == "cancelled"
    finally:
        held.gate.set()
        held.wait(10)
    shared = PoolPassJob(what="forward pass", n_rows=1, run=lambda progress: None, keep=lambda r: None, owner="alice")
    assert shared.may_stop("bob", can_edit=True) and not shared.may_stop("viv", can_edit=False)
    assert Held().may_stop("viv", can_edit=False)  # started outside the queue (scripts, tests): no owner


def test_a_replace_refused_by_the_queue_moves_nothing(tmp_path):
    """The old index is set aside when the replacing build runs, not when it is asked for: a refused one leaves it."""
    from explorer.job_queue import JobQueue, QueueLimits, ServerBusyError
    from explorer.jobs import BuildJob, IndexRegistry

    Held = _held_job_class()

    index = tmp_path / "mine.duckdb"
    index.write_bytes(b"the old index")
    queue, held = JobQueue(QueueLimits(max_running=1, max_per_user=1, max_waiting=4)), Held()
    queue.submit(held, owner="alice", kind="check", label="c", key="c")
    try:
        with pytest.raises(ServerBusyError, match="limit per user"):
            IndexRegistry().start_build(BuildJob(index, None, None, None, replace=True), queue, owner="alice")
        assert index.read_bytes() == b"the old index" and sorted(p.name for p in tmp_path.iterdir()) == ["mine.duckdb"]
    finally:
        held.gate.set()
        held.wait(10)
