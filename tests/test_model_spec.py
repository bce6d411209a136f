"""One reading of a model spec (`rise_core.adapters.parse_model_spec`) for the loader and the app's path check.

`BASE@ADAPTER_DIR` splits at its last `@` whatever exists on disk, so `evil@m` is the base `evil` with the adapter
`m` for both: the check refuses it (the adapter is not under the app's folders) and the loader never opens a
directory literally named `evil@m`. Whatever the check accepts, the loader loads exactly the parts the check saw
(a hypothesis property over spec strings). Over-long specs, empty parts and control characters are one clean
error on both sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import explorer.paths
import rise_core.adapters
import rise_core.default_model
from explorer.paths import check_model_spec, checked_model_spec
from rise_core.adapters import MAX_MODEL_SPEC_CHARS, ModelSpec, parse_model_spec, split_model_spec
from rise_core.default_model import DEFAULT_MODEL_ID
from rise_core.errors import InputDataError, ModelLoadError
from rise_core.models import load_model

HUB = "EleutherAI/pythia-70m"


class LoadAttempt(Exception):  # noqa: N818 - not an error: where load_model would read weights from
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def fake_adapter(directory: Path, base: str) -> Path:
    """A directory `parse_model_spec` reads as an adapter: adapter_config.json and a manifest naming `base`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base}))
    (directory / "rise_adapter.json").write_text(json.dumps({"base_model": base}))
    return directory


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> dict[str, Path | str]:
    """The app's folders (index, data, adapters, cache), the configured model outside them, and an `outside` folder
    holding a directory literally named `evil@m` that looks like a model and an adapter."""
    root = tmp_path_factory.mktemp("specs")
    index_dir, data_dir, outside = root / "indexes", root / "data", root / "outside"
    configured = root / "configured-model"
    for d in (index_dir, data_dir, root / "cache", configured, outside / "m"):
        d.mkdir(parents=True)
    evil = fake_adapter(outside / "evil@m", base=HUB)
    (evil / "config.json").write_text("{}")
    return {"root": root, "index_dir": index_dir, "data_dir": data_dir, "outside": outside, "evil": evil,
            "configured": str(configured),
            "tuned": fake_adapter(root / "adapters" / "tuned", base=str(configured)),  # fine-tuned in the app
            "default_tuned": fake_adapter(data_dir / "adapters" / "howdy", base=DEFAULT_MODEL_ID),
            "foreign": fake_adapter(root / "adapters" / "foreign", base=str(outside)),  # its base is outside
            "plain": root / "adapters" / "plain-folder"}


@pytest.fixture
def app(place, monkeypatch):
    """The app's environment, run from the `outside` folder (so `evil@m` is a relative path that exists)."""
    _environment(monkeypatch, place)
    return place


def _environment(mp: pytest.MonkeyPatch, place: dict) -> None:
    mp.delenv("RISE_ADAPTER_DIR", raising=False)
    mp.delenv("RISE_MODEL_DIRS", raising=False)
    mp.setenv("RISE_CACHE_DIR", str(place["root"] / "cache"))
    mp.chdir(place["outside"])


def check(spec: str, place: dict) -> str:
    return check_model_spec(spec, place["configured"], place["index_dir"], place["data_dir"])


def loader_opens(spec: str, mp: pytest.MonkeyPatch) -> tuple[ModelSpec | None, str | None]:
    """(the ModelSpec the loader read, the path it would read weights from; None if it refused first), without
    loading anything: from_pretrained stops the load where it would start reading."""
    import transformers

    seen: list[ModelSpec] = []
    real_parse = rise_core.adapters.parse_model_spec

    def spy(text: str) -> ModelSpec:
        seen.append(real_parse(text))
        return seen[-1]

    def stop(path: str, *args: object, **kwargs: object) -> None:
        raise LoadAttempt(str(path))

    mp.setattr(rise_core.adapters, "parse_model_spec", spy)
    mp.setattr(transformers.AutoTokenizer, "from_pretrained", stop)
    mp.setattr(rise_core.default_model, "ensure_default_model", lambda cache_dir=None: Path("/embedded-default"))
    try:
        load_model(spec)
    except LoadAttempt as attempt:
        return seen[0], attempt.path
    except ModelLoadError:
        return (seen[0] if seen else None), None
    raise AssertionError("from_pretrained was not reached")


def test_evil_at_m_is_refused_and_never_loads_the_directory_named_so(app, monkeypatch):
    assert (Path.cwd() / "evil@m").is_dir()  # the directory an attacker aims at, outside the app's folders
    assert parse_model_spec("evil@m") == ModelSpec("evil", "m")
    for spec in ("evil@m", str(app["evil"]), f"{app['outside']}/evil@m"):
        with pytest.raises(InputDataError, match="outside the folders"):
            check(spec, app)
    parsed, opened = loader_opens("evil@m", monkeypatch)
    assert parsed == ModelSpec("evil", "m") and opened is None  # 'm' is no adapter: refused before any weights
    with pytest.raises(ModelLoadError, match="m is not a LoRA adapter directory"):
        split_model_spec("evil@m")


@pytest.mark.parametrize("spec", ["a" * 500, "x/" * 250, "b" * 300 + "@" + str(Path("/tmp")),
                                  "é" * (MAX_MODEL_SPEC_CHARS + 1)])
def test_an_overlong_spec_is_one_clean_error(app, spec):
    with pytest.raises(ModelLoadError, match=rf"characters long \(at most {MAX_MODEL_SPEC_CHARS}\)"):
        parse_model_spec(spec)
    with pytest.raises(ModelLoadError, match="characters long"):
        load_model(spec)
    with pytest.raises(InputDataError, match="characters long"):
        check(spec, app)


@pytest.mark.parametrize("flag", ["--model", "--adapter"])
def test_an_overlong_name_on_the_command_line_is_one_clean_error(tmp_path, capsys, flag):
    """`--model` / `--adapter` longer than a file name may be: the command line looked it up as a directory first and
    died with the OSError's traceback (ENAMETOOLONG); now the loader's error, and nothing is written."""
    from rise_core.cli import main as cli_main

    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"text": "one"}\n')
    args = ["build", str(pool), "--index", str(tmp_path / "i.duckdb"), "--device", "cpu", "--model", HUB]
    args += [flag, "a" * 5000]  # the last --model wins
    assert cli_main(args) == 1
    err = capsys.readouterr().err
    assert "characters long (at most" in err and "Traceback" not in err and len(err) < 400
    assert not (tmp_path / "i.duckdb").exists()


@pytest.mark.parametrize("spec", ["@", "base@", f"@{HUB}", "  @  ", "", "   ", f"{HUB}\x00", "a\nb", "gpt2\t",
                                  "org/\u202emodel", f"{HUB}@x\x1b[31m"])
def test_empty_parts_and_control_characters_are_refused(app, spec):
    with pytest.raises(ModelLoadError, match="empty|control character"):
        parse_model_spec(spec)
    with pytest.raises(ModelLoadError, match="empty|control character"):
        load_model(spec)
    with pytest.raises(InputDataError, match="empty|control character"):
        check(spec, app)


def test_the_forms_a_model_is_named_by_still_parse_and_pass(app):
    tuned, howdy = str(app["tuned"]), str(app["default_tuned"])
    cases = {
        DEFAULT_MODEL_ID: ModelSpec(DEFAULT_MODEL_ID),
        HUB: ModelSpec(HUB),
        app["configured"]: ModelSpec(app["configured"]),
        f"{DEFAULT_MODEL_ID}@{howdy}": ModelSpec(DEFAULT_MODEL_ID, howdy),
        f"  {app['configured']}@{tuned}  ": ModelSpec(app["configured"], tuned),
        tuned: ModelSpec(app["configured"], tuned, base_from_manifest=True),  # the adapter alone: base from manifest
        howdy: ModelSpec(DEFAULT_MODEL_ID, howdy, base_from_manifest=True),
    }
    for spec, expected in cases.items():
        assert parse_model_spec(spec) == expected
        assert check(spec, app) == spec.strip()
        assert split_model_spec(spec) == (expected.base, None if expected.adapter is None
                                          else str(Path(expected.adapter).resolve()))


def test_an_adapter_whose_manifest_names_a_base_outside_is_refused(app):
    with pytest.raises(InputDataError, match="base model named in the adapter's manifest"):
        check(str(app["foreign"]), app)
    with pytest.raises(InputDataError, match="adapter directory"):
        check(f"{HUB}@{app['outside'] / 'm'}", app)


SPEC_PIECES = ["evil@m", "evil", "m", "@", HUB, DEFAULT_MODEL_ID, "~", ".", "..", "/etc", "./x", "a" * 300]


def _pieces(place: dict) -> list[str]:
    return [*SPEC_PIECES, str(place["tuned"]), str(place["default_tuned"]), str(place["foreign"]),
            str(place["plain"]), str(place["evil"]), str(place["outside"]), place["configured"]]


def test_the_configured_or_default_model_with_a_control_character_is_refused_as_any_spec_is(place):
    """Found by the fuzzer below: the configured model's path plus a newline passed the shortcut for the configured
    model (compared after stripping) while the same newline after any other spec is refused."""
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, place)
        for spec in (place["configured"] + "\n", DEFAULT_MODEL_ID + "\n", "\x00" + DEFAULT_MODEL_ID):
            with pytest.raises(InputDataError, match="control character"):
                check(spec, place)
        assert check(f"  {place['configured']} ", place) == place["configured"]  # spaces are still stripped


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
@example(data=None)
def test_whatever_the_check_accepts_the_loader_loads_exactly_those_parts(place, data):
    pieces = _pieces(place)
    if data is None:  # the accepted forms, always tried
        specs = [str(place["tuned"]), f"{DEFAULT_MODEL_ID}@{place['default_tuned']}", HUB, DEFAULT_MODEL_ID]
    else:
        noise = st.text(alphabet="ab@/.~ -_\x00\n\u202e", max_size=8)
        part = st.one_of(st.sampled_from(pieces), noise)
        specs = [data.draw(st.lists(part, min_size=1, max_size=4).map("".join), label="spec")]
    assert explorer.paths.parse_model_spec is rise_core.adapters.parse_model_spec  # one function for both
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, place)
        for spec in specs:
            try:
                passed = check(spec, place)  # what the app then hands to the loader
            except InputDataError:
                continue  # refused: nothing loads
            checked = checked_model_spec(spec, place["configured"], place["index_dir"], place["data_dir"])
            parsed, opened = loader_opens(passed, mp)
            assert parsed == checked  # the loader read the spec into the very parts the check passed
            if opened is not None:  # it got as far as reading weights: from the checked base, nothing else
                expected = "/embedded-default" if checked.base == DEFAULT_MODEL_ID else checked.base
                assert opened == expected
                if checked.adapter is not None:
                    assert split_model_spec(spec)[1] == str(Path(checked.adapter).resolve())
