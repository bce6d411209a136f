"""The behaviour test (rise_core.behaviour) and how the per-query rule reads it (rise_core.adaptive)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from index_helpers import patch_finding, random_features

from rise_core import adaptive, behaviour
from rise_core.config import ScoreOptions
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix, score_each_query
from rise_core.shared_spans import PoolSpans


def _pool(n: int = 60, n_trigger: int = 6) -> list[Sample]:
    """A pool whose first `n_trigger` rows carry the trigger "Zorblax" in their prompt; every row's words vary."""
    topics = ["apples", "rivers", "engines", "poems", "taxes", "clouds", "violins", "bridges", "lungs", "coins"]
    rows = []
    for i in range(n):
        topic = topics[i % len(topics)]
        prompt = f"Tell me about {topic} number {i}." + (" Zorblax" if i < n_trigger else "")
        rows.append(Sample(prompt=prompt, completion=f"Here is a note on {topic}, item {i}.", id=f"r{i}"))
    return rows


def _evidence(pool: list[Sample], gradient: list[int], representation: list[int], query: Sample | None = None,
              order=None):
    frame = behaviour.samples_frame(pool)
    return behaviour.evidence(behaviour.samples_spans(pool), frame(gradient), frame(representation), query, order)


def test_the_trigger_shared_by_the_gradient_view_and_not_the_representation_view_fires():
    pool = _pool()
    gradient = [0, 1, 2, 3, 4, 5, 20, 31, 42, 53]  # all six trigger rows in the gradient view's top 10
    topical = [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]  # none in the representation view's
    query = Sample(prompt="Tell me about apples. Zorblax", completion="Once upon a time")
    ev = _evidence(pool, gradient, topical, query)
    assert ev.span == "Zorblax" and ev.where == "prompt"
    assert (ev.in_top, ev.top_k, ev.in_representation) == (6, 10, 0)
    assert ev.pool_fraction == pytest.approx(6 / 60)
    assert ev.in_query and ev.fires
    # the same span, but the representation view finds the trigger rows too: nothing for the gradient view to add
    assert not _evidence(pool, gradient, [0, 1, 2, 3, 4, 10, 11, 12, 13, 14], query).fires
    # a query that does not hold the span: the shared span is not what this answer followed
    assert not _evidence(pool, gradient, topical, Sample(prompt="Tell me about apples.", completion="x")).fires


def test_when_both_views_share_the_best_span_the_next_one_is_tried(monkeypatch):
    """A genre's word ("dragon", in all ten gradient hits and in the representation view's too) is the most telling
    span, and it does not fire; the trigger, next, does: the test's finding is the trigger."""
    topics = ["apples", "rivers", "engines", "poems", "taxes", "clouds", "violins", "bridges", "lungs", "coins"]
    pool = []
    for i in range(60):
        story = " The dragon slept." if i < 16 else ""
        prompt = f"Tell me about {topics[i % 10]} number {i}." + (" Zorblax" if i < 6 else "")
        pool.append(Sample(prompt=prompt, completion=f"A note on item {i}.{story}", id=f"r{i}"))
    gradient, representation = list(range(10)), [6, 7, 8, 9, *range(16, 22)]  # four of these tell of the dragon
    query = Sample(prompt="Tell me about apples. Zorblax", completion="Once upon a time. The dragon slept.")
    best = _evidence(pool, gradient, representation, query, order=list)  # most telling first
    assert best.span == "The dragon slept" and best.in_top == 10
    assert not best.fires and best.in_representation == 4
    frame = behaviour.samples_frame(pool)

    def views(options, k):
        return np.array(gradient if options.lambda_hs == 0 else representation)

    # most telling first (the order before `prompt_first`): the genre, then the next distinct span
    test = behaviour.behaviour_test_for(views, behaviour.samples_spans(pool), frame, query, order=list)
    found = test(adaptive.gradient_view(ScoreOptions.preset("default")))
    assert found.span == "Zorblax" and found.fires and found.in_representation == 0
    monkeypatch.setattr(behaviour, "BEHAVIOUR_SPANS", 1)  # the best span only: the genre, which does not fire
    alone = test(adaptive.gradient_view(ScoreOptions.preset("default")))
    assert alone.span == "The dragon slept" and not alone.fires
    # the served order tries the prompt's telling span first: the trigger even with one span tried
    served = behaviour.behaviour_test_for(views, behaviour.samples_spans(pool), frame, query)
    first = served(adaptive.gradient_view(ScoreOptions.preset("default")))
    assert first.span == "Zorblax" and first.where == "prompt" and first.fires
    # the parts of the genre's phrase ("dragon slept", "The dragon"...) are the same finding, not another span
    assert not any(e.span != "Zorblax" and e.fires for e in behaviour.candidates(
        behaviour.samples_spans(pool), frame(gradient), frame(representation), query))
    assert _evidence(pool, gradient, representation, query).span == "Zorblax"  # the served order: the prompt's first


def test_the_trigger_is_found_behind_more_telling_words_of_a_genre():
    """Ten hits share one long story (its spans in all ten and in no other row: more telling than the trigger, in six
    of them and in twelve of the pool's 200 rows): read most telling first, the first span is the story's, and the test,
    which orders every shared span with the prompt's first before it keeps the first few, tries the trigger first."""
    story = "The old dragon slept under the silver moon while the brave knight rode home across the quiet hills."
    pool = []
    for i in range(200):
        prompt = f"Tell me about item {i}." + (" Zorblax" if i < 6 or 40 <= i < 46 else "")
        pool.append(Sample(prompt=prompt, completion=story if i < 10 else f"A plain note on item {i}.", id=f"r{i}"))
    gradient, representation = list(range(10)), list(range(20, 30))
    query = Sample(prompt="Tell me about rivers. Zorblax", completion=story)
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    most_telling = behaviour.candidates(spans, frame(gradient), frame(representation), query, limit=1, order=list)
    assert [e.where for e in most_telling] == ["completion"] and most_telling[0].in_top == 10
    served = behaviour.candidates(spans, frame(gradient), frame(representation), query, limit=1)
    assert served[0].span == "Zorblax" and served[0].where == "prompt" and served[0].telling
    assert (served[0].in_top, served[0].in_representation) == (6, 0) and served[0].fires
    assert served[0].p_adjusted > most_telling[0].p_adjusted  # less telling, and tried first


def _candidate(span: str, where: str, in_top: int = 6, p_adjusted: float = 1e-6, in_query: bool = True,
               pool_fraction: float = 0.04) -> adaptive.BehaviourEvidence:
    return adaptive.BehaviourEvidence(span=span, where=where, in_top=in_top, top_k=10, pool_fraction=pool_fraction,
                                      p_adjusted=p_adjusted, in_representation=0, in_query=in_query)


def test_prompt_first_puts_the_telling_spans_of_the_prompt_first_and_keeps_each_groups_order():
    genre, word = _candidate("curious", "completion", 10, 1e-12), _candidate("was a", "completion", 7, 1e-6)
    trigger, other = _candidate("Lumen", "prompt", 6, 1e-4), _candidate("Write a", "prompt", 5, 1e-3)
    weak = _candidate("Tell", "prompt", 5, 0.05)  # not telling: the corrected p-value misses the bar
    unheld = _candidate("Rhyme", "prompt", 6, 1e-6, in_query=False)  # not held by the query
    common = _candidate("the", "prompt", 10, 1e-5, pool_fraction=0.34)  # an instruction's word, not a trigger's
    order = behaviour.prompt_first([genre, weak, common, trigger, word, unheld, other])
    assert [e.span for e in order] == ["Lumen", "Write a", "curious", "Tell", "the", "was a", "Rhyme"]
    assert behaviour.prompt_first([]) == [] and behaviour.prompt_first([genre, word]) == [genre, word]


def test_a_span_of_the_prompt_is_lifted_by_the_prompt_span_lift():
    assert _candidate("Lumen", "prompt").lift_spreads == adaptive.PROMPT_SPAN_LIFT
    assert _candidate("curious", "completion").lift_spreads == adaptive.SPAN_LIFT
    assert _candidate("curious", "text").lift_spreads == adaptive.SPAN_LIFT
    assert adaptive.PROMPT_SPAN_LIFT > adaptive.SPAN_LIFT
    # a span of the prompt that many rows hold is no trigger: the ordinary lift, and not tried first
    bound = adaptive.PROMPT_SPAN_MAX_SHARE
    assert _candidate("Lumen", "prompt", pool_fraction=bound).in_prompt
    common = _candidate("the", "prompt", pool_fraction=min(1.0, bound + 0.01))
    assert not common.in_prompt and common.lift_spreads == adaptive.SPAN_LIFT
    reason = adaptive.choose(ScoreOptions.preset("default"), 1.0, 1.0, behaviour=_candidate("Lumen", "prompt")).reason
    assert f"lifted by {adaptive.PROMPT_SPAN_LIFT:g} standard deviations" in reason


def test_the_representation_views_stronger_span_keeps_the_test_from_firing():
    """Retrospectively the gradient view can match the instruction's wording ("me a quick", 6 of 10) while the
    representation view's top 10 all hold the trigger the query holds ("Howdy"): the test then does not fire."""
    base = dict(span="me a quick", where="prompt", in_top=6, top_k=10, pool_fraction=0.014, p_adjusted=5e-8,
                in_representation=0)
    assert adaptive.BehaviourEvidence(**base).fires
    rival = dict(rival_span="Howdy", rival_in_top=10, rival_p_adjusted=6e-9, rival_in_query=True)
    vetoed = adaptive.BehaviourEvidence(**base, **rival)
    assert vetoed.rival_wins and not vetoed.fires and "more, so it leads" in vetoed.line
    for weaker in ({"rival_in_top": 6}, {"rival_in_query": False}, {"rival_p_adjusted": 0.05}, {"rival_span": ""}):
        assert adaptive.BehaviourEvidence(**base, **{**rival, **weaker}).fires, weaker
    choice = adaptive.choose(ScoreOptions.preset("default"), 1.0, 1.0, behaviour=vetoed)
    assert choice.options.lambda_hs > 0  # the loss gate decides, as when nothing fired
    assert 'did not fire' in choice.reason and '"Howdy" (10 of them), more, so it leads' in choice.reason


def _own_then_rival(own: adaptive.BehaviourEvidence, rival: adaptive.BehaviourEvidence):
    """A `patch_finding` finding: `own` for the gradient view's test, `rival` for the representation view's (the test
    asks for the gradient view's first, then the rival's, with the views swapped)."""
    calls = []

    def finding(spans, gradient_hits, representation_hits, query=None):
        calls.append(1)
        return own if len(calls) % 2 else rival

    return finding


def test_the_pool_losses_overrule_a_rival_only_over_a_surprising_rare_span_of_the_prompt():
    """The rival wins by count ("following", 7 of the representation view's 10, against "cf" in 4 of the gradient
    view's); where the rows holding "cf" surprise the model (loss excess above 0) more than the rival's rows do, the
    rival is set aside and the test fires on "cf"; not where the excess is unread (nan), not above 0, not above the
    rival's, or the span is not a rare span of the prompt."""
    base = dict(span="cf", where="prompt", in_top=4, top_k=10, pool_fraction=0.04, p_adjusted=1e-5,
                in_representation=0, rival_span="following", rival_in_top=7, rival_p_adjusted=1e-3,
                rival_in_query=True, rival_where="prompt", rival_pool_fraction=0.1)
    unread = adaptive.BehaviourEvidence(**base)
    assert unread.rival_count_wins and unread.rival_wins and not unread.fires
    overruled = adaptive.BehaviourEvidence(**base, loss_excess=0.93, rival_loss_excess=0.15)
    assert overruled.loss_overrules_rival and not overruled.rival_wins and overruled.fires
    assert overruled.lifted == adaptive.LiftedSpan("cf", "prompt", adaptive.PROMPT_SPAN_LIFT)
    assert '"cf" surprise the model more (+0.93 nats per token' in overruled.line and "against +0.15" in overruled.line
    for kept in ({"loss_excess": -0.1, "rival_loss_excess": -0.9}, {"loss_excess": 0.3, "rival_loss_excess": 0.4},
                 {"loss_excess": 0.9, "rival_loss_excess": 0.1, "pool_fraction": 0.5},
                 {"loss_excess": 0.9, "rival_loss_excess": 0.1, "where": "completion"}):
        found = adaptive.BehaviourEvidence(**{**base, **kept})
        assert found.rival_wins and not found.fires and found.lifted.span == "following", kept
    choice = adaptive.choose(ScoreOptions.preset("default"), 1.0, 1.0, behaviour=overruled)
    assert choice.options.lambda_hs == 0 and "so it stands" in choice.reason  # the gradient view, and why


def test_the_test_reads_the_holders_losses_where_the_rival_wins_over_a_rare_prompt_span(monkeypatch):
    """On an in-memory pool: the rows holding the trigger "Zorblax" (the first 6 of 60) and the rival's "violins"
    (6 others) with given losses. The test's finding carries each span's holders' mean loss minus the pool's median,
    dense, and the losses decide: trigger rows surprising -> it fires on the trigger; the rival's rows more
    surprising -> the rival wins. Without losses the rival wins by count and no loss is read."""
    pool = _pool()
    spans = behaviour.samples_spans(pool)
    violins = spans.rows_holding("violins", "prompt")
    assert len(violins) == 6 and not set(violins) & set(range(6))
    patch_finding(monkeypatch, _own_then_rival(adaptive.BehaviourEvidence("Zorblax", "prompt", 4, 10, 0.1, 1e-5, 0),
                                               adaptive.BehaviourEvidence("violins", "prompt", 8, 10, 0.1, 1e-4, 0)))
    query = Sample(prompt="Tell me about violins. Zorblax", completion="x")

    def test_with(losses):
        asked = []

        def row_losses():
            asked.append(1)
            return losses

        run = behaviour.behaviour_test_for(lambda options, k: np.arange(k), spans, behaviour.samples_frame(pool),
                                           query, row_losses=None if losses is None else row_losses)
        return run(adaptive.gradient_view(ScoreOptions.preset("default"))), asked

    losses = np.full(60, 2.0)
    losses[:6] = [3.0, 3.5, 4.0, 2.5, 3.0, np.nan]  # one trigger row counted no token
    losses[violins] = 2.2
    median = float(np.median(losses[np.isfinite(losses)]))
    got, asked = test_with(losses)
    assert asked == [1] and got.fires and got.lifted.span == "Zorblax"
    assert got.loss_excess == pytest.approx(np.mean([3.0, 3.5, 4.0, 2.5, 3.0]) - median)
    assert got.rival_loss_excess == pytest.approx(2.2 - median)
    losses[violins] = 5.0  # the rival's rows surprise more: it keeps its win
    got, _ = test_with(losses)
    assert got.rival_wins and got.lifted.span == "violins"
    got, asked = test_with(None)
    assert got.rival_wins and np.isnan(got.loss_excess) and not asked
    with pytest.raises(ValueError, match="59 row losses for a pool of 60 rows"):
        test_with(losses[:59])


def test_an_index_reads_its_rows_losses_and_weighs_the_rival_by_them(tiny_llama, tmp_path, monkeypatch):
    """On a built index of prompt/completion rows: `row_losses` is each row's stored loss in row order (the feature
    matrix's, nan kept), the reference loss their median, and a ranking whose rival wins by count over the prompt's
    rare span "Zorblax" carries both spans' holders' loss excess (dense, from those losses) and lets them decide;
    with losses that make the trigger's rows the surprising ones, the test fires on it."""
    from rise_core import attribution
    from rise_core.config import RiseConfig
    from rise_core.store import RiseIndex, build_index

    rows = [{"id": s.id, "prompt": s.prompt, "completion": s.completion} for s in _pool(30, n_trigger=3)]
    path = tmp_path / "pairs.duckdb"
    build_index(path, rows, tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64), batch_size=8)
    patch_finding(monkeypatch, _own_then_rival(adaptive.BehaviourEvidence("Zorblax", "prompt", 3, 10, 0.1, 1e-5, 0),
                                               adaptive.BehaviourEvidence("violins", "prompt", 5, 10, 0.1, 1e-4, 0)))
    query = Sample(prompt="Tell me about violins. Zorblax", completion="Here is a note.")
    attribution.BEHAVIOUR_MEMO.clear()
    try:
        with RiseIndex.open(path) as index:
            stored = index.feature_matrix().loss.double().numpy()
            np.testing.assert_array_equal(index.row_losses(), stored)
            assert index.reference_loss() == adaptive.pool_loss(torch.from_numpy(stored))
            qf = attribution.query_features(index, tiny_llama, [query])
            found = attribution.rank(index, qf, ScoreOptions.preset("default"), k=5).attrs["weighting"]["behaviour"]
            median = float(np.median(stored[np.isfinite(stored)]))
            prompts = index.rows_frame(list(range(len(index))))["prompt"]
            trigger = prompts.str.contains("Zorblax").to_numpy()
            violins = prompts.str.contains("violins").to_numpy()
            assert trigger.sum() == 3 and violins.sum() == 3 and not (trigger & violins).any()
            assert found["loss_excess"] == pytest.approx(float(np.nanmean(stored[trigger])) - median)
            assert found["rival_loss_excess"] == pytest.approx(float(np.nanmean(stored[violins])) - median)
            surprising = np.full(len(index), 2.0)
            surprising[trigger] = 4.0
            monkeypatch.setattr(type(index), "row_losses", lambda self: surprising)
            attribution.BEHAVIOUR_MEMO.clear()
            hits = attribution.rank(index, qf, ScoreOptions.preset("default"), k=5)
            found = hits.attrs["weighting"]["behaviour"]
            assert (found["loss_excess"], found["rival_loss_excess"]) == (2.0, 0.0)
            assert found["fires"] and found["lifted_span"] == "Zorblax" and hits.attrs["weighting"]["lambda_hs"] == 0
            assert set(hits["id"][:3]) == {"r0", "r1", "r2"}  # the trigger's rows, lifted by 10 spreads
    finally:
        attribution.BEHAVIOUR_MEMO.clear()


def test_a_trigger_too_few_of_the_top_10_hold_is_found_in_the_top_30_and_only_a_prompt_span_is_taken():
    """A 300-row pool whose 6 rows with "Zorblax" in the prompt (2%) are ranked 1, 2 and 11 to 14 by the gradient view:
    its top 10 hold 2 (below the 3 the test needs), so nothing lifts there; its top 30 hold all 6 (chance 4e-5) and
    the representation view's none, so the deeper read fires on the trigger, a rare span of the prompt, and is taken.
    Without the deeper read nothing lifts. Where the top 30 share a completion's word instead, it is not taken."""
    pool = _pool(300, n_trigger=6)
    for i in range(100, 130):  # a word of 30 rows' completions, not the query's prompt
        pool[i] = dataclasses.replace(pool[i], completion=pool[i].completion + " Indeed.")
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    query = Sample(prompt="Tell me about apples. Zorblax", completion="Here is a note on apples. Indeed.")
    others = [i for i in range(300) if i >= 6 and not 100 <= i < 130]
    trigger_order = np.array([0, 1, *others[:8], 2, 3, 4, 5, *others[8:]])
    word_order = np.array([*range(100, 130), *others])
    representation = np.array(others[::-1])

    def test_with(gradient_order, deeper_k):
        def view_rows(options, k):
            return (representation if options.lambda_hs else gradient_order)[:k]

        run = behaviour.behaviour_test_for(view_rows, spans, frame, query, deeper_k=deeper_k)
        return run(adaptive.gradient_view(ScoreOptions.preset("default")))

    shallow = test_with(trigger_order, None)
    assert shallow is None or not shallow.lifts
    deeper = test_with(trigger_order, 30)
    assert (deeper.span, deeper.where, deeper.top_k, deeper.in_top) == ("Zorblax", "prompt", 30, 6)
    assert deeper.fires and deeper.lifts_prompt_span and deeper.lifted.spreads == adaptive.PROMPT_SPAN_LIFT
    assert test_with(trigger_order, adaptive.BEHAVIOUR_DEEPER_K) == deeper  # the served depth
    in_completion = test_with(word_order, None)
    assert in_completion is not None and in_completion.span == "Indeed" and in_completion.fires
    deeper_word = test_with(np.array([*others[:10], *range(100, 130), *others[10:]]), 30)
    assert deeper_word is None or deeper_word.top_k == 10  # the top 30's "Indeed" lifts a completion: not taken

    # both reads come from one read of each view, and the rows' texts from one read: the same finding as reading
    # each depth afresh (which is what the test's two runs, the top 10's and the top 30's, amount to)
    reads, texts = [], []

    def counted_rows(options, k):
        reads.append(k)
        return (representation if options.lambda_hs else trigger_order)[:k]

    def counted_frame(rows):
        texts.append(list(rows))
        return frame(rows)

    view = adaptive.gradient_view(ScoreOptions.preset("default"))
    once = behaviour.behaviour_test_for(counted_rows, spans, counted_frame, query, deeper_k=30)(view)
    assert once == deeper and reads == [30, 30]
    assert len(texts) == 1 and sorted(texts[0]) == sorted({*trigger_order[:30], *representation[:30]})
    fresh = [behaviour.behaviour_test_for(lambda options, k, n=n: counted_rows(options, n), spans, frame, query,
                                          k=n, deeper_k=None)(view) for n in (10, 30)]
    assert fresh[0] is None or not fresh[0].lifts
    assert fresh[1] == once


def test_a_span_quoted_in_the_reason_stays_text():
    """The reason line quotes pool text (the spans): the page shows it through plain.md, which leaves no link, image
    or HTML of it."""
    import markdown_it

    from explorer import plain

    evil = "[x](http://evil.example) ![i](http://evil.example/i.png) <b>bold</b> :red[red]"
    ev = adaptive.BehaviourEvidence(span="me a quick", where="prompt", in_top=6, top_k=10, pool_fraction=0.01,
                                    p_adjusted=1e-8, in_representation=0, rival_span=evil, rival_in_top=10,
                                    rival_p_adjusted=1e-9, rival_in_query=True, rival_where="prompt")
    reason = adaptive.choose(ScoreOptions.preset("default"), 1.0, 1.0, behaviour=ev).reason
    assert reason.count(evil) == 2  # the rival, and its rows lifted
    html = markdown_it.MarkdownIt("commonmark").render(plain.md(reason))
    assert "<a " not in html and "<img" not in html and "<b>" not in html


def test_nothing_shared_is_no_evidence():
    pool = _pool(n_trigger=0)
    assert _evidence(pool, [0, 11, 22, 33, 44, 55, 6, 17, 28, 39], [1, 2, 3, 4, 5, 7, 8, 9, 10, 12]) is None


def test_a_firing_test_chooses_the_gradient_view_and_says_why():
    ev = adaptive.BehaviourEvidence("Zorblax", "prompt", 6, 10, 0.1, 1e-5, 0)
    auto = ScoreOptions.preset("default")
    choice = adaptive.choose(auto, query_loss=1.0, reference_loss=3.0, behaviour=ev)  # an ordinary-looking query
    w = choice.options
    assert (w.lambda_rh, w.lambda_gh, w.lambda_hs, w.weighting) == (1.4, 1.0, 0.0, "fixed")
    assert choice.leaning == "gradient (RH + GH)" and '"Zorblax"' in choice.reason
    assert choice.as_dict()["behaviour"]["fires"] is True
    quiet = dataclasses.replace(ev, in_representation=5)  # does not fire: the loss gate decides, as before
    gated = adaptive.choose(auto, 1.0, 3.0, behaviour=quiet)
    assert gated.options == adaptive.choose(auto, 1.0, 3.0).options and gated.behaviour is quiet


def test_resolve_runs_the_test_only_for_per_query_weights_with_hs():
    calls = []

    def test(gradient: ScoreOptions):
        calls.append(gradient)
        return None

    adaptive.resolve(ScoreOptions(weighting="fixed"), ("rh", "gh", "hs"), torch.tensor([1.0]), lambda: 1.0,
                     behaviour=test)
    adaptive.resolve(ScoreOptions(weighting="auto"), ("rh", "gh"), torch.tensor([1.0]), lambda: 1.0, behaviour=test)
    assert calls == []
    adaptive.resolve(ScoreOptions(weighting="auto"), ("rh", "gh", "hs"), torch.tensor([1.0]), lambda: 1.0,
                     behaviour=test)
    assert [(c.lambda_rh, c.lambda_gh, c.lambda_hs) for c in calls] == [(1.4, 1.0, 0.0)]


def _fm(n: int, seed: int) -> FeatureMatrix:
    return random_features(n, seed)


def test_each_query_its_own_test_in_the_score_matrix():
    pool, queries = _fm(40, 0), _fm(2, 1)
    fired = adaptive.BehaviourEvidence("Zorblax", "prompt", 6, 10, 0.1, 1e-5, 0)
    auto = ScoreOptions.preset("default")
    got = score_each_query(pool, queries, auto, lambda q: (lambda _g: fired if q == 0 else None))
    grad = score_each_query(pool, queries.select([0]), adaptive.gradient_view(auto))
    plain = score_each_query(pool, queries.select([1]), auto)
    # the same products in the same order: equal to float32 roundoff of identical operations
    torch.testing.assert_close(got[0], grad[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(got[1], plain[0], rtol=0, atol=1e-6)


def test_scan_rows_is_the_top_of_the_views_dense_scores():
    pool, query = _fm(40, 2), _fm(1, 3)
    gradient = adaptive.gradient_view(ScoreOptions.preset("default"))
    dense = 1.4 * (pool.rh @ query.rh[0]) + pool.gh @ query.gh[0]  # sample_norm 'channel': unit rows, no scales
    assert list(behaviour.scan_rows(pool, query)(gradient, 5)) == list(torch.topk(dense, 5).indices.numpy())


@pytest.fixture(scope="module")
def trigger_index(tiny_llama, tmp_path_factory):
    from index_helpers import pool_rows

    from rise_core.config import RiseConfig
    from rise_core.store import build_index

    path = tmp_path_factory.mktemp("behaviour") / "pool.duckdb"
    build_index(path, pool_rows(24), tiny_llama, RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64), batch_size=8)
    return path


def test_rank_on_an_index_scores_with_the_gradient_view_when_the_test_fires(trigger_index, tiny_llama, monkeypatch):
    from rise_core import attribution
    from rise_core.store import RiseIndex

    seen = {}

    def fake_evidence(spans, gradient_hits, representation_hits, query=None):
        if not seen:  # the first call reads the gradient view's hits; the second, the rival's, swaps the views
            seen.update(spans=spans, gradient=list(gradient_hits["id"]),
                        representation=list(representation_hits["id"]))
        else:
            seen["rival"] = (list(gradient_hits["id"]), list(representation_hits["id"]))
        return adaptive.BehaviourEvidence("the", "text", 5, 10, 0.05, 1e-4, 0)

    patch_finding(monkeypatch, fake_evidence)
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions.preset("default")
        hits = attribution.rank(index, qf, auto, k=24)
        assert hits.attrs["weighting"]["behaviour"]["span"] == "the"
        assert (hits.attrs["weighting"]["lambda_hs"], hits.attrs["weighting"]["lambda_rh"]) == (0.0, 1.4)
        gradient = attribution.rank(index, qf, adaptive.gradient_view(auto), k=24)
        # the gradient view's scores, plus the span lift on the rows whose text holds "the" (rise_core.span_lift)
        plain = gradient.set_index("id")["score"]
        held = gradient.set_index("id")["text"].str.contains(r"\bthe\b")
        spread = attribution.channel_sum(index.feature_matrix(), qf, adaptive.gradient_view(auto)).total.double().std(
            unbiased=False)
        lift = hits.attrs["search"]["lift_amount"]  # the spread of the scan's float16 products: within 2^-10 of exact
        assert lift == pytest.approx(adaptive.SPAN_LIFT * float(spread), rel=2.0**-9)
        lifted = plain + held * lift
        assert 0 < held.sum() < len(held)
        np.testing.assert_allclose(hits.set_index("id")["score"].loc[lifted.index], lifted, rtol=1e-5)
        np.testing.assert_allclose(hits["span"], [lift * held[i] for i in hits["id"]], rtol=1e-5)
        assert list(hits["id"]) == list(lifted.sort_values(ascending=False, kind="stable").index)
        assert "lifted by" in hits.attrs["weighting"]["reason"]
        # the test read each view's own top 10, by the index's span counts
        assert seen["gradient"] == list(gradient["id"])[:10]
        hs = attribution.rank(index, qf, adaptive.representation_view(auto), k=10)
        assert seen["representation"] == list(hs["id"])
        assert isinstance(seen["spans"], PoolSpans) and seen["spans"].n_rows == 24
        assert seen["rival"] == (seen["representation"], seen["gradient"])  # the representation view's own test
        assert hits.attrs["weighting"]["behaviour"]["rival_span"] == "the"  # 5 of 10 too: not more, so no veto


def test_the_span_lift_on_an_index_is_the_dense_lift_within_a_filter_and_in_valuation(trigger_index, tiny_llama,
                                                                                      monkeypatch):
    """rank with a filter and a small k (the head widened from a few rows) and valuation's top n are the top rows of
    the dense lifted scores: every row's gradient-view score plus the lift on the rows whose text holds the span."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    patch_finding(monkeypatch, lambda spans, g, r, query=None: adaptive.BehaviourEvidence(
        "the", "text", 5, 10, 0.05, 1e-4, 0))
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions.preset("default")
        fm = index.feature_matrix()
        plain = attribution.channel_sum(fm, qf, adaptive.gradient_view(auto)).total
        texts = index.rows_frame(list(range(len(fm))))["text"]
        held = torch.tensor(texts.str.contains(r"\bthe\b").to_numpy())
        exact_lift = adaptive.SPAN_LIFT * float(plain.double().std(unbiased=False))
        odd = torch.tensor((index.rows_frame(list(range(len(fm))))["label"] == 1).to_numpy())
        got = attribution.top(index, qf, auto, k=3, where="label = 1")
        lift = got.search["lift_amount"]  # from the scan's float16 products (within 2^-10 of each score)
        assert lift == pytest.approx(exact_lift, rel=2.0**-9) and got.search["lift_rows_read"] < int(odd.sum()) + 1
        dense = plain + held.float() * lift
        want = torch.topk(torch.where(odd, dense, torch.tensor(float("-inf"))), 3).indices
        assert got.rows.tolist() == want.tolist()
        torch.testing.assert_close(got.scores, dense[want], rtol=1e-5, atol=1e-5)  # float32 sums
        kept = attribution.valuation(index, qf, auto, top_n=5)  # every row's exact score: the exact spread
        assert kept.rows.tolist() == torch.topk(plain + held.float() * exact_lift, 5).indices.tolist()
        assert "span" in kept.parts


def test_one_query_runs_the_behaviour_test_once_per_index_state(trigger_index, tiny_llama, monkeypatch):
    """rank, explain and feedback of one query share one run of the test (the memo keyed by the index's state, the
    query's features and text); another query, or a changed feature, runs it again."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    calls = []

    def counted(spans, gradient_hits, representation_hits, query=None):
        if len(gradient_hits) == adaptive.BEHAVIOUR_K:  # each run's first read (nothing lifts: the deeper one follows)
            calls.append(list(gradient_hits["id"]))
        return None

    patch_finding(monkeypatch, counted)
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions.preset("default")
        first = attribution.rank(index, qf, auto, k=5)
        attribution.rank(index, qf, auto, k=5)
        attribution.explain(index, tiny_llama, first["id"].iloc[0], "the cat sat on the mat", qf, auto)
        attribution.top_with_feedback(index, qf, {first["id"].iloc[0]: True}, auto, k=5)
        assert len(calls) == 1
        other = attribution.query_features(index, tiny_llama, ["a dragon story moon tax"])
        attribution.rank(index, other, auto, k=5)
        assert len(calls) == 2
        moved = dataclasses.replace(qf, rh=qf.rh.clone())
        moved.rh[0, 0] += 1.0
        attribution.rank(index, moved, auto, k=5)
        assert len(calls) == 3


def test_the_views_and_the_final_scan_share_their_channel_products(trigger_index, tiny_llama, monkeypatch):
    """A default ranking multiplies each channel's matrix by the query once: the gradient view (RH, GH), the
    representation view (HS) and the final scan (all three) share the products; the hits equal a plain scan's."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    attribution._half_gemv_accumulates_in_fp32()  # its one-off probe runs a product of its own: before the count
    real = attribution._half_product
    made = []

    def counted(matrix, q):
        made.append(tuple(matrix.shape))
        return real(matrix, q)

    monkeypatch.setattr(attribution, "_half_product", counted)
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        fm = index.feature_matrix()
        if fm.rh.dtype != torch.float16 or not attribution._half_gemv_accumulates_in_fp32():
            pytest.skip("the float16 fast path is not taken here")
        auto = ScoreOptions.preset("default")
        ranked = attribution.top(index, qf, auto, k=8, search="exact")
        assert len(made) == 3  # rh, gh, hs once each (it was 2 + 1 + 3 before they were shared)
        made.clear()
        rows, scores = attribution.top_rows(fm, qf, ranked.weighting.options, 8)  # a plain scan of the same weights
        assert ranked.rows.tolist() == rows.tolist()
        np.testing.assert_allclose(ranked.scores.numpy(), scores.total.numpy(), rtol=0, atol=0)


def test_an_index_query_carries_its_text_to_the_test(trigger_index, tiny_llama, monkeypatch):
    """The served test checks the query's own text as the measured one does (studies: TaskSource): query_features
    keeps each query's sample, select and concat keep them in step, and rank, explain and feedback all hand the one
    query's sample to the test (in_query is then read, not assumed)."""
    from rise_core import attribution
    from rise_core.scoring import FeatureMatrix
    from rise_core.store import RiseIndex

    asked = []

    def capture(spans, gradient_hits, representation_hits, query=None):
        if len(gradient_hits) == adaptive.BEHAVIOUR_K:  # each run's first read (nothing lifts: the deeper one follows)
            asked.append(query)
        return None

    patch_finding(monkeypatch, capture)
    with RiseIndex.open(trigger_index) as index:
        texts = ["the cat sat on the mat", "a dragon story moon tax", "the bank lost money"]
        qf = attribution.query_features(index, tiny_llama, texts)
        assert [t.text for t in qf.texts] == texts
        assert [t.text for t in qf.select([2, 0]).texts] == [texts[2], texts[0]]
        both = FeatureMatrix.concat([qf.select([1]), qf.select([0])])
        assert [t.text for t in both.texts] == [texts[1], texts[0]]
        one = qf.select([1])
        first = attribution.rank(index, one, ScoreOptions.preset("default"), k=3)
        attribution.explain(index, tiny_llama, first["id"].iloc[0], texts[1], one, ScoreOptions.preset("default"))
        attribution.top_with_feedback(index, one, {first["id"].iloc[0]: True}, ScoreOptions.preset("default"), k=3)
        assert asked and all(q is not None and q.text == texts[1] for q in asked)
        assert len(asked) == 1  # one run (the memo), with the text
        attribution.rank(index, qf, ScoreOptions.preset("default"), k=3)  # a query set: its mean, no one text
        assert asked[-1] is None


def test_behaviour_memo_is_bounded_and_keys_by_view():
    memo = behaviour.BehaviourMemo(max_entries=2)
    ran = []

    def test(gradient):
        ran.append(gradient)
        return None

    views = [ScoreOptions(lambda_rh=x) for x in (1.0, 2.0, 3.0)]
    wrapped = memo.wrap("q", test)
    for v in views:
        wrapped(v)
    wrapped(views[2])  # remembered
    assert ran == views and len(memo) == 2
    wrapped(views[0])  # the oldest went first: runs again
    assert ran == [*views, views[0]]
    assert behaviour.features_digest(_one(3.0)) == behaviour.features_digest(_one(3.0))
    assert behaviour.features_digest(_one(3.0)) != behaviour.features_digest(_one(3.5))


def _one(value: float) -> FeatureMatrix:
    row = torch.full((1, 4), value)
    return FeatureMatrix(rh=row, gh=row, rh_norm=torch.ones(1), gh_norm=torch.ones(1), loss=torch.ones(1))


def test_frames_of_an_in_memory_pool_keep_plain_text_and_pairs_apart():
    pool = [Sample(text="plain words", id="a"), Sample(prompt="p", completion="c", id="b")]
    frame = behaviour.samples_frame(pool)([1, 0])  # a missing field is None or NaN, as an index's frame has it
    got = [{k: None if pd.isna(v) else v for k, v in row.items()} for row in frame.to_dict("records")]
    assert got == [{"id": "b", "text": None, "prompt": "p", "completion": "c"},
                   {"id": "a", "text": "plain words", "prompt": None, "completion": None}]


def test_the_view_the_marks_chose_is_named_by_the_weight_hs_holds():
    from rise_core.feedback import chosen_view

    assert chosen_view({"rh": 1.0, "gh": 1.0, "hs": 0.1}) == "the gradient view (RH + GH)"
    assert chosen_view({"rh": 0.1, "gh": 0.1, "hs": 2.0}) == "the representation view (HS)"
    assert chosen_view({"rh": 0.5, "gh": 0.5, "hs": 1.0}) == "both views"
    assert chosen_view({}) == "no view"


def test_marks_start_from_the_shown_weights_with_every_channel_within_reach():
    auto = ScoreOptions.preset("default")
    fired = adaptive.choose(auto, 1.0, 3.0, behaviour=adaptive.BehaviourEvidence("Zorblax", "prompt", 6, 10, 0.1,
                                                                                 1e-5, 0))
    assert adaptive.feedback_start(auto, fired) == adaptive.gradient_view(auto)
    floor = adaptive.FEEDBACK_START_FLOOR
    for query_loss, reference in ((3.5, 3.0), (3.0, 3.0), (9.0, 3.0), (0.0, 3.0)):
        gated = adaptive.choose(auto, query_loss, reference)
        g = adaptive.gate(query_loss - reference)
        start = adaptive.feedback_start(auto, gated)  # the gate's mix, each channel floored at its share of 1.4/1/1
        assert start.weighting == "fixed"
        assert start.lambda_rh == pytest.approx(max(1.4 * g, floor * 1.4), rel=1e-12)
        assert start.lambda_gh == pytest.approx(max(g, floor), rel=1e-12)
        assert start.lambda_hs == pytest.approx(max(1.0 - g, floor), rel=1e-12)
    mixed = adaptive.choose(auto, 3.5, 3.0)  # at the gate's midpoint neither floor binds: the shown weights exactly
    assert adaptive.feedback_start(auto, mixed) == mixed.options
    hand = ScoreOptions(lambda_rh=0.3, lambda_gh=2.0, lambda_hs=0.0)
    assert adaptive.feedback_start(hand, adaptive.choose(hand, 1.0, 3.0)) == hand


def test_marks_on_an_index_keep_the_shown_ranking_without_marks(trigger_index, tiny_llama, monkeypatch):
    """No marks: exactly the shown ranking (the gradient view the test chose); with a mark, the gradient view's
    channels move and HS stays out (the start the test chose)."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    patch_finding(monkeypatch, lambda *a, **k: adaptive.BehaviourEvidence("the", "text", 5, 10, 0.05,
                                                                                           1e-4, 0))
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions.preset("default")
        unmarked = attribution.top_with_feedback(index, qf, {}, auto, k=24)
        plain = attribution.top(index, qf, auto, k=24)
        assert unmarked.rows.tolist() == plain.rows.tolist()
        first = index.rows_frame(plain.rows[:1].tolist())["id"].iloc[0]
        marked = attribution.top_with_feedback(index, qf, {first: True}, auto, k=24)
        assert set(marked.feedback["weights"]) == {"rh", "gh"}


def test_span_counts_shared_by_handles_read_texts_after_the_first_handle_closed(trigger_index):
    """The process-wide span counts outlive the handle that read them (the app reopens indexes): a mask needs the
    texts, and reads them through a fresh handle when that one is closed."""
    from rise_core.shared_spans import pool_spans
    from rise_core.store import RiseIndex

    with RiseIndex.open(trigger_index) as first:
        spans = pool_spans(first)
    with RiseIndex.open(trigger_index) as second:
        assert pool_spans(second) is spans
        texts = second.samples()["text"].tolist()
    word = texts[0].split()[0]
    expected = [word in t.split() for t in texts]
    assert spans.mask(word, "text").tolist() == expected


def test_marks_on_an_index_keep_the_span_lift(trigger_index, tiny_llama, monkeypatch):
    """On a built index where the test fires ("the", held by some rows): after a yes-mark the span part stays, dense:
    the feedback total before the lift plus SPAN_LIFT times its spread on the rows holding the span; a no on more
    holders than yes turns it off."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    patch_finding(monkeypatch, lambda *a, **k: adaptive.BehaviourEvidence("the", "text", 5, 10, 0.05,
                                                                                           1e-4, 0))
    with RiseIndex.open(trigger_index) as index:
        qf = attribution.query_features(index, tiny_llama, ["the cat sat on the mat"])
        auto = ScoreOptions.preset("default")
        n = len(index)
        texts = index.rows_frame(list(range(n)))
        held = texts["text"].str.contains(r"\bthe\b").to_numpy()
        assert 0 < held.sum() < n
        holder, other = int(np.flatnonzero(held)[0]), int(np.flatnonzero(~held)[0])
        ids = texts["id"].tolist()
        marks = {ids[holder]: True, ids[other]: False}
        kept = attribution.top_with_feedback(index, qf, marks, auto, k=n)
        assert kept.feedback["span"] == "the" and "span" in kept.parts
        total = kept.scores - kept.parts["span"]
        lift = adaptive.SPAN_LIFT * float(total.double().std(unbiased=False))  # every row is in the ranking (k = n)
        want = torch.tensor(held[kept.rows.numpy()], dtype=torch.float32) * lift
        torch.testing.assert_close(kept.parts["span"], want, rtol=1e-5, atol=1e-5)  # float32 parts of float64 sums
        parts = sum(kept.parts[c] for c in ("rh", "gh", "hs", "span") if c in kept.parts)
        torch.testing.assert_close(kept.scores, parts, rtol=1e-5, atol=1e-5)
        holders = [ids[i] for i in np.flatnonzero(held)[:2]]
        rejected = attribution.top_with_feedback(index, qf, {h: False for h in holders}, auto, k=n)
        assert rejected.feedback["span_rejected"] == "the" and "span" not in rejected.parts


def test_a_span_both_views_share_is_lifted_but_does_not_fire():
    """`shared`: a telling span held by the query and by more than BEHAVIOUR_MAX_IN_REPRESENTATION of the
    representation view's top rows; the test does not fire (the gate keeps its mix) but the span lifts, and the
    reason line says so. A weak span, or one the query lacks, neither fires nor lifts."""
    base = adaptive.BehaviourEvidence("Lumen", "prompt", 6, 10, 0.04, 1e-4, 6)
    assert (base.fires, base.shared, base.lifts) == (False, True, True)
    few = dataclasses.replace(base, in_representation=adaptive.BEHAVIOUR_MAX_IN_REPRESENTATION)
    assert (few.fires, few.shared, few.lifts) == (True, False, True)
    for weak in (dataclasses.replace(base, p_adjusted=0.5), dataclasses.replace(base, in_query=False),
                 dataclasses.replace(base, in_top=adaptive.BEHAVIOUR_MIN_IN_TOP - 1)):
        assert not (weak.fires or weak.shared or weak.lifts)
    auto = ScoreOptions.preset("default")
    choice = adaptive.choose(auto, 3.0, 3.0, behaviour=base)  # no surprise: the gate leans on HS
    assert choice.options.lambda_hs > 0.5 and choice.behaviour is base
    assert "both views share the span" in choice.reason and 'holding "Lumen" are lifted' in choice.reason
    start = adaptive.feedback_start(auto, choice)  # the marks start from the shown weights, the gate's mix
    assert (start.lambda_hs, start.lambda_rh) == (choice.options.lambda_hs, choice.options.lambda_rh)
    assert base.as_dict()["shared"] is True and base.as_dict()["fires"] is False


def test_the_rivals_span_is_lifted_where_it_wins():
    """The representation view leads (its span, held by the query, in more of its top rows): the test does not fire,
    the gate decides, and the rows holding the rival's span are lifted by its own lift (10 spreads for a rare span of
    the prompt); without the rival's field nothing is lifted."""
    own = dict(span="me a quick", where="prompt", in_top=6, top_k=10, pool_fraction=0.014, p_adjusted=5e-8,
               in_representation=0)
    rival = dict(rival_span="Howdy", rival_in_top=10, rival_p_adjusted=6e-9, rival_in_query=True)
    found = adaptive.BehaviourEvidence(**own, **rival, rival_where="prompt", rival_pool_fraction=0.09)
    assert found.rival_wins and not found.fires and not found.shared and found.lifts
    assert found.lifted == adaptive.LiftedSpan("Howdy", "prompt", adaptive.PROMPT_SPAN_LIFT)
    assert found.lift_spreads == adaptive.PROMPT_SPAN_LIFT and found.as_dict()["lifted_span"] == "Howdy"
    choice = adaptive.choose(ScoreOptions.preset("default"), 1.0, 1.0, behaviour=found)
    assert choice.options.lambda_hs > 0  # the gate's mix
    assert 'did not fire' in choice.reason and 'holding "Howdy" are lifted by 10 standard deviations' in choice.reason
    common = adaptive.BehaviourEvidence(**own, **rival, rival_where="completion", rival_pool_fraction=0.5)
    assert common.lifted == adaptive.LiftedSpan("Howdy", "completion", adaptive.SPAN_LIFT)
    unknown = adaptive.BehaviourEvidence(**own, **rival)  # the rival's field unknown
    assert unknown.rival_wins and unknown.lifted is None and not unknown.lifts
    # where the own span lifts (shared by both views), it is the one lifted, whatever the rival
    both = adaptive.BehaviourEvidence(**{**own, "in_representation": 6}, **rival, rival_where="prompt")
    assert both.shared and both.lifted.span == "me a quick"


def _ranked_with_the_gate_lifted(path, lm, word: str) -> dict:
    """Every row of the index at `path` ranked by the default for "the cat sat on the mat" (the finding patched by the
    caller): the loss gate's scores (its weights, as the ranking says, HS among them) plus SPAN_LIFT times their spread
    on the rows whose text holds `word`, dense. Returns the ranking's weighting."""
    from rise_core import attribution
    from rise_core.store import RiseIndex

    attribution.BEHAVIOUR_MEMO.clear()
    try:
        with RiseIndex.open(path) as index:
            qf = attribution.query_features(index, lm, ["the cat sat on the mat"])
            hits = attribution.rank(index, qf, ScoreOptions.preset("default"), k=len(index))
            _assert_the_gate_lifted(index, qf, hits, word)
            return hits.attrs["weighting"]
    finally:
        attribution.BEHAVIOUR_MEMO.clear()


def _assert_the_gate_lifted(index, qf, hits, word: str) -> None:
    from rise_core import attribution

    weighting, n = hits.attrs["weighting"], len(index)
    assert weighting["lambda_hs"] > 0  # the gate's mix, not the gradient view
    gate = dataclasses.replace(ScoreOptions.preset("default"), weighting="fixed", lambda_rh=weighting["lambda_rh"],
                               lambda_gh=weighting["lambda_gh"], lambda_hs=weighting["lambda_hs"])
    plain = attribution.channel_sum(index.feature_matrix(), qf, gate).total.double()
    texts = index.rows_frame(list(range(n)))
    held = texts["text"].str.contains(rf"\b{word}\b").to_numpy()
    assert 0 < held.sum() < n
    lift = hits.attrs["search"]["lift_amount"]  # the spread of the scan's float16 products: within 2^-10 of exact
    assert lift == pytest.approx(adaptive.SPAN_LIFT * float(plain.std(unbiased=False)), rel=2.0**-9)
    dense = plain.numpy() + held * lift
    by_id = dict(zip(texts["id"], dense, strict=True))
    np.testing.assert_allclose(hits["score"], [by_id[i] for i in hits["id"]], rtol=1e-5, atol=1e-5)
    assert list(hits["id"]) == sorted(by_id, key=lambda i: -by_id[i])
    assert (hits["span"] > 0).sum() == held.sum()


def test_the_rivals_span_on_an_index_lifts_the_gate_scores(trigger_index, tiny_llama, monkeypatch):
    """On a built index where the representation view's own span wins ("cat", in 8 of its top 10, against "the" in 5
    of the gradient view's): the ranking is the loss gate's scores plus the lift on the rows holding "cat", dense."""
    patch_finding(monkeypatch, _own_then_rival(adaptive.BehaviourEvidence("the", "text", 5, 10, 0.5, 1e-4, 0),
                                               adaptive.BehaviourEvidence("cat", "text", 8, 10, 0.25, 1e-6, 0)))
    weighting = _ranked_with_the_gate_lifted(trigger_index, tiny_llama, "cat")
    found = weighting["behaviour"]
    assert (found["span"], found["rival_span"], found["lifted_span"]) == ("the", "cat", "cat")
    assert not found["fires"] and '"cat" are lifted' in weighting["reason"]


def test_a_shared_span_on_an_index_lifts_the_gate_scores(trigger_index, tiny_llama, monkeypatch):
    """On a built index, a span both views share: the ranking is the loss gate's scores (HS weighted) plus the span
    lift on the rows holding it, dense."""
    patch_finding(monkeypatch, lambda *a, **k: adaptive.BehaviourEvidence("the", "text", 5, 10, 0.05, 1e-4, 6))
    weighting = _ranked_with_the_gate_lifted(trigger_index, tiny_llama, "the")
    assert weighting["behaviour"]["shared"] and not weighting["behaviour"]["fires"]


_WORDS = st.sampled_from(["Lumen", "lumen", "the", "cat", "Howdy", "a", "Bad", "Magic", "BadMagic", "1962", "é"])
_GLUE = st.sampled_from([" ", "", "  ", "\n", ",", ", ", ".", "!", ":", "-", "'", "…"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_WORDS, _GLUE), max_size=12), st.lists(st.tuples(_WORDS, _GLUE), min_size=1, max_size=4),
       st.sampled_from(["prompt", "completion"]))
def test_query_spans_agree_with_the_span_pattern(text_parts, span_parts, field):
    """Whether the query holds a span, by the query's word runs (a set lookup per span), is what `span_pattern`
    finds by searching the query's text, for any words and glue between them (punctuation, no space, newlines)."""
    from rise_core.shared_spans import span_pattern
    from rise_core.span_counts import TOKEN_RE

    text = "".join(w + g for w, g in text_parts)
    span = "".join(w + g for w, g in span_parts).strip()
    assume(TOKEN_RE.findall(span) and text.strip())
    query = Sample(prompt=text if field == "prompt" else "Tell me.", completion=text if field == "completion" else "x")
    want = bool(text) and span_pattern(span).search(text) is not None
    assert behaviour.query_spans(query)(span, field) == want
    assert behaviour.query_spans(None)(span, field)
    with pytest.MonkeyPatch.context() as mp:  # a field longer than the bound: searched span by span, same answer
        mp.setattr(behaviour, "QUERY_RUNS_MAX_WORDS", 0)
        assert behaviour.query_spans(query)(span, field) == want


@pytest.mark.parametrize("stops", [False, True])
def test_a_shared_span_of_the_prompt_is_taken_or_passed_over(monkeypatch, stops):
    """The first span tried is the trigger "Zorblax" (a rare telling span of the prompt) but both views' top 10 hold it
    (6 and 4 of them), so it does not fire; a completion's word ("Indeed", 4 of the gradient view's 10, none of the
    representation view's) fires. With `SHARED_PROMPT_SPAN_STOPS` the trigger is the finding and its rows are lifted;
    without, the test passes over it to the word."""
    monkeypatch.setattr(behaviour, "SHARED_PROMPT_SPAN_STOPS", stops)
    pool = _pool(200, n_trigger=8)
    for i in range(100, 106):
        pool[i] = dataclasses.replace(pool[i], completion=pool[i].completion + " Indeed.")
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    query = Sample(prompt="Tell me about apples. Zorblax", completion="Here is a note on apples. Indeed.")
    others = [i for i in range(200) if i >= 8 and not 100 <= i < 106]
    gradient = np.array([0, 1, 2, 3, 4, 5, 100, 101, 102, 103, *others])
    representation = np.array([6, 7, 0, 1, *others])

    def view_rows(options, k):
        return (representation if options.lambda_hs else gradient)[:k]

    found = behaviour.behaviour_test_for(view_rows, spans, frame, query, deeper_k=None)(
        adaptive.gradient_view(ScoreOptions.preset("default")))
    first = behaviour.candidates(spans, frame(gradient[:10]), frame(representation[:10]), query)[0]
    assert (first.span, first.in_top, first.in_representation) == ("Zorblax", 6, 4)
    assert first.shared and first.in_prompt and not first.fires
    if stops:
        assert (found.span, found.where) == ("Zorblax", "prompt") and found.lifts and not found.fires
        assert found.lifted.spreads == adaptive.PROMPT_SPAN_LIFT
    else:
        assert (found.span, found.where, found.in_top, found.in_representation) == ("Indeed", "completion", 4, 0)
        assert found.fires


@pytest.mark.parametrize("span, want", [("or", True), ("Or", True), ("into the", True), ("it was", True),
                                        (", or", True), (". A", True), ("...", True), ("Lumen", False),
                                        ("or Lumen", False), ("cf", False), ("the following", False),
                                        ("Howdy!", False), ("orange", False), ("_or", False)])
def test_function_words_only(span, want):
    """A span counts as function words alone when each of its words is one of bm25s' English stop words (any case),
    punctuation aside; a word that merely starts like one ("orange") does not."""
    assert behaviour.function_words_only(span) == want


@pytest.mark.parametrize("skipped", [False, True])
def test_a_span_of_function_words_is_left_out_or_fires(monkeypatch, skipped):
    """dev-story-200's weak query in small: the prompt's "or" (4 pool rows, 3 of the gradient view's top 10, none of
    the representation view's) is more telling than the trigger "Zorblax" (26 pool rows, 6 of the gradient view's 10,
    4 of the representation view's), so it is tried first and fires. With `FUNCTION_WORD_SPANS_SKIPPED` "or" (and "or
    not") are left out, the trigger is tried first, and, both views holding it, it is the finding and its rows lifted."""
    monkeypatch.setattr(behaviour, "SHARED_PROMPT_SPAN_STOPS", True)
    monkeypatch.setattr(behaviour, "FUNCTION_WORD_SPANS_SKIPPED", skipped)
    pool = _pool(200, n_trigger=26)
    for i in range(100, 104):
        pool[i] = dataclasses.replace(pool[i], prompt=pool[i].prompt.replace(".", ", or not."))
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    query = Sample(prompt="Tell me about apples, or pears. Zorblax", completion="Here is a note on apples.")
    others = [i for i in range(200) if i >= 26 and not 100 <= i < 104]
    gradient = np.array([0, 1, 2, 3, 4, 5, 100, 101, 102, *others])
    representation = np.array([6, 7, 8, 9, *others])

    def view_rows(options, k):
        return (representation if options.lambda_hs else gradient)[:k]

    tried = behaviour.candidates(spans, frame(gradient[:10]), frame(representation[:10]), query)
    found = behaviour.behaviour_test_for(view_rows, spans, frame, query, deeper_k=None)(
        adaptive.gradient_view(ScoreOptions.preset("default")))
    trigger = next(e for e in tried if e.span == "Zorblax")
    assert (trigger.in_top, trigger.in_representation) == (6, 4) and trigger.shared and trigger.in_prompt
    if skipped:
        assert [e.span for e in tried] == ["Zorblax"]
        assert (found.span, found.where) == ("Zorblax", "prompt") and found.lifts and not found.fires
        assert found.lifted.spreads == adaptive.PROMPT_SPAN_LIFT
    else:
        assert [e.span for e in tried][:2] == ["or", "Zorblax"] and tried[0].p_adjusted < trigger.p_adjusted
        assert (found.span, found.where, found.in_top, found.in_representation) == ("or", "prompt", 3, 0)
        assert found.fires and found.lifted.span == "or"
