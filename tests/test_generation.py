"""Generate, then attribute: the model's own continuation (rise_core.generation), `rise query --generate`, and the
Attribute page's streamed generation with a model fine-tuned on its pool."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from explorer_env import INDEX_NAME, build_finetuned_env

from rise_core.cli import main as cli_main
from rise_core.generation import GenerationSettings, generate, prompt_format, prompt_inputs, stream
from rise_core.models import load_model
from rise_core.samples import Sample, encode_sample

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "what is the story ?"


@pytest.fixture(scope="module")
def tuned_env(tmp_path_factory):
    return build_finetuned_env(tmp_path_factory.mktemp("tuned"))


@pytest.fixture(scope="module")
def tuned(tuned_env):
    return load_model(tuned_env["RISE_MODEL"])


def test_a_finetuned_model_is_prompted_as_it_learned(tuned, tuned_env):
    assert prompt_format(tuned) == "rise" and tuned.is_rise_finetune
    assert prompt_format(load_model(tuned_env["RISE_BASE_MODEL"])) == "plain"  # no chat template
    ids, mask = prompt_inputs(tuned, PROMPT)
    enc = encode_sample(Sample(prompt=PROMPT, completion="the cat ."), tuned.tokenizer, 64, "completion")
    assert ids[0].tolist() == enc.input_ids[:enc.n_prompt_tokens] and bool(mask.all())


def test_a_prompt_longer_than_the_models_context_is_refused(tuned):
    """The tiny model's context is 128 positions (tests/conftest.py): a prompt of more tokens is a clear error before
    any forward pass; one that fits is answered."""
    from rise_core.errors import InputDataError
    from rise_core.generation import context_tokens

    assert context_tokens(tuned) == tuned.model.config.max_position_embeddings == 128
    long_prompt = " ".join(["story"] * 300)
    ids = tuned.tokenizer(long_prompt)["input_ids"]
    assert len(ids) > 128  # the prompt's own tokens pass the context, whatever is added around them
    with pytest.raises(InputDataError, match=r"longer than the model's context of 128 tokens"):
        generate(tuned, long_prompt, GenerationSettings(max_new_tokens=4))
    fits = " ".join(["story"] * 20)
    assert prompt_inputs(tuned, fits)[0].shape[1] <= 128


def test_greedy_generation_is_the_argmax_of_the_model(tuned):
    """Known answer: decode by hand, one forward pass per token, taking the argmax of W h; stop at EOS."""
    ids, _ = prompt_inputs(tuned, PROMPT)
    settings = GenerationSettings(max_new_tokens=12)
    seq = ids[0].tolist()
    with torch.no_grad():
        for _ in range(settings.max_new_tokens):
            x = torch.tensor([seq])
            nxt = int(tuned.logits(tuned.final_hidden(x, torch.ones_like(x))[0, -1]).argmax())
            if nxt == tuned.tokenizer.eos_token_id:
                break
            seq.append(nxt)
    expected = tuned.tokenizer.decode(seq[ids.shape[1]:], skip_special_tokens=True).strip()
    assert expected  # the fine-tuned model answers something
    assert generate(tuned, PROMPT, settings) == expected
    assert "".join(stream(tuned, PROMPT, settings)).strip() == expected


def test_sampling_is_seeded(tuned):
    a = GenerationSettings(max_new_tokens=10, temperature=1.5, seed=3)
    outs = {generate(tuned, PROMPT, a) for _ in range(2)}
    assert len(outs) == 1
    others = {generate(tuned, PROMPT, GenerationSettings(max_new_tokens=10, temperature=1.5, seed=s))
              for s in range(6)}
    assert len(others) > 1  # different seeds draw different continuations at temperature 1.5


def test_cli_query_generate_then_attribute(tuned_env, tuned, capsys):
    index = str(Path(tuned_env["RISE_INDEX_DIR"]) / INDEX_NAME)
    rc = cli_main(["query", "--index", index, "--prompt", PROMPT, "--generate", "--max-new-tokens", "12",
                   "-k", "3", "--format", "json", "--device", "cpu"])
    out = capsys.readouterr()
    assert rc == 0
    expected = generate(tuned, PROMPT, GenerationSettings(max_new_tokens=12))
    assert f"generation: {expected}" in out.err
    hits = json.loads(out.out)
    assert len(hits) == 3 and hits[0]["rank"] == 1
    # the same query typed in gives the same ranking: --generate only writes the completion
    assert cli_main(["query", "--index", index, "--prompt", PROMPT, "--completion", expected, "-k", "3",
                     "--format", "json", "--device", "cpu"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)] == [h["id"] for h in hits]


def test_cli_generate_usage_errors(tuned_env, capsys):
    index = str(Path(tuned_env["RISE_INDEX_DIR"]) / INDEX_NAME)
    with pytest.raises(SystemExit) as exc:
        cli_main(["query", "--index", index, "--prompt", PROMPT, "--completion", "x", "--generate"])
    assert exc.value.code == 2 and "--generate needs --prompt alone" in capsys.readouterr().err


OTHER_PROMPT = "tell me a story ."  # the contrast's other prompt: a different answer from the fine-tuned model


def test_cli_versus_generate_contrasts_with_the_models_other_answer(tuned_env, tuned, capsys):
    """--versus-generate writes B as the model's answer to --versus-prompt: the ranking equals the contrast typed in."""
    index = str(Path(tuned_env["RISE_INDEX_DIR"]) / INDEX_NAME)
    settings = GenerationSettings(max_new_tokens=12)
    a, b = generate(tuned, PROMPT, settings), generate(tuned, OTHER_PROMPT, settings)
    assert a and b and a != b  # two different answers, so the contrast is not refused as identical
    common = ["-k", "5", "--format", "json", "--device", "cpu", "--max-new-tokens", "12"]
    assert cli_main(["query", "--index", index, "--prompt", PROMPT, "--generate", "--versus-prompt", OTHER_PROMPT,
                     "--versus-generate", *common]) == 0
    out = capsys.readouterr()
    assert f"generation: {a}" in out.err and f"the other answer: {b}" in out.err
    generated = json.loads(out.out)
    assert cli_main(["query", "--index", index, "--prompt", PROMPT, "--completion", a, "--versus-prompt",
                     OTHER_PROMPT, "--versus-completion", b, *common]) == 0
    typed = json.loads(capsys.readouterr().out)
    assert [(h["id"], h["score"]) for h in generated] == [(h["id"], h["score"]) for h in typed]
    plain = cli_main(["query", "--index", index, "--prompt", PROMPT, "--completion", a, *common])
    assert plain == 0 and [h["score"] for h in json.loads(capsys.readouterr().out)] != [h["score"] for h in typed]


@pytest.mark.parametrize("extra", [[], ["--versus-prompt", OTHER_PROMPT, "--versus-completion", "x"],
                                   ["--versus-text", "x"]])
def test_cli_versus_generate_usage_errors(tuned_env, capsys, extra):
    index = str(Path(tuned_env["RISE_INDEX_DIR"]) / INDEX_NAME)
    with pytest.raises(SystemExit) as exc:
        cli_main(["query", "--index", index, "--prompt", PROMPT, "--completion", "x", "--versus-generate", *extra])
    assert exc.value.code == 2 and "--versus-generate needs --versus-prompt alone" in capsys.readouterr().err


@pytest.fixture
def tuned_attribute(tuned_env):
    """The Attribute page of the app on the fine-tuned model's index (AppTest)."""
    from streamlit.testing.v1 import AppTest

    with pytest.MonkeyPatch.context() as mp:
        for key, value in tuned_env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT))
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        yield at.switch_page("app_pages/2_Attribute.py").run()


def test_attribute_page_generates_the_other_answer(tuned_attribute, tuned):
    """The contrast's "Generate the other answer" button fills B with the model's answer to B's prompt (the query's
    generation settings); with no prompt it asks for one and writes nothing."""
    at = tuned_attribute
    at.number_input(key="gen_max_new_tokens").set_value(12).run()
    at.button(key="versus_generate").click().run()
    assert not at.exception and any("type the other answer's prompt first" in e.value for e in at.error)
    assert not at.text_area(key="versus_completion").value
    at.text_area(key="versus_prompt").input(OTHER_PROMPT).run()
    at.button(key="versus_generate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    b = generate(tuned, OTHER_PROMPT, GenerationSettings(max_new_tokens=12))
    assert at.text_area(key="versus_completion").value == b
    # and the contrast runs with it (its scores are checked against A minus B in tests/test_app.py)
    at.text_area(key="query_prompt").input(PROMPT).run()
    at.text_area(key="query_completion").input(generate(tuned, PROMPT, GenerationSettings(max_new_tokens=12))).run()
    at.checkbox(key="versus_on").check().run()
    at.button(key="attribute").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(s.value.startswith("Contrast: each score is") for s in at.caption)


def test_attribute_page_generates_then_attributes(tuned_attribute, tuned):
    at = tuned_attribute
    assert any("fine-tuned on its pool" in i.value for i in at.info)
    at.text_area(key="query_prompt").input(PROMPT).run()
    at.number_input(key="gen_max_new_tokens").set_value(12).run()
    at.button(key="generate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    expected = generate(tuned, PROMPT, GenerationSettings(max_new_tokens=12))
    assert at.text_area(key="query_completion").value == expected
    at.button(key="attribute").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(f.value for f in at.dataframe if "RH" in f.value.columns)
    assert len(table) == 10


def test_home_backdoor_demo_answers_both_prompts_and_attributes_the_triggered_one(tuned_env, tuned, tmp_path):
    """RISE_MODEL is the adapter's base and the adapter sits in the data folder: the demo is the backdoor demo."""
    from streamlit.testing.v1 import AppTest

    from explorer.demo import backdoor_prompts

    with pytest.MonkeyPatch.context() as mp:
        for key, value in tuned_env.items():
            mp.setenv(key, value)
        mp.setenv("RISE_MODEL", tuned_env["RISE_BASE_MODEL"])
        mp.setenv("RISE_INDEX_DIR", str(tmp_path / "indexes"))
        mp.syspath_prepend(str(ROOT))
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        assert any("fine-tuned on that pool" in m.value for m in at.markdown)
        at.button(key="demo").click().run()
        deadline = time.monotonic() + 60  # the demo index builds in a background thread; the page polls it
        while "_backdoor_demo" not in at.session_state and time.monotonic() < deadline:
            time.sleep(0.5)
            at.run()
        assert not at.exception, [e.value for e in at.exception]
        demo = at.session_state["_backdoor_demo"]
        triggered, clean = backdoor_prompts(tuned_env["RISE_DATA_DIR"])
        settings = GenerationSettings()
        assert demo["triggered_answer"] == generate(tuned, triggered, settings)
        assert demo["clean_answer"] == generate(tuned, clean, settings)
        table = next(f.value for f in at.dataframe if "RH" in f.value.columns)
        assert len(table) == 10
        assert any("of the top 10 are poisoned examples" in c.value for c in at.caption)
        from rise_core.config import PRESETS
        from rise_core.store import RiseIndex

        with RiseIndex.open(demo["path"]) as index:  # built, and scored, for the retrospective setting
            assert index.manifest.build_preset == "retrospective" and index.config == PRESETS["retrospective"]
        assert any("the index's preset 'retrospective' (built with it)" in c.value for c in at.caption)
        assert any("<span" in m.value for m in at.markdown if m.proto.allow_html)
        at.button(key="demo_open").click().run()
        assert at.session_state["query_completion"] == demo["triggered_answer"]
        # "why this and not that" is ready with the answer without the trigger (ticking it contrasts the two)
        assert (at.session_state["versus_prompt"], at.session_state["versus_completion"]) == (
            clean, demo["clean_answer"]) and not at.session_state["versus_on"]
        at.checkbox(key="versus_on").check().run()
        at.button(key="attribute").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(c.value.startswith("Contrast: each score is") for c in at.caption)
