"""Airflow Assets for artefacts and published surrogates, named the same way everywhere.

A DAG that produces an artefact or a release and a DAG that consumes it must agree on
the Asset's name and URI; these factories are the one place that decides them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from airflow.sdk import Asset, AssetAlias

__all__ = ["artefact_alias", "artefact_asset", "emit_alias_events", "release_asset"]


def _uri(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    if "://" in text:
        return text.rstrip("/")
    return "file://" + os.path.abspath(text)


def artefact_asset(store: str | os.PathLike, name: str) -> Asset:
    """The Asset of artefact ``name`` in ``store``: the name's directory of versions."""
    return Asset(name=f"astrid_artefact_{name}", uri=f"{_uri(store)}/{name}",
                 group="astrid")


def artefact_alias(name: str) -> AssetAlias:
    """Alias through which a learn task emits an artefact event only when it learned."""
    return AssetAlias(name=f"astrid_artefact_{name}_updates", group="astrid")


def release_asset(published: str | os.PathLike, name: str | None = None) -> Asset:
    """The Asset of a published surrogate file (its stable, released location)."""
    uri = _uri(published)
    stem = name or uri.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]
    return Asset(name=f"astrid_release_{stem}", uri=uri, group="astrid")


def emit_alias_events(task: Any, context: Mapping[str, Any], *, root: str, name: str,
                      extra: Mapping[str, Any]) -> None:
    """Add an event for ``artefact_asset(root, name)`` to every ``AssetAlias`` outlet."""
    aliases = [o for o in getattr(task, "outlets", []) or [] if isinstance(o, AssetAlias)]
    events = context.get("outlet_events")
    if not aliases or events is None:
        return
    asset = artefact_asset(root, name)
    for alias in aliases:
        events[alias].add(asset, extra=dict(extra))
