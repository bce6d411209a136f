"""Scoring presets at query time (`ScoreOptions.preset`, `rise query/select --preset`) and the one rule for a weight
on a channel an index does not store (`ScoreOptions.for_channels`), on the exact scan and on the ANN path."""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest
import torch
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core.attribution import query_features, rank, rank_each, select, top_rows
from rise_core.cli import main
from rise_core.config import PRESET_SCORING, PRESETS, RiseConfig, ScoreOptions, preset_scoring
from rise_core.errors import ConfigError
from rise_core.models import load_model
from rise_core.scoring import FeatureMatrix, score_pool
from rise_core.store import RiseIndex, build_index

CFG = RiseConfig(k_r=16, k_h=8, k_g=16)  # the HS channel stored (the default)
QUERY = "the cat sat on the mat ."
NO_HS_NOTE = "lambda_hs=1 not applied: this index has no HS channel"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny model on disk and two indexes of one pool: with the HS channel and without it."""
    root = tmp_path_factory.mktemp("presets")
    model = save_tiny_model(root / "model")
    lm = load_model(str(model))
    pool = pool_rows(16)
    build_index(root / "hs.duckdb", pool, lm, CFG, batch_size=8)
    build_index(root / "plain.duckdb", pool, lm, CFG.replace(hidden_channel=False), batch_size=8)
    queries = write_jsonl(root / "queries.jsonl", [{"text": QUERY}, {"text": "the bank lost money ."}])
    return root, model, lm, queries


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the presets ---------------------------------------------------------------------------------------------------


def test_scoring_presets_match_the_table():
    assert set(PRESET_SCORING) == set(PRESETS)
    for name, options in PRESET_SCORING.items():
        assert ScoreOptions.preset(name) == preset_scoring(name) == options
    assert ScoreOptions.preset("backdoor") == ScoreOptions(lambda_hs=0.0)
    assert ScoreOptions.preset("backdoor", lambda_hs=0.5).lambda_hs == 0.5
    assert ScoreOptions.preset("backdoor", lambda_hs=None) == ScoreOptions.preset("backdoor")  # None: not given
    with pytest.raises(ConfigError, match="backdoor"):
        ScoreOptions.preset("nope")


def test_backdoor_gives_hs_nothing(env):
    """Under 'backdoor' each hit's score is the RH + GH score computed by hand from the stored unit channels
    (lambda 1.4 / 1.0, per-channel normalisation), and its hs column is 0; the default weighs HS."""
    root, _, lm, _ = env
    backdoor = ScoreOptions.preset("backdoor")
    with RiseIndex.open(root / "hs.duckdb") as index:
        qfm = query_features(index, lm, [QUERY])
        fm = index.feature_matrix()
        hits = rank(index, qfm, backdoor, k=len(fm), search="exact")
        default = rank(index, qfm, ScoreOptions.preset("default"), k=5)
        rows = [index.row_of(i) for i in hits["id"]]
        chosen = select(index, qfm, backdoor, fraction=1.0)
        each = rank_each(index, query_features(index, lm, [QUERY, "the bank lost money ."]), backdoor, k=3)
    assert (hits["hs"] == 0).all() and (chosen["hs"] == 0).all() and (each["hs"] == 0).all()
    assert default["hs"].abs().max() > 0
    rh = fm.rh.double()[rows] @ qfm.rh[0].double()  # unit rows . the query's unit vector
    gh = fm.gh.double()[rows] @ qfm.gh[0].double()
    by_hand = 1.4 * rh + 1.0 * gh
    got = {c: torch.tensor(hits[c].to_numpy(), dtype=torch.float64) for c in ("score", "rh", "gh")}
    torch.testing.assert_close(got["rh"], 1.4 * rh, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got["gh"], gh, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got["score"], by_hand, rtol=1e-5, atol=1e-6)
    assert chosen["id"].tolist() == hits["id"].tolist()
    assert hits.attrs["notes"] == [] and chosen.attrs["notes"] == []


def test_cli_query_and_select_take_the_preset(env, capsys, tmp_path):
    root, model, lm, queries = env
    index = root / "hs.duckdb"
    code, out, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "-k", "5",
                          "--preset", "backdoor", "--format", "json")
    assert code == 0, err
    hits = json.loads(out)
    assert len(hits) == 5 and all(h["hs"] == 0 for h in hits)
    with RiseIndex.open(index) as opened:
        api = rank(opened, query_features(opened, lm, [QUERY]), ScoreOptions.preset("backdoor"), k=5)
    assert [h["id"] for h in hits] == api["id"].tolist()
    assert [h["score"] for h in hits] == pytest.approx(api["score"].tolist(), rel=1e-6)

    code, out, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "-k", "3",
                          "--preset", "backdoor", "--lambda-hs", "0.5", "--format", "json")  # a flag beats the preset
    assert code == 0, err
    assert any(h["hs"] != 0 for h in json.loads(out))

    out_file = tmp_path / "sel.jsonl"
    code, out, err = _run(capsys, "select", "--index", index, "--model", model, "--queries", queries, "--top-n", "6",
                          "--out", out_file, "--preset", "backdoor")
    assert code == 0, err
    selected = pd.read_json(out_file, lines=True)
    assert len(selected) == 6 and (selected["hs"] == 0).all()

    with pytest.raises(SystemExit) as usage:  # argparse: exit 2, the choices listed
        main(["query", "--index", str(index), "--text", QUERY, "--preset", "nope"])
    assert usage.value.code == 2 and "choose from 'backdoor', 'compact', 'default', 'fixed', 'paper', 'retrospective'" in capsys.readouterr().err


def test_retrospective_preset_is_the_variant_the_benchmark_chose():
    """The preset is exactly the feature variant `studies.retrospective_choices` measured ("tensor 64/24/64
    sparse", scored RH+GH+HS with the fixed weights), so the evidence its comment points to is about this config."""
    from studies.retrospective_choices import FEATURES, SEQ_LEN, WEIGHTS

    assert PRESETS["retrospective"] == RiseConfig(seq_len=PRESETS["retrospective"].seq_len,
                                                  **FEATURES["tensor 64/24/64 sparse"])
    assert RiseConfig(seq_len=SEQ_LEN, **FEATURES["tensor 64/24/64 sparse"]).replace(seq_len=RiseConfig().seq_len) \
        == PRESETS["retrospective"]
    options = PRESET_SCORING["retrospective"]
    assert options.weighting == "fixed" and (options.lambda_rh, options.lambda_gh, options.lambda_hs) == \
        WEIGHTS["RH+GH+HS"]
    assert (PRESETS["retrospective"].rho_cum, PRESETS["retrospective"].min_top_l) == (0.5, 1)


def test_cli_builds_and_queries_with_the_retrospective_preset(env, capsys, tmp_path):
    root, model, lm, queries = env
    pool = write_jsonl(tmp_path / "pool.jsonl", pool_rows(12))
    index = tmp_path / "retro.duckdb"
    code, out, err = _run(capsys, "build", pool, "--index", index, "--model", model, "--preset", "retrospective",
                          "--k-r", "16", "--k-h", "8", "--k-g", "16", "--batch-size", "4")
    assert code == 0, err
    with RiseIndex.open(index) as opened:
        assert (opened.config.rho_cum, opened.config.min_top_l) == (0.5, 1)  # the manifest keeps the sparse support
        api = rank(opened, query_features(opened, lm, [QUERY]), ScoreOptions.preset("retrospective"), k=4)
    chosen = api.attrs["weighting"]  # the fixed weights, not a per-query choice
    assert (chosen["lambda_rh"], chosen["lambda_gh"], chosen["lambda_hs"]) == (1.4, 1.0, 1.0)
    assert math.isnan(chosen["gate"])
    code, out, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "-k", "4",
                          "--preset", "retrospective", "--format", "json")
    assert code == 0, err
    hits = json.loads(out)
    assert [h["id"] for h in hits] == api["id"].tolist()
    assert [h["score"] for h in hits] == pytest.approx(api["score"].tolist(), rel=1e-6)


# -- one rule for a weight on a missing channel --------------------------------------------------------------------


def test_for_channels_drops_a_missing_channel_with_a_note():
    applied = ScoreOptions(lambda_hs=1.0).for_channels(("rh", "gh"))
    assert applied.options == ScoreOptions(lambda_hs=0.0) and applied.dropped == ("hs",)
    assert applied.notes == [f"{NO_HS_NOTE} (built with hidden_channel off, or before it existed); scored on RH + GH"]
    assert ScoreOptions(lambda_hs=1.0).applied_to(RiseConfig(hidden_channel=False)) == applied
    kept = ScoreOptions(lambda_hs=1.0).applied_to(RiseConfig())
    assert kept.options == ScoreOptions(lambda_hs=1.0) and kept.notes == [] and kept.note == ""
    # nothing weighted at all is not a missing channel
    zero = ScoreOptions(lambda_rh=0.0, lambda_gh=0.0, lambda_hs=0.0)
    assert zero.for_channels(("rh", "gh")).options == zero
    with pytest.raises(ConfigError, match=r"weighs only HS, which this index does not store; it has RH, GH"):
        ScoreOptions(lambda_rh=0.0, lambda_gh=0.0, lambda_hs=1.0).for_channels(("rh", "gh"))


def test_exact_path_drops_hs_of_an_index_without_it(env):
    root, _, lm, _ = env
    with RiseIndex.open(root / "plain.duckdb") as index:
        qfm = query_features(index, lm, [QUERY])
        weighted = rank(index, qfm, ScoreOptions(lambda_hs=1.0), k=8, search="exact")
        plain = rank(index, qfm, ScoreOptions(lambda_hs=0.0), k=8, search="exact")
        chosen = select(index, qfm, ScoreOptions(lambda_hs=1.0), top_n=8)
        fm = index.feature_matrix()
        low_level = top_rows(fm, qfm, ScoreOptions(lambda_hs=1.0), k=8)[1].total  # below rank: the same rule
        with pytest.raises(ConfigError, match="it has RH, GH"):
            rank(index, qfm, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0), k=3)
        with pytest.raises(ConfigError, match="it has RH, GH"):
            select(index, qfm, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0), top_n=3)
        with pytest.raises(ConfigError, match="weighs only HS"):
            score_pool(fm, qfm, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0))
    pd.testing.assert_frame_equal(weighted, plain)
    assert weighted.attrs["notes"] == chosen.attrs["notes"] and NO_HS_NOTE in weighted.attrs["notes"][0]
    assert plain.attrs["notes"] == [] and (weighted["hs"] == 0).all()
    assert chosen["id"].tolist() == plain["id"].tolist()
    torch.testing.assert_close(low_level, torch.tensor(plain["score"].to_numpy()).float())


def test_ann_path_follows_the_same_rule(tmp_path):
    """An ANN index over features without HS: lambda_hs is dropped with the same note (not refused), the ranking is
    the exact scan's, and weights on HS alone are the same error."""
    pytest.importorskip("faiss")
    from test_ann import NLIST, make_index, query

    from rise_core import ann

    config = RiseConfig(k_r=4, k_h=4, k_g=6, center_hidden=False, hidden_channel=False)
    path = make_index(tmp_path / "plain.duckdb", config=config)
    q = query().without_hs()
    with RiseIndex.open(path) as index:
        ann.build_ann(index, nlist=NLIST, threads=1)
        fast = rank(index, q, ScoreOptions(lambda_hs=1.0), k=10, search="ann")
        slow = rank(index, q, ScoreOptions(lambda_hs=1.0), k=10, search="exact")
        plain = rank(index, q, ScoreOptions(lambda_hs=0.0), k=10, search="ann")
        handle = ann.load_ann(index)
        direct = ann.top_rows(handle, q, ScoreOptions(lambda_hs=1.0), 10, nprobe=NLIST)  # below rank: the same rule
        plain_rows = [index.row_of(i) for i in plain["id"]]
        for search in ("ann", "exact"):
            with pytest.raises(ConfigError, match="it has RH, GH"):
                rank(index, q, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0), k=3, search=search)
        with pytest.raises(ConfigError, match="weighs only HS"):
            ann.top_rows(handle, q, ScoreOptions(lambda_rh=0.0, lambda_gh=0.0), 10)
    assert fast.attrs["search"]["path"] == "ann" and slow.attrs["search"]["path"] == "exact"
    assert fast.attrs["notes"] == slow.attrs["notes"] and NO_HS_NOTE in fast.attrs["notes"][0]
    assert fast["id"].tolist() == slow["id"].tolist() == plain["id"].tolist()
    assert (fast["hs"] == 0).all()
    torch.testing.assert_close(torch.tensor(fast["score"].to_numpy()), torch.tensor(plain["score"].to_numpy()))
    assert direct[0].tolist() == plain_rows
    torch.testing.assert_close(direct[1].total.double(), torch.tensor(plain["score"].to_numpy()), rtol=1e-6,
                               atol=1e-7)


def test_cli_notes_a_dropped_weight_and_refuses_missing_channels_alone(env, capsys):
    root, model, _, _ = env
    index = root / "plain.duckdb"
    code, out, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "-k", "3",
                          "--format", "csv")
    assert code == 0, err
    assert f"note: {NO_HS_NOTE}" in err and "note:" not in out  # stdout stays the results alone
    assert (pd.read_csv(io.StringIO(out))["hs"] == 0).all()
    code, _, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "--preset", "backdoor")
    assert code == 0 and "note:" not in err  # backdoor asks for no HS: nothing to drop
    code, out, err = _run(capsys, "query", "--index", index, "--model", model, "--text", QUERY, "--lambda-rh", "0",
                          "--lambda-gh", "0")
    assert code == 1 and "weighs only HS" in err and "it has RH, GH" in err and "Traceback" not in err


def test_feature_matrix_channels():
    feats = FeatureMatrix(rh=torch.ones(2, 3), gh=torch.ones(2, 4), rh_norm=torch.ones(2), gh_norm=torch.ones(2))
    assert feats.channels == ("rh", "gh") and RiseConfig().channels == ("rh", "gh", "hs")
    assert RiseConfig(hidden_channel=False).channels == feats.channels


def test_one_preset_table_holds_config_scoring_and_description():
    from rise_core.config import PRESET_TABLE, preset_descriptions

    assert list(PRESET_TABLE) == list(PRESETS) == list(PRESET_SCORING)
    for name, p in PRESET_TABLE.items():
        assert PRESETS[name] is p.config and PRESET_SCORING[name] is p.scoring and p.description
        assert f"'{name}': {p.description}" in preset_descriptions()
    assert preset_descriptions().endswith("'backdoor' and 'fixed' build the default index.")


def test_hand_set_weights_become_fixed_weights_by_one_rule():
    auto = ScoreOptions(weighting="auto")
    assert auto.with_overrides(lambda_rh=0.3) == ScoreOptions(lambda_rh=0.3, weighting="fixed")
    assert auto.with_overrides(lambda_rh=0.3, weighting="auto").weighting == "auto"
    assert auto.with_overrides(lambda_rh=None, sample_norm="joint") == ScoreOptions(weighting="auto", sample_norm="joint")
    assert preset_scoring("default", lambda_gh=2.0) == auto.with_overrides(lambda_gh=2.0)
