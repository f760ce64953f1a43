"""JSON-native copies of results, and the one reader of JSON from disk."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from astrid_airflow._errors import AstridError, DataError

#: Deepest nesting accepted in JSON read from disk (artefacts and suites need < 10).
MAX_JSON_DEPTH = 64
#: Largest JSON text accepted (metrics, receipts, artefacts, suites, policies): a few
#: KB to a few MB in practice; larger is not one of ours (docs/reliability.md).
MAX_JSON_BYTES = 16 << 20


def native(value: Any) -> Any:
    """``value`` with a numpy scalar unwrapped to its Python equivalent (else unchanged).

    >>> type(native(np.int64(3))).__name__, native("a")
    ('int', 'a')
    """
    return value.item() if isinstance(value, np.generic) else value


def plain(obj: Any) -> Any:
    """A copy of ``obj`` that ``json.dumps(..., allow_nan=False)`` accepts (lenient).

    Mappings, lists, tuples and numpy arrays are copied, numpy scalars unwrapped and
    non-finite floats become ``None``; anything else is passed through unchanged.

    >>> plain({"a": np.float64("nan"), "b": (np.int8(1), 2.5)})
    {'a': None, 'b': [1, 2.5]}
    """
    if isinstance(obj, Mapping):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [plain(v) for v in obj.tolist()]
    obj = native(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def strict(obj: Any, error: type[AstridError] = DataError) -> Any:
    """Like :func:`plain`, but only JSON values come out; anything else raises ``error``.

    An object with ``to_jsonable()`` (a :class:`~astrid_airflow.Grouping`: its list of
    lists) or ``to_dict()`` is converted through it; io knows no higher layer's types.
    """
    if isinstance(obj, Mapping):
        return {str(k): strict(v, error) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [strict(v, error) for v in (obj.tolist() if isinstance(obj, np.ndarray)
                                          else obj)]
    if hasattr(obj, "to_jsonable"):
        return strict(obj.to_jsonable(), error)
    obj = plain(obj)
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if hasattr(obj, "to_dict"):
        return strict(obj.to_dict(), error)
    raise error(f"Value {obj!r} ({type(obj).__name__}) cannot be stored as JSON.")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def load_json(data: str | bytes, what: str, *, error: type[AstridError] = DataError,
              max_depth: int = MAX_JSON_DEPTH, max_bytes: int = MAX_JSON_BYTES) -> Any:
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
    max_bytes : int
        Largest text accepted (its UTF-8 bytes), checked before parsing.

    Returns
    -------
    Any
        The parsed value. ``NaN``/``Infinity`` literals are refused (not JSON).
    """
    if _size_over(data, max_bytes):
        raise error(f"Corrupt {what}: larger than {max_bytes:,} bytes.")
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


def _size_over(data: Any, limit: int) -> bool:
    """Whether ``data`` (bytes, or text as UTF-8) is longer than ``limit`` bytes."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return len(data) > limit
    if not isinstance(data, str):
        return False
    # n characters are n to 4n bytes: encode only when that decides
    return len(data) > limit or (4 * len(data) > limit
                                 and len(data.encode("utf-8", "surrogatepass")) > limit)


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
