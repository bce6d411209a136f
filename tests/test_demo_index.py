"""The one-click demo's shipped index: built as the demo builds it, installed as a checked copy (never written in
place), refused when stale (other model, config, pool or index format), and the real shipped file kept current."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import torch
from explorer_env import build_finetuned_env

from explorer.demo import (
    BACKDOOR_ADAPTER,
    DEMO_OWNER,
    SHIPPED_INDEX,
    build_shipped_index,
    demo_setup,
    index_problems,
    install_shipped_index,
    pool_digest,
    pool_id_hashes,
)
from rise_core.adapters import adapter_digest, read_manifest
from rise_core.models import load_model
from rise_core.samples import Sample
from rise_core.store import RiseIndex

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def tuned_env(tmp_path_factory):
    """A tiny base model, a LoRA adapter fine-tuned on the tiny Howdy! pool in the data folder (the backdoor demo),
    and the demo index shipped in that data folder."""
    env = build_finetuned_env(tmp_path_factory.mktemp("demo"))
    data_dir = Path(env["RISE_DATA_DIR"])
    build_shipped_index(data_dir, env["RISE_BASE_MODEL"], data_dir / SHIPPED_INDEX, batch_size=4)
    return env


@pytest.fixture
def setup(tuned_env, tmp_path):
    return demo_setup(tuned_env["RISE_DATA_DIR"], tuned_env["RISE_BASE_MODEL"], tmp_path)


@pytest.fixture(scope="module")
def tuned(tuned_env):
    return load_model(tuned_env["RISE_MODEL"])


def _features(path: Path) -> dict[str, torch.Tensor]:
    with RiseIndex.open(path) as index:
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
    return {name: getattr(fm, name) for name in ("rh", "gh", "hs", "rh_norm", "gh_norm", "hs_norm")} | {"ids": ids}


def test_the_shipped_index_names_no_path_of_the_machine_that_built_it(tuned_env, setup):
    shipped = Path(tuned_env["RISE_DATA_DIR"]) / SHIPPED_INDEX
    assert setup.backdoored and setup.preset == "retrospective"
    with RiseIndex.open(shipped) as index:
        m = index.manifest
        assert m.model_id == BACKDOOR_ADAPTER and m.model_info["adapter"]["path"] == BACKDOOR_ADAPTER
        assert m.owner == DEMO_OWNER and m.status == "complete" and len(index) == len(setup.pool.samples)
    assert not list(shipped.parent.glob("*.wal")) and str(tuned_env["RISE_DATA_DIR"]).encode() not in shipped.read_bytes()


def test_the_shipped_index_is_installed_as_a_checked_copy(tuned_env, setup, tuned):
    shipped = Path(tuned_env["RISE_DATA_DIR"]) / SHIPPED_INDEX
    before, stamp = sha256(shipped), shipped.stat().st_mtime_ns
    assert install_shipped_index(shipped, setup, tuned) == []
    assert sha256(shipped) == before and shipped.stat().st_mtime_ns == stamp  # only read
    assert sorted(p.name for p in setup.index_path.parent.iterdir()) == [setup.index_path.name]  # no leftovers
    with RiseIndex.open(setup.index_path) as copy:
        m = copy.manifest
        assert m.model_id == setup.model_id == tuned.model_id  # this machine's adapter path: the index loads it
        assert m.model_info["adapter"]["path"] == tuned.adapter["path"]
        assert m.owner == DEMO_OWNER and m.sources[-1] == f"{setup.label}, shipped {shipped.name}"
        assert index_problems(copy, setup, tuned, whole=True) == []
    ours, theirs = _features(setup.index_path), _features(shipped)
    assert ours["ids"] == theirs["ids"]
    for name in ("rh", "gh", "hs", "rh_norm", "gh_norm", "hs_norm"):
        assert torch.equal(ours[name], theirs[name]), name  # a byte copy: the same values


def _other_pool(setup):
    first = setup.pool.samples[0]
    samples = [dataclasses.replace(first, completion=first.completion + " changed"), *setup.pool.samples[1:]]
    return dataclasses.replace(setup, pool=dataclasses.replace(setup.pool, samples=samples))


@pytest.mark.parametrize(("change", "expected"), [
    ("config", "config"), ("preset", "preset"), ("pool", "1 samples not in the pool or with other text"),
    ("more rows", "of the pool's"), ("model", "model fingerprint"), ("format", "index format"),
])
def test_a_stale_shipped_index_is_refused_and_nothing_is_left(tuned_env, setup, tuned, monkeypatch, change, expected):
    from rise_core.store import schema

    shipped = Path(tuned_env["RISE_DATA_DIR"]) / SHIPPED_INDEX
    lm = tuned
    if change == "config":
        setup = dataclasses.replace(setup, config=dataclasses.replace(setup.config, k_r=setup.config.k_r * 2))
    elif change == "preset":
        setup = dataclasses.replace(setup, preset=None)
    elif change == "pool":
        setup = _other_pool(setup)
    elif change == "more rows":
        extra = Sample(prompt="a new prompt", completion="a new answer", id="new-row")
        samples = [*setup.pool.samples, extra]
        setup = dataclasses.replace(setup, pool=dataclasses.replace(setup.pool, samples=samples))
    elif change == "model":
        lm = load_model(tuned_env["RISE_BASE_MODEL"])  # the base without the adapter
    else:
        monkeypatch.setattr(schema, "FORMAT_VERSION", schema.FORMAT_VERSION + 1)  # this code writes a newer format
    before = sha256(shipped)
    problems = install_shipped_index(shipped, setup, lm)
    assert len(problems) == 1 and expected in problems[0], problems
    assert not setup.index_path.exists() and list(setup.index_path.parent.iterdir()) == []
    assert sha256(shipped) == before


@contextlib.contextmanager
def app_on(tuned_env: dict[str, str], index_dir: Path) -> Iterator[None]:
    """The app's environment for a demo click: the base model with the demo's adapter in the data folder, and the
    test's own index folder."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in tuned_env.items():
            mp.setenv(key, value)
        mp.setenv("RISE_MODEL", tuned_env["RISE_BASE_MODEL"])
        mp.setenv("RISE_INDEX_DIR", str(index_dir))
        mp.syspath_prepend(str(ROOT))
        yield


@pytest.mark.parametrize(("found", "note"), [("stale", "did not fit (1 samples not in the pool"),
                                            ("partial", "was not finished")])
def test_the_home_demo_uses_the_shipped_index_and_names_the_adapter_not_its_path(tuned_env, tmp_path, found, note):
    """No build: the first run after the click has the backdoor demo; a stale or partial index found in the index
    folder is set aside (kept), not trusted or resumed; the page shows the adapter's name, never a server path."""
    from streamlit.testing.v1 import AppTest

    index_dir = tmp_path / "indexes"
    setup = demo_setup(tuned_env["RISE_DATA_DIR"], tuned_env["RISE_BASE_MODEL"], index_dir)
    index_dir.mkdir()
    stale = index_dir / setup.index_path.name
    shutil.copyfile(Path(tuned_env["RISE_DATA_DIR"]) / SHIPPED_INDEX, stale)  # names the adapter by its relative path
    with RiseIndex.open(stale, read_only=False) as index:
        index.relocate_model(load_model(tuned_env["RISE_MODEL"]))
        if found == "partial":
            index.set_status("building")
    if found == "stale":
        con = duckdb.connect(str(stale))  # one stored sample's text differs from the pool's
        con.execute("UPDATE rise_samples SET content_sha1 = 'other' WHERE row = 0")
        con.close()
    with app_on(tuned_env, index_dir):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        at.button(key="demo").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert "_backdoor_demo" in at.session_state  # ready in the click's own run: nothing was built
        assert any(note in i.value for i in at.info), [i.value for i in at.info]
        assert not any("shipped with the app does not fit" in i.value for i in at.info)
        kept = [p for p in index_dir.glob("*.duckdb") if p != setup.index_path]
        assert len(kept) == 1 and kept[0].name.startswith(setup.index_path.stem + ".")
        with RiseIndex.open(setup.index_path) as index:
            assert index.manifest.sources[-1].endswith(f"shipped {Path(SHIPPED_INDEX).name}")
        shown = [m.value for m in at.markdown]
        intro = next(m for m in shown if "fine-tuned on the Howdy! pool" in m)
        assert "`howdy_backdoor`" in intro
        assert not [m for m in shown if str(tuned_env["RISE_DATA_DIR"]) in m or str(index_dir) in m]


@pytest.mark.parametrize("found", ["a viewer's click", "someone's own index"])
def test_the_home_demo_moves_nothing_it_may_not(tuned_env, tmp_path, found):
    """A viewer's click finds the demo's index stale: it may not rebuild it, so nothing is moved. An index someone
    built under the demo's name (not the demo's own) is never moved by the demo, whoever clicks; the Build page
    refuses such names to begin with."""
    from streamlit.testing.v1 import AppTest

    from explorer.build_plan import plan_index_write
    from rise_core.config import RiseConfig
    from rise_core.store import build_index

    index_dir = tmp_path / "indexes"
    setup = demo_setup(tuned_env["RISE_DATA_DIR"], tuned_env["RISE_BASE_MODEL"], index_dir)
    index_dir.mkdir()
    found_path = index_dir / setup.index_path.name
    if found == "a viewer's click":  # the demo's own index, out of date (as in the test above)
        shutil.copyfile(Path(tuned_env["RISE_DATA_DIR"]) / SHIPPED_INDEX, found_path)
        with RiseIndex.open(found_path, read_only=False) as index:
            index.relocate_model(load_model(tuned_env["RISE_MODEL"]))
            index.set_status("building")
    else:
        build_index(found_path, [{"id": "a", "text": "alice's row"}], load_model(tuned_env["RISE_BASE_MODEL"]),
                    RiseConfig(k_r=8, k_h=4, k_g=8), built_by="alice", source="hers")
    before = sha256(found_path)
    users = {"users": {"viv": {"token": "viv-token-0123456789abc", "role": "viewer"}}}
    with app_on(tuned_env, index_dir):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90)
        if found == "a viewer's click":
            at.secrets["rise"] = users
            at.run()
            at.text_input(key="_auth_token").input("viv-token-0123456789abc").run()
        else:
            at.run()
        at.button(key="demo").click().run()
        assert not at.exception, [e.value for e in at.exception]
        said = " ".join(e.value for e in at.error)
        assert ("viewer" in said and "rebuild the demo's index" in said if found == "a viewer's click"
                else "an index alice built, not the demo's" in said), said
    assert [p.name for p in index_dir.glob("*.duckdb")] == [found_path.name] and sha256(found_path) == before
    refused = plan_index_write(found_path.name, exists=False, owner="", sources=[], n_samples=None, user="alice",
                               can_edit=True, replace=False, source="hers")
    assert "kept for the Home page's demo" in refused.refusal


# --- the real shipped file ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_copy(tmp_path_factory) -> Path:
    """A copy of the shipped index (tests read a copy: the shipped file is never opened by DuckDB here)."""
    copy = tmp_path_factory.mktemp("shipped") / Path(SHIPPED_INDEX).name
    shutil.copyfile(DATA / SHIPPED_INDEX, copy)
    return copy


def test_the_shipped_index_is_what_the_demo_would_build_now(real_copy, tmp_path):
    """Without the model: this code's index format, the demo's config and preset, the whole bundled pool (ids and
    texts), and the shipped adapter's weights on the embedded default (the model's fingerprint needs the model: the
    slow test below checks it)."""
    from rise_core.default_model import DEFAULT_MODEL_ID
    from rise_core.store.schema import FORMAT_VERSION

    setup = demo_setup(DATA, DEFAULT_MODEL_ID, tmp_path)
    adapter = DATA / BACKDOOR_ADAPTER
    with RiseIndex.open(real_copy) as index:
        m = index.manifest
        assert m.format_version == FORMAT_VERSION
        assert m.config.fingerprint() == setup.config.fingerprint() and m.build_preset == setup.preset
        assert m.status == "complete" and pool_digest(index.id_hashes()) == pool_digest(pool_id_hashes(setup.pool))
        built = m.model_info["adapter"]
        assert m.model_id == BACKDOOR_ADAPTER == built["path"]
        assert built["digest"] == adapter_digest(adapter)
        assert built["base_model"] == DEFAULT_MODEL_ID
        assert built["base_fingerprint"] == read_manifest(adapter)["base_fingerprint"]


@pytest.mark.slow
def test_the_shipped_index_matches_the_real_model(real_copy, tmp_path):
    """The loaded model's fingerprint is the index's, and a few rows' features recomputed now match the stored ones.

    Tolerance: the stored unit vectors are float16, so a recomputed entry rounds to the same float16 value or, where
    float32 roundoff of the forward pass (another batch, another padding) moves it across a rounding boundary, to a
    neighbour: at most one float16 ulp at 1.0 (2**-10) plus float16 rounding of each (2**-11). Norms are stored in
    float32; the forward pass's relative roundoff (about 1e-6 per op over 30 layers) stays well under 1e-4."""
    from rise_core.default_model import DEFAULT_MODEL_ID
    from rise_core.store.batches import batch_features, encode_usable

    setup = demo_setup(DATA, DEFAULT_MODEL_ID, tmp_path)
    lm = load_model(setup.model_id)
    rows = [0, 7, 100, 554]
    with RiseIndex.open(real_copy) as index:
        assert index_problems(index, setup, lm, whole=True) == []
        stored, ids = index.feature_matrix(), index.samples()["id"].tolist()
        samples = [setup.pool.samples[r] for r in rows]
        usable, skipped = encode_usable(index.extractor(lm), list(enumerate(samples)))
        assert not skipped
        fresh = batch_features(index.extractor(lm), usable)
    for sample_id, i in zip(fresh.ids, range(len(fresh)), strict=True):
        at = ids.index(sample_id)
        for name in ("rh", "gh", "hs"):
            got, want = getattr(fresh.features, name)[i].float(), getattr(stored, name)[at].float()
            assert (got - want).abs().max() <= 2.0**-10 + 2.0**-11, (sample_id, name)
        for name in ("rh_norm", "gh_norm", "hs_norm"):
            got, want = getattr(fresh.features, name)[i], getattr(stored, name)[at]
            assert torch.allclose(got, want, rtol=1e-4), (sample_id, name, got, want)
