"""Lazy public exports (PEP 562), the one mechanism every package ``__init__`` uses.

A package names its public names once, as the imports of its ``if TYPE_CHECKING:``
block (what type checkers and readers see; the modules that own the names stay private
to the package, ``tests/project/test_public_imports.py``), and ends with::

    __getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)

:func:`lazy_exports` reads that block from the package's source (``ast``, once, at
import) and serves each name from the module it is imported from: relative to the
package (``from ._fits import run_one``) or absolute (``from astrid_airflow.release
import ...``), under another public name with ``as``. Nothing is imported until a name
is used, so ``import astrid_airflow`` and a DAG file that names a preset stay cheap, and
subpackages may use each other's public names without import cycles between their
``__init__`` files. Values are not cached: a function-local ``from astrid_airflow.release
import x`` sees the owner's current attribute, exactly as the owner-module import it
replaces did (tests monkeypatch owner modules).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, *own: str) -> tuple[
        Callable[[str], Any], Callable[[], list[str]], list[str], dict[str, str]]:
    """What ``package``'s ``__init__`` needs to export its ``TYPE_CHECKING`` imports lazily.

    Parameters
    ----------
    package : str
        The package's ``__name__``; called from its ``__init__`` while it is imported.
    *own : str
        Public names the ``__init__`` defines itself (e.g. ``__version__``), listed
        first in ``__all__``.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__, __all__, _EXPORTS)``: ``_EXPORTS`` maps each exported
        name to ``"module"`` (relative to the package, e.g. ``"._fits"``, or absolute),
        or to ``"module:attr"`` when the public name differs from the owner's.
    """
    exports = _type_checking_imports(package)
    names = [*own, *exports]

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module, package), attr or name)

    def __dir__() -> list[str]:
        return sorted(names)

    return __getattr__, __dir__, names, exports


def _type_checking_imports(package: str) -> dict[str, str]:
    """``public name -> "module[:attr]"`` of the ``if TYPE_CHECKING:`` block of
    ``package``'s ``__init__`` (read from its source: the package is being imported)."""
    module = sys.modules[package]
    source = module.__loader__.get_source(package)
    if source is None:  # pragma: no cover - installed without sources
        raise ImportError(f"{package}: no source to read its exports from")
    exports: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.ImportFrom) and stmt.module):
                raise ImportError(f"{package}: only 'from <module> import <name>' may "
                                  f"export a name (line {stmt.lineno})")
            owner = "." * stmt.level + stmt.module
            for alias in stmt.names:
                public = alias.asname or alias.name
                exports[public] = owner if public == alias.name else f"{owner}:{alias.name}"
    return exports
