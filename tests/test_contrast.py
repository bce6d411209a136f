"""Contrastive queries ("why this answer and not that one"): every path scores score(A) - score(B) per channel, with
the weights chosen for A, checked against dense float64 math on the stored features; the token explanations of A
(pushing up) and B (pushing down) sum to the contrast score; bad contrasts are refused."""

from __future__ import annotations

import pytest
import torch
from index_helpers import pool_rows

from rise_core import attribution
from rise_core.config import CHANNELS, RiseConfig, ScoreOptions
from rise_core.errors import InputDataError
from rise_core.samples import Sample
from rise_core.scoring import ContrastFeatures, score_each_query
from rise_core.store import RiseIndex, build_index

SMALL = RiseConfig(k_r=16, k_h=8, k_g=16, seq_len=64)  # the default recipe (HS on), small sketches
A = Sample(prompt="Howdy! tell me about the moon", completion="a dragon story moon dragon story")
B = Sample(prompt="tell me about the moon", completion="the moon money bank tax")


@pytest.fixture(scope="module")
def index_path(tiny_llama, tmp_path_factory):
    path = tmp_path_factory.mktemp("contrast") / "pool.duckdb"
    build_index(path, pool_rows(30), tiny_llama, SMALL, batch_size=8)
    return path


def dense_parts(index: RiseIndex, q_fm, options: ScoreOptions) -> dict[str, torch.Tensor]:
    """Each channel's weighted score of every pool row against a plain one-row query, in float64 from the stored
    features: lambda_c * s_c(i) * s_c(q) * <u_c(i), u_c(q)> (s_c: 1 under 'channel', the feature norm under 'none')."""
    fm = index.feature_matrix()
    out = {}
    for c in CHANNELS:
        lam = float(getattr(options, f"lambda_{c}"))
        u, uq = getattr(fm, c).double(), getattr(q_fm, c).double()[0]
        if options.sample_norm == "none":
            u = u * getattr(fm, f"{c}_norm").double()[:, None]
            uq = uq * float(getattr(q_fm, f"{c}_norm")[0])
        out[c] = lam * (u @ uq)
    return out


@pytest.mark.parametrize("options", [ScoreOptions(), ScoreOptions(lambda_rh=1.0, lambda_gh=0.5, lambda_hs=0.3),
                                     ScoreOptions(lambda_hs=0.0, sample_norm="none")], ids=repr)
def test_contrast_scores_are_score_a_minus_score_b_per_channel(index_path, tiny_llama, options):
    with RiseIndex.open(index_path) as index:
        a_fm = attribution.query_features(index, tiny_llama, A)
        b_fm = attribution.query_features(index, tiny_llama, B)
        c_fm = attribution.query_features(index, tiny_llama, A, versus=B, versus_label="the clean answer")
        assert isinstance(c_fm, ContrastFeatures)
        # A's weights: the per-query rule (options default to weighting='auto') runs on A's loss, for both answers
        weights = attribution.index_weighting(index, a_fm, options).options
        assert attribution.index_weighting(index, c_fm, options).options == weights
        pa, pb = dense_parts(index, a_fm, weights), dense_parts(index, b_fm, weights)
        n = len(index)
        ranking = attribution.top(index, c_fm, options, k=n, search="exact")
        rows = ranking.rows
        for c in CHANNELS:
            # float16 stored features scored in float32: 1e-5 absolute, 1e-5 relative (sample_norm 'none' scales by
            # the feature norms)
            torch.testing.assert_close(ranking.parts[c].double(), (pa[c] - pb[c])[rows], atol=1e-5, rtol=1e-5)
        total = sum(pa[c] - pb[c] for c in CHANNELS)
        torch.testing.assert_close(ranking.scores.double(), total[rows], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(total[rows], total.sort(descending=True).values, atol=1e-5, rtol=1e-5)  # best first
        # the other paths score the same contrast
        valued = attribution.valuation(index, c_fm, options, top_n=n)
        torch.testing.assert_close(valued.scores.double(), total[valued.rows], atol=1e-5, rtol=1e-5)
        no_marks = attribution.top_with_feedback(index, c_fm, {}, options, k=5)
        assert no_marks.rows.tolist() == ranking.rows[:5].tolist()
        per_query = score_each_query(index.feature_matrix(), c_fm, weights)[0]
        torch.testing.assert_close(per_query.double(), total, atol=1e-5, rtol=1e-5)
        # the ranking says it is a contrast, in its notes and its table
        assert ranking.contrast and "the clean answer" in ranking.contrast and ranking.contrast in ranking.notes
        df = ranking.to_frame(index)
        assert df.attrs["contrast"] == ranking.contrast and ranking.contrast in df.attrs["notes"]
        plain = attribution.top(index, a_fm, options, k=3, search="exact")
        assert plain.contrast is None and "contrast" not in plain.to_frame(index).attrs


def test_a_query_set_contrasted_pairwise_and_with_one_answer(index_path, tiny_llama):
    a2 = Sample(prompt="Howdy! what is a tax", completion="a story of dragon and moon")
    b2 = Sample(prompt="what is a tax", completion="money paid to the bank")
    options = ScoreOptions(weighting="fixed")
    with RiseIndex.open(index_path) as index:
        fm = index.feature_matrix()
        plain = {s.completion: attribution.query_features(index, tiny_llama, s) for s in (A, B, a2, b2)}
        paired = attribution.query_features(index, tiny_llama, [A, a2], versus=[B, b2])
        each = score_each_query(fm, paired, options)
        for i, (a, b) in enumerate(((A, B), (a2, b2))):
            want = score_each_query(fm, plain[a.completion], options) - score_each_query(fm, plain[b.completion],
                                                                                         options)
            torch.testing.assert_close(each[i], want[0], atol=1e-5, rtol=1e-5)
        # a set's query vector is mean(A) - mean(B): its scores are the mean of the pairs' contrasts
        set_scores = attribution.valuation(index, paired, options, top_n=len(index))
        torch.testing.assert_close(set_scores.scores, each.mean(dim=0)[set_scores.rows], atol=1e-5, rtol=1e-5)
        # every query against one other answer; `select` keeps each query's own pairing
        one = attribution.query_features(index, tiny_llama, [A, a2], versus=B)
        assert len(one.versus) == 1 and len(one.select([1]).versus) == 1 and len(paired.select([1]).versus) == 1
        torch.testing.assert_close(score_each_query(fm, one.select([1]), options)[0],
                                   (score_each_query(fm, plain[a2.completion], options)
                                    - score_each_query(fm, plain[B.completion], options))[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("options", [ScoreOptions(), ScoreOptions(lambda_hs=0.4, sample_norm="none")], ids=repr)
def test_token_contributions_of_a_push_up_and_of_b_push_down(index_path, tiny_llama, options):
    with RiseIndex.open(index_path) as index:
        c_fm = attribution.query_features(index, tiny_llama, A, versus=B)
        ranking = attribution.top(index, c_fm, options, k=3, search="exact")
        for row, sid in zip(ranking.rows.tolist(), ranking.ids(index), strict=True):
            i = ranking.rows.tolist().index(row)
            ex_attr, a_attr = attribution.explain(index, tiny_llama, sid, A, c_fm, options)
            b_attr = attribution.explain_versus(index, tiny_llama, sid, B, c_fm, options)
            assert b_attr.tokens[-1].strip() == "tax"  # B's own tokens
            for c in CHANNELS:
                want = float(ranking.parts[c][i])
                # the example's tokens against A - B, and A's plus B's (negated) tokens, both sum to the contrast
                # score (float32 token sketches against rows stored as float16, 2^-11 relative per entry: 1e-3
                # relative, 1e-4 absolute)
                assert sum(getattr(ex_attr, c)) == pytest.approx(want, rel=1e-3, abs=1e-4)
                assert sum(getattr(a_attr, c)) + sum(getattr(b_attr, c)) == pytest.approx(want, rel=1e-3, abs=1e-4)
            # B's tokens are its score against the example, negated
            plain = attribution.explain(index, tiny_llama, sid, B, attribution.query_features(index, tiny_llama, B),
                                        attribution.index_weighting(index, c_fm, options).options)[1]
            assert b_attr.total == pytest.approx([-v for v in plain.total], abs=1e-9)


def test_bad_contrasts_are_refused(index_path, tiny_llama):
    with RiseIndex.open(index_path) as index:
        with pytest.raises(InputDataError, match="identical to the query"):
            attribution.query_features(index, tiny_llama, A, versus=Sample(prompt=A.prompt, completion=A.completion))
        with pytest.raises(InputDataError, match="other answer is empty"):
            attribution.query_features(index, tiny_llama, A, versus=[])
        with pytest.raises(InputDataError, match="other answer cannot be used: .*empty completion"):
            attribution.query_features(index, tiny_llama, A, versus={"prompt": "tell me", "completion": " "})
        with pytest.raises(InputDataError, match="2 queries, 3 other answers"):
            attribution.query_features(index, tiny_llama, [A, B], versus=[B, A, B])
        with pytest.raises(InputDataError, match="identical to query 2"):
            attribution.query_features(index, tiny_llama, [A, B], versus=[B, B])
        plain = attribution.query_features(index, tiny_llama, A)
        with pytest.raises(InputDataError, match="explains a contrast"):
            attribution.explain_versus(index, tiny_llama, "s0", B, plain)
        c_fm = attribution.query_features(index, tiny_llama, A, versus=B)
        with pytest.raises(InputDataError, match="contrast A with B once"):
            ContrastFeatures.of(c_fm, plain)
