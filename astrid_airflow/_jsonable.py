"""JSON-native copies of results, and the one reader of JSON from disk."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._errors import AstridError, DataError

__all__ = ["plain", "load_json", "MAX_JSON_DEPTH"]

#: Deepest nesting accepted in JSON read from disk (artefacts and suites need < 10).
MAX_JSON_DEPTH = 64


def plain(obj: Any) -> Any:
    """A copy of ``obj`` that ``json.dumps(..., allow_nan=False)`` accepts."""
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def load_json(data: str | bytes, what: str, *, error: type[AstridError] = DataError,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON read from a file; every defect becomes one ``error`` line.

    Parameters
    ----------
    data : str or bytes
        The file's content (bytes must be UTF-8).
    what : str
        How the message names the file, e.g. ``"artefact JSON"`` or a path.
    error : AstridError subclass, default DataError
        The type raised.
    max_depth : int
        Deepest nesting of arrays/objects accepted. ``json`` recurses once per level:
        a file nested 100k levels deep raises ``RecursionError`` inside the decoder,
        which becomes this error too, as does a shallower value deeper than the limit
        (checked without recursion), so later code never recurses out of bounds.

    Returns
    -------
    Any
        The parsed value. ``NaN``/``Infinity`` literals are refused (not JSON).
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"Corrupt {what}: not UTF-8 text ({exc}).") from None
    if not isinstance(data, str):
        raise error(f"Corrupt {what}: expected JSON text, got {type(data).__name__}.")
    if not data.strip():
        raise error(f"Corrupt {what}: the file is empty.")
    try:
        # CPython's decoder guards its recursion (RecursionError, not a crash), so a
        # file nested 100k levels deep fails here cleanly; the depth check below then
        # bounds what the rest of the code (which recurses over the value) receives.
        value = json.loads(data, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise error(f"Corrupt or truncated {what}: {exc.msg} at line {exc.lineno} "
                    f"column {exc.colno}.") from None
    except RecursionError:
        raise error(f"Corrupt {what}: nested deeper than {max_depth} levels.") from None
    except ValueError as exc:
        raise error(f"Corrupt {what}: {exc}.") from None
    if _nesting_depth(value) > max_depth:
        raise error(f"Corrupt {what}: nested deeper than {max_depth} levels.")
    return value


def _nesting_depth(value: Any) -> int:
    """Deepest array/object nesting of a parsed JSON value (iterative: no recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))
    return deepest
