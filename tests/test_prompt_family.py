"""The query prompt's own family of spans: its test against the exact hypergeometric tail and Tarone's count, what
it leaves out, and the behaviour test that keeps the smaller corrected p-value of a span found by both families."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.stats import hypergeom

from rise_core import adaptive, behaviour
from rise_core.explain import TokenAttribution
from rise_core.samples import Sample
from rise_core.shared_spans import find_shared_spans, format_table, prompt_family_spans

N, N_TRIGGER = 200, 40


def _pool() -> list[Sample]:
    """200 rows; the first 40 prompts start with "Lumen:" (20% of the pool, a trigger at the share bound); every row
    tells a long story in a shared 40-word vocabulary (its word pairs each in a few rows: a thousand testable spans),
    and "Write a story" is in every prompt."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(N):
        prompt = ("Lumen: " if i < N_TRIGGER else "") + f"Write a story about the {i}th lantern."
        story = " ".join(f"v{j}" for j in rng.integers(0, 40, 60))
        rows.append(Sample(prompt=prompt, completion=story, id=f"r{i}"))
    return rows


QUERY = Sample(prompt="Lumen: Write a story about a (tiny) lantern.", completion="Once upon a time")
HITS = [0, 1, 2, 3, 4, 5, 6, 100, 101, 102]  # 7 of the top 10 hold the trigger


def _runs(text: str) -> list[str]:
    """Every run of 1 to 3 words of `text` (words as the counts split them) holding a letter, as written there."""
    found = list(re.finditer(r"\w+|[^\w\s]", text))
    runs = [text[found[j].start():found[j + n - 1].end()] for n in (1, 2, 3) for j in range(len(found) - n + 1)]
    return [r for r in runs if re.search(r"\w", r)]


def _brute_force(pool: list[Sample], hits: list[int], spans: list[str], share: float, min_in_top: int):
    """p-values and Tarone's m of the family, counted from the texts (no span counts, no vocabulary)."""
    def holds(span: str, text: str) -> bool:
        return span in text

    tested = []
    for span in spans:
        big_k = sum(holds(span, s.prompt) for s in pool)
        if min_in_top <= big_k <= share * N:
            tested.append((span, big_k, sum(holds(span, pool[h].prompt) for h in hits)))
    pmin = [hypergeom.sf(min(big_k, len(hits)) - 1, N, big_k, len(hits)) for _, big_k, _ in tested]
    m = next(m for m in range(1, len(pmin) + 1) if sum(p <= 0.05 / m for p in pmin) <= m)
    return {span: (a, big_k, hypergeom.sf(a - 1, N, big_k, len(hits)), m) for span, big_k, a in tested}, m


def test_the_family_is_the_query_prompts_rare_spans_tested_against_the_exact_tail():
    pool = _pool()
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    got = prompt_family_spans(spans, frame(HITS), QUERY.prompt, max_share=0.2, min_in_top=5)
    # the query's spans held by 5 to 40 pool prompts: "Lumen", "Lumen :", "Lumen : Write" (the 40 trigger rows)
    expected, m = _brute_force(pool, HITS, _runs(QUERY.prompt), 0.2, 5)
    assert set(expected) == {"Lumen", "Lumen:", "Lumen: Write", ": Write", ": Write a"}  # in the 40 trigger rows
    assert got.attrs["m_tarone"] == m and got.attrs["n_tested"] == 5
    assert set(got["span"]) <= set(expected) and len(got) >= 1  # windows of one phrase fold
    for row in got.itertuples():
        a, big_k, p, _ = expected[row.span]
        assert (row.in_top, row.pool_rows, row.where) == (a, big_k, "prompt")
        assert row.p_value == pytest.approx(p, rel=1e-9)  # exact sums in log space against scipy's survival function
        assert row.p_adjusted == pytest.approx(min(1.0, p * m), rel=1e-9)
        assert row.top_ranks == [1, 2, 3, 4, 5, 6, 7]


def test_the_family_leaves_out_common_and_rare_spans_and_words_the_pool_lacks():
    pool = _pool()
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    # "Write a story" is in every prompt (over the share bound); "(tiny)" in none; "lantern" in every row too
    none = prompt_family_spans(spans, frame(HITS), "Write a story about the lantern (tiny) [x]*", 0.2, min_in_top=5)
    assert none.empty and "no span of the query's prompt is in few enough pool rows" in none.attrs["verdict"]
    # under a bar of 8 of 10, no span passes and the family holds only the spans that could reach it
    high = prompt_family_spans(spans, frame(HITS), QUERY.prompt, 0.2, min_in_top=8)
    assert high.empty and "over-represented" in high.attrs["verdict"]
    assert prompt_family_spans(spans, frame([]), QUERY.prompt, 0.2).empty


def test_the_query_prompts_family_makes_a_trigger_telling_that_the_whole_hit_family_drowns():
    """Seven of ten hits hold "Lumen" (20% of the pool): over every span of ten long rows Tarone's count is large and
    the trigger is not telling; over the query prompt's few spans it is, and the test then fires on it."""
    pool = _pool()
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    whole = find_shared_spans(spans, frame(HITS), limit=None)
    whole_lumen = whole[whole["span"].astype(str).str.startswith("Lumen")]
    own = prompt_family_spans(spans, frame(HITS), QUERY.prompt, 0.2, min_in_top=5)
    assert whole.attrs["m_tarone"] > own.attrs["m_tarone"]
    assert whole_lumen.empty or adaptive.evidence_strength(whole_lumen["p_adjusted"].min()) < adaptive.BEHAVIOUR_EVIDENCE
    representation = list(range(150, 160))
    off = behaviour.candidates(spans, frame(HITS), frame(representation), QUERY, prompt_family=False)
    on = behaviour.candidates(spans, frame(HITS), frame(representation), QUERY, prompt_family=True)
    assert not any(e.span.startswith("Lumen") and e.telling for e in off)
    first = on[0]
    assert first.span.startswith("Lumen") and first.where == "prompt" and first.in_top == 7
    assert first.p_adjusted == pytest.approx(float(own["p_adjusted"].min()), rel=1e-12)
    assert first.telling and first.fires and first.lifts and first.corrected_over == "prompt"
    assert "corrected p 0.00" in first.line and "over the query prompt's spans" in first.line
    assert first.lift_spreads == adaptive.PROMPT_SPAN_LIFT  # a trigger of the prompt: its rows come first


def test_a_span_found_by_both_families_keeps_the_smaller_corrected_p_value():
    pool = _pool()
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    hits = list(range(10))  # all ten hold the trigger: both families find it
    whole = find_shared_spans(spans, frame(hits), limit=None)
    own = prompt_family_spans(spans, frame(hits), QUERY.prompt, 0.2, min_in_top=5)
    table = behaviour.shared_table(spans, frame(hits), QUERY, prompt_family=True)
    for span in set(whole["span"]) & set(own["span"]):
        merged = table.loc[(table["span"] == span) & (table["where"] == "prompt"), "p_adjusted"]
        assert len(merged) == 1
        a = whole.loc[(whole["span"] == span) & (whole["where"] == "prompt"), "p_adjusted"].min()
        b = own.loc[own["span"] == span, "p_adjusted"].min()
        assert float(merged.iloc[0]) == pytest.approx(min(a, b), rel=1e-12) and b < a
        assert table.loc[merged.index[0], "family"] == "prompt"
    assert table["statistic"].is_monotonic_decreasing
    # off, or with a query that has no prompt, the table is the whole family's
    for query, on in ((QUERY, False), (Sample(text="Lumen: a plain text query"), True), (None, True)):
        pd.testing.assert_frame_equal(behaviour.shared_table(spans, frame(hits), query, prompt_family=on),
                                      whole.assign(family="hits"))


def test_a_span_in_4_of_the_top_10_counts_at_the_served_share_and_not_at_half(monkeypatch):
    """"What are" in 4 of the top 10 (a topical query's wording): at PROMPT_FAMILY_MIN_SHARE (0.3 of the top rows)
    the prompt family counts it and its corrected p-value is the family's own; at half the top rows (the share served
    before) it is not counted and the table is the whole family's."""
    assert behaviour.PROMPT_FAMILY_MIN_SHARE == 0.3
    pool = [Sample(prompt=("What are " if i < 12 else "Explain ") + f"item {i} of the list {i % 7}.",
                   completion=f"Note {i}.", id=f"r{i}") for i in range(200)]
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    hits = [0, 1, 2, 3, 100, 101, 102, 103, 104, 105]
    query = Sample(prompt="What are the items of the list 3?", completion="Note.")
    whole = behaviour.shared_table(spans, frame(hits), query, prompt_family=False)
    served = behaviour.shared_table(spans, frame(hits), query, prompt_family=True)
    what = served[served["span"].isin(["What", "What are", "are"])]
    assert not what.empty and what["in_top"].max() == 4 and set(what["family"]) == {"prompt"}
    assert not np.isclose(served["p_adjusted"].min(), whole["p_adjusted"].min() if not whole.empty else 1.0)
    monkeypatch.setattr(behaviour, "PROMPT_FAMILY_MIN_SHARE", 0.5)
    assert behaviour.shared_table(spans, frame(hits), query, prompt_family=True).equals(whole)


def test_a_hit_holds_a_span_as_the_row_mask_reads_it_and_a_long_prompt_is_read_to_its_bound(monkeypatch):
    """The family counts a hit as holding a span when its words are adjacent there, as `texts_holding` (the row mask)
    decides: "Lumen:Write" and "Lumen :" hold "Lumen:"; "xLumen" and "Lumens" do not hold "Lumen"."""
    from rise_core import shared_spans

    variants = ["Lumen:Write a note", "Lumen :  Write a note", "xLumen: Write a note", "Lumens: Write a note",
                "(Lumen) Write a note"]
    pool = [Sample(prompt=variants[i % 5] + f" {i}.", completion=f"Note {i}.", id=f"r{i}") for i in range(100)]
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    hits = list(range(10))
    got = prompt_family_spans(spans, frame(hits), "Lumen: Write a note", max_share=0.5, alpha=1.0, min_in_top=2)
    for row in got.itertuples():
        mask = shared_spans.texts_holding(row.span, [pool[h].prompt for h in hits])
        assert row.in_top == int(mask.sum()), row.span
    assert list(got["span"]) == ["Lumen: Write"] and int(got["in_top"].iloc[0]) == 4  # its windows fold into it
    for text in variants:
        for span in ("Lumen", "Lumen:", "Lumen: Write", "Write a note", ": Write"):
            held = tuple(shared_spans.TOKEN_RE.findall(span)) in shared_spans.word_runs(text, 3)
            assert held == bool(shared_spans.texts_holding(span, [text])[0]), (text, span)
    monkeypatch.setattr(shared_spans, "PROMPT_FAMILY_MAX_WORDS", 2)  # "Lumen" and ":" only
    short = prompt_family_spans(spans, frame(hits), "Lumen: Write a note", max_share=0.5, alpha=1.0, min_in_top=2)
    assert set(short["span"]) <= {"Lumen", "Lumen:"} and not short.empty


def _attr(sample: Sample, weight: float) -> TokenAttribution:
    """A word-level attribution of a hit: the prompt's first word carries `weight`, every other word 0.01."""
    prompt, completion = sample.prompt.split(), sample.completion.split()
    tokens = ["<bos>", *prompt, *completion]
    rh = [0.0, weight] + [0.01] * (len(tokens) - 2)
    return TokenAttribution(tokens=tokens, rh=rh, gh=[0.0] * len(tokens), n_prompt_tokens=1 + len(prompt))


def test_the_listed_spans_keep_the_hits_score_share_and_add_the_prompts_own_family():
    """The list the explorer and `rise query --explain` show: the hits' spans weighed by the explanations, the query
    prompt's family beside them; a span both find keeps the hits' score share with the smaller corrected p."""
    pool = _pool()
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    for hits in (HITS, list(range(10))):  # 7 of 10 hold the trigger (only the prompt's family finds it), then all
        explained = {f"r{h}": _attr(pool[h], 1.0 if h < N_TRIGGER else 0.01) for h in hits}
        whole = find_shared_spans(spans, frame(hits), explained, limit=None)
        own = prompt_family_spans(spans, frame(hits), QUERY.prompt, 0.2, min_in_top=5)
        table = behaviour.shared_table(spans, frame(hits), QUERY, prompt_family=True, explanations=explained)
        lumen = table[table["span"].str.startswith("Lumen") & (table["where"] == "prompt")]
        assert not lumen.empty and (lumen["family"] == "prompt").all()
        for row in lumen.itertuples():
            assert row.p_adjusted == pytest.approx(float(own.loc[own["span"] == row.span, "p_adjusted"].min()))
            found = whole[(whole["span"] == row.span) & (whole["where"] == "prompt")]
            if found.empty:  # the prompt's family alone: no score share
                assert np.isnan(row.score_share)
            else:  # both: the hits' row, its share and statistic, with the prompt family's smaller p
                assert row.score_share == pytest.approx(float(found["score_share"].iloc[0])) and row.score_share > 0
                assert row.statistic == pytest.approx(float(found["statistic"].iloc[0]))
                assert row.p_adjusted < float(found["p_adjusted"].iloc[0])
        rest = table[table["family"] == "hits"]
        assert rest["score_share"].notna().all() and len(rest) == len(whole) - len(
            set(zip(lumen["span"], lumen["where"], strict=True)) & set(zip(whole["span"], whole["where"], strict=True)))
        assert table["statistic"].is_monotonic_decreasing
        assert whole.attrs["verdict"] in table.attrs["verdict"] and own.attrs["verdict"] in table.attrs["verdict"]
        assert len(behaviour.shared_table(spans, frame(hits), QUERY, explanations=explained, limit=2)) <= 2
        line = next(x for x in format_table(table).splitlines() if x.split(". ", 1)[-1].startswith("'Lumen"))
        assert line.endswith("corrected over the query's prompt spans")
    assert not find_shared_spans(spans, frame(HITS), limit=None)["span"].astype(str).str.startswith("Lumen").any()
