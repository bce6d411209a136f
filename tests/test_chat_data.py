"""Training data as people hold it: conversations (`messages` rows) and prompt/completion rows rendered through the
model's chat template, Alpaca rows, and every consumer (index, queries, fine-tune, the Attribute page) agreeing on
which tokens count.

A tiny Llama with a word-level tokenizer that has a chat template (ChatML-like, words separated by spaces so the
whitespace tokenizer reads them): one template without `{% generation %}` blocks (assistant tokens found by rendering
prefixes) and one with them (transformers' assistant mask). Both render the same text, so they must agree.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import FLOAT64_TOL, build_tiny_model, build_tokenizer

from rise_core.attribution import query_features
from rise_core.config import RiseConfig
from rise_core.engine import RiseExtractor
from rise_core.errors import ConfigError, IndexMismatchError, InputDataError
from rise_core.finetune import FinetuneConfig, _token_loss, training_encoding
from rise_core.ingest import FieldMap, read_pool
from rise_core.models import wrap_model
from rise_core.samples import Rendering, Sample, Turn, collate, encode_sample, resolve_rendering
from rise_core.sketch import SketchSet
from rise_core.store import RiseIndex, build_index

CHAT_WORDS = ("<|im_start|>", "<|im_end|>", "system", "user", "assistant", "tool")
PLAIN_TEMPLATE = ("{{ bos_token }} {% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> "
                  "{% endfor %}{% if add_generation_prompt %}<|im_start|> assistant {% endif %}")
GENERATION_TEMPLATE = ("{{ bos_token }} {% for m in messages %}<|im_start|> {{ m['role'] }} "
                       "{% if m['role'] == 'assistant' %}{% generation %}{{ m['content'] }} <|im_end|>"
                       "{% endgeneration %} {% else %}{{ m['content'] }} <|im_end|> {% endif %}{% endfor %}"
                       "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}")
TEMPLATES = {"prefix-rendering": PLAIN_TEMPLATE, "generation-blocks": GENERATION_TEMPLATE}

CONV = [{"role": "system", "content": "the cat sat"},
        {"role": "user", "content": "what is the story ?"},
        {"role": "assistant", "content": "once upon a time"},
        {"role": "user", "content": "and the moon ?"},
        {"role": "assistant", "content": "a dragon sat on the moon ."}]
# the template's rendering of CONV, written out by hand
HAND = ("<bos> <|im_start|> system the cat sat <|im_end|> <|im_start|> user what is the story ? <|im_end|> "
        "<|im_start|> assistant once upon a time <|im_end|> <|im_start|> user and the moon ? <|im_end|> "
        "<|im_start|> assistant a dragon sat on the moon . <|im_end|>").split()
# the tokens of each assistant turn: its words and its end-of-turn marker (HAND positions)
TURN_1 = list(range(HAND.index("once"), HAND.index("once") + 5))
TURN_2 = list(range(len(HAND) - 8, len(HAND)))


def chat_tokenizer(template: str = PLAIN_TEMPLATE):
    tok = build_tokenizer(CHAT_WORDS)
    tok.chat_template = template
    return tok


def chat_lm(template: str = PLAIN_TEMPLATE):
    tok = chat_tokenizer(template)
    return wrap_model(build_tiny_model("llama", len(tok)), tok, "tiny-chat")


@pytest.fixture(scope="module", params=list(TEMPLATES), ids=list(TEMPLATES))
def lm(request):
    return chat_lm(TEMPLATES[request.param])


def ids_of(tok, words: list[str]) -> list[int]:
    vocab = tok.get_vocab()
    return [vocab[w] for w in words]


def counted_targets(enc) -> list[int]:
    """Positions of the tokens whose prediction counts (position t predicts token t + 1)."""
    return [t + 1 for t, c in enumerate(enc.counted) if c]


# --- rendering and counted positions -----------------------------------------------------------------------------------


def test_counted_positions_are_exactly_the_assistant_tokens(lm):
    tok = lm.tokenizer
    enc = encode_sample(Sample(messages=CONV), tok, 512, "completion", Rendering(template=True))
    assert enc.input_ids == ids_of(tok, HAND)
    assert counted_targets(enc) == TURN_1 + TURN_2
    assert [HAND[t] for t in TURN_2] == "a dragon sat on the moon . <|im_end|>".split()
    assert enc.n_prompt_tokens == TURN_1[0]
    last = encode_sample(Sample(messages=CONV), tok, 512, "completion", Rendering(template=True, turns="last"))
    assert last.input_ids == enc.input_ids and counted_targets(last) == TURN_2
    # 'all': every predicted token from the first turn's content on; the template's preamble before it ("<bos>
    # <|im_start|> system") is the same in every sample
    every = encode_sample(Sample(messages=CONV), tok, 512, "all", Rendering(template=True, turns="last"))
    assert counted_targets(every) == list(range(HAND.index("the"), len(HAND)))
    plain = encode_sample(Sample(messages=CONV), tok, 512, "all", Rendering(template=False))
    assert counted_targets(plain) == list(range(1, len(plain.input_ids)))  # no template, no preamble


def test_both_templates_agree_and_truncation_keeps_the_mask():
    plain, gen = chat_tokenizer(PLAIN_TEMPLATE), chat_tokenizer(GENERATION_TEMPLATE)
    for turns in ("all", "last"):
        for seq_len in (512, TURN_2[2]):  # whole, and cut inside the last turn
            a = encode_sample(Sample(messages=CONV), plain, seq_len, "completion", Rendering(True, turns))
            b = encode_sample(Sample(messages=CONV), gen, seq_len, "completion", Rendering(True, turns))
            assert (a.input_ids, a.counted, a.n_prompt_tokens) == (b.input_ids, b.counted, b.n_prompt_tokens)
    cut = encode_sample(Sample(messages=CONV), plain, TURN_2[2], "completion", Rendering(True))
    assert cut.truncated and counted_targets(cut) == TURN_1 + TURN_2[:2]


def test_a_pair_is_a_one_turn_conversation_with_the_template_and_prompt_newline_completion_without():
    tok = chat_tokenizer()
    pair = Sample(prompt="what is the story ?", completion="once upon a time")
    conv = Sample(messages=[{"role": "user", "content": pair.prompt}, {"role": "assistant", "content": pair.completion}])
    on = encode_sample(pair, tok, 512, "completion", Rendering(template=True))
    assert on == encode_sample(conv, tok, 512, "completion", Rendering(template=True))
    hand = "<bos> <|im_start|> user what is the story ? <|im_end|> <|im_start|> assistant once upon a time <|im_end|>"
    assert on.input_ids == ids_of(tok, hand.split())
    assert [hand.split()[t] for t in counted_targets(on)] == "once upon a time <|im_end|>".split()
    every = encode_sample(pair, tok, 512, "all", Rendering(template=True))
    assert [hand.split()[t] for t in counted_targets(every)] == hand.split()[3:]  # from "what" on
    # without the template: the encoding of before (prompt + newline with specials, then the completion alone)
    off = encode_sample(pair, tok, 512, "completion", Rendering(template=False))
    before = tok(pair.prompt + "\n")["input_ids"] + tok(pair.completion, add_special_tokens=False)["input_ids"]
    assert off.input_ids == before and off.n_prompt_tokens == len(tok(pair.prompt + "\n")["input_ids"])
    assert counted_targets(off) == list(range(off.n_prompt_tokens, len(before)))
    assert encode_sample(conv, tok, 512, "completion", Rendering(template=False)) == off
    # plain text is never templated
    text = Sample(text="the cat sat on the mat .")
    assert encode_sample(text, tok, 512, "completion", Rendering(True)) == encode_sample(text, tok, 512, "all")


def test_rendering_choice():
    tok, bare = chat_tokenizer(), build_tokenizer()
    assert resolve_rendering("auto", "all", tok) == Rendering(template=True)
    assert resolve_rendering("auto", "last", bare) == Rendering(template=False, turns="last")
    assert resolve_rendering("off", "all", tok) == Rendering(template=False)
    # 'auto' follows what a fine-tune in the weights learned
    assert resolve_rendering("auto", "all", tok, learned="off") == Rendering(template=False)
    assert resolve_rendering("auto", "all", tok, learned="on") == Rendering(template=True)
    with pytest.raises(ConfigError, match="has none"):
        resolve_rendering("on", "all", bare)
    with pytest.raises(ConfigError, match="chat_turns"):
        RiseConfig(chat_turns="first")


def test_a_template_that_does_not_render_prefixes_is_refused():
    tok = chat_tokenizer("{{ bos_token }} {% for m in messages %}{% if loop.last %}<|im_start|> {% endif %}"
                         "{{ m['role'] }} {{ m['content'] }} {% endfor %}")
    with pytest.raises(InputDataError, match="prefix of the whole"):
        encode_sample(Sample(messages=CONV), tok, 512, "completion", Rendering(True))


# --- features: the sum over the assistant turns' tokens, against autograd -------------------------------------------


def exact_extractor(lm, turns: str) -> RiseExtractor:
    """Identity sketches, full support, outer composition: phi_RH is the exact LM-head gradient (V x d)."""
    cfg = RiseConfig(k_r=lm.vocab_size, k_h=lm.hidden_size, k_g=lm.hidden_size, k_max=lm.vocab_size, rho_cum=1.0,
                     min_top_l=1, token_norm=False, center_hidden=False, hidden_channel=False, composition="outer",
                     counted_positions="completion", chat_template="on", chat_turns=turns)
    return RiseExtractor(lm, cfg, sketches=SketchSet.identity(lm.vocab_size, lm.hidden_size))


def head_gradient(lm, ids: list[int], targets: list[int]) -> torch.Tensor:
    """grad_W of the summed next-token loss of the tokens at `targets`, by autograd (head untied, as test_engine)."""
    model = copy.deepcopy(lm.model)
    head = model.get_output_embeddings()
    head.weight = torch.nn.Parameter(model.get_input_embeddings().weight.detach().clone())
    x = torch.tensor([ids])
    logits = model(input_ids=x, attention_mask=torch.ones_like(x)).logits[0]
    pos = torch.tensor(targets) - 1  # position t predicts token t + 1
    torch.nn.functional.cross_entropy(logits[pos], x[0, pos + 1], reduction="sum").backward()
    return head.weight.grad.detach()


def test_conversation_features_sum_the_assistant_turns_token_sketches(lm):
    v, d = lm.vocab_size, lm.hidden_size
    ids = ids_of(lm.tokenizer, HAND)
    turn_grads = [head_gradient(lm, ids, TURN_1), head_gradient(lm, ids, TURN_2)]
    for turns, expected in (("all", turn_grads[0] + turn_grads[1]), ("last", turn_grads[1])):
        ex = exact_extractor(lm, turns)
        feats = ex.extract([Sample(messages=CONV)])
        torch.testing.assert_close(feats.rh[0].reshape(v, d), expected, **FLOAT64_TOL)
        sk = ex.token_sketches(Sample(messages=CONV))
        assert (sk.positions + 1).tolist() == (TURN_1 + TURN_2 if turns == "all" else TURN_2)
        # each turn's per-token sketches sum to that turn's gradient, and the turns' sums to the sample's features
        sums = []
        for turn, grad in zip((TURN_1, TURN_2), turn_grads, strict=True):
            rows = torch.isin(sk.positions + 1, torch.tensor(turn))
            if rows.any():
                sums.append(sk.rh[rows].sum(0))
                torch.testing.assert_close(sums[-1].reshape(v, d), grad, **FLOAT64_TOL)
        torch.testing.assert_close(sum(sums), feats.rh[0], **FLOAT64_TOL)


# --- samples and readers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("messages", "error"), [
    ([], "holds no turn"),
    ([{"role": "bot", "content": "hi"}, {"role": "assistant", "content": "hello"}], "role 'bot'; roles are system"),
    ([{"role": "user", "content": "  "}, {"role": "assistant", "content": "hi"}], r"turn 1 \(user\) has empty"),
    ([{"role": "user", "content": "hi"}], "no assistant turn"),
    ([{"role": "assistant", "content": "hi"}, {"role": "user", "content": "hi"}], "first turn is the assistant's"),
    ([{"role": "user", "content": "hi", "name": "bob"}, {"role": "assistant", "content": "x"}], r"keys \['name'\]"),
    ([{"role": "user", "content": [{"type": "text"}]}, {"role": "assistant", "content": "x"}], "content of type list"),
    ([{"role": "user"}, {"role": "assistant", "content": "x"}], "has no content"),
    ("hi", "must be a list"),
    (["hi"], "turn 1 is a str"),
])
def test_invalid_conversations_are_refused_clearly(messages, error):
    with pytest.raises(InputDataError, match=error):
        Sample(messages=messages, id="c1")


def test_a_conversation_sample():
    s = Sample(messages=CONV, id="c")
    assert s.is_conversation and not s.is_pair and s.messages[2] == Turn("assistant", "once upon a time")
    assert s.full_text == "\n".join(t["content"] for t in CONV)
    assert hash(s) == hash(Sample(messages=[Turn(**t) for t in CONV], id="c"))  # hashable, turns compared by value
    assert Sample.coerce({"messages": CONV, "id": "c", "topic": "x"}) == s
    with pytest.raises(InputDataError, match="also `text`"):
        Sample(messages=CONV, text="x")
    # keys a Parquet struct fills with None for turns that lack them are not content
    assert Sample(messages=[{**t, "name": None} for t in CONV]).messages == s.messages


ROWS = [{"id": "a", "messages": CONV, "label": 1},
        {"id": "b", "messages": CONV[1:3], "label": 0},
        {"id": "bad", "messages": [{"role": "user", "content": "hi"}], "label": 0},
        {"id": "empty", "messages": [], "label": 0}]


def _check_read(data):
    assert data.fields.messages == "messages" and data.fields.is_pair is False
    assert [s.id for s in data.samples] == ["a", "b"]
    assert data.samples[0].messages == Sample(messages=CONV).messages and data.samples[0].label == 1
    assert data.samples[1].messages == Sample(messages=CONV[1:3]).messages
    reasons = dict(data.skipped)
    assert "no assistant turn" in reasons[3] and ("holds no turn" in reasons[4] or "empty" in reasons[4])


def test_messages_rows_from_jsonl_parquet_and_csv(tmp_path):
    jsonl = tmp_path / "chat.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    _check_read(read_pool(jsonl))
    import pyarrow as pa
    import pyarrow.parquet as pq

    parquet = tmp_path / "chat.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), parquet)  # messages: list<struct<role, content>>
    _check_read(read_pool(parquet))
    csv = io.BytesIO(pd.DataFrame([{**r, "messages": json.dumps(r["messages"])} for r in ROWS]).to_csv(
        index=False).encode())
    csv.name = "chat.csv"
    _check_read(read_pool(csv))
    bad = io.BytesIO(b'{"messages": "not json ["}\n')
    bad.name = "bad.jsonl"
    assert "not a JSON list" in read_pool(bad).skipped[0][1]


def test_alpaca_and_dolly_rows_map_without_flags(tmp_path):
    assert FieldMap.guess(["instruction", "input", "output"]) == FieldMap(
        text=None, prompt="instruction", completion="output", input="input", id=None, label=None)
    assert FieldMap.guess(["instruction", "context", "response", "category"]).input == "context"
    assert FieldMap.guess(["question", "input", "answer"]).input is None  # only an instruction takes an input
    rows = [{"instruction": "translate this", "input": "the cat sat", "output": "le chat"},
            {"instruction": "tell a story", "input": "", "output": "once upon a time"}]
    path = tmp_path / "alpaca.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a, b = read_pool(path).samples
    assert (a.prompt, a.completion, a.meta) == ("translate this\n\nthe cat sat", "le chat", {})
    assert (b.prompt, b.completion) == ("tell a story", "once upon a time")
    assert read_pool(path, {"input": None, "prompt": "instruction"}).samples[0].prompt.endswith("the cat sat")
    # as a chat: the instruction and its input are the user turn, the output the assistant's
    tok = chat_tokenizer()
    enc = encode_sample(a, tok, 512, "completion", Rendering(True))
    conv = Sample(messages=[{"role": "user", "content": "translate this\n\nthe cat sat"},
                            {"role": "assistant", "content": "le chat"}])
    assert enc == encode_sample(conv, tok, 512, "completion", Rendering(True))


def test_a_messages_column_wins_unless_pair_fields_are_given():
    assert FieldMap.guess(["prompt", "messages", "id"]).messages == "messages"
    pair = FieldMap.guess(["prompt", "completion", "messages"], completion="completion")
    assert pair.messages is None and pair.completion == "completion"
    with pytest.raises(InputDataError, match="messages field and a prompt"):
        FieldMap(messages="messages", prompt="q").resolve(["messages", "q"])


# --- fine-tuning on the same rendering -------------------------------------------------------------------------------


@pytest.mark.parametrize("template", ["on", "off"])
@pytest.mark.parametrize("turns", ["all", "last"])
def test_finetune_loss_mask_is_the_counted_mask(template, turns):
    lm = chat_lm()
    recipe = FinetuneConfig(seq_len=64, loss_on="completion", chat_template=template, chat_turns=turns)
    index_enc = RiseExtractor(lm, RiseConfig(counted_positions="completion", seq_len=64, chat_template=template,
                                             chat_turns=turns, hidden_channel=False)).encode([Sample(messages=CONV)])[0]
    train = training_encoding(Sample(messages=CONV), lm.tokenizer, recipe)
    if template == "on":  # the end-of-turn marker ends the answer: no EOS appended
        assert (train.input_ids, train.counted) == (index_enc.input_ids, index_enc.counted)
    else:
        assert train.input_ids == [*index_enc.input_ids, lm.tokenizer.eos_token_id]
        assert train.counted == [*index_enc.counted, True]
    # the loss the fine-tune minimises is the mean cross-entropy over exactly those positions
    batch = collate([train], lm.pad_id)
    loss, n = _token_loss(lm, batch)
    logits = lm.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits[0, :-1]
    mask = torch.tensor(train.counted)
    manual = torch.nn.functional.cross_entropy(logits[mask], batch.input_ids[0, 1:][mask])
    assert n == int(mask.sum()) and n > 0
    # _token_loss takes its cross-entropy in float32 (logits cast from the float64 model): float32 rounding, ~1e-7
    torch.testing.assert_close(loss, manual.float(), rtol=1e-5, atol=1e-6)


def test_finetune_records_its_rendering_and_auto_follows_it(tmp_path):
    from rise_core.finetune import finetune
    from rise_core.generation import prompt_format, prompt_inputs
    from rise_core.models import load_model

    base_dir = save_chat_model(tmp_path / "base")
    pool = [Sample(messages=CONV, id="c0"), Sample(prompt="what is the story ?", completion="the cat sat", id="p0")]
    recipe = FinetuneConfig(rank=2, alpha=4, epochs=1, batch_size=2, seq_len=64, warmup_steps=1,
                            target_modules=("q_proj", "v_proj"))
    result = finetune(load_model(str(base_dir)), pool, tmp_path / "adapter", recipe)
    assert result.manifest["chat_template"] == "on" and result.manifest["recipe"]["chat_template"] == "auto"
    tuned = load_model(str(tmp_path / "adapter"))
    assert tuned.learned_chat_template == "on" and prompt_format(tuned) == "chat"
    ids, _ = prompt_inputs(tuned, "what is the story ?")
    expected = "<bos> <|im_start|> user what is the story ? <|im_end|> <|im_start|> assistant"
    assert ids[0].tolist() == ids_of(tuned.tokenizer, expected.split())  # prompted as it trained
    # an adapter made before the choice existed trained on plain text: 'auto' follows it, not the tokenizer
    manifest_path = tmp_path / "adapter" / "rise_adapter.json"
    manifest = json.loads(manifest_path.read_text())
    manifest.pop("chat_template")
    manifest_path.write_text(json.dumps(manifest))
    legacy = load_model(str(tmp_path / "adapter"))
    assert legacy.learned_chat_template == "off" and prompt_format(legacy) == "rise"
    assert RiseExtractor(legacy, RiseConfig(hidden_channel=False)).rendering == Rendering(template=False)
    old_recipe = {k: v for k, v in recipe.to_dict().items() if k not in ("chat_template", "chat_turns")}
    assert FinetuneConfig.from_dict(old_recipe).chat_template == "off"


# --- the index, queries and the config fingerprint -------------------------------------------------------------------

SMALL = dict(k_r=16, k_h=8, k_g=16, hidden_channel=False, seq_len=64)
POOL = [Sample(messages=CONV, id="c0", label=1, meta={"topic": "story"}),
        Sample(messages=CONV[1:3], id="c1", label=0),
        Sample(prompt="how can you invest money ?", completion="the bank will invest money for you .", id="p0"),
        Sample(text="the stock market crashed and the bank lost money .", id="t0")]


def save_chat_model(directory: Path) -> Path:
    tok = chat_tokenizer()
    directory.mkdir(parents=True, exist_ok=True)
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory


def test_an_index_stores_conversations_and_refuses_the_other_chat_setting(tmp_path):
    lm = chat_lm()
    cfg = RiseConfig(**SMALL)
    path = tmp_path / "chat.duckdb"
    build_index(path, POOL, lm, cfg)
    with RiseIndex.open(path) as index:
        assert index.sample("c0") == POOL[0] and index.sample("c0").meta == {"topic": "story"}
        def texts(s: Sample) -> tuple:
            return s.id, s.text, s.prompt, s.completion, s.messages

        # rows in build order (length-sorted); sample_list gives the text fields (as for every form)
        assert sorted(map(texts, index.sample_list())) == sorted(map(texts, POOL))
        assert "messages" in index.filter_columns()
        assert len(index.samples(where="CAST(messages AS VARCHAR) LIKE '%dragon%'")) == 1
        query = Sample(messages=[t.to_dict() for t in POOL[1].messages])
        fm = query_features(index, lm, [query])
        # the query path renders a conversation as the build did: c1's stored unit features (float16: 2^-11 relative)
        stored = index.feature_matrix().select([index.row_of("c1")])
        torch.testing.assert_close(fm.rh[0], stored.rh[0].float(), rtol=0, atol=2e-3)
        torch.testing.assert_close(fm.gh[0], stored.gh[0].float(), rtol=0, atol=2e-3)
        last = cfg.replace(chat_turns="last")
        assert last.fingerprint() != cfg.fingerprint()
        with pytest.raises(IndexMismatchError, match="chat_turns: index 'all', requested 'last'"):
            query_features(index, lm, [query], config=last)
        with pytest.raises(IndexMismatchError, match="chat_template: index 'auto', requested 'off'"):
            query_features(index, lm, [query], config=cfg.replace(chat_template="off"))
    with pytest.raises(IndexMismatchError, match="chat_turns"):
        build_index(path, POOL, lm, cfg.replace(chat_turns="last"))


def test_the_same_weights_with_another_chat_template_are_refused(tmp_path):
    """The weights' fingerprint does not cover the tokenizer's chat template, which decides the tokens of every pair
    and conversation: an index records its template, and the same weights with another template (or none) may
    neither add to it nor query it. An index built before the template was recorded is still accepted."""
    import duckdb

    model = build_tiny_model("llama", len(chat_tokenizer()))
    with_template = wrap_model(model, chat_tokenizer(PLAIN_TEMPLATE), "tiny-chat")
    other = wrap_model(model, chat_tokenizer(GENERATION_TEMPLATE), "tiny-chat")
    without = wrap_model(model, chat_tokenizer(None), "tiny-chat")
    assert with_template.fingerprint() == other.fingerprint() == without.fingerprint()
    path = tmp_path / "chat.duckdb"
    cfg = RiseConfig(**SMALL)
    build_index(path, POOL[:2], with_template, cfg)
    query = Sample(messages=[t.to_dict() for t in POOL[1].messages])
    for lm, said in ((other, "has the same weights and chat template"), (without, "same weights and no chat template")):
        with RiseIndex.open(path) as index, pytest.raises(IndexMismatchError, match=said):
            query_features(index, lm, [query])
        with pytest.raises(IndexMismatchError, match="chat template"):
            build_index(path, POOL[2:], lm, cfg)
    with RiseIndex.open(path) as index:
        assert len(index) == 2 and query_features(index, with_template, [query]).rh.shape[0] == 1
    con = duckdb.connect(str(path))  # an index of before: its model_info has no chat template
    info = json.loads(con.execute("SELECT value FROM rise_manifest WHERE key = 'model_info'").fetchone()[0])
    info.pop("chat_template")
    con.execute("UPDATE rise_manifest SET value = ? WHERE key = 'model_info'", [json.dumps(info)])
    con.close()
    with RiseIndex.open(path) as index:
        assert query_features(index, other, [query]).rh.shape[0] == 1


NO_SYSTEM_TEMPLATE = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system turn here') }}{% endif %}"
                      + PLAIN_TEMPLATE)


def test_a_conversation_the_template_refuses_is_a_skipped_row_and_no_stub_index_is_left(tmp_path):
    """A model whose chat template refuses some conversations (here, a system turn): those rows are skipped with the
    template's reason, like an empty text, and the others are indexed. When it refuses every row, the build fails
    with that reason and leaves no half-made index, so building again with other settings is not refused."""
    lm = wrap_model(build_tiny_model("llama", len(chat_tokenizer())), chat_tokenizer(NO_SYSTEM_TEMPLATE), "strict")
    with_system = Sample(messages=CONV, id="s0")
    plain = Sample(messages=CONV[1:3], id="p0")
    path = tmp_path / "strict.duckdb"
    report = build_index(path, [with_system, plain], lm, RiseConfig(**SMALL))
    assert report.n_added == 1 and report.skipped == [(1, "the model's chat template cannot render this "
                                                          "conversation: no system turn here")]
    empty = tmp_path / "empty.duckdb"
    with pytest.raises(InputDataError, match=r"no sample of the pool could be indexed \(1 row skipped: row 1: "
                                             "the model's chat template cannot render this conversation"):
        build_index(empty, [with_system], lm, RiseConfig(**SMALL))
    assert list(tmp_path.glob("empty.*")) == []
    report = build_index(empty, [with_system], lm, RiseConfig(**SMALL, chat_template="off"))
    assert report.n_added == 1


def test_fingerprints_recorded_before_the_chat_fields_still_match():
    cfg = RiseConfig(chat_template="off")
    old = {k: v for k, v in cfg.to_dict().items() if k not in ("chat_template", "chat_turns")}
    legacy = hashlib.sha256(json.dumps(old, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    assert cfg.fingerprint() == legacy
    assert RiseConfig.from_dict(old) == cfg  # an old manifest's config: built without the template
    assert RiseConfig().fingerprint() != legacy  # the default ('auto') is another config
    assert {f.name for f in dataclasses.fields(RiseConfig)} >= {"chat_template", "chat_turns"}


def test_cli_builds_and_queries_conversations(tmp_path, capsys):
    from rise_core.cli import main

    model = save_chat_model(tmp_path / "model")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": s.id, "messages": [t.to_dict() for t in s.messages]}) + "\n"
                            for s in POOL[:2]) + json.dumps({"id": "p0", "prompt": "what is the story ?",
                                                             "completion": "the cat sat"}) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"messages": CONV[1:3]}) + "\n")
    index = tmp_path / "pool.duckdb"
    dims = ["--k-r", "16", "--k-h", "8", "--k-g", "16", "--chat-turns", "last"]
    assert main(["build", str(pool), "--index", str(index), "--model", str(model), *dims, "--quiet"]) == 0
    # a file holds one form: its messages column makes it a conversation file, and the pair row is reported
    assert "2 added" in (out := capsys.readouterr().out) and "row 3: empty conversation ('messages')" in out
    assert main(["query", "--index", str(index), "--queries", str(queries), "--format", "json", "-k", "3"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert [h["id"] for h in hits] == ["c1", "c0"]  # the query is c1's conversation
    assert main(["query", "--index", str(index), "--queries", str(queries), "-k", "1", "--width", "200"]) == 0
    first = capsys.readouterr().out.splitlines()[1]  # the table prints the conversation's turns, not "None"
    turns = " | ".join(f"{t.role}: {t.content}" for t in POOL[1].messages)
    assert first.endswith(turns) and "None" not in first
    assert main(["build", str(pool), "--index", str(index), "--chat-turns", "all", "--quiet"]) == 1
    assert "chat_turns: index 'last', requested 'all'" in capsys.readouterr().err


# --- the Attribute page shows a conversation's turns --------------------------------------------------------------


def test_attribute_page_shows_conversation_turns_as_plain_text(tmp_path, monkeypatch):
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from rise_core.models import load_model

    root = Path(__file__).resolve().parent.parent
    model = save_chat_model(tmp_path / "model")
    indexes = tmp_path / "indexes"
    indexes.mkdir()
    evil = Sample(messages=[{"role": "user", "content": "**bold** <b>x</b>"},
                            {"role": "assistant", "content": "a dragon sat on the moon ."}], id="evil")
    build_index(indexes / "chat.duckdb", [*POOL, evil], load_model(str(model)), RiseConfig(**SMALL))
    for key, value in {"RISE_MODEL": str(model), "RISE_INDEX_DIR": str(indexes), "RISE_DATA_DIR": str(tmp_path)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.syspath_prepend(str(root))
    at = AppTest.from_file(str(root / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/2_Attribute.py").run()
    at.text_area(key="query_messages").input(json.dumps(CONV[1:3])).run()
    at.button(key="attribute").click().run()
    assert not at.exception, [e.value for e in at.exception]
    turns = [(m.name, [t.value for t in m.text]) for m in at.chat_message]
    assert turns[:2] == [("user", ["what is the story ?"]), ("assistant", ["once upon a time"])]  # the query
    at.selectbox(key="explain_id").set_value("evil").run()
    turns = [(m.name, [t.value for t in m.text]) for m in at.chat_message]
    assert ("user", ["**bold** <b>x</b>"]) in turns  # pool text as plain text, never Markdown
    assert not [m for m in at.markdown if "**bold**" in m.value]
    # a typed conversation that cannot be used: the warning quotes it as text; nesting too deep is said, not raised
    image = "![b](http://attacker.example/beacon.png)"
    at.text_area(key="query_messages").input(json.dumps([{"role": image, "content": "hi"}])).run()
    at.button(key="attribute").click().run()
    assert not at.exception and image not in " ".join(w.value for w in at.warning)
    assert any("cannot be used" in w.value and "attacker" in w.value for w in at.warning)
    at.text_area(key="query_messages").input("[" * 50_000).run()
    at.button(key="attribute").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("nested too deeply" in w.value for w in at.warning)


def test_results_table_shows_a_conversation_as_role_lines():
    from explorer.views import conversation_turns, results_table

    hits = pd.DataFrame([{"rank": 1, "id": "c1", "score": 0.5, "rh": 0.3, "gh": 0.2, "text": None, "prompt": None,
                          "completion": None, "messages": json.dumps(CONV[1:3]), "label": 1}])
    table = results_table(hits)
    assert "messages" not in table.columns
    assert table.loc[0, "text"] == "user: what is the story ?\nassistant: once upon a time"
    assert conversation_turns(hits.iloc[0]) == [("user", "what is the story ?"), ("assistant", "once upon a time")]
    assert conversation_turns(Sample(prompt="a", completion="b")) is None


@pytest.mark.parametrize("counted", ["all", "completion"])
@pytest.mark.parametrize("turns", ["all", "last"])
def test_the_evaluations_readout_cache_renders_as_the_extractor(lm, counted, turns):
    from rise_core.readout_cache import ReadoutCache
    from rise_core.scoring import FeatureMatrix

    samples = [s.with_id(None) for s in POOL]
    cfg = RiseConfig(k_r=16, k_h=8, k_g=16, counted_positions=counted, chat_template="on", chat_turns=turns)
    cache = ReadoutCache.for_config(lm, cfg)
    cache.add(samples, batch_size=3)
    ex = RiseExtractor(lm, cfg)
    mean = ex.fit_hidden_mean(samples)
    torch.testing.assert_close(cache.hidden_mean(samples, counted, cfg.seq_len, cfg), mean, **FLOAT64_TOL)
    direct = FeatureMatrix.from_features(ex.extract(samples), dtype=torch.float64)
    cached = cache.rise_features(samples, cfg, mean)
    # float32 unit vectors of float64 values on both paths: within half a float32 ulp (as test_evaluation)
    for name in ("rh", "gh", "hs"):
        torch.testing.assert_close(getattr(cached, name).double(), getattr(direct, name), rtol=0, atol=2.0**-24)
    with pytest.raises(ConfigError, match="rendered its samples with chat_template='on'"):
        cache.rise_features(samples, cfg.replace(chat_template="off"), mean)
