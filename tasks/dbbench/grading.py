"""DB-Bench grading, written from AgentBench's checker semantics (``DBResultProcessor``).

- SELECT-type tasks: the committed answers and the gold label are each cleaned into a list
  of strings (a Python-literal list or ``[(v,), ...]`` rows are unpacked; quotes and spaces
  stripped; ``%`` and thousands separators dropped; none/null/nan/inf/empty read as ``"0"``),
  then one value each is compared as floats within 0.01 or as strings; several values as a
  float multiset within 0.01 when all are numbers, else as sets.
- INSERT/UPDATE tasks: the hash of the agent's table (`table_hash_sql`: md5 over the sorted
  5-character md5 prefixes of each row, ``group_concat`` capped as MySQL's 1024 bytes) equals
  the stored ``answer_md5`` (or, where a task has none, the hash after the gold SQL on a fresh
  copy).

Python literals are read with `ast.literal_eval` where upstream calls `eval`; both reject the
same non-literal text in every answer a tool call can carry (strings in a JSON list).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

__all__ = ["MODIFYING", "clean_answer", "compare_results", "table_hash_sql", "init_sql",
           "hash_value"]

MODIFYING = ("INSERT", "DELETE", "UPDATE")
_SPECIAL = {"none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""}


def normalize(value: Any) -> str:
    """One value as the checker compares it."""
    if value is None:
        return "0"
    text = str(value).strip()
    if text.endswith("%"):
        return text[:-1].strip()
    if "," in text and not text.startswith("[") and not text.endswith("]"):
        text = text.replace(",", "")
    return "0" if text.lower() in _SPECIAL else text


def _strip(value: Any) -> str:
    return str(value).strip().strip("'\"")


def _rows(text: str) -> list[str] | None:
    """Values of a ``[(v,), (w,)]`` result text (single-column rows only), else None."""
    try:
        parsed = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        parsed = None
    if isinstance(parsed, list) and all(isinstance(item, tuple) for item in parsed):
        return [_strip(item[0]) for item in parsed if len(item) == 1]
    inner = text.strip("[]")
    if inner.count("(") == 1 and inner.startswith("(") and inner.endswith(",)"):
        return [inner[1:-2].strip().strip("'\"")]
    return None


def _split_list(text: str) -> list[str]:
    """A bracketed list that is not a Python literal, split on commas outside quotes."""
    items, current, quoted = [], "", False
    for character in text[1:-1]:
        if character in "\"'":
            quoted = not quoted
        elif character == "," and not quoted:
            if current:
                items.append(normalize(_strip(current)))
                current = ""
        else:
            current += character
    if current:
        items.append(normalize(_strip(current)))
    return items


def _items(values: Sequence[Any]) -> list[str]:
    out = []
    for item in values:
        value = item[0] if isinstance(item, tuple) and len(item) == 1 else item
        out.append(normalize(_strip(value)))
    return out


def clean_answer(answer: Any) -> list[str]:
    """The list of strings an answer (or a gold label) is compared as."""
    if answer is None:
        return ["0"]
    if isinstance(answer, str) and answer.startswith("[") and answer.endswith("]"):
        rows = _rows(answer)
        if rows is not None:
            return [normalize(v) for v in rows]
    if isinstance(answer, str):
        text = answer.strip()
        if text.startswith("[") and text.endswith("]"):
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return _split_list(text)
            return _items(parsed) if isinstance(parsed, list) else [normalize(_strip(text))]
        return [normalize(_strip(text))]
    if isinstance(answer, (list, tuple)):
        return _items(answer)
    return [normalize(_strip(answer))]


def _number(value: str) -> bool:
    try:
        float(value)
    except (ValueError, TypeError):
        return False
    return True


def _close(a: str, b: str) -> bool:
    return abs(float(a) - float(b)) <= 1e-2


def compare_results(answer: Any, truth: Any, task_type: str) -> bool:
    """Whether `answer` matches `truth` for a task of `task_type` (module docstring)."""
    try:
        got, want = clean_answer(answer), clean_answer(truth)
        if task_type in MODIFYING:
            return got == want
        if len(got) == 1 and len(want) == 1:
            if got[0] == "0" and want[0] == "0":
                return True
            if _number(got[0]) and _number(want[0]):
                return _close(got[0], want[0])
            return got[0] == want[0]
        if all(map(_number, got)) and all(map(_number, want)):
            if len(got) != len(want):
                return False
            unmatched = list(want)
            for value in got:
                match = next((i for i, w in enumerate(unmatched) if _close(value, w)), None)
                if match is None:
                    return False
                unmatched.pop(match)
            return not unmatched
        return set(got) == set(want)
    except Exception:  # noqa: BLE001 - the checker counts any failure as a wrong answer
        return False


def table_hash_sql(table: dict[str, Any]) -> str:
    """The query whose single value is the table's hash."""
    columns = ",".join(f"`{c['name']}`" for c in table["table_info"]["columns"])
    return (f"select md5(group_concat(rowhash order by rowhash)) as hash from( SELECT "
            f"substring(MD5(CONCAT_WS(',', {columns})), 1, 5) AS rowhash FROM "
            f"`{table['table_name']}`) as sub;")


def hash_value(result_text: str) -> str:
    """The hash inside a result text such as ``[('abc…',)]``."""
    return result_text.strip("[]()").split(",")[0].strip().strip("'")


def init_sql(tables: Sequence[dict[str, Any]]) -> list[tuple[str, tuple[str, ...]]]:
    """Statements creating each table with every column ``TEXT`` (as upstream) and its rows."""
    statements = []
    for table in tables:
        columns = table["table_info"]["columns"]
        names = ",".join(f"`{c['name']}`" for c in columns)
        statements.append((f"CREATE TABLE IF NOT EXISTS `{table['table_name']}` ("
                           + ",".join(f"`{c['name']}` TEXT" for c in columns) + ")", ()))
        rows = table["table_info"]["rows"]
        if rows:
            values = ",".join("(" + ",".join(["%s"] * len(row)) + ")" for row in rows)
            data = tuple(str(value) for row in rows for value in row)
            statements.append((f"INSERT INTO `{table['table_name']}` ({names}) VALUES {values}",
                               data))
    return statements
