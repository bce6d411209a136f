"""Pool text, model text, uploads, exception messages and typed text are shown as text, never rendered as Markdown or
HTML (explorer/plain.py): the escapers against a CommonMark parser and the patterns Streamlit's renderer adds, every
page under AppTest over an index whose rows carry the payloads, and a grep for the raw-HTML and stream calls."""

from __future__ import annotations

import html
import json
import re
import string
import sys
from pathlib import Path

import pytest
from conftest import CORPUS, build_tiny_model, build_tokenizer
from hypothesis import given, settings
from hypothesis import strategies as hs

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the explorer package lives beside app.py
    sys.path.insert(0, str(ROOT))

from explorer.plain import WORD_JOINER, chart_text, code, highlight_html, html_text, md  # noqa: E402

markdown_it = pytest.importorskip("markdown_it")

IMAGE = "![x](http://host/beacon.png)"
PHISH = "[Session expired: log in again](http://host/phish)"
HTML_IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(1)</script>"
ANCHOR = '<a href="http://host/phish">log in</a>'
LATEX = r"$\href{http://host/phish}{click}$"
DIRECTIVES = ":red[alert] :material/warning: :streamlit: :smile:"
AUTOLINKS = "www.host.com/phish https://host/phish user@host.com"
BLOCKS = "# heading\n- item\n1. one\n> quote\n| a | b |\n|---|---|\n---\n```\ncode\n```\n    indented"
EMPHASIS = "*a* _b_ **c** __d__ ~~e~~ `f` ``g`` \\ \\[ &amp; &#91; a_b_c"
PAYLOADS = [IMAGE, PHISH, HTML_IMG, SCRIPT, ANCHOR, LATEX, DIRECTIVES, AUTOLINKS, BLOCKS, EMPHASIS,
            "-", "+ x", "= =", "12. x", "3) x", "[a]: http://host/phish", "![x][ref]", "<http://host/phish>", ""]

# The patterns Streamlit's Markdown renderer (frontend StreamlitMarkdown.*.js, streamlit 1.67) matches in text nodes,
# that is after backslash escapes are resolved: GFM autolinks (http(s)://, www., e-mail), its :material/icon: icons
# (':material/' is first rewritten to ':material_' in the source), the :streamlit: logo and emoji short codes.
STREAMLIT_TEXT_PATTERNS = [
    re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.I),
    re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)"),  # (Streamlit's also needs a space or punctuation before)
    re.compile(r":material_(\w+):"),
    re.compile(r":streamlit:"),
    re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:"),
]
# what a Markdown parser turns into elements; a paragraph (and the <br> of a token's line break) is all text may give
ELEMENTS = re.compile(r"<(?!/?p>|br>)/?[a-z][a-z0-9]*", re.I)
TEXT_TOKENS = ("text", "softbreak", "hardbreak")


def parser(allow_html: bool = False):
    """CommonMark with GFM tables and strikethrough; raw HTML passes only where Streamlit allows it."""
    return markdown_it.MarkdownIt("commonmark", {"html": allow_html}).enable(["table", "strikethrough"])


def streamlit_source(source: str) -> str:
    return source.replace(":material/", ":material_")  # Streamlit's first step, on the whole source


def text_nodes(source: str) -> list[str]:
    """The text of every inline text node of `source` as Streamlit parses it (code spans are not text nodes)."""
    out = []
    for block in parser().parse(streamlit_source(source)):
        out += [t.content for t in block.children or [] if t.type in TEXT_TOKENS]
    return out


def unescaped(source: str) -> str:
    """`source` with every backslash-escaped character and every code span blanked out: what remains can form
    Markdown syntax (CommonMark: a backslash escapes ASCII punctuation outside code spans; a code span runs from a
    backtick string to the next backtick string of the same length, and shows its content verbatim)."""
    out, i = [], 0
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source) and source[i + 1] in string.punctuation:
            out.append("\x00\x00")
            i += 2
            continue
        if ch == "`":
            run = re.match(r"`+", source[i:]).group()
            close = re.compile(rf"(?<!`){run}(?!`)").search(source, i + len(run))
            if close:
                out.append("\x00" * (close.end() - i))
                i = close.end()
                continue
            out.append(run)
            i += len(run)
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def one_line(text: str) -> str:
    return re.sub(r"\r\n|\r|\n", " ", text)


def visible(rendered: str) -> str:
    """The characters a browser shows for rendered HTML (tags dropped, references resolved, joiners removed)."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace(WORD_JOINER, "").strip("\n")


def assert_inert_markdown(source: str) -> None:
    """Streamlit would render `source` as one paragraph of plain text: no element, no directive, no math, no
    autolink, icon or emoji."""
    rendered = parser().render(streamlit_source(source))
    assert not ELEMENTS.findall(rendered), (source, rendered)
    raw = unescaped(source)
    assert "$" not in raw, source  # KaTeX (remark-math): a '$' counts unless escaped
    assert not re.search(r":[A-Za-z]", raw), source  # a text directive (:red[..], :name) needs an unescaped ':'
    for node in text_nodes(source):
        for pattern in STREAMLIT_TEXT_PATTERNS:
            assert not pattern.search(node), (source, node, pattern.pattern)


# --- the escapers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_shows_exactly_the_text_and_renders_nothing(payload):
    source = md(payload)
    assert_inert_markdown(source)
    assert visible(parser().render(streamlit_source(source))) == one_line(payload).strip()
    if not payload:
        return
    # inside a sentence of ours too (a caption line 'key: value · ...')
    sentence = f"**Example {source}** · topic: {source}."
    rendered = parser().render(streamlit_source(sentence))
    assert re.findall(r"</?\w+", rendered) == ["<p", "<strong", "</strong", "</p"], rendered


@settings(max_examples=300, deadline=None)
@given(hs.text(alphabet=hs.sampled_from(list("[]()!<>*_`#|~$:\\&@./-+=1 aw\nhtps;'\"{}^%é")), max_size=40))
def test_md_of_any_text_is_inert(payload):
    source = md(payload)
    assert_inert_markdown(source)
    assert visible(parser().render(streamlit_source(source))) == one_line(payload).strip()


def test_md_keeps_identifiers_readable():
    assert md("no_such_column") == "no_such_column"  # '_' between letters cannot open or close emphasis
    assert md("'the details'") == "'the details'"
    assert md("_x_") == "\\_x\\_" and md("a__b") == "a\\_\\_b"
    assert md("a\nb") == "a b"


@pytest.mark.parametrize("payload", PAYLOADS)
def test_code_is_one_verbatim_code_span(payload):
    source = code(payload)
    rendered = parser().render(streamlit_source(source))
    if not one_line(payload).strip():
        assert not ELEMENTS.findall(rendered)
        return
    assert re.findall(r"</?\w+", rendered) == ["<p", "<code", "</code", "</p"], (source, rendered)
    assert visible(rendered) == one_line(payload)
    assert text_nodes(source) == []  # no text node: Streamlit's autolinks, icons and emoji never see it


@pytest.mark.parametrize("payload", [*PAYLOADS, "a\r\rb", "\r\n\r\n", "x\n\ny"])
def test_html_text_is_text_on_one_line(payload):
    escaped = html_text(payload)
    assert "\n" not in escaped and "\r" not in escaped
    assert not re.search(r"<(?!br>)", escaped)
    assert html.unescape(escaped.replace("↵<br>", "\n")) == re.sub(r"\r\n|\r", "\n", payload)
    assert not set(re.sub(r"&#?\w+;", "", escaped)) & set("[]()!*_`#|~$:\\")  # Markdown specials as references


def test_heatmap_is_one_raw_html_block_of_our_own_tags():
    """The heatmap goes to st.markdown with HTML allowed: it must stay one HTML block (a blank line, e.g. from a
    token '\\r\\r', would end it and let Markdown parse the rest) holding only our div, spans and line breaks."""
    tokens = [*PAYLOADS, "a\r\rb", "\r", "\r", "\n\n", "tail"]
    markup = highlight_html(tokens, [0.5] * len(tokens), n_prompt_tokens=2)
    assert [t.type for t in parser(allow_html=True).parse(markup)] == ["html_block"]
    assert set(re.findall(r"</?([a-z]+)", markup)) == {"div", "span", "br"}
    assert "&lt;script&gt;" in markup and "<script" not in markup and "<img" not in markup


def test_chart_text_is_inert_for_plotly():
    for payload in PAYLOADS:
        label = chart_text(payload)
        assert "<" not in label and ">" not in label and "\n" not in label
        # plotly shows &amp;, &lt;, &gt; as the characters
        assert label.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == one_line(payload)


def test_no_raw_html_or_markdown_stream_outside_the_helper():
    """Raw HTML, Markdown streaming and link/markdown table columns are reached only through explorer/plain.py."""
    banned = re.compile(r"unsafe_allow_html\s*=\s*True|write_stream|st\.html\(|components\.v1|components\.html|"
                        r"LinkColumn|MarkdownColumn")
    files = [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "explorer").glob("*.py"))]
    assert len(files) > 10
    found = [f"{f.relative_to(ROOT)}:{i}: {line.strip()}" for f in files if f.name != "plain.py"
             for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if banned.search(line)]
    assert not found, found
    assert "unsafe_allow_html=True" in (ROOT / "explorer" / "plain.py").read_text(encoding="utf-8")


# --- every page over a pool that carries the payloads ---------------------------------------------------------------

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

TIMEOUT = 90  # seconds per script run: generous for a shared 2-core machine
ATTRIBUTE = "app_pages/2_Attribute.py"
INDEX_NAME = "[pwn](javascript:alert(1)).duckdb"  # a file name is outside text too
EVIL_IDS = [IMAGE, PHISH, ANCHOR]
EVIL_META = {"topic": HTML_IMG, "note": LATEX, "tags": DIRECTIVES, "site": AUTOLINKS}
PAYLOAD_WORDS = tuple(w for p in (IMAGE, PHISH, ANCHOR, HTML_IMG, SCRIPT, LATEX, DIRECTIVES) for w in p.split())
QUERY = "the cat sat on the mat ."
# what the page may hold only escaped: a link or image, raw tags, the payloads' directive, icon, logo and emoji, math
# (the pages' titles carry icons of their own)
DANGER = [re.compile(r"!?\[[^\]\x00]*\]\("), re.compile(r"<\s*/?\s*(img|script|a|iframe|svg)\b", re.I),
          re.compile(r":red\[|:material/warning:|:streamlit:|:smile:"), re.compile(r"\$")]
PAGE_TEXT_PATTERNS = [*STREAMLIT_TEXT_PATTERNS[:2], re.compile(r":(material_warning|streamlit|smile):")]


def payload_rows() -> list[dict]:
    """Ordinary rows, then one row per payload id whose label, metadata and text carry the payloads too."""
    rows = [{"id": f"r{i:02d}", "prompt": "what is the story ?", "completion": CORPUS[i % len(CORPUS)],
             "label": str(i % 2), **{k: "plain" for k in EVIL_META}} for i in range(12)]
    for i, evil in enumerate(EVIL_IDS):
        rows.append({"id": evil, "prompt": f"{SCRIPT} {PHISH}", "completion": f"the cat sat on the mat . {IMAGE}",
                     "label": [PHISH, HTML_IMG, IMAGE][i], **EVIL_META})
    return rows


@pytest.fixture(scope="module")
def evil_env(tmp_path_factory):
    """A tiny model whose vocabulary holds the payload words, and an index of `payload_rows`."""
    import torch

    from rise_core.config import RiseConfig
    from rise_core.models import load_model
    from rise_core.store import build_index

    root = tmp_path_factory.mktemp("plain")
    model_dir, data_dir, index_dir = root / "model", root / "data", root / "indexes"
    tok = build_tokenizer(tuple(dict.fromkeys(PAYLOAD_WORDS)))
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data_dir.mkdir()
    index_dir.mkdir()
    pool = data_dir / "evil_pool.jsonl"
    pool.write_text("".join(json.dumps(r) + "\n" for r in payload_rows()), encoding="utf-8")
    build_index(index_dir / INDEX_NAME, pool, load_model(str(model_dir)), RiseConfig(k_r=16, k_h=8, k_g=16))
    env = {"RISE_MODEL": str(model_dir), "RISE_DATA_DIR": str(data_dir), "RISE_INDEX_DIR": str(index_dir)}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        mp.syspath_prepend(str(ROOT))
        yield env


def new_app(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    return at.switch_page(page).run()


# the fields of an element or block that Streamlit renders as Markdown (st.text, st.code, tables, selectbox and
# multiselect options, typed values and placeholders are shown as text)
MARKDOWN_FIELDS = {"body", "label", "help", "text", "captions"}
TEXT_ELEMENTS = {"text", "code", "json", "arrow_data_frame", "arrow_table", "plotly_chart", "exception"}


def _strings(message, prefix: str = ""):
    for field, value in message.ListFields():
        repeated = getattr(field, "is_repeated", None)
        repeated = field.label == field.LABEL_REPEATED if repeated is None else repeated
        values = value if repeated else [value]
        for v in values:
            if isinstance(v, str):
                yield f"{prefix}{field.name}", v
            elif hasattr(v, "ListFields"):
                yield from _strings(v, f"{prefix}{field.name}.")


def markdown_on_page(at: AppTest) -> list[tuple[str, str, bool]]:
    """(element.field, source, allows HTML) of every string the page renders as Markdown."""
    out = []
    for node in [*at.main, *at.sidebar]:
        proto, kind = getattr(node, "proto", None), getattr(node, "type", "")
        if proto is None or kind in TEXT_ELEMENTS:
            continue
        for name, value in _strings(proto):
            field = name.rsplit(".", 1)[-1]
            if field in MARKDOWN_FIELDS or (kind == "radio" and field == "options"):
                out.append((f"{kind}.{name}", value, bool(getattr(proto, "allow_html", False))))
    return out


def assert_page_inert(at: AppTest) -> list[str]:
    """No exception; every Markdown string on the page renders no link, image or raw tag, and holds no unescaped
    payload syntax; plotly labels hold no tag. Returns the Markdown sources (for positive checks)."""
    assert not at.exception, [e.value for e in at.exception]
    sources = markdown_on_page(at)
    assert sources, "the page shows Markdown"
    for where, source, allow_html in sources:
        raw = unescaped(source)
        for pattern in DANGER if not allow_html else []:  # a heatmap is HTML: judged by its rendering alone
            assert not pattern.search(raw), (where, source, pattern.pattern)
        rendered = parser(allow_html).render(streamlit_source(source))
        assert not re.search(r"<(a|img|script)\b", rendered, re.I), (where, source, rendered)
        assert "host/" not in " ".join(re.findall(r'(?:href|src)="([^"]*)"', rendered)), (where, rendered)
        if not allow_html:
            for node in text_nodes(source):
                for pattern in PAGE_TEXT_PATTERNS:
                    assert not pattern.search(node), (where, source, pattern.pattern)
    for chart in at.get("plotly_chart"):
        assert not re.search(r"<\s*(a|img|script)\b", chart.proto.spec, re.I), chart.proto.spec[:300]
    return [s for _, s, _ in sources]


def test_attribute_page_shows_payload_rows_as_text(evil_env):
    at = new_app(ATTRIBUTE)
    at.text_area(key="query_prompt").input(f"{PHISH} {SCRIPT}").run()
    at.text_area(key="query_completion").input(QUERY).run()
    at.number_input(key="top_k").set_value(len(payload_rows())).run()
    at.button(key="attribute").click().run()
    assert_page_inert(at)
    table = next(d.value for d in at.dataframe if {"RH", "GH"} <= set(d.value.columns))
    assert set(EVIL_IDS) <= set(table["id"]) and HTML_IMG in set(table["topic"])  # tables hold the raw text
    for evil in EVIL_IDS:
        at.selectbox(key="explain_id").set_value(evil).run()
        for channel in ("RH", "total"):
            at.radio(key="explain_channel").set_value(channel).run()
            sources = assert_page_inert(at)
            assert f"**Example {md(evil)}**" in sources  # the id, escaped in our heading line
            caption = next(s for s in sources if s.startswith("label"))
            assert all(md(v) in caption for v in EVIL_META.values())
            heatmap = "".join(m.value for m in at.markdown if m.proto.allow_html)
            assert html_text("again](http://host/phish)") in heatmap and html_text(SCRIPT.split()[0]) in heatmap
    at.text_input(key="where").input(f'"{IMAGE}" = 1').run()  # the error quotes the filter
    sources = assert_page_inert(at)
    assert at.error and any(md(IMAGE) in e.value for e in at.error), [e.value for e in at.error]


def test_streamed_answer_is_plain_text(evil_env, monkeypatch):
    from rise_core import generation

    chunks = [f"{IMAGE} ", f"{PHISH} ", f"{SCRIPT} ", LATEX]
    monkeypatch.setattr(generation, "stream", lambda *a, **k: iter(chunks))
    at = new_app(ATTRIBUTE)
    at.text_area(key="query_prompt").input("the cat").run()
    at.button(key="generate").click().run()
    assert_page_inert(at)
    assert at.text_area(key="query_completion").value == "".join(chunks).strip()
    assert "".join(chunks) in [t.value for t in at.text]  # shown by st.text, not as Markdown


def test_other_pages_show_payload_rows_as_text(evil_env):
    at = new_app("app_pages/0_Home.py")
    assert_page_inert(at)
    at.switch_page("app_pages/4_Select_data.py").run()
    at.text_area(key="sel_text").input(QUERY).run()
    at.button(key="score_pool").click().run()
    assert_page_inert(at)
    assert any(set(EVIL_IDS) <= set(d.value["id"]) for d in at.dataframe if "id" in d.value.columns)

    at = new_app("app_pages/3_Compare_methods.py")
    at.text_area(key="query_completion").input(QUERY).run()
    at.checkbox(key="cmp_embed").uncheck().run()
    at.button(key="compare").click().run()
    sources = assert_page_inert(at)
    assert any(code(Path(evil_env["RISE_MODEL"])) in s for s in sources)  # the index's model id, as code

    at.switch_page("app_pages/6_Diagnostics.py").run()
    sources = assert_page_inert(at)
    assert any(code(INDEX_NAME + ".diagnostics/") in s for s in sources)
    at.text_input(key="diag_query").input(PHISH).run()
    at.text_area(key="diag_candidates").input(f"{IMAGE}\n{SCRIPT}").run()
    at.button(key="diag_rank").click().run()
    assert_page_inert(at)


def test_build_page_shows_uploaded_names_as_text(evil_env):
    header = f"text,{IMAGE},{PHISH}"
    csv = f"{header}\nthe cat sat on the mat .,a,b\nthe bank lost money .,c,d\n"
    at = new_app("app_pages/1_Build_index.py")
    at.radio(key="build_source").set_value("Upload a file").run()
    at.file_uploader(key="build_file").set_value((f"{PHISH}.csv", csv.encode(), "text/csv")).run()
    sources = assert_page_inert(at)
    assert any(f"columns: text, {md(IMAGE)}, {md(PHISH)}" in s for s in sources), sources
