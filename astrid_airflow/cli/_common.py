"""Small helpers shared by the subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (NaN becomes null)."""
    sys.stdout.write(json.dumps(_clean(obj), indent=2, sort_keys=False) + "\n")


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj
