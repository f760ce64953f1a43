"""JSON-native copies of results (numpy scalars unwrapped, NaN and infinities → null)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["plain"]


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
