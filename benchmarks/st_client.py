"""A small client that drives a real `streamlit run` server as a browser tab does, for load tests.

One `StreamlitSession` is one browser session: it opens Streamlit's websocket (`/_stcore/stream`), asks for script
runs with `rerun_script` BackMsgs (the page, and the values of the widgets it has set, by their user `key`), and
collects what each run rendered from the ForwardMsg deltas until `script_finished`:

    with StreamlitSession("http://127.0.0.1:8501") as s:
        s.run("Attribute")                                  # a page by its title (or URL path name)
        s.set("query_completion", "the cat sat on the mat .")
        page = s.click("attribute")                         # a button press: one run with its trigger
        page.errors(), [t.num_rows for t in page.tables()]  # exceptions and error alerts; dataframes (pyarrow)
        s.fetch(page.widget("feedback_download").download_button.url)  # a download button's file, over HTTP

What the server expects (streamlit/web/server/starlette/starlette_websocket.py): a connection without an Origin
header is accepted (browsers send one; it must then match the host), and the XSRF token in the websocket's
subprotocol only matters for login cookies, so none is sent. Element ids embed the widget's user key
(`$$ID-<hash>-<key>`), which is how `widget(key)` finds them. Values go in the WidgetState field the widget registers
(text and choices: string_value; numbers: double_value; st.data_editor: its edits as a JSON string, see
`editor_edits`). Only loopback servers are meant: it sends no credentials.
"""

from __future__ import annotations

import io
import json
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.state.common import user_key_from_element_id
from websockets.sync.client import connect

# The WidgetState field each widget type's value goes in (the `value_type` it registers in streamlit/elements/).
VALUE_FIELDS = {"text_input": "string_value", "text_area": "string_value", "selectbox": "string_value",
                "radio": "string_value", "number_input": "double_value", "checkbox": "bool_value",
                "multiselect": "string_array_value", "slider": "double_array_value", "dataframe": "string_value"}
DONE_STATUSES = {ForwardMsg.FINISHED_SUCCESSFULLY: "finished", ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error"}


class StreamlitClientError(RuntimeError):
    """The server did not answer as a Streamlit app does: no run within the timeout, a closed socket, no widget."""


def editor_edits(edited_rows: dict[int, dict[str, Any]]) -> str:
    """An st.data_editor's widget value: cell edits by row position, as the frontend serialises them."""
    return json.dumps({"edited_rows": {str(r): cells for r, cells in edited_rows.items()}, "added_rows": [],
                       "deleted_rows": []})


def arrow_table(element: Element) -> pa.Table:
    """A dataframe element's rows (st.dataframe or st.data_editor), eager or lazily sent (its first chunk)."""
    df = element.dataframe
    data = df.arrow_data.data if df.arrow_data.data else df.lazy_data.initial_chunk.data
    return pa.ipc.open_stream(io.BytesIO(data)).read_all()


def row_count(element: Element) -> int:
    """Rows of a dataframe element: a lazily sent one says its count; an eager one carries every row."""
    df = element.dataframe
    if not df.arrow_data.data and df.HasField("lazy_data") and df.lazy_data.HasField("row_count"):
        return int(df.lazy_data.row_count)
    return arrow_table(element).num_rows


@dataclass
class PageRun:
    """What one script run rendered: its elements by delta path (in page order), how it ended and its duration."""

    elements: dict[tuple[int, ...], Element]
    status: str
    seconds: float
    compile_error: str = ""

    def of_type(self, kind: str) -> list[Element]:
        """Elements of one type ('alert', 'dataframe', 'progress', 'button', 'markdown', ...), in page order."""
        return [e for _, e in sorted(self.elements.items()) if e.WhichOneof("type") == kind]

    def _keyed(self) -> dict[str, Element]:
        out = {}
        for element in self.elements.values():
            kind = element.WhichOneof("type")
            wid = getattr(getattr(element, kind), "id", "") if kind else ""
            if wid and (key := user_key_from_element_id(wid)):
                out.setdefault(key, element)
        return out

    def widget(self, key: str) -> Element | None:
        """The widget whose user key is `key` (None when the run did not render it)."""
        return self._keyed().get(key)

    def key_starting(self, prefix: str) -> str | None:
        """The user key of the first widget whose key starts with `prefix` (for keys an app derives from data)."""
        return next((k for k in self._keyed() if k.startswith(prefix)), None)

    def alerts(self, fmt: int) -> list[str]:
        """Bodies of the alerts of one format (Alert.ERROR, WARNING, INFO, SUCCESS)."""
        return [e.alert.body for e in self.of_type("alert") if e.alert.format == fmt]

    def errors(self) -> list[str]:
        """Exceptions shown on the page and error alerts (the app's own messages included), plus a compile error."""
        found = [f"{e.exception.type}: {e.exception.message}" for e in self.of_type("exception")]
        return found + self.alerts(Alert.ERROR) + ([self.compile_error] if self.compile_error else [])

    def tables(self) -> list[Element]:
        """Dataframe elements (read-only tables and data editors), in page order."""
        return self.of_type("dataframe")

    def texts(self) -> list[str]:
        """Every markdown, caption, heading, alert and progress text: to search the page for a message."""
        out = []
        for e in self.elements.values():
            kind = e.WhichOneof("type")
            if kind in ("markdown", "heading", "alert"):
                out.append(getattr(e, kind).body)
            elif kind == "progress":
                out.append(e.progress.text)
        return out


@dataclass
class StreamlitSession:
    """One browser session of a Streamlit server at `base_url` (see the module doc). Not thread-safe: one thread
    drives one session; many sessions may run in threads side by side."""

    base_url: str
    timeout_s: float = 120.0
    values: dict[str, Any] = field(default_factory=dict)  # widget values set so far, by user key
    pages: dict[str, str] = field(default_factory=dict)  # page title and URL path name -> page_script_hash
    page_hash: str = ""
    last: PageRun | None = None
    _ws: Any = None

    def __enter__(self) -> StreamlitSession:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> None:
        ws_url = self.base_url.replace("http://", "ws://", 1).rstrip("/") + "/_stcore/stream"
        self._ws = connect(ws_url, max_size=None, open_timeout=self.timeout_s, close_timeout=5)

    def close(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def run(self, page: str | None = None, triggers: Iterable[str] = ()) -> PageRun:
        """One script run of `page` (its title or URL path name; default: the page of the last run; before the first
        run lists the pages, only a URL path name), with the values set so far of the widgets on the page and
        the buttons in `triggers` pressed; waits for it to finish (a run the script restarts with st.rerun counts
        as one)."""
        triggers = tuple(triggers)
        if page is not None and self.pages and page not in self.pages:
            raise StreamlitClientError(f"no page {page!r}; the app has {sorted(self.pages)}")
        same_page = page is None or self.pages.get(page) == self.page_hash
        msg = BackMsg()
        state = msg.rerun_script
        if page is not None:
            self.page_hash = self.pages.get(page, "")
            state.page_name = "" if self.page_hash else page  # before any run has listed the pages: its URL path
        state.page_script_hash = self.page_hash
        for key, value in [*self.values.items(), *((k, True) for k in triggers)]:
            element = self.last.widget(key) if self.last and same_page else None  # another page: its own values
            if element is None:
                if key in triggers:
                    raise StreamlitClientError(f"no widget with key {key!r} on the page to press")
                continue
            kind = element.WhichOneof("type")
            ws = state.widget_states.widgets.add(id=getattr(element, kind).id)
            if key in triggers:
                ws.trigger_value = True
            elif VALUE_FIELDS.get(kind, "").endswith("_array_value"):
                getattr(ws, VALUE_FIELDS[kind]).SetInParent()  # an empty list is a value too
                getattr(ws, VALUE_FIELDS[kind]).data.extend(value)
            else:
                setattr(ws, VALUE_FIELDS.get(kind, "string_value"), value)
        self._ws.send(msg.SerializeToString())
        self.last = self._collect()
        return self.last

    def set(self, key: str, value: Any, *, run: bool = True) -> PageRun | None:
        """Set a widget's value (sent with every later run while the widget is on the page); runs the page as a
        browser does on a change, unless `run` is False."""
        self.values[key] = value
        return self.run() if run else None

    def select(self, key: str, matches: str, *, run: bool = True) -> PageRun | None:
        """Choose the first option of a selectbox whose shown text contains `matches`."""
        element = self.last.widget(key) if self.last else None
        if element is None:
            raise StreamlitClientError(f"no selectbox with key {key!r} on the page")
        option = next((o for o in element.selectbox.options if matches in o), None)
        if option is None:
            raise StreamlitClientError(f"selectbox {key!r} offers no option with {matches!r}: "
                                       f"{list(element.selectbox.options)}")
        return self.set(key, option, run=run)

    def click(self, key: str) -> PageRun:
        """Press a button (one run with its trigger set)."""
        return self.run(triggers=[key])

    def fetch(self, url: str) -> bytes:
        """GET a file the page links to (a download button's media URL) from the same server."""
        full = url if url.startswith("http") else self.base_url.rstrip("/") + "/" + url.lstrip("/")
        with urllib.request.urlopen(full, timeout=self.timeout_s) as response:  # noqa: S310 - the test's own server
            return response.read()

    def _collect(self) -> PageRun:
        """Read ForwardMsgs until the run ends; each new run (new_session) starts an empty page."""
        start, deadline = time.monotonic(), time.monotonic() + self.timeout_s
        elements: dict[tuple[int, ...], Element] = {}
        compile_error = ""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StreamlitClientError(f"no script_finished within {self.timeout_s:.0f} s")
            try:
                raw = self._ws.recv(timeout=left)
            except TimeoutError:
                continue
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                elements = {}
            elif kind == "navigation":
                self.page_hash = msg.navigation.page_script_hash
                for p in msg.navigation.app_pages:
                    self.pages[p.page_name] = self.pages[p.url_pathname] = p.page_script_hash
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                elements[tuple(msg.metadata.delta_path)] = msg.delta.new_element
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                exc = msg.session_event.script_compilation_exception
                compile_error = f"{exc.type}: {exc.message}"
            elif kind == "script_finished" and msg.script_finished in DONE_STATUSES:
                return PageRun(elements, DONE_STATUSES[msg.script_finished], time.monotonic() - start, compile_error)
