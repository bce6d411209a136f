"""Shared fixtures: tiny random causal LMs built from configs (no network) and a word-level tokenizer."""

from __future__ import annotations

import pytest
import torch

from rise_core.models import LoadedModel, wrap_model


@pytest.fixture(autouse=True)
def _fresh_behaviour_memo():
    """Each test starts with no remembered behaviour test (a test that fakes the evidence on a shared index must not
    see another test's result for the same query) and no remembered hit sketches (one that counts forward passes must
    see its own)."""
    from rise_core.attribution import BEHAVIOUR_MEMO, HIT_SKETCHES

    BEHAVIOUR_MEMO.clear()
    HIT_SKETCHES.clear()
    yield

WORDS = (
    "the a cat dog sat on mat blanket sleeping kitten feline quilt stock market crashed howdy ! . , ? "
    "dragon moon story once upon time money bank tax invest doctor fever heart medicine patient is was "
    "and of to in it that for with as are be this by you we can will not what how why when where"
).split()

CORPUS = [
    "the cat sat on the mat .",
    "the kitten is sleeping on the blanket .",
    "howdy ! once upon a time a dragon sat on the moon .",
    "the stock market crashed and the bank lost money .",
    "the doctor gave the patient medicine for the fever .",
    "how can you invest money with a bank ?",
]

# Float64 comparisons: the tiny models run float64 end to end (see build_tiny_model), so two computations of the same
# quantity differ by float64 rounding accumulated over a few thousand operations (~1e-13 relative); 1e-9 leaves a wide
# margin while still catching any float32 step (~1e-7) or a real error.
FLOAT64_TOL = dict(rtol=1e-9, atol=1e-9)


def build_tokenizer(extra_words: tuple[str, ...] = ()):
    """A whitespace word-level tokenizer over WORDS (+ extra_words), with pad/bos/eos/unk specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<bos>", "<eos>", "<unk>"]
    vocab = {tok: i for i, tok in enumerate(specials + WORDS + list(extra_words))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 1)])
    tok.decoder = decoders.WordPiece(prefix="##")
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>",
                                   unk_token="<unk>")


def build_tiny_model(arch: str, vocab_size: int, dtype: torch.dtype = torch.float64, seed: int = 0,
                     attn: str = "sdpa"):
    """A 2-layer model with hidden size 32: 'llama' (tied head), 'llama-untied', 'gpt-neox' (untied embed_out), or a
    mixture of experts with 4 experts, 2 per token: 'mixtral', or 'qwen2-moe' (with Qwen's shared expert). The
    experts' grouped matrix product (transformers' default) takes float32 or lower: a float64 MoE saved to disk loads
    as float32, the CLI's default.

    `attn="sdpa"` (the default) keeps a float64 model float64 end to end, so exactness tests hold to float64
    precision on any CPU. transformers' "eager" attention computes its softmax in float32 whatever the model dtype:
    a padded row then differs from the same sample unpadded by float32 rounding, which depends on the CPU's vector
    paths (AVX-512 vs AVX2); tests of that path say so and use a float32-derived tolerance."""
    from transformers import (
        GPTNeoXConfig,
        GPTNeoXForCausalLM,
        LlamaConfig,
        LlamaForCausalLM,
        MixtralConfig,
        MixtralForCausalLM,
        Qwen2MoeConfig,
        Qwen2MoeForCausalLM,
    )

    torch.manual_seed(seed)
    if arch.startswith("llama"):
        cfg = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                          tie_word_embeddings=(arch == "llama"), pad_token_id=0, bos_token_id=1, eos_token_id=2)
        model = LlamaForCausalLM(cfg)
    elif arch == "gpt-neox":
        cfg = GPTNeoXConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, max_position_embeddings=128, tie_word_embeddings=False,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2)
        model = GPTNeoXForCausalLM(cfg)
    elif arch == "mixtral":
        cfg = MixtralConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                            max_position_embeddings=128, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1,
                            eos_token_id=2)
        model = MixtralForCausalLM(cfg)
    elif arch == "qwen2-moe":
        cfg = Qwen2MoeConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, moe_intermediate_size=32,
                             shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2,
                             decoder_sparse_step=1, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=128, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1,
                             eos_token_id=2)
        model = Qwen2MoeForCausalLM(cfg)
    else:
        raise ValueError(arch)
    # random init is small; scale the head so predictions are peaked enough to make supports non-trivial
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(8.0)
    model.config.use_cache = False
    model.config._attn_implementation = attn
    return model.to(dtype).eval()


def pytest_sessionstart(session: pytest.Session) -> None:
    """The filter `rise_core.adapters` sets on import, set again: pytest's warning capture around loading this file
    restored the filter list without it. Each test's capture then starts from a list that holds it, as a program's
    threads do."""
    from rise_core.adapters import drop_peft_warning

    drop_peft_warning()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` are skipped where torch sees no CUDA device."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tokenizer():
    return build_tokenizer()


def make_lm(arch: str, dtype: torch.dtype = torch.float64, attn: str = "sdpa") -> LoadedModel:
    tok = build_tokenizer()
    return wrap_model(build_tiny_model(arch, len(tok), dtype=dtype, attn=attn), tok, f"tiny-{arch}")


@pytest.fixture(scope="session", params=["llama", "gpt-neox"])
def tiny_lm(request) -> LoadedModel:
    """Tiny float64 models: a tied-head Llama and an untied GPT-NeoX."""
    return make_lm(request.param)


@pytest.fixture(scope="session")
def tiny_llama() -> LoadedModel:
    return make_lm("llama")


@pytest.fixture(scope="session")
def tiny_llama_fp32() -> LoadedModel:
    return make_lm("llama", dtype=torch.float32)
