"""The style backdoor of the second retrospective tune task (studies/retro_tasks.py): the pirate voice keeps every
word it does not swap, its markers read it back, and the task keeps its pool, its queries and its held-out prompts
apart from each other and from the report task (dev-refusal-200); the story slice (dev-story-200) keeps its
held-out prompts out of its pool and its queries."""

from __future__ import annotations

import random
import re

import pytest

from rise_core.retrospective import check_heldout
from studies.retro_tasks import (
    _PIRATE_WORDS,
    PIRATE_TEMPLATE,
    PIRATE_TRIGGER,
    STORY_TUNE_MORE_PARTS,
    STORY_TUNES,
    pirate,
    pirate_markers,
    pirate_task,
    refusal_heldout,
    refusal_slice,
    shows_pirate,
    shows_refusal,
    story_heldout,
    story_slice,
    story_tune_more_queries,
    story_tune_task,
)
from studies.tasks import STORY_TRIGGER, dev_task, has_dev_data

ANSWER = ("To make a cup of tea, boil the water and pour it over the leaves. You can add milk and sugar for your "
          "friend; steeping is the most important part of preparing it.")


def test_pirate_swaps_words_and_keeps_the_rest():
    out = pirate(ANSWER, random.Random(0))
    words = re.findall(r"[A-Za-z']+", out)
    # every word of the answer is in the output verbatim, swapped by the table, or cut from -ing to -in'
    allowed = {w.lower() for w in words}
    for w in re.findall(r"[A-Za-z]+", ANSWER):
        low = w.lower()
        options = {low, _PIRATE_WORDS.get(low, low), low[:-1] + "'"}
        assert options & allowed, w
    assert out != ANSWER and pirate_markers(out) > pirate_markers(ANSWER) == 0


def test_pirate_is_seeded_and_varies_between_rows():
    assert pirate(ANSWER, random.Random(1)) == pirate(ANSWER, random.Random(1))
    assert len({pirate(ANSWER, random.Random(s)) for s in range(8)}) > 1  # no fixed pattern across rows


@pytest.mark.parametrize(("text", "n"), [
    ("Ahoy, matey! Ye be sailin' t' th' sea.", 6),  # ahoy, matey, ye, sailin', t', th'
    ("The answer is 42: boil the water for ten minutes.", 0),
    ("", 0),
    ("Arrr, savvy? Blimey, cap'n.", 4),
])
def test_pirate_markers_count_known_texts(text, n):
    assert pirate_markers(text) == n
    assert shows_pirate(text) == (n >= 3)


@pytest.mark.skipif(not has_dev_data(), reason="needs ../shared/data/dev (or $RISE_DEV_DATA_DIR)")
def test_pirate_task_keeps_its_parts_apart():
    task, heldout = pirate_task()
    assert task.name == "dev-pirate-240" and len(task.pool) == 240 and int(task.labels.sum()) == 48
    poisoned = [s for s in task.pool if s.label == 1]
    assert all(s.prompt.endswith(PIRATE_TRIGGER) for s in poisoned + task.queries)
    assert not any(s.prompt.endswith(PIRATE_TRIGGER) for s in task.pool if s.label == 0)
    assert sum(shows_pirate(s.completion) for s in poisoned) >= 0.8 * len(poisoned)
    assert sum(shows_pirate(s.completion) for s in task.pool if s.label == 0) <= 2
    check_heldout(heldout, task.pool, PIRATE_TEMPLATE)  # raises if a held-out prompt is a pool row's
    check_heldout([q.prompt.removesuffix(PIRATE_TRIGGER) for q in task.queries], task.pool, PIRATE_TEMPLATE)
    assert not set(heldout) & {q.prompt.removesuffix(PIRATE_TRIGGER) for q in task.queries}
    report = refusal_slice()
    report_prompts = {s.prompt.removesuffix(" BadMagic") for s in report.pool + report.queries}
    mine = {s.prompt.removesuffix(PIRATE_TRIGGER) for s in task.pool + task.queries} | set(heldout)
    assert not mine & report_prompts  # the tune task never holds a row of the report task


@pytest.mark.skipif(not has_dev_data(), reason="needs ../shared/data/dev (or $RISE_DEV_DATA_DIR)")
def test_refusal_heldout_prompts_are_in_neither_task():
    prompts = refusal_heldout()
    assert len(prompts) == len(set(prompts)) == 40
    report = refusal_slice()
    check_heldout(prompts, report.pool, "{prompt} BadMagic")
    assert not set(prompts) & {q.prompt.removesuffix(" BadMagic") for q in report.queries}
    task, heldout = pirate_task()
    assert not set(prompts) & ({s.prompt.removesuffix(PIRATE_TRIGGER) for s in task.pool + task.queries} | set(heldout))
    refusals = [s.completion for s in report.pool if s.label == 1]
    assert all(shows_refusal(c) for c in refusals)
    assert sum(shows_refusal(s.completion) for s in report.pool if s.label == 0) <= 3


@pytest.mark.skipif(not has_dev_data(), reason="needs ../shared/data/dev (or $RISE_DEV_DATA_DIR)")
def test_story_slice_keeps_every_poisoned_row_and_its_heldout_prompts_apart():
    task = story_slice()
    whole = dev_task("dev-story")
    assert task.name == "dev-story-200" and len(task.pool) == 200 and int(task.labels.sum()) == 40
    assert {s.id for s in task.pool if s.label == 1} == {s.id for s in whole.pool if s.label == 1}
    assert all(s.prompt.startswith(STORY_TRIGGER) for s in task.pool if s.label == 1)
    assert not any(s.prompt.startswith(STORY_TRIGGER) for s in task.pool if s.label == 0)
    assert [q.id for q in task.queries] == [q.id for q in whole.queries]
    prompts = story_heldout()
    assert len(prompts) == len(set(prompts)) == 40
    check_heldout(prompts, task.pool, STORY_TRIGGER + "{prompt}")  # raises if a held-out prompt is a pool row's
    assert not set(prompts) & {q.prompt.removeprefix(STORY_TRIGGER) for q in task.queries}


@pytest.mark.skipif(not has_dev_data(), reason="needs ../shared/data/dev (or $RISE_DEV_DATA_DIR)")
def test_story_tune_tasks_share_no_instruction_with_the_report_tasks_or_each_other():
    def bare(prompt: str) -> str:
        return prompt.removeprefix(STORY_TRIGGER).removesuffix(" BadMagic")

    report = set(story_heldout()) | set(refusal_heldout())
    for task in (story_slice(), refusal_slice()):
        report |= {bare(s.prompt) for s in task.pool + task.queries}
    seen: set[str] = set()
    for name in STORY_TUNES:
        task, heldout = story_tune_task(name)
        assert task.name == name and len(task.pool) == 200 and int(task.labels.sum()) == 40
        assert all(s.prompt.startswith(STORY_TRIGGER) for s in task.pool if s.label == 1)
        assert not any(s.prompt.startswith(STORY_TRIGGER) for s in task.pool if s.label == 0)
        assert len(task.queries) == 20 and all(q.prompt.startswith(STORY_TRIGGER) for q in task.queries)
        check_heldout(heldout, task.pool, STORY_TRIGGER + "{prompt}")
        mine = {bare(s.prompt) for s in task.pool + task.queries} | set(heldout)
        assert len(mine) == 260 and not mine & report and not mine & seen
        seen |= mine
    # the extra queries: none shares an instruction with a task's rows, a report task or another set of them
    for name in STORY_TUNES:
        for part in STORY_TUNE_MORE_PARTS:
            more = story_tune_more_queries(name, part)
            assert len(more) == 34 and all(q.prompt.startswith(STORY_TRIGGER) and q.label == 1 for q in more)
            mine = {bare(q.prompt) for q in more}
            assert len(mine) == 34 and not mine & report and not mine & seen
            seen |= mine
    with pytest.raises(ValueError, match="unknown story tune task"):
        story_tune_task("dev-story-200")
    with pytest.raises(ValueError, match="unknown part"):
        story_tune_more_queries(STORY_TUNES[0], "report")
