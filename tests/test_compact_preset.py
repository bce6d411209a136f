"""The `compact` preset for very large pools: in the one preset table, accepted by the CLI and the API, recorded by an
index built with it, and scored as the dense math says (RH and GH only, the fixed weights) on both search paths."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from index_helpers import pool_rows, save_tiny_model, write_jsonl

from rise_core import ann
from rise_core.attribution import query_features, rank
from rise_core.cli import main
from rise_core.config import (
    PRESET_SCORING,
    PRESET_TABLE,
    PRESETS,
    RiseConfig,
    ScoreOptions,
    config_preset,
    index_preset_line,
    preset_descriptions,
)
from rise_core.models import load_model
from rise_core.store import RiseIndex, build_index

QUERY = "the cat sat on the mat ."


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny model on disk and a 20-row pool built with `rise build --preset compact`."""
    root = tmp_path_factory.mktemp("compact")
    model = save_tiny_model(root / "model")
    pool = write_jsonl(root / "pool.jsonl", pool_rows(20))
    index = root / "compact.duckdb"
    assert main(["build", str(pool), "--index", str(index), "--model", str(model), "--preset", "compact",
                 "--batch-size", "8", "--quiet"]) == 0
    return root, model, index


def test_compact_is_in_the_one_table_with_the_papers_small_budget():
    config = PRESETS["compact"]
    assert PRESET_TABLE["compact"].config is config and PRESET_SCORING["compact"] is PRESET_TABLE["compact"].scoring
    # the paper's (K_r, K_h, K_g) for very large pools, TensorSketch, no HS: 16*8 + 28*8 = 352 values, 704 bytes
    assert (config.k_r, config.k_h, config.k_g, config.composition, config.hidden_channel) == (16, 8, 28, "tensor",
                                                                                             False)
    assert config.feature_dims == (128, 224) and config.channels == ("rh", "gh")
    assert config.bytes_per_sample(576) == 704 and 10_000_000 * config.bytes_per_sample(576) < 7.1e9
    assert RiseConfig().bytes_per_sample(576) == 7296  # the default, for comparison: 10.4x as many bytes
    # every other field the default's, but hs_depth: no HS channel to read, so at 1, as indexes of before read
    assert config == RiseConfig(k_r=16, k_h=8, k_g=28, hidden_channel=False, hs_depth=1.0)
    assert PRESET_SCORING["compact"] == ScoreOptions(lambda_hs=0.0)  # fixed RH 1.4 / GH 1, nothing on a missing HS
    assert config_preset(config) == "compact"  # its config is its own: an index built with it names it
    assert "'compact': very large pools" in preset_descriptions()


def test_an_index_built_with_it_records_it_and_scores_with_it(env, capsys):
    root, model, index = env
    with RiseIndex.open(index) as opened:
        assert opened.manifest.build_preset == "compact" and opened.config == PRESETS["compact"]
        fm = opened.feature_matrix()
    assert (fm.rh.shape[1], fm.gh.shape[1], fm.hs) == (128, 224, None)
    capsys.readouterr()
    assert main(["query", "--index", str(index), "--model", str(model), "--text", QUERY, "-k", "5",
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    assert index_preset_line("compact", "--preset") in out.err  # scored with the index's preset, and says so
    hits = pd.DataFrame(json.loads(out.out))
    assert len(hits) == 5 and ("hs" not in hits or (hits["hs"].fillna(0) == 0).all())
    assert hits["score"].tolist() == pytest.approx((hits["rh"] + hits["gh"]).tolist(), rel=1e-6)
    # --preset compact on another index's query is accepted too (scoring is a query-time choice)
    assert main(["query", "--index", str(index), "--model", str(model), "--text", QUERY, "-k", "5",
                 "--preset", "compact", "--format", "json"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)] == hits["id"].tolist()


def _dense(fm, q) -> torch.Tensor:
    """sum_c lambda_c <u_c, q_c> in float64 from the stored float16 unit channels: 1.4 RH + 1.0 GH."""
    return 1.4 * fm.rh.double() @ q.rh[0].double() + 1.0 * fm.gh.double() @ q.gh[0].double()


def test_scores_match_the_dense_math_on_the_exact_and_ann_paths(env):
    root, model, index = env
    lm = load_model(str(model))
    with RiseIndex.open(index, read_only=False) as opened:
        ann.build_ann(opened, nlist=2, nprobe=2)  # every cell scanned: the ANN path must return the exact top k
    with RiseIndex.open(index) as opened:
        assert ann.ann_status(opened).meta.dims == {"rh": 128, "gh": 224}
        qfm = query_features(opened, lm, QUERY)
        expected = _dense(opened.feature_matrix(), qfm)
        order = torch.argsort(expected, descending=True)[:8]
        ids = opened.rows_frame(order.tolist())["id"].tolist()
        for search in ("exact", "ann"):
            df = rank(opened, qfm, ScoreOptions.preset("compact"), k=8, search=search)
            assert df.attrs["search"]["path"] == search
            assert df["id"].tolist() == ids
            # float32 products of float16 values against float64: 1e-5 relative covers the summation order
            assert df["score"].tolist() == pytest.approx(expected[order].tolist(), rel=1e-5, abs=1e-6)
            assert df["rh"].tolist() == pytest.approx((1.4 * opened.feature_matrix().rh.double()[order]
                                                       @ qfm.rh[0].double()).tolist(), rel=1e-5, abs=1e-6)


def test_the_api_builds_with_the_presets_config(tmp_path, tiny_llama):
    build_index(tmp_path / "api.duckdb", pool_rows(6), tiny_llama, PRESETS["compact"])  # the preset it implies
    with RiseIndex.open(tmp_path / "api.duckdb") as opened:
        assert opened.manifest.build_preset == "compact" and opened.config == PRESETS["compact"]
        assert len(opened) == 6
