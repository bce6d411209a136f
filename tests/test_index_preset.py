"""An index remembers the preset it was built for, and every query path starts from that preset's scoring and says
so: `rise query` / `rise select`, `rank` / `select` without options, the Attribute / Compare / Select pages, the Home
demo (tests/test_generation.py). Indexes without the field (older ones) keep the caller's default."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pandas as pd
import pytest
from explorer_env import build_explorer_env
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core.attribution import query_features, rank, select
from rise_core.cli import main
from rise_core.config import PRESETS, RiseConfig, ScoreOptions, config_preset, index_preset_line, preset_scoring
from rise_core.errors import ConfigError
from rise_core.models import load_model
from rise_core.store import RiseIndex, build_index

DIMS = ["--k-r", "16", "--k-h", "8", "--k-g", "16"]
QUERY = "the cat sat on the mat ."
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny model on disk, a pool, and two CLI-built indexes: one built with --preset backdoor (scored without HS),
    one with no preset named (the default index: nothing recorded)."""
    root = tmp_path_factory.mktemp("preset")
    model = save_tiny_model(root / "model")
    pool = write_jsonl(root / "pool.jsonl", pool_rows(16))
    queries = write_jsonl(root / "queries.jsonl", [{"text": QUERY}, {"text": "the bank lost money ."}])
    backdoor, plain = root / "backdoor.duckdb", root / "plain.duckdb"
    for path, extra in ((backdoor, ["--preset", "backdoor"]), (plain, [])):
        assert main(["build", str(pool), "--index", str(path), "--model", str(model), *DIMS, "--quiet", *extra]) == 0
    return SimpleNamespace(root=root, model=model, pool=pool, queries=queries, backdoor=backdoor, plain=plain)


def _query(capsys, index: Path, *extra: str) -> tuple[pd.DataFrame, str]:
    assert main(["query", "--index", str(index), "--text", QUERY, "-k", "5", "--format", "json", *extra]) == 0
    out = capsys.readouterr()
    return pd.DataFrame(json.loads(out.out)), out.err


def test_build_records_the_preset_named_or_implied(env, tiny_llama, tmp_path, capsys):
    with RiseIndex.open(env.backdoor) as index:
        assert index.manifest.build_preset == "backdoor" and index.info()["build_preset"] == "backdoor"
    with RiseIndex.open(env.plain) as index:  # the default config is shared by default, backdoor and fixed
        assert index.manifest.build_preset is None
    assert main(["info", "--index", str(env.backdoor)]) == 0
    assert "backdoor (queries score with it unless given --preset)" in capsys.readouterr().out
    # the Python API: a config that is exactly one preset's names it; a shared or custom one names none
    assert config_preset(PRESETS["retrospective"]) == "retrospective" and config_preset(PRESETS["paper"]) == "paper"
    assert config_preset(RiseConfig()) is None and config_preset(RiseConfig(k_r=16)) is None
    rows = pool_rows(6)
    build_index(tmp_path / "retro.duckdb", rows, tiny_llama, PRESETS["retrospective"])
    build_index(tmp_path / "fixed.duckdb", rows, tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16), preset="fixed")
    with RiseIndex.open(tmp_path / "retro.duckdb") as a, RiseIndex.open(tmp_path / "fixed.duckdb") as b:
        assert (a.manifest.build_preset, b.manifest.build_preset) == ("retrospective", "fixed")
    build_index(tmp_path / "fixed.duckdb", pool_rows(2, start=50), tiny_llama, preset="paper")  # an append keeps it
    with RiseIndex.open(tmp_path / "fixed.duckdb") as b:
        assert b.manifest.build_preset == "fixed" and len(b) == 8
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        build_index(tmp_path / "nope.duckdb", rows, tiny_llama, preset="nope")
    assert not (tmp_path / "nope.duckdb").exists()


def test_cli_query_and_select_use_the_index_preset_and_say_so(env, capsys, tmp_path):
    line = index_preset_line("backdoor", "--preset")
    assert line == "scored with the index's preset 'backdoor' (built with it); --preset to change"
    hits, err = _query(capsys, env.backdoor)
    assert line in err and (hits["hs"] == 0).all() and (hits["rh"] != 0).any()  # backdoor: no HS weight
    same, err = _query(capsys, env.backdoor, "--preset", "backdoor")
    assert "built with it" not in err
    pd.testing.assert_frame_equal(hits, same)
    other, err = _query(capsys, env.backdoor, "--preset", "fixed")  # told otherwise: HS weighted, nothing said
    assert "built with it" not in err and (other["hs"] != 0).any()
    flags, err = _query(capsys, env.backdoor, "--lambda-rh", "2")  # flags start from the index's preset
    assert line in err and (flags["hs"] == 0).all()
    plain, err = _query(capsys, env.plain)  # no preset recorded: 'default', as before, and no line
    default, _ = _query(capsys, env.plain, "--preset", "default")
    assert "built with it" not in err
    pd.testing.assert_frame_equal(plain, default)

    out = tmp_path / "sel.jsonl"
    assert main(["select", "--index", str(env.backdoor), "--queries", str(env.queries), "--top-n", "4",
                 "--out", str(out)]) == 0
    assert line in capsys.readouterr().err
    selected = pd.read_json(out, lines=True)
    assert len(selected) == 4 and (selected["hs"] == 0).all()


def test_rank_and_select_without_options_use_the_index_preset(env):
    lm = load_model(str(env.model))
    with RiseIndex.open(env.backdoor) as index:
        qfm = query_features(index, lm, QUERY)
        implied = rank(index, qfm, k=5)
        explicit = rank(index, qfm, preset_scoring("backdoor"), k=5)
        assert implied.attrs["preset_note"] == index_preset_line("backdoor", "pass options")
        assert explicit.attrs["preset_note"] == ""
        pd.testing.assert_frame_equal(implied, explicit)
        assert (implied["hs"] == 0).all()
        chosen = select(index, qfm, top_n=4)
        assert chosen.attrs["preset_note"] and (chosen["hs"] == 0).all()
        pd.testing.assert_frame_equal(chosen, select(index, qfm, preset_scoring("backdoor"), top_n=4))
    with RiseIndex.open(env.plain) as index:  # nothing recorded: the 'default' preset, as the CLI and the pages
        qfm = query_features(index, lm, QUERY)
        implied = rank(index, qfm, k=5)
        assert implied.attrs["preset_note"] == "" and (implied["hs"] != 0).any()
        pd.testing.assert_frame_equal(implied, rank(index, qfm, preset_scoring("default"), k=5))
        assert implied.attrs["weighting"]["gate"] > 0  # the per-query rule chose the weights
        assert not implied["score"].equals(rank(index, qfm, ScoreOptions(), k=5)["score"])  # not the fixed weights


def test_an_index_written_before_the_field_keeps_the_default(env, capsys, tmp_path):
    old = tmp_path / "old.duckdb"
    shutil.copy(env.backdoor, old)
    con = duckdb.connect(str(old))
    con.execute("DELETE FROM rise_manifest WHERE key = 'build_preset'")
    con.close()
    with RiseIndex.open(old) as index:
        assert index.manifest.build_preset is None
    hits, err = _query(capsys, old)
    assert "built with it" not in err and (hits["hs"] != 0).any()  # the default preset weighs HS
    # a preset this library does not know (a newer one) is ignored the same way
    con = duckdb.connect(str(old))
    con.execute("INSERT INTO rise_manifest VALUES ('build_preset', '\"future\"')")
    con.close()
    hits, err = _query(capsys, old)
    assert "built with it" not in err and (hits["hs"] != 0).any()


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    """The explorer on two indexes: a.duckdb built with the backdoor preset, b.duckdb with none recorded."""
    from rise_core.store import build_index as build

    env = build_explorer_env(tmp_path_factory.mktemp("app"), prebuild=False)
    lm = load_model(env["RISE_MODEL"])
    pool = Path(env["RISE_DATA_DIR"]) / "howdy_pool.jsonl"
    small = RiseConfig(k_r=16, k_h=8, k_g=16)
    build(Path(env["RISE_INDEX_DIR"]) / "a.duckdb", pool, lm, small, preset="backdoor")
    build(Path(env["RISE_INDEX_DIR"]) / "b.duckdb", pool, lm, small)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT))
        yield env


def _hs_weight(at) -> float:
    return at.slider(key="lambda_hs").value


@pytest.mark.parametrize("page", ["app_pages/2_Attribute.py", "app_pages/3_Compare_methods.py",
                                  "app_pages/4_Select_data.py"])
def test_scoring_pages_start_from_the_index_preset(app_env, page):
    from streamlit.testing.v1 import AppTest

    line = index_preset_line("backdoor", "pick another scoring preset")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["index_path"].endswith("a.duckdb")
    assert _hs_weight(at) == 0.0 and at.selectbox(key="scoring_preset").value == "backdoor"
    assert any(c.value == line for c in at.caption)
    at.slider(key="lambda_hs").set_value(0.5).run()  # moved by hand: the caption goes, the value stays
    assert _hs_weight(at) == 0.5 and not any(c.value == line for c in at.caption)
    at.selectbox(key="index_path").set_value(str(Path(app_env["RISE_INDEX_DIR"]) / "b.duckdb")).run()
    assert _hs_weight(at) == 0.5  # an index without a preset leaves the controls as they are (as before)
    at.selectbox(key="index_path").set_value(str(Path(app_env["RISE_INDEX_DIR"]) / "a.duckdb")).run()
    assert _hs_weight(at) == 0.0 and any(c.value == line for c in at.caption)  # back on a: its preset again


def test_build_page_records_the_picked_preset(app_env, tmp_path, monkeypatch):
    """The Build page's preset picker is `rise build --preset`: a new index remembers it ('default', the picker's
    starting value, is recorded as no preset, like a `rise build` without --preset)."""
    import time

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RISE_INDEX_DIR", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/1_Build_index.py").run()
    at.selectbox(key="build_preset").set_value("backdoor").run()
    at.text_input(key="build_name").input("picked").run()
    for name, value in (("k_r", 8), ("k_h", 4), ("k_g", 8)):
        at.number_input(key=f"cfg_{name}").set_value(value).run()
    at.number_input(key="build_limit").set_value(6).run()
    at.button(key="build").click().run()
    deadline = time.monotonic() + 60  # the build runs in a background thread; the page polls it
    while not at.success and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    assert not at.exception and at.success, [e.value for e in at.error]
    with RiseIndex.open(tmp_path / "picked.duckdb") as index:
        assert index.manifest.build_preset == "backdoor" and len(index) == 6
