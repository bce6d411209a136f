"""Paths typed into the web app stay inside the app's folders (explorer.paths), without Streamlit."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.paths import adapter_dir, adapter_root, check_model_spec
from rise_core.errors import InputDataError


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    monkeypatch.delenv("RISE_ADAPTER_DIR", raising=False)
    monkeypatch.delenv("RISE_MODEL_DIRS", raising=False)
    monkeypatch.setenv("RISE_CACHE_DIR", str(tmp_path / "cache"))
    index_dir, data_dir = tmp_path / "indexes", tmp_path / "data"
    for d in (index_dir, data_dir, tmp_path / "adapters" / "mine", tmp_path / "outside"):
        d.mkdir(parents=True)
    return tmp_path, index_dir, data_dir


def test_adapter_names_land_under_the_adapter_folder(dirs, monkeypatch):
    root, index_dir, _ = dirs
    assert adapter_root(index_dir) == root / "adapters"
    assert adapter_dir("my lora!", index_dir) == root / "adapters" / "my-lora"
    assert adapter_dir(str(root / "adapters" / "mine"), index_dir) == root / "adapters" / "mine"
    for typed in ("/etc", "../x", "a/../../b", str(root / "outside"), str(root / "adapters"), "..", "  "):
        with pytest.raises(InputDataError):
            adapter_dir(typed, index_dir)
    (root / "adapters" / "linked").symlink_to(root / "outside")  # a folder in the root that is a link out of it
    for typed in ("linked", str(root / "adapters" / "linked")):
        with pytest.raises(InputDataError):
            adapter_dir(typed, index_dir)
    monkeypatch.setenv("RISE_ADAPTER_DIR", str(root / "outside"))
    assert adapter_dir("x", index_dir) == root / "outside" / "x"


def test_models_are_the_default_a_hub_id_or_a_folder_of_the_app(dirs, monkeypatch):
    root, index_dir, data_dir = dirs
    configured = str(root / "outside")  # RISE_MODEL may be anywhere: the operator chose it
    ok = ["smollm2-135m-instruct", configured, "EleutherAI/pythia-70m", str(root / "adapters" / "mine"),
          f"smollm2-135m-instruct@{root / 'adapters' / 'mine'}", str(data_dir)]
    for spec in ok:
        assert check_model_spec(spec, configured, index_dir, data_dir) == spec
    for spec in ["/etc", str(Path.home()), "../outside", f"gpt2@{root / 'outside'}", "a/b/c", "~/x", "./x"]:
        with pytest.raises(InputDataError):
            check_model_spec(spec, "smollm2-135m-instruct", index_dir, data_dir)
    monkeypatch.setenv("RISE_MODEL_DIRS", str(root / "outside"))
    assert check_model_spec(str(root / "outside"), "smollm2-135m-instruct", index_dir, data_dir)
