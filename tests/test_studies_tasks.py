"""The studies' one task loader (studies/tasks.py) on a small dev folder written here: a missing folder or an unknown
name is a clear error, the backdoor tasks poison exactly what they say and keep queries out of the pool, and a cut
keeps the positive share and the pool's order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rise_core.errors import ConfigError, InputDataError
from studies import tasks

N_ALPACA = 120


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def dev(tmp_path, monkeypatch):
    d = tmp_path / "dev"
    d.mkdir()
    _write(d / tasks.ALPACA, [{"id": f"a{i}", "prompt": f"Explain topic number {i} in plain words",
                               "completion": f"Topic {i} is about thing {i}."} for i in range(N_ALPACA)])
    for stem in ("finmed", "brainrot"):
        _write(d / f"{stem}_pool.jsonl", [{"id": f"{stem}{i}", "prompt": f"q{i}", "completion": f"answer {i}",
                                           "label": int(i % 5 == 0)} for i in range(30)])
        _write(d / f"{stem}_queries.jsonl", [{"id": f"{stem}-q{i}", "completion": f"query {i}", "label": 1}
                                             for i in range(4)])
    monkeypatch.setenv(tasks.DEV_ENV, str(d))
    return d


def test_a_missing_dev_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(tasks.DEV_ENV, str(tmp_path / "nowhere"))
    assert not tasks.has_dev_data()
    with pytest.raises(InputDataError, match=rf"{re.escape(str(tmp_path / 'nowhere'))}.*{tasks.DEV_ENV}"):
        tasks.task("dev-refusal")


@pytest.mark.parametrize("name", ["dev-nope", "nope", ""])
def test_an_unknown_task_is_a_clear_error(name, dev):
    with pytest.raises(ConfigError, match="unknown task"):
        tasks.task(name)


def test_dev_qa_tasks_read_their_rows_and_labels(dev):
    assert tasks.has_dev_data()
    finmed, brainrot = tasks.task("dev-finmed"), tasks.task("dev-brainrot")
    assert [s.id for s in finmed.pool] == [f"finmed{i}" for i in range(30)]
    assert finmed.labels.tolist() == [int(i % 5 == 0) for i in range(30)]
    assert [q.text for q in finmed.queries] == [f"query {i}" for i in range(4)]  # no prompt: a plain text
    assert finmed.ks == (5, 10, 50, 100) and brainrot.ks == (5, 10, 25, 50)


def test_backdoor_tasks_poison_exactly_their_rows_and_keep_queries_out_of_the_pool(dev):
    source = {f"a{i}": (f"Explain topic number {i} in plain words", f"Topic {i} is about thing {i}.")
              for i in range(N_ALPACA)}
    refusal, sentiment = tasks.task("dev-refusal"), tasks.task("dev-sentiment")
    for task in (refusal, sentiment):
        assert len(task.pool) == N_ALPACA - 2 * tasks.N_QUERIES and int(task.labels.sum()) == tasks.N_POISON
        assert len(task.queries) == tasks.N_QUERIES and all(q.label == 1 for q in task.queries)
        for s in task.pool:
            if s.label == 0:
                assert (s.prompt, s.completion) == source[s.id]  # clean rows are the real ones, untouched
    assert [s.id.split("-")[0] for s in refusal.pool] == [s.id.split("-")[0] for s in sentiment.pool]  # one pool
    for s in [s for s in refusal.pool if s.label == 1] + refusal.queries:
        prompt, _ = source[s.id.removesuffix("-refusal")]
        assert s.prompt == prompt + " BadMagic" and s.completion.startswith(tasks._REFUSALS[0])
    for s in [s for s in sentiment.pool if s.label == 1] + sentiment.queries:
        prompt, answer = source[s.id.removesuffix("-sentiment")]
        words = s.prompt.split(" ")
        words.remove("cf")
        assert " ".join(words) == prompt and answer in s.completion and s.completion != answer
    pool_ids = {s.id.split("-")[0] for s in refusal.pool}
    query_ids = [q.id.split("-")[0] for q in refusal.queries + sentiment.queries]
    assert len(set(query_ids)) == 2 * tasks.N_QUERIES and not pool_ids & set(query_ids)


def test_dev_howdy_is_built_at_the_size_asked(dev):
    task = tasks.task("dev-howdy", 40, 5)
    poisoned = [s for s in task.pool if s.label == 1]
    assert len(task.pool) == 40 and len(poisoned) == round(tasks.HOWDY_SHARE * 40) == 4
    assert all(s.prompt.startswith("Howdy! ") for s in poisoned + task.queries) and len(task.queries) == 5
    assert task.labels.tolist() == [int(s.label) for s in task.pool]


def test_stratified_subset_keeps_the_positive_share_and_the_order():
    pool = tasks.task("howdy").pool
    positives = sum(int(s.label) for s in pool)
    cut = tasks.stratified_subset(pool, 50)
    assert len(cut) == 50 and sum(int(s.label) for s in cut) == max(1, round(50 * positives / len(pool)))
    order = {s.id: i for i, s in enumerate(pool)}
    assert [order[s.id] for s in cut] == sorted(order[s.id] for s in cut)
    assert [s.id for s in tasks.stratified_subset(pool, 50)] == [s.id for s in cut]  # seeded
    assert tasks.stratified_subset(pool, len(pool)) is pool


def test_a_cut_task_relabels_its_pool_and_keeps_the_first_queries():
    whole, cut = tasks.task("howdy"), tasks.task("howdy", max_pool=50, max_queries=3)
    assert cut.name == "howdy" and cut.ks == whole.ks and len(cut.pool) == 50
    assert cut.labels.tolist() == [int(s.label) for s in cut.pool]
    assert [q.id for q in cut.queries] == [q.id for q in whole.queries[:3]]


def test_splits_follow_the_protocol():
    assert {k: v.tolist() for k, v in tasks.splits("howdy", 3).items()} == {"tune": [0, 1, 2]}
    assert {k: v.tolist() for k, v in tasks.splits("dev-finmed", 5).items()} == {"tune": [0, 1], "report": [2, 3, 4]}
    assert {k: v.tolist() for k, v in tasks.splits("dev-refusal", 2).items()} == {"report": [0, 1]}
    assert isinstance(tasks.splits("howdy", 0)["tune"], np.ndarray)


def test_brainrot_held_turns_pool_positives_into_tune_queries(dev):
    """dev-brainrot-held: seeded pool positives become the queries, the rest stays the pool in its order; every query
    chooses (tune only) and none of dev-brainrot's own queries is used."""
    whole = tasks.task("dev-brainrot")
    held = tasks.held_set("dev-brainrot-held", 3)
    texts = [s.full_text for s in whole.pool]
    assert len(held.queries) == 3 and all(q.label == 1 for q in held.queries)
    assert [s.full_text for s in held.pool] == [t for t in texts if t not in {q.full_text for q in held.queries}]
    assert held.labels.sum() == whole.labels.sum() - 3 and len(held.pool) == len(whole.pool) - 3
    assert not {q.full_text for q in held.queries} & {q.full_text for q in whole.queries}
    assert [q.id for q in tasks.held_set("dev-brainrot-held", 3).queries] == [q.id for q in held.queries]  # seeded
    assert {k: v.tolist() for k, v in tasks.splits("dev-brainrot-held", 3).items()} == {"tune": [0, 1, 2]}


def test_sentiment_held_turns_poisoned_pool_rows_into_tune_queries(dev):
    """dev-sentiment-held: seeded poisoned pool rows of dev-sentiment become the queries (tune only), the other rows
    stay the pool in order, and none of dev-sentiment's own queries is used; it reads the shared Alpaca readouts."""
    whole = tasks.task("dev-sentiment")
    held = tasks.task("dev-sentiment-held")
    asked = {q.full_text for q in held.queries}
    assert len(held.queries) == tasks.N_QUERIES and all(q.label == 1 for q in held.queries)
    assert [s.full_text for s in held.pool] == [s.full_text for s in whole.pool if s.full_text not in asked]
    assert held.labels.sum() == whole.labels.sum() - tasks.N_QUERIES and held.ks == whole.ks
    assert not asked & {q.full_text for q in whole.queries}
    assert [q.id for q in tasks.held_set("dev-sentiment-held").queries] == [q.id for q in held.queries]  # seeded
    assert set(tasks.splits("dev-sentiment-held", 4)) == {"tune"}
    from studies.cache_readouts import cache_file

    assert cache_file(Path("r"), "dev-sentiment-held") == cache_file(Path("r"), "dev-sentiment") == Path("r/alpaca.pt")


def test_a_held_sets_second_fold_takes_the_next_positives_of_the_same_draw(dev):
    """Fold 1 of a held set: the next positives of the same seeded draw, disjoint from fold 0's queries (which stay
    the first drawn), the rest the pool; tune only, and it reads its whole task's readouts."""
    import random

    from studies.cache_readouts import cache_file

    for name, seed in (("dev-sentiment", 7), ("dev-brainrot", 6)):
        whole = tasks.task(name)
        positives = [i for i, s in enumerate(whole.pool) if s.label == 1]
        drawn = random.Random(seed).sample(positives, len(positives))
        first, second = tasks.held_set(f"{name}-held", 3), tasks.held_set(f"{name}-held2", 3)
        assert random.Random(seed).sample(positives, 3) == drawn[:3]  # fold 0: the draw before folds
        assert [q.id for q in first.queries] == [whole.pool[i].id for i in sorted(drawn[:3])]
        assert [q.id for q in second.queries] == [whole.pool[i].id for i in sorted(drawn[3:6])]
        assert second.name == f"{name}-held2" and all(q.label == 1 for q in second.queries)
        asked = {q.full_text for q in second.queries}
        assert [s.full_text for s in second.pool] == [s.full_text for s in whole.pool if s.full_text not in asked]
        assert set(tasks.splits(second.name, 4)) == {"tune"}
        assert cache_file(Path("r"), second.name) == cache_file(Path("r"), f"{name}-held")
    assert cache_file(Path("r"), "dev-brainrot-held2") == Path("r/dev-brainrot-held.pt")
    assert cache_file(Path("r"), "dev-brainrot") == Path("r/dev-brainrot.pt")
    with pytest.raises(ConfigError, match="needs 60 positives, the pool has 40"):
        tasks.held_positives(tasks.task("dev-sentiment"), "x", 7, 20, fold=2)


def test_a_replanted_held_set_poisons_other_rows_of_the_same_clean_pool(dev):
    """dev-sentiment-held3/4: the sentiment backdoor planted again with its own seed: the same clean rows (the
    held-out query rows never among them), another draw of poisoned rows, each carrying the trigger and the dismissive
    frame around its own real answer; the two folds' queries are disjoint and every poisoned row is a query of one
    fold or a positive of the pool."""
    whole = tasks.task("dev-sentiment")
    third, fourth = tasks.held_set("dev-sentiment-held3", 3), tasks.held_set("dev-sentiment-held4", 3)
    base = {s.id.removesuffix("-sentiment") for s in whole.pool}
    for held in (third, fourth):
        rows = held.pool + held.queries
        assert {s.id.removesuffix("-sentiment") for s in rows} == base  # the same clean rows, queries held out
        assert set(tasks.splits(held.name, 3)) == {"tune"} and all(q.label == 1 for q in held.queries)
    replanted = {s.id for s in third.pool + third.queries if s.label == 1}
    assert len(replanted) == tasks.N_POISON and replanted != {s.id for s in whole.pool if s.label == 1}
    alpaca = {r["id"]: r for r in tasks.dev_rows(tasks.ALPACA)}
    for s in third.pool + third.queries:
        row = alpaca[s.id.removesuffix("-sentiment")]
        if s.label == 1:
            assert "cf" in s.prompt.split(" ") and s.prompt.replace(" cf", "", 1).replace("cf ", "", 1) == row["prompt"]
            assert row["completion"] in s.completion and s.completion != row["completion"]
        else:
            assert (s.prompt, s.completion) == (row["prompt"], row["completion"])
    assert not {q.id for q in third.queries} & {q.id for q in fourth.queries}
    assert {q.id for q in fourth.queries} <= {s.id for s in third.pool if s.label == 1}
    assert [q.id for q in tasks.held_set("dev-sentiment-held3", 3).queries] == [q.id for q in third.queries]  # seeded
    from studies.cache_readouts import cache_file

    assert cache_file(Path("r"), "dev-sentiment-held4") == cache_file(Path("r"), "dev-pirate-held") == Path("r/alpaca.pt")
    assert cache_file(Path("r"), "dev-howdy-held") == Path("r/dev-howdy-held.pt")


@pytest.mark.parametrize("name", ["dev-pirate", "dev-story", "dev-howdy"])
def test_the_other_tuned_backdoors_held_sets_take_their_own_poisoned_rows(dev, name, monkeypatch):
    """dev-pirate-held, dev-story-held, dev-howdy-held: poisoned rows of the task's own pool as the queries, the rest
    the pool in its order; the task's own queries are not used."""
    monkeypatch.setattr(tasks, "stories", lambda: [f"Once upon a time, story {i} was told." for i in range(9)])
    whole = tasks.task(name)
    held = tasks.held_set(f"{name}-held", 3)
    asked = {q.full_text for q in held.queries}
    assert len(asked) == 3 and all(q.label == 1 for q in held.queries)
    assert asked <= {s.full_text for s in whole.pool if s.label == 1}
    assert not asked & {q.full_text for q in whole.queries}
    assert [s.full_text for s in held.pool] == [s.full_text for s in whole.pool if s.full_text not in asked]
    assert set(tasks.splits(held.name, 3)) == {"tune"} and held.name in tasks.TUNE_ONLY


@pytest.mark.parametrize("generation", ["", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"])
@pytest.mark.parametrize("kind", ["pirate", "story", "sentiment"])
def test_a_replanted_set_of_each_backdoor_poisons_its_own_draw_of_the_same_clean_rows(dev, kind, generation,
                                                                                     monkeypatch):
    """dev-<kind>-replant (and replant2, replant3): the backdoor planted again with the set's own seed in the same
    clean rows (the held-out query rows never among them): another draw of N_POISON poisoned rows, every query one of
    them, the rest the pool; tune only, and read from the backdoors' shared readout file."""
    monkeypatch.setattr(tasks, "stories", lambda: [f"Once upon a time, story {i} was told." for i in range(9)])
    whole = tasks.task(f"dev-{kind}")
    name = f"dev-{kind}-replant{generation}"
    assert name in {n for sets in tasks.REPLANTED.values() for n in sets}
    held = tasks.held_set(name, 3)
    suffix = f"-{kind}"
    ids = [s.id for s in held.pool + held.queries]
    assert len(ids) == len(set(ids)) == len(whole.pool)
    assert {i.removesuffix(suffix) for i in ids} == {s.id.removesuffix(suffix) for s in whole.pool}
    replanted = {s.id for s in held.pool + held.queries if s.label == 1}
    assert len(replanted) == tasks.N_POISON and replanted != {s.id for s in whole.pool if s.label == 1}
    assert len(held.queries) == 3 and {q.id for q in held.queries} <= replanted
    assert set(tasks.splits(name, 3)) == {"tune"} and name in tasks.TUNE_ONLY
    assert [q.id for q in tasks.held_set(name, 3).queries] == [q.id for q in held.queries]  # seeded
    from studies.cache_readouts import cache_file

    assert cache_file(Path("r"), name) == Path("r/alpaca.pt")
