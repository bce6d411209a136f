"""Text from outside the app, shown as text: pool rows (ids, labels, metadata, text, spans), index and model names,
the model's answers, uploaded files and their columns, exception messages and whatever people type.

Streamlit renders Markdown (GitHub-flavoured, with its own `:color[…]`, `:material/icon:`, emoji and `$LaTeX$`
directives, and bare-URL autolinks) in st.markdown, st.caption, alerts, headings, widget labels, help tooltips,
metric labels, expander and tab labels, radio options, progress and toast texts. Such text therefore reaches the
page only through this module:

- `md(value)`: the value escaped to sit inside a sentence of ours (every Markdown construct inert, one line);
- `code(value)`: the value as an inline code span (paths, model ids);
- `text(value)`: a block of it with st.text (no Markdown, no HTML);
- `stream_text(chunks)`: the model's streamed answer, shown as plain text while it arrives;
- `token_heatmap(...)`: the only HTML the app renders, `highlight_html`: our own spans around tokens escaped by
  `html_text`;
- `chart_text(value)`: a label in a plotly chart (plotly reads `<a href>`, `<b>`, … in its strings).

Tables (st.dataframe, st.data_editor) and selectbox / multiselect options render their cells as text already and
take the values as they are. The escapers are plain functions; Streamlit is imported only by the functions that
render, so `views` uses this module without it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rise_core.errors import InputDataError

# Backslash-escaped wherever they occur: CommonMark's inline and block punctuation, GFM's tables and strikethrough,
# Streamlit's `$` (LaTeX) and `:` (directives). `_` between two ASCII letters or digits stays as it is: such a `_`
# can neither open nor close emphasis (CommonMark's flanking rules), and identifiers stay readable.
_ESCAPED = frozenset("\\`*_[]()<>!#|~$:&")
# Invisible, and not a word character: put after `:` and `@`, and between `w` and `.`, it breaks the patterns that
# Streamlit matches in the text *after* unescaping -- icons and emoji (`:name:`), `http://` and `www.` links, emails.
WORD_JOINER = "\u2060"
_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
# at the start of a line these begin a list, a thematic break or a setext heading underline
_BLOCK_START = re.compile(r"^([-+=]|\d+\.)")


def _is_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def md(value: Any) -> str:
    """`value` (any object: its str) as Markdown that shows exactly its characters, on one line: links, images, HTML,
    emphasis, code, headings, lists, tables, LaTeX and Streamlit's directives, icons, emoji and autolinks are all
    inert (line breaks become spaces; surrounding whitespace goes, as in a paragraph). For text that sits inside a
    sentence of ours (st.markdown, st.caption, st.info, labels, help)."""
    s = _LINE_BREAKS.sub(" ", str(value)).strip()  # as a paragraph shows it; 4 leading spaces would make code
    out = []
    for i, ch in enumerate(s):
        if ch == "_" and 0 < i < len(s) - 1 and _is_alnum(s[i - 1]) and _is_alnum(s[i + 1]):
            out.append(ch)
        elif ch == ":":
            out.append("\\:" + WORD_JOINER)
        elif ch in _ESCAPED:
            out.append("\\" + ch)
        elif ch == "@":
            out.append("@" + WORD_JOINER)
        elif ch == "." and i > 0 and s[i - 1] in "wW":
            out.append(WORD_JOINER + ".")
        else:
            out.append(ch)
    escaped = "".join(out)
    # a leading '-', '+', '=' or '12.' would start a block when the caller puts the value at the start of a line
    return _BLOCK_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], escaped, count=1)


def code(value: Any) -> str:
    """`value` as an inline code span (shown in monospace, verbatim, on one line): the fence is longer than any run
    of backticks inside, so nothing in it can close the span early."""
    # Streamlit rewrites ':material/' to ':material_' in the whole source, code spans included: the joiner keeps
    # such text as it was
    s = _LINE_BREAKS.sub(" ", str(value)).replace(":material/", ":" + WORD_JOINER + "material/")
    if not s.strip():
        return md(s)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""  # CommonMark strips one space each side of padded content
    return f"{fence}{pad}{s}{pad}{fence}"


_HTML_TEXT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;",
                            **{c: f"&#{ord(c)};" for c in "\\`*_[]()!#|~$:"}, "\n": "↵<br>"})


def html_text(value: Any) -> str:
    """`value` as HTML text: `html.escape` (quotes too), the Markdown specials as character references (inert even
    if a Markdown parser saw them), and each line break as a visible ↵ and <br>, so the markup stays on one line
    (a blank line would end Markdown's raw HTML block)."""
    s = _LINE_BREAKS.sub("\n", str(value))
    return s.translate(_HTML_TEXT)


def chart_text(value: Any) -> str:
    """`value` for a plotly label, title or hover text, on one line: plotly renders the tags it knows (`<a href>`,
    `<b>`, `<br>`, …) in its strings and shows `&amp;`, `&lt;`, `&gt;` as the characters, so those three are
    escaped."""
    return _LINE_BREAKS.sub(" ", str(value)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def highlight_html(tokens: Sequence[str], values: Sequence[float], n_prompt_tokens: int = 0,
                   scale: float | None = None) -> str:
    """Tokens as escaped HTML spans coloured by their contribution: orange for positive, blue for negative.

    Every token is passed through `html_text` (`html.escape`, Markdown specials as character references, line
    breaks as ↵<br>) before it is wrapped, so text from the pool or the user (e.g. `<script>`) is shown as text and
    the markup stays on one line. `scale` is the magnitude that gets full colour (default: the largest |value|).
    Prompt tokens (the first `n_prompt_tokens`) are underlined with a dotted line.
    """
    if len(tokens) != len(values):
        raise InputDataError(f"{len(tokens)} tokens but {len(values)} values")
    vals = [float(v) if v == v else 0.0 for v in values]  # nan -> 0
    top = scale if scale is not None else max((abs(v) for v in vals), default=0.0)
    top = top if top > 0 else 1.0
    spans = []
    for i, (tok, v) in enumerate(zip(tokens, vals, strict=True)):
        alpha = min(1.0, abs(v) / top)
        colour = "255,140,0" if v >= 0 else "30,120,255"
        style = f"background-color: rgba({colour},{alpha:.2f}); border-radius: 3px;"
        if i < n_prompt_tokens:
            style += " text-decoration: underline dotted;"
        spans.append(f'<span style="{style}" title="{v:+.4g}">{html_text(tok)}</span>')
    return ('<div style="white-space: pre-wrap; line-height: 1.8; font-family: monospace; font-size: 0.9em;">'
            + "".join(spans) + "</div>")


# --- rendering (imports Streamlit) ---------------------------------------------------------------------------------


def text(value: Any) -> None:
    """A block of outside text (e.g. a model's answer) with st.text: no Markdown, no HTML."""
    import streamlit as st

    st.text(str(value))


def stream_text(chunks: Iterable[Any]) -> str:
    """Show a stream of text (e.g. the model's answer) as plain text while it arrives, in one placeholder; returns
    the whole text ("" when the stream is empty)."""
    import streamlit as st

    slot = st.empty()
    parts: list[str] = []
    for chunk in chunks:
        parts.append(str(chunk))
        slot.text("".join(parts))
    return "".join(parts)


def token_heatmap(tokens: Sequence[str], values: Sequence[float], n_prompt_tokens: int = 0,
                  scale: float | None = None) -> None:
    """Tokens coloured by their contribution (`highlight_html`: our own spans and styles around tokens escaped by
    `html_text`; `scale`: the magnitude at full colour). The only place the app lets Streamlit render HTML."""
    import streamlit as st

    st.markdown(highlight_html(tokens, values, n_prompt_tokens, scale), unsafe_allow_html=True)
