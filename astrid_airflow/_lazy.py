"""Lazy public exports (PEP 562), the one mechanism every package ``__init__`` uses.

A package lists ``public name -> "module"`` (relative to the package, e.g. ``"._fits"``,
or absolute; ``"module:attr"`` when the public name differs from the owner's). Nothing
is imported until a name is used, so ``import astrid_airflow`` and a DAG file that names
a preset stay cheap, and subpackages may use each other's public names without import
cycles between their ``__init__`` files. Values are not cached: a function-local
``from astrid_airflow.release import x`` sees the owner's current attribute, exactly as
the owner-module import it replaces did (tests monkeypatch owner modules).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` exporting ``exports`` lazily."""

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module, package), attr or name)

    def __dir__() -> list[str]:  # the exports plus the package's own public names
        return sorted({*exports, *getattr(sys.modules[package], "__all__", ())})

    return __getattr__, __dir__
