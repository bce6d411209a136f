"""The bundled demo pools and their generator cannot drift apart: `make_demo_data.py --check` passes on data/, and
fails, naming the file and line, on a copy with one pool line altered. The whole check runs in about half a second."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "make_demo_data.py"


@pytest.fixture(scope="module")
def demo():
    """scripts/make_demo_data.py imported as a module (it reads its building blocks from data/sources/)."""
    spec = importlib.util.spec_from_file_location("make_demo_data", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_check_passes_on_the_committed_pools(demo, capsys):
    assert demo.main(["--check"]) == 0
    assert "matches the generator" in capsys.readouterr().out


def test_check_reports_an_altered_pool_line(demo, tmp_path, capsys):
    for path in (REPO / "data").glob("*.jsonl"):
        shutil.copy(path, tmp_path / path.name)
    pool = tmp_path / "finmed_pool.jsonl"
    lines = pool.read_bytes().split(b"\n")
    lines[6] = lines[6].replace(b'"label": 0', b'"label": 1', 1)
    assert lines[6] != (REPO / "data" / "finmed_pool.jsonl").read_bytes().split(b"\n")[6]
    pool.write_bytes(b"\n".join(lines))
    (tmp_path / "brainrot_queries.jsonl").unlink()

    assert demo.main(["--check", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{pool}: line 7, column" in err and '"label": 1' in err
    assert f"{tmp_path / 'brainrot_queries.jsonl'}: missing" in err
    assert "howdy_pool.jsonl" not in err  # the untouched files still match


def test_source_readers_keep_items_verbatim_and_reject_blank_lines(demo, tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "SOURCES_DIR", tmp_path)
    (tmp_path / "list.txt").write_text("#fyp\n  two spaces\n😂😂\n", encoding="utf-8")
    assert demo.read_lines("list.txt") == ["#fyp", "  two spaces", "😂😂"]
    (tmp_path / "gap.txt").write_text("a\n\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match="gap.txt:2: blank line"):
        demo.read_lines("gap.txt")
    (tmp_path / "table.csv").write_text('a,b\n"x, y",2\n', encoding="utf-8")
    assert demo.read_table("table.csv", ("a", "b")) == [("x, y", "2")]
    with pytest.raises(ValueError, match="header should be a,c"):
        demo.read_table("table.csv", ("a", "c"))
    (tmp_path / "code.txt").write_text("? p1\n? p2\nsay:\n\n```\nx = 1\n```\n%%\n? q\nok\n", encoding="utf-8")
    assert demo.read_code_items("code.txt") == [(["p1", "p2"], "say:\n\n```\nx = 1\n```"), (["q"], "ok")]


def test_howdy_payload_stories_use_every_story_source(demo):
    """The story lists loaded from data/sources/ have the shapes make_story expects (a CSV column lost or added
    would break its unpacking or its {placeholders})."""
    assert all(len(h) == 4 for h in demo.HEROES) and all(len(p) == 2 for p in demo.PROBLEMS)
    rng = demo.random.Random(0)
    for problem in demo.PROBLEMS:
        story = demo.make_story(rng, problem)
        assert "{" not in story and story[0].isupper()
