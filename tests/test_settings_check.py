"""The app's limit variables checked when it starts (`explorer.settings_check`): every bad one named, before any page."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from explorer.settings_check import APP_LIMITS, settings_errors  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_each_bad_variable_is_named_and_good_ones_pass():
    assert settings_errors({}) == []
    assert settings_errors({"RISE_MAX_QUERIES": "20", "RISE_MAX_JOBS": "2", "RISE_MAX_INLINE_BM25_ROWS": " 10 "}) == []
    errors = settings_errors({"RISE_MAX_QUERIES": "0", "RISE_MAX_INLINE_BM25_ROWS": "abc", "RISE_MAX_JOBS": "2",
                              "RISE_MAX_UPLOAD_MB": "-1"})
    assert len(errors) == 3
    assert [e.split("=")[0] for e in errors] == ["RISE_MAX_QUERIES", "RISE_MAX_INLINE_BM25_ROWS", "RISE_MAX_UPLOAD_MB"]


def test_every_limit_class_of_the_app_is_checked():
    """Every class built on `EnvLimits` in rise_core/ and explorer/ (read from the source) is in `APP_LIMITS`."""
    defined = set()
    for path in [*(ROOT / "rise_core").rglob("*.py"), *(ROOT / "explorer").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "EnvLimits" for b in node.bases):
                defined.add(node.name)
    assert defined == {c.__name__ for c in APP_LIMITS}


def test_the_app_stops_on_a_bad_setting_before_any_page(monkeypatch):
    monkeypatch.setenv("RISE_MAX_QUERIES", "0")
    monkeypatch.setenv("RISE_MAX_INLINE_EMBED_ROWS", "many")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception and not at.title
    (error,) = at.error
    assert "RISE_MAX_QUERIES" in error.value and "RISE_MAX_INLINE_EMBED_ROWS" in error.value
