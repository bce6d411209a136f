"""Metadata filters (`--where`, the Attribute page's Filter box): a condition over the pool's own columns, and nothing
else.

A filter is user text that becomes SQL, and the app may serve a team on a shared machine, so it is held twice:

1. `check_filter` parses `SELECT * FROM samples WHERE (<filter>)` with DuckDB's own parser (`json_serialize_sql`),
   requires the statement to be exactly that one SELECT (no set operation, CTE, modifier, second statement), and
   walks the condition's parse tree against an allow-list: column references to the `samples` view, constants,
   comparisons, AND/OR/NOT, IN lists, IS NULL, BETWEEN, CASE, CAST to plain types and a short list of scalar
   functions. Subqueries, table functions (file readers, glob), settings functions, lambdas, parameters and
   anything else are refused, with one line that says what a filter may contain. The text that runs is the text
   that was checked.
2. Every index connection is opened with `LOCKED_CONFIG`: no file system or network access beyond the index file
   itself, no extension install or auto-load, and a locked configuration that SQL cannot change back.

A filter that passed may still be costly, so it is bounded three ways (`FilterLimits`):

- `check_filter` estimates the text the condition builds per row (nested `replace()` and concatenations multiply
  it) and refuses more than `MAX_STRING_GROWTH` times the pool's longest value: DuckDB allocates these strings
  outside its memory limit, so eight nested `replace()` calls would otherwise take the machine's memory;
- every index connection runs with DuckDB's `memory_limit` and `threads` set before its configuration is locked;
- `run_filter` interrupts a filter query that runs past the time limit (DuckDB has no statement timeout).

Running out of time or of DuckDB's memory is a `FilterTooCostly` that asks for a simpler filter.
"""

from __future__ import annotations

import atexit
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import duckdb

from ..env_limits import EnvLimits, env_field
from ..errors import InputDataError

T = TypeVar("T")

# Every connection to an index file: the file itself is reachable, nothing else on disk or on the network, no
# extension is installed or loaded behind the user's back, and `SET` cannot undo any of it.
LOCKED_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}


@dataclass(frozen=True)
class FilterLimits(EnvLimits):
    """What a filter may use: DuckDB's memory limit and worker threads on every index connection (set before its
    configuration is locked, so they bind the whole connection), and the wall-clock time of one filter query.

    The defaults suit a 2-core, 24 GB machine shared by a team (a filter takes one core and 1 GiB at most); the
    environment variables RISE_FILTER_MEMORY_MB, RISE_FILTER_THREADS and RISE_FILTER_TIMEOUT_S override them, read
    when an index connection opens."""

    memory_mb: int = env_field(1024, "RISE_FILTER_MEMORY_MB", "MiB")
    threads: int = env_field(1, "RISE_FILTER_THREADS", "threads")
    timeout_s: float = env_field(10.0, "RISE_FILTER_TIMEOUT_S", "seconds", minimum=0, above=True)

    def duckdb_settings(self) -> dict[str, Any]:
        return {"memory_limit": f"{self.memory_mb}MiB", "threads": self.threads}


def connection_config(limits: FilterLimits | None = None) -> dict[str, Any]:
    """The configuration of every index connection: `LOCKED_CONFIG` plus the filter limits (`FilterLimits.from_env()`
    unless given). DuckDB applies `lock_configuration` after the other options, so the limits hold and SQL cannot
    raise them."""
    return {**(limits or FilterLimits.from_env()).duckdb_settings(), **LOCKED_CONFIG}


MAX_FILTER_CHARS = 2000  # longer than any condition a person types; bounds literals and nesting together
MAX_DEPTH = 48  # expression nesting; deeper filters are refused before DuckDB plans them

# Text a filter may build per row, as (a, b): at most a times the pool's longest value plus b characters, summed
# over every string the condition computes (DuckDB holds them all for a vector of 2,048 rows at once, outside its
# memory limit). 64 leaves room for dozens of lower(text) LIKE ... terms; nested replace() multiplies past it.
MAX_STRING_GROWTH = 64
MAX_STRING_CHARS = 1 << 16
# the string functions, by what their result can be at most
_JOINING = frozenset({"||", "concat"})  # the sum of the arguments
_SHRINKING = frozenset({"lower", "upper", "lcase", "ucase", "trim", "ltrim", "rtrim", "substring", "substr", "left",
                        "right"})  # the first argument
_PICKING = frozenset({"coalesce", "ifnull", "nullif", "least", "greatest"})  # one of the arguments
_SHORT_VALUE = 64  # characters of a number, date or boolean shown as text

# Scalar functions a filter may call, by DuckDB's parse-tree name (operators parse as functions too). None of them
# touches anything outside the row: no files, settings, environment, randomness or sequences.
ALLOWED_FUNCTIONS = frozenset({
    # operators: arithmetic, string concatenation, LIKE / ILIKE / GLOB (string patterns, not files) and negations
    "+", "-", "*", "/", "//", "%", "||",
    "~~", "!~~", "~~*", "!~~*", "~~~", "!~~~", "like_escape", "not_like_escape", "ilike_escape", "not_ilike_escape",
    # strings
    "lower", "upper", "lcase", "ucase", "length", "len", "strlen", "trim", "ltrim", "rtrim", "contains",
    "starts_with", "ends_with", "prefix", "suffix", "substring", "substr", "left", "right", "concat", "replace",
    "strpos", "instr", "position", "regexp_matches", "regexp_full_match",
    # numbers
    "abs", "round", "floor", "ceil", "ceiling", "least", "greatest", "sign",
    # NULL handling
    "coalesce", "ifnull", "nullif",
    # dates
    "year", "month", "day", "date_part", "date_trunc",
})
ALLOWED_CAST_TYPES = frozenset({
    "BOOLEAN", "BOOL", "TINYINT", "SMALLINT", "INTEGER", "INT", "INT4", "INT8", "BIGINT", "HUGEINT", "FLOAT",
    "REAL", "DOUBLE", "DECIMAL", "NUMERIC", "VARCHAR", "TEXT", "STRING", "DATE", "TIMESTAMP", "TIME", "INTERVAL",
})
# parse-tree node classes (and, for OPERATOR, the operator types) a condition may contain
ALLOWED_CLASSES = frozenset({"COLUMN_REF", "CONSTANT", "COMPARISON", "CONJUNCTION", "OPERATOR", "BETWEEN",
                             "FUNCTION", "CAST", "TYPE", "CASE"})
ALLOWED_OPERATORS = frozenset({"OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN",
                               "COMPARE_NOT_IN", "OPERATOR_COALESCE", "OPERATOR_NULLIF"})

ALLOWED_SUMMARY = ("a filter is a condition over the pool's columns: comparisons (= <> < <= > >= BETWEEN), "
                   "LIKE/ILIKE, IN (list), IS [NOT] NULL, AND/OR/NOT, arithmetic, CAST, CASE, and the functions "
                   "lower, upper, length, trim, contains, starts_with, ends_with, substring, regexp_matches, abs, "
                   "round, coalesce, year/month/day; no subqueries, table functions, files or settings")

# what running a checked filter can raise because of the filter (a type mismatch, an overflow): a clear error naming
# the columns, not a failure of the index
FILTER_ERRORS: tuple[type[duckdb.Error], ...] = (
    duckdb.BinderException, duckdb.ParserException, duckdb.ConversionException, duckdb.InvalidInputException,
    duckdb.CatalogException, duckdb.OutOfRangeException, duckdb.PermissionException, duckdb.NotImplementedException)

_PARSER_LOCK = threading.Lock()
_PARSER: duckdb.DuckDBPyConnection | None = None
_LOCATION_KEYS = frozenset({"query_location", "query_location_length"})


class FilterRefused(InputDataError):
    """A filter that is not a plain condition over the pool's columns."""


class FilterTooCostly(InputDataError):
    """A filter that would build too much text, or ran past its time or DuckDB's memory limit."""


def _parser() -> duckdb.DuckDBPyConnection:
    """An in-memory, locked-down connection used only to parse filters (never to run them)."""
    global _PARSER
    with _PARSER_LOCK:
        if _PARSER is None:
            _PARSER = duckdb.connect(":memory:", config=connection_config(FilterLimits()))
            atexit.register(_close_parser)
        return _PARSER


def _close_parser() -> None:
    global _PARSER
    with _PARSER_LOCK:
        if _PARSER is not None:
            _PARSER.close()
            _PARSER = None


def _shown(where: str) -> str:
    """The filter as quoted in a message: one line, at most 120 characters."""
    flat = " ".join(where.split())
    return repr(flat if len(flat) <= 120 else flat[:117] + "...")


def _refuse(where: str, reason: str, hint: str = ALLOWED_SUMMARY) -> FilterRefused:
    return FilterRefused(f"filter {_shown(where)} refused: {reason}; {hint}")


def filter_sql(where: str, select: str = "row") -> str:
    """The statement a filter runs as (the same text `check_filter` parses)."""
    return f"SELECT {select} FROM samples WHERE ({where})"


def _parse(sql: str) -> dict[str, Any]:
    cur = _parser().cursor()
    try:
        raw = cur.execute("SELECT json_serialize_sql($1::VARCHAR)", [sql]).fetchone()[0]
    finally:
        cur.close()
    return json.loads(raw)


def _without_locations(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _without_locations(v) for k, v in tree.items() if k not in _LOCATION_KEYS}
    if isinstance(tree, list):
        return [_without_locations(v) for v in tree]
    return tree


_SHAPE: dict[str, Any] | None = None


def _statement_shape() -> dict[str, Any]:
    """The parse tree of `SELECT * FROM samples WHERE (TRUE)` without its condition and source positions: every
    filter's statement must equal it outside the condition."""
    global _SHAPE
    if _SHAPE is None:
        node = _parse(filter_sql("TRUE", "*"))["statements"][0]["node"]
        _SHAPE = _without_locations({k: v for k, v in node.items() if k != "where_clause"})
    return _SHAPE


def _type_name(node: dict[str, Any]) -> str:
    """The target type of a CAST node, across DuckDB's serialisation versions."""
    if isinstance(node.get("type_expr"), dict):
        return str(node["type_expr"].get("type_name", "")).upper()
    cast_type = node.get("cast_type")
    if isinstance(cast_type, dict):
        return str(cast_type.get("id", "")).upper()
    return ""


def _check_node(node: dict[str, Any], where: str, columns: Sequence[str], depth: int) -> None:
    """Raise FilterRefused unless `node` (an expression) and everything under it is allowed."""
    if depth > MAX_DEPTH:
        raise _refuse(where, f"it nests deeper than {MAX_DEPTH} levels")
    cls, typ = node.get("class"), node.get("type")
    if cls not in ALLOWED_CLASSES:
        what = {"SUBQUERY": "a subquery", "STAR": "a * expression", "WINDOW": "a window function",
                "LAMBDA": "a lambda", "PARAMETER": "a parameter", "COLLATE": "COLLATE",
                "FUNCTION_REF": "a table function"}.get(str(cls), f"a {str(cls).lower()} expression")
        raise _refuse(where, f"it contains {what}")
    if cls == "COLUMN_REF":
        names = node.get("column_names") or []
        if len(names) != 1:
            raise _refuse(where, f"{'.'.join(map(str, names))} is not a column (name columns without a table or "
                                 "field part)")
        if str(names[0]).lower() not in {c.lower() for c in columns}:
            raise _refuse(where, f"no column named {str(names[0])!r}", f"the columns are: {', '.join(columns)}")
    elif cls == "OPERATOR" and typ not in ALLOWED_OPERATORS:
        raise _refuse(where, f"it uses the operator {str(typ).lower().replace('operator_', '')}")
    elif cls == "FUNCTION":
        name = str(node.get("function_name", "")).lower()
        if node.get("schema") or node.get("catalog"):
            raise _refuse(where, f"it names a function in a schema ({name})")
        if name not in ALLOWED_FUNCTIONS:
            raise _refuse(where, f"the function {name!r} is not allowed in a filter")
        if node.get("filter") or node.get("distinct") or node.get("export_state") or (
                (node.get("order_bys") or {}).get("orders")):
            raise _refuse(where, f"{name}() is called as an aggregate")
    elif cls == "CAST":
        type_name = _type_name(node)
        if type_name not in ALLOWED_CAST_TYPES:
            raise _refuse(where, f"it casts to {type_name or 'an unknown type'} (cast to plain types only)")
    elif cls == "TYPE":
        if str(node.get("type_name", "")).upper() not in ALLOWED_CAST_TYPES or node.get("schema") or node.get(
                "catalog"):
            raise _refuse(where, f"it names the type {node.get('type_name')!r}")
    for child in _children(node):
        _check_node(child, where, columns, depth + 1)


def _children(tree: Any) -> Iterable[dict[str, Any]]:
    """The expressions directly below `tree`: the nearest dicts with a `class`, at any nesting of plain containers."""
    values = tree.values() if isinstance(tree, dict) else tree
    for value in values:
        if isinstance(value, dict):
            if "class" in value:
                yield value
            else:
                yield from _children(value)
        elif isinstance(value, list):
            yield from _children(value)


def check_filter(where: str, columns: Sequence[str], select: str = "row") -> str:
    """The SQL a filter runs as, after checking that it is one condition over `columns` and nothing else.

    Raises FilterRefused (an InputDataError) with one line that says what is allowed."""
    if not isinstance(where, str) or not where.strip():
        raise _refuse(str(where), "it is empty (leave the filter out to keep every row)")
    if len(where) > MAX_FILTER_CHARS:
        raise _refuse(where, f"it is {len(where):,} characters long (at most {MAX_FILTER_CHARS:,})")
    if "\x00" in where:
        raise _refuse(where, "it contains a NUL character")
    sql = filter_sql(where, "*")
    try:
        with _PARSER_LOCK:
            statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _refuse(where, f"it is not valid SQL ({message[:160]})") from None
    except RecursionError:
        raise _refuse(where, "it nests too deeply to parse") from None
    if len(statements) != 1:
        raise _refuse(where, f"it is {len(statements)} statements, not one condition")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise _refuse(where, "it is a statement of its own, not a condition")
    try:
        tree = _parse(sql)
    except (duckdb.Error, RecursionError, ValueError) as exc:
        raise _refuse(where, f"it could not be parsed ({type(exc).__name__})") from None
    if tree.get("error"):
        message = str(tree.get("error_message", "syntax error")).splitlines()[0]
        raise _refuse(where, f"it is not valid SQL ({message[:160]})")
    statements = tree.get("statements") or []
    if len(statements) != 1:
        raise _refuse(where, "it is more than one statement")
    node = statements[0].get("node") or {}
    if node.get("type") != "SELECT_NODE" or "where_clause" not in node:
        raise _refuse(where, "it leaves the condition (a set operation such as UNION, or a statement of its own)")
    outside = _without_locations({k: v for k, v in node.items() if k != "where_clause"})
    if outside != _statement_shape():
        raise _refuse(where, "it changes the statement around the condition")
    condition = node["where_clause"]
    if not isinstance(condition, dict) or "class" not in condition:
        raise _refuse(where, "it is not a condition")
    _check_node(condition, where, list(columns), 0)
    _check_growth(condition, where)
    return filter_sql(where, select)


def _literal_chars(node: dict[str, Any]) -> int:
    literal = node.get("literal")
    if isinstance(literal, dict) and isinstance(literal.get("text"), str):
        return len(literal["text"])
    return len(json.dumps(node.get("value", literal), default=str))  # other serialisations: an upper bound


def _growth(node: dict[str, Any], where: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(the longest value `node` can have, every string computed at and under it), each as (a, b): at most a times
    the pool's longest value plus b characters. Refuses replace() whose replacement holds a column (its result grows
    with the square of the pool's text, which no (a, b) bounds)."""
    results = [_growth(child, where) for child in _children(node)]
    outs = [out for out, _ in results]
    built = (sum(t[0] for _, t in results), sum(t[1] for _, t in results))
    cls = node.get("class")
    name = str(node.get("function_name", "")).lower() if cls == "FUNCTION" else ""
    if cls == "COLUMN_REF":
        return (1, 0), built
    if cls == "CONSTANT":
        return (0, _literal_chars(node)), built
    if name in _JOINING:
        out = (sum(o[0] for o in outs), sum(o[1] for o in outs))
    elif name == "replace" and len(outs) == 3:
        if outs[2][0]:
            raise FilterTooCostly(f"filter {_shown(where)} refused: replace() with a column in its replacement "
                                  "builds text that grows with the square of the pool's, more memory than a filter "
                                  "may use; simplify it (give replace() a constant replacement)")
        factor = max(1, outs[2][1])  # every character replaced by the whole replacement, at most
        out = (outs[0][0] * factor, outs[0][1] * factor)
    elif name in _SHRINKING:
        out = outs[0] if outs else (0, _SHORT_VALUE)
    elif name in _PICKING or cls == "CASE" or node.get("type") in ("OPERATOR_COALESCE", "OPERATOR_NULLIF"):
        out = (max((o[0] for o in outs), default=0), max((o[1] for o in outs), default=_SHORT_VALUE))
    elif cls == "CAST":
        out = (outs[0][0], outs[0][1] + _SHORT_VALUE) if outs else (0, _SHORT_VALUE)
    else:  # comparisons, numbers, booleans, dates: a short value, nothing kept of the strings under it
        return (0, _SHORT_VALUE), built
    return out, (built[0] + out[0], built[1] + out[1])


def _check_growth(condition: dict[str, Any], where: str) -> None:
    """Refuse a condition that builds more text per row than `MAX_STRING_GROWTH` / `MAX_STRING_CHARS` allow."""
    _, (per_value, chars) = _growth(condition, where)
    hint = "simplify it (fewer nested replace() calls and concatenations)"
    if per_value > MAX_STRING_GROWTH:
        raise FilterTooCostly(f"filter {_shown(where)} refused: it could build text {per_value:,} times as long as "
                              f"the pool's longest value for every row (at most {MAX_STRING_GROWTH}), more memory "
                              f"than a filter may use; {hint}")
    if chars > MAX_STRING_CHARS:
        raise FilterTooCostly(f"filter {_shown(where)} refused: it could build {chars:,} characters of text for every "
                              f"row (at most {MAX_STRING_CHARS:,}), more memory than a filter may use; {hint}")


def run_filter(cursor: duckdb.DuckDBPyConnection, sql: str, where: str, limits: FilterLimits,
               fetch: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """`fetch(cursor.execute(sql))` for a checked filter, interrupted after `limits.timeout_s` seconds (DuckDB has no
    statement timeout). Running past the time or out of DuckDB's memory raises FilterTooCostly; the index is only
    read, so nothing of it changes."""
    guard = threading.Lock()
    running = True

    def stop() -> None:
        with guard:
            if running:
                cursor.interrupt()

    timer = threading.Timer(limits.timeout_s, stop)
    timer.daemon = True
    timer.start()
    try:
        return fetch(cursor.execute(sql))
    except duckdb.InterruptException:
        raise FilterTooCostly(f"filter {_shown(where)} took longer than {limits.timeout_s:g} s and was stopped; "
                              "simplify it (fewer functions, or a condition on short columns); the limit is "
                              "RISE_FILTER_TIMEOUT_S") from None
    except duckdb.OutOfMemoryException:
        raise FilterTooCostly(f"filter {_shown(where)} needed more than the {limits.memory_mb:,} MiB of memory a "
                              "filter may use and was stopped; simplify it (fewer functions, or a condition on short "
                              "columns); the limit is RISE_FILTER_MEMORY_MB") from None
    finally:
        with guard:
            running = False
        timer.cancel()
