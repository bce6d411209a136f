"""Fresh tweet-quality sets (studies/tweet_sets.py) and the loader's fresh-<stem> tasks, on small upstream files
written here: the sets never hold a dev text nor one text twice, keep dev-brainrot's make-up and are disjoint; the
loader reads them as tune-only tasks, and a missing folder, file or a bad name is a clear error."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rise_core.errors import ConfigError, InputDataError
from studies import tasks, tweet_sets

LONG = "a plain control tweet about the weather and the game tonight, number {i}, written out at some length " * 3


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def upstream(tmp_path, monkeypatch):
    """dev-brainrot's two files (2 positives, 4 negatives: 2 posts, 2 same-author) and the three upstream files, the
    dev texts among them."""
    dev = tmp_path / "dev"
    dev.mkdir()
    positive = [LONG.format(i=i)[:250] for i in range(200)]
    _write(dev / "brainrot_pool.jsonl",
           [{"id": "p0", "prompt": "", "completion": positive[0], "label": 1, "source": "m1#0"},
            {"id": "n0", "prompt": "", "completion": "used post 0", "label": 0, "source": "x:data/twitter_posts.csv"},
            {"id": "n1", "prompt": "", "completion": "used post 1", "label": 0, "source": "x:data/twitter_posts.csv"},
            {"id": "n2", "prompt": "", "completion": "used same 0", "label": 0, "source": "x:same_author_small.json"},
            {"id": "n3", "prompt": "", "completion": "used same 1", "label": 0, "source": "x:same_author_small.json"}])
    _write(dev / "brainrot_queries.jsonl", [{"id": "q0", "prompt": "", "completion": positive[1], "label": 1}])
    monkeypatch.setenv(tasks.DEV_ENV, str(dev))
    up = tmp_path / "up"
    up.mkdir()
    control = [{"text": t} for t in positive] + [{"text": "too short"}, {"text": "é" * 250}, {"text": positive[5]}]
    (up / "control.json").write_text(json.dumps(control), encoding="utf-8")
    pd.DataFrame({"description": ["used post 0", *(f"post {i}" for i in range(1000)), None]}).to_csv(
        up / "posts.csv", index=False)
    pairs = [{"tweet_a": {"text": f"same {i} a"}, "tweet_b": {"text": "used same 1" if i == 0 else f"same {i} b"}}
             for i in range(600)]
    (up / "same.json").write_text(json.dumps({"train": pairs, "seed": 3}), encoding="utf-8")
    return up


def test_the_sets_hold_no_dev_text_no_text_twice_and_keep_dev_brainrots_make_up(upstream):
    sets = tweet_sets.build(upstream / "control.json", upstream / "posts.csv", upstream / "same.json", n_sets=2)
    assert len(sets) == 2
    dev_texts = {r["completion"] for name in ("brainrot_pool.jsonl", "brainrot_queries.jsonl")
                 for r in tasks.dev_rows(name)}
    seen = []
    for pool, queries in sets:
        assert len(pool) == 500 and sum(r["label"] for r in pool) == 50
        assert len(queries) == 20 and all(r["label"] == 1 for r in queries)
        positives = [r for r in pool + queries if r["label"] == 1]
        assert all(r["completion"].isascii() and len(r["completion"]) == 250 for r in positives)  # dev's length range
        negatives = [r for r in pool if r["label"] == 0]
        assert sum("posts.csv" in r["source"] for r in negatives) == 225  # dev-brainrot: 2 of 4 negatives are posts
        seen += [r["completion"] for r in pool + queries]
    assert not set(seen) & dev_texts
    assert len(seen) == len(set(seen))  # no text twice: within a set, nor across the two


def test_too_few_unused_rows_or_a_missing_file_is_a_clear_error_and_writes_nothing(upstream, tmp_path):
    with pytest.raises(InputDataError, match=r"not enough unused rows for 3 sets \(positives: 198 of 210"):
        tweet_sets.build(upstream / "control.json", upstream / "posts.csv", upstream / "same.json", n_sets=3)
    args = ["--posts", str(upstream / "posts.csv"), "--same-author", str(upstream / "same.json"),
            "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit, match="not enough unused rows for 3 sets"):
        tweet_sets.main(["--control", str(upstream / "control.json"), "--sets", "3", *args])
    with pytest.raises(SystemExit, match="tweet_sets: .*nowhere.json"):
        tweet_sets.main(["--control", str(upstream / "nowhere.json"), *args])
    assert not (tmp_path / "out").exists()


def test_the_sets_are_written_outside_the_repository_only(upstream, tmp_path):
    args = ["--control", str(upstream / "control.json"), "--posts", str(upstream / "posts.csv"), "--same-author",
            str(upstream / "same.json"), "--sets", "1"]
    with pytest.raises(SystemExit, match="never kept in the repository"):
        tweet_sets.main([*args, "--out", str(tasks.ROOT / "data" / "fresh")])
    assert not (tasks.ROOT / "data" / "fresh").exists()
    tweet_sets.main([*args, "--out", str(tmp_path / "fresh")])
    assert sorted(p.name for p in (tmp_path / "fresh").iterdir()) == ["tweets1_pool.jsonl", "tweets1_queries.jsonl"]


def test_later_sets_take_new_positives_and_may_take_the_earlier_negatives(upstream, tmp_path):
    """--first 2 after one set: its positives and queries are none of set 1's texts, its negatives are drawn again
    from every row dev-brainrot lacks (set 1's among them), its ids are tagged ft2; set 1 is left as it was, and
    without set 1 in the folder it is a clear error that writes nothing."""
    args = ["--control", str(upstream / "control.json"), "--posts", str(upstream / "posts.csv"), "--same-author",
            str(upstream / "same.json"), "--sets", "1"]
    out = tmp_path / "fresh"
    with pytest.raises(SystemExit, match="tweets1_pool.jsonl: --first 2 reads the sets before it"):
        tweet_sets.main([*args, "--out", str(out), "--first", "2"])
    assert not out.exists()
    with pytest.raises(SystemExit, match="--first must be at least 1"):
        tweet_sets.main([*args, "--out", str(out), "--first", "0"])
    tweet_sets.main([*args, "--out", str(out)])
    before = (out / "tweets1_pool.jsonl").read_text()
    tweet_sets.main([*args, "--out", str(out), "--first", "2"])
    assert (out / "tweets1_pool.jsonl").read_text() == before
    one, two = ([json.loads(line) for part in ("pool", "queries")
                 for line in (out / f"tweets{k}_{part}.jsonl").read_text().splitlines()] for k in (1, 2))
    assert len(two) == 520 and all(r["id"].startswith("ft2") for r in two)
    earlier = {r["completion"] for r in one}
    assert not {r["completion"] for r in two if r["label"] == 1} & earlier  # new positives and queries
    assert {r["completion"] for r in two if r["label"] == 0} & earlier  # 450 of ~1,600 negatives: some again
    dev_texts = {r["completion"] for name in ("brainrot_pool.jsonl", "brainrot_queries.jsonl")
                 for r in tasks.dev_rows(name)}
    assert not {r["completion"] for r in two} & dev_texts


def test_the_loader_reads_a_fresh_set_as_a_tune_only_task(upstream, tmp_path, monkeypatch):
    out = tmp_path / "fresh"
    tweet_sets.main(["--control", str(upstream / "control.json"), "--posts", str(upstream / "posts.csv"),
                     "--same-author", str(upstream / "same.json"), "--sets", "1", "--out", str(out)])
    monkeypatch.setenv(tasks.FRESH_ENV, str(out))
    task = tasks.task("fresh-tweets1")
    rows = [json.loads(line) for line in (out / "tweets1_pool.jsonl").read_text().splitlines()]
    assert [s.id for s in task.pool] == [r["id"] for r in rows]
    assert task.labels.tolist() == [r["label"] for r in rows]
    assert len(task.queries) == 20 and task.ks == (5, 10, 25, 50)
    assert list(tasks.splits("fresh-tweets1", 20)) == ["tune"]


def test_a_fresh_set_without_its_folder_or_file_or_with_a_bad_name_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(tasks.FRESH_ENV, raising=False)
    with pytest.raises(InputDataError, match=tasks.FRESH_ENV):
        tasks.task("fresh-tweets1")
    monkeypatch.setenv(tasks.FRESH_ENV, str(tmp_path))
    with pytest.raises(InputDataError, match="tweets9_pool.jsonl not found"):
        tasks.task("fresh-tweets9")
    with pytest.raises(ConfigError, match="a fresh set's name"):
        tasks.task("fresh-../etc")
    for bad in ("{not json", '{"id": "x", "label": 1}', "[1, 2]"):  # malformed, no completion, not a row
        (tmp_path / "bad_pool.jsonl").write_text('{"id": "a", "completion": "fine", "label": 0}\n' + bad + "\n")
        (tmp_path / "bad_queries.jsonl").write_text('{"id": "q", "completion": "fine", "label": 1}\n')
        with pytest.raises(InputDataError, match="bad_pool.jsonl, line 2: not a row with a completion"):
            tasks.task("fresh-bad")
