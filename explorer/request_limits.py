"""What one page request may ask of the model on a shared server: how long a typed text is, and how many queries or
samples one click runs through the model.

The queries a page scores (Select data's query set, the diagnostics' samples and candidates) run in the request, one
forward pass each: a pasted list of a hundred thousand one-line queries, or an uploaded file of as many rows (the upload
limits allow 100,000), would hold the machine for hours. Typed texts are bounded where they are typed (`max_chars`,
which Streamlit also enforces on the server) at the length of a pool cell.

The text baselines fitted over a whole pool (BM25's index and MiniLM's embeddings: the Compare page's, a
counterfactual check's, the marked words') are fitted once per pool and kept; a pool of up to `max_inline_bm25_rows`
(`max_inline_embed_rows`) rows is fitted in the request that first asks for it, a larger one only on a click that
says what it costs, as a background job in the server's queue (`explorer.resources.start_fit`).

What the marks may cost (`FeedbackLimits`), what one counterfactual check started from a form may ask for
(`CheckLimits`), how large the RISE hyperparameters of a form may be (`ConfigLimits`) and how long a fine-tune
started from the Build page may train (`FinetuneLimits`) live here too: every limit of a page's request in one
module, free of Streamlit.

Settings (environment variables): RISE_MAX_TEXT_CHARS, RISE_MAX_QUERIES, RISE_MAX_INLINE_BM25_ROWS,
RISE_MAX_INLINE_EMBED_ROWS, RISE_MAX_PEER_BYTES, RISE_FEEDBACK_WORDS_MAX_ROWS, RISE_CHECK_MAX_*,
RISE_MAX_SIGNATURE_VALUES, RISE_MAX_SEQ_LEN, RISE_MAX_CANDIDATES, RISE_FINETUNE_MAX_PASSES. The CLI and the Python
API have no such limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from rise_core.env_limits import EnvLimits, env_field
from rise_core.errors import InputDataError
from rise_core.units import format_seconds

if TYPE_CHECKING:
    from rise_core.config import RiseConfig

T = TypeVar("T")

BM25_TEXTS_PER_S = 19_894
"""BM25's indexing speed on this 2-core machine: 100,000 Alpaca rows (the 1,000 repeated) in 5.0 s, adding 119 MB
(`python -m benchmarks.embed_pool --pool ../shared/data/dev/alpaca_clean_sample.jsonl --bm25-scale 100`,
2026-11-25): the estimate the app gives before indexing a large pool."""

MINILM_TEXTS_PER_S = 49
"""MiniLM's embedding speed on this 2-core machine: 48.7 texts a second, the median of 3 on 1,000 Alpaca rows of 351
characters on average (`python -m benchmarks.embed_pool --pool ../shared/data/dev/alpaca_clean_sample.jsonl
--repeats 3`, 2026-11-25; docs/PERFORMANCE.md): the estimate the app gives before embedding a large pool."""


@dataclass(frozen=True)
class RequestLimits(EnvLimits):
    """- 100,000 characters a typed text: a pool cell's limit (`ingest_limits.PoolLimits.max_cell_chars`); the index
      reads the first `seq_len` tokens (a few thousand characters) of a query.
    - 500 queries or samples a click: at the default model's 436 tokens/s on this 2-core machine (docs/PERFORMANCE.md)
      and 256 tokens each, about 5 minutes of the machine; larger query sets are for `rise select`.
    - 200,000 pool rows indexed for BM25 in a request: 10 s and 0.24 GB at BM25_TEXTS_PER_S on Alpaca-length rows, and
      about a minute and 1.6 GB for rows of 80 words under load (`FeedbackLimits`, the same bound on the
      marked words).
    - 2,000 pool rows embedded by MiniLM in a request: about 40 s at MINILM_TEXTS_PER_S. A request is lost to any click
      on the page meanwhile (Streamlit stops the script to rerun it), so a larger pool is embedded only when asked, as a
      background job in the server's queue (at 100,000 rows, over half an hour).
    - 4 GiB held by a peer's index over a pool and the copy of the model it runs on (Bergson on Compare holds every
      row's gradients in memory: 215,040 bytes a row on the default model, whose copy takes 513 MB, so about 17,500
      rows); a larger pool is for `rise evaluate --methods Bergson` or `compare_methods` in Python."""

    max_text_chars: int = env_field(100_000, "RISE_MAX_TEXT_CHARS", "characters a typed text")
    max_queries: int = env_field(500, "RISE_MAX_QUERIES", "queries or samples a click")
    max_inline_bm25_rows: int = env_field(200_000, "RISE_MAX_INLINE_BM25_ROWS", "pool rows indexed for BM25 in a "
                                          "request")
    max_inline_embed_rows: int = env_field(2_000, "RISE_MAX_INLINE_EMBED_ROWS", "pool rows embedded in a request")
    max_peer_bytes: int = env_field(4 * 2**30, "RISE_MAX_PEER_BYTES", "bytes a peer's index over a pool holds")

    def check_count(self, items: Sequence[T], what: str) -> Sequence[T]:
        """`items` (queries, samples) when there are at most `max_queries` of them, else an InputDataError that names
        the limit and its variable."""
        if len(items) > self.max_queries:
            raise InputDataError(f"{len(items):,} {what} in one request; the limit is {self.max_queries:,} "
                                 f"(RISE_MAX_QUERIES). Use fewer, or the command line (`rise select`, `rise diagnose`) for a "
                                 "large set")
        return items


@dataclass(frozen=True)
class FeedbackLimits(EnvLimits):
    """What the marks may cost the server: the marked words need BM25 fitted on the pool (once per index, cached), about
    28 s and 0.8 GB for 100k rows of 80 words on this 2-core machine under load; above the limit the marks move the
    channels only, and the page says so. Setting: RISE_FEEDBACK_WORDS_MAX_ROWS (`rise query --marks` has no limit)."""

    words_max_rows: int = env_field(200_000, "RISE_FEEDBACK_WORDS_MAX_ROWS", "rows")


@dataclass(frozen=True)
class CheckLimits(EnvLimits):
    """What one check started from the app may ask for: a shared server must not take days of retraining from one
    form. Defaults fit the shipped Howdy! check (2 ks, 1-3 seeds, 40 prompts, 64 tokens: about an hour here); the
    `rise counterfactual` command has no such limits. Settings: RISE_CHECK_MAX_KS, RISE_CHECK_MAX_SEEDS,
    RISE_CHECK_MAX_PROMPTS, RISE_CHECK_MAX_TOKENS, RISE_CHECK_MAX_RETRAINS."""

    max_ks: int = env_field(3, "RISE_CHECK_MAX_KS", "values of k")
    max_seeds: int = env_field(3, "RISE_CHECK_MAX_SEEDS", "random seeds")
    max_prompts: int = env_field(100, "RISE_CHECK_MAX_PROMPTS", "held-out prompts")
    max_new_tokens: int = env_field(128, "RISE_CHECK_MAX_TOKENS", "answer tokens")
    max_retrains: int = env_field(8, "RISE_CHECK_MAX_RETRAINS", "retrains")


FINETUNE_SAMPLES_PER_S = 1.37
"""LoRA fine-tuning speed on this 2-core machine: the shipped Howdy! adapter trained 555 samples for 4 epochs (2,220
sample passes) in 1,624 s (`data/adapters/howdy_backdoor/rise_adapter.json`): the estimate the app gives."""


@dataclass(frozen=True)
class FinetuneLimits(EnvLimits):
    """What one fine-tune started from the Build page may ask for: at most 10,000 sample passes (the pool's samples
    times the epochs; about two hours here at FINETUNE_SAMPLES_PER_S: the shipped Howdy! adapter took 2,220). The form
    allowed 50 epochs over an upload of 100,000 rows, a job of months on this machine. Setting:
    RISE_FINETUNE_MAX_PASSES; `rise finetune` has no such limit."""

    max_sample_passes: int = env_field(10_000, "RISE_FINETUNE_MAX_PASSES", "sample passes (samples x epochs)")

    def check(self, n_samples: int, epochs: int) -> int:
        """The sample passes of a fine-tune of `epochs` over `n_samples`, or an InputDataError naming the limit, its
        variable and the estimate here."""
        passes = n_samples * epochs
        if passes > self.max_sample_passes:
            raise InputDataError(f"{n_samples:,} samples x {epochs} epochs = {passes:,} sample passes (about "
                                 f"{format_seconds(passes / FINETUNE_SAMPLES_PER_S)} on a 2-core machine); the limit "
                                 f"here is {self.max_sample_passes:,} (RISE_FINETUNE_MAX_PASSES). Use fewer epochs or "
                                 "rows, or `rise finetune`")
        return passes


@dataclass(frozen=True)
class ConfigLimits(EnvLimits):
    """What the RISE hyperparameters typed into the Build and Evaluate pages may ask of the server (a viewer runs
    evaluations too). Each stored RH and GH value costs 2 bytes a sample on disk and 4 in the sketch's batch and FFT
    temporaries; `k_r` = `k_h` = `k_g` = 20,000 asked for 12.8 GB in one allocation. Defaults:
    - 65,536 stored RH + GH values a sample, `k_h` (`k_r` + `k_g`): 18 times the default's 3,072; 128 KB a sample, or
      13 GB for the upload limit's 100,000 rows;
    - 4,096 tokens a sample (`seq_len`; the default reads 512): the forward pass's memory grows with it, past linearly
      where the model's attention does;
    - 1,024 candidate tokens a position (`k_max`; default 256): the readout keeps that many values per position.
    Settings: RISE_MAX_SIGNATURE_VALUES, RISE_MAX_SEQ_LEN, RISE_MAX_CANDIDATES. The CLI and the Python API have no
    such limits."""

    max_signature_values: int = env_field(65_536, "RISE_MAX_SIGNATURE_VALUES", "stored RH + GH values a sample")
    max_seq_len: int = env_field(4_096, "RISE_MAX_SEQ_LEN", "tokens a sample")
    max_candidates: int = env_field(1_024, "RISE_MAX_CANDIDATES", "candidate tokens a position")

    def check(self, config: RiseConfig) -> RiseConfig:
        """`config` when it is within the limits, else an InputDataError that names the field, the limit and its
        variable."""
        values = sum(config.feature_dims)
        if values > self.max_signature_values:
            raise InputDataError(f"k_h·(k_r+k_g) = {config.k_h}·({config.k_r}+{config.k_g}) = {values:,} stored "
                                 f"values a sample; the limit here is {self.max_signature_values:,} "
                                 "(RISE_MAX_SIGNATURE_VALUES). Use smaller sketches, or the command line")
        if config.seq_len > self.max_seq_len:
            raise InputDataError(f"seq_len {config.seq_len:,} tokens; the limit here is {self.max_seq_len:,} "
                                 "(RISE_MAX_SEQ_LEN)")
        if config.k_max > self.max_candidates:
            raise InputDataError(f"k_max {config.k_max:,} candidate tokens a position; the limit here is "
                                 f"{self.max_candidates:,} (RISE_MAX_CANDIDATES)")
        return config


def request_limits() -> RequestLimits:
    """The limits set where the app was started (`RequestLimits.from_env`)."""
    return RequestLimits.from_env()
