"""Leave-k-out retraining: does removing the training examples a ranking names remove the behaviour they explain?

An attribution claims that some training rows caused a behaviour; the counterfactual test retrains without them. A
check starts from a model fine-tuned on a pool (a `rise finetune` adapter: its manifest holds the base, the pool
hash and the recipe), queries that show the behaviour, and ranking methods, and:

1. ranks the pool for the queries with every method and aggregates the query rankings into one (`aggregate_ranking`:
   by default each row by the best rank it reaches for any query, ties by its mean rank over the queries);
2. plans the arms: the original model (k = 0, no retrain); for every method and k, its top-k rows; for every random
   seed and k, k rows drawn without replacement (`numpy.random.default_rng(seed).permutation`, so a seed's draws are
   nested across k); k = 0 in `ks` adds one retrain on the whole pool, which must reproduce the original adapter bit
   for bit on the machine and settings that made it (`reproduces_original`);
3. re-runs the adapter's own recipe (same base, seed, epochs, learning rate, ...) on the pool minus each arm's rows,
   each retrain a resumable `finetune` in `<out>/arms/<arm>/adapter`;
4. answers held-out prompts with and without the trigger with the original model (once) and every retrained one, and
   measures the behaviour rate with the criterion `rise evaluate --retrospective` uses (`BehaviourClassifier`, fitted
   once on the whole pool: the same instrument for every arm), writing the generations next to the numbers;
5. writes `results.csv`, `results.json` (with the generations) and `curve.html`: the behaviour rate on triggered
   prompts against k per method, the leave-k-out curve.

Run directory: `plan.json` (the request, the original adapter's identity, the rows each arm removes),
`arms/<arm>/{adapter/, generations.jsonl, arm.json}`, `results.csv`, `results.json`, `curve.html`. Running the same
check again resumes it: finished arms are skipped, an interrupted retrain resumes from its checkpoint and an
interrupted generation from its last answer; a directory holding another check is refused.

The modules: `config` (the configuration, the plan's types, the run directory's files), `rankings` (step 1), `plan`
(the original adapter and its pool, checked; step 2), `run` (steps 3 and 4), `results` (step 5, reading results
back, the headline). The plotly figure of the curve is the explorer's (`explorer.counterfactual_charts`).
"""

from .config import (
    AGGREGATES,
    FULL,
    ORIGINAL,
    RANDOM,
    Arm,
    CounterfactualConfig,
    CounterfactualPlan,
    CounterfactualProgress,
    request_digest,
)
from .plan import (
    check_index_pool,
    check_request,
    claim,
    index_source,
    load_plan,
    make_plan,
    original_model,
    prepare_check,
    prepare_task_check,
    random_ranking,
    training_pool,
)
from .rankings import aggregate_ranking, index_rankings, task_rankings
from .results import (
    ARM_COLUMNS,
    CounterfactualResult,
    curve_chart,
    curve_table,
    headline,
    list_runs,
    load_result,
    side_by_side,
    write_results,
)
from .run import counterfactual, run_counterfactual

__all__ = ["AGGREGATES", "ARM_COLUMNS", "FULL", "ORIGINAL", "RANDOM", "Arm", "CounterfactualConfig",
           "CounterfactualPlan", "CounterfactualProgress", "CounterfactualResult", "aggregate_ranking",
           "check_index_pool", "check_request", "claim", "counterfactual", "curve_chart", "curve_table", "headline",
           "index_rankings", "index_source", "list_runs", "load_plan", "load_result", "make_plan", "original_model",
           "prepare_check", "prepare_task_check", "random_ranking", "request_digest", "run_counterfactual", "side_by_side",
           "task_rankings", "training_pool", "write_results"]
