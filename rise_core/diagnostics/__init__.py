"""Diagnostics of the paper's three observations, as pandas tables.

Each function takes a loaded model and samples and returns a `DiagnosticResult` (named DataFrames + a summary dict):

- `layer_energy`: gradient-energy share per component (embedding, blocks, final norm, LM head) -- Observation 1;
  tied heads are split into readout and input-embedding use.
- `discriminativeness`: variance of pairwise cosines of token hidden states per layer -- the U-shape.
- `sparsity`: mass / residual energy / GH fidelity kept by the adaptive support, K and tau sweeps -- Observation 3.
- `rh_gh_ranking`, `rh_gh_examples`: ranks under RH, GH and RH+GH, exact and sketched -- Observation 2.
- `sketch_fidelity`: sketched vs exact channel similarities, top-k stability across sketch seeds.

`run_diagnostics` runs a selection with on-disk caching (`load_results` reads a cache back); `rise diagnose` is the
command line front.
"""

from __future__ import annotations

from ._common import DiagnosticResult
from .energy import layer_energy, model_components
from .fidelity import sketch_fidelity
from .hidden import discriminativeness, pairwise_cosine_stats
from .ranking import EXAMPLE_CANDIDATES, EXAMPLE_QUERY, example_set, rh_gh_examples, rh_gh_ranking
from .runner import (
    DEFAULT_TEXTS,
    DIAGNOSTICS,
    DiagnosticsOptions,
    default_output_dir,
    load_result,
    load_results,
    parse_which,
    run_diagnostics,
    save_result,
    select_samples,
)
from .sparsity import sparsity

__all__ = [
    "DEFAULT_TEXTS", "DIAGNOSTICS", "EXAMPLE_CANDIDATES", "EXAMPLE_QUERY", "DiagnosticResult", "DiagnosticsOptions",
    "default_output_dir", "discriminativeness", "example_set", "layer_energy", "load_result", "load_results",
    "model_components", "pairwise_cosine_stats", "parse_which", "rh_gh_examples", "rh_gh_ranking", "run_diagnostics",
    "save_result", "select_samples", "sketch_fidelity", "sparsity",
]
