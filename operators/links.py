"""Operator extra links: a run's Data Docs, release report and artefact, from the UI.

Each operator records where its files are during ``execute``, before it can fail, so a
failed gate links to its Data Docs too: on itself and as small JSON under the XCom key
``astrid_links`` (for other readers). When the task ends, Airflow's task runner calls
every link's ``get_link`` with that same operator object and stores the URL under the
link's own XCom key (``_link_<Class>``), which the UI and REST API read; links are
therefore resolved where the task ran, with that worker's settings. A task that failed
before recording anything gets empty links (and no XCom look-up, which would log a
not-found error).

By default a link opens the provider's plugin (``astrid_airflow.operators.plugin``),
which Airflow's API server serves behind its own authentication:
``/astrid/runs/{dag_id}/{run_id}/{task_id}/data-docs`` (or ``report/``, ``artefact``),
absolute under ``[api] base_url`` when that is set, else a path on the UI's origin. An
override maps a storage prefix to a public base URL (a static site, a bucket's HTTPS
endpoint): the operator argument ``link_base_url``, else the Airflow option
``[astrid] link_base_url`` (env ``AIRFLOW__ASTRID__LINK_BASE_URL``). Without a task
instance key (a bare operator) a location links to itself: ``file:///…`` or its URL.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote

from airflow.sdk import BaseOperatorLink

__all__ = [
    "LINKS_XCOM_KEY",
    "ArtefactLink",
    "DataDocsLink",
    "ReleaseReportLink",
    "link_base_urls",
    "mapped_url",
    "plugin_link",
    "public_url",
    "push_links",
    "resolve_link",
]

LINKS_XCOM_KEY = "astrid_links"
CONFIG_SECTION, CONFIG_OPTION = "astrid", "link_base_url"
_CONN_ID = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@")  # s3://conn_id@bucket/...


def _normalise(location: str) -> str:
    """A location as a URL without Airflow's connection id: local paths as ``file://``."""
    text = str(location).strip()
    if "://" not in text:
        return "file://" + os.path.abspath(text)
    return _CONN_ID.sub(r"\1", text)


def link_base_urls(value: Any) -> dict[str, str]:
    """Storage prefix → public base URL, from a dict, its JSON, or ``PREFIX=URL[,…]``.

    >>> link_base_urls("s3://bucket/astrid=https://files.example.com/astrid")
    {'s3://bucket/astrid': 'https://files.example.com/astrid'}
    >>> link_base_urls(None)
    {}
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            value = json.loads(text)
        else:
            value = dict(part.split("=", 1) for part in re.split(r"[,\n]", text)
                         if part.strip())
    if not isinstance(value, Mapping):
        raise ValueError(f"Invalid link_base_url {value!r}: expected {{prefix: url}}, its "
                         "JSON, or 'PREFIX=URL'.")
    return {str(k).strip(): str(v).strip() for k, v in value.items()}


def mapped_url(location: str, bases: Mapping[str, str] | None) -> str | None:
    """``location`` under the longest configured prefix's public base URL, else None."""
    url = _normalise(location)
    for prefix in sorted(bases or {}, key=len, reverse=True):
        root = _normalise(prefix).rstrip("/")
        if url == root or url.startswith(root + "/"):
            return str(bases[prefix]).rstrip("/") + quote(url[len(root):])
    return None


def public_url(location: str, bases: Mapping[str, str] | None = None) -> str:
    """Where a reviewer opens ``location``: under the longest configured prefix, else itself.

    >>> public_url("s3://aws_default@bucket/astrid/run/x.html",
    ...            {"s3://bucket/astrid": "https://files.example.com"})
    'https://files.example.com/run/x.html'
    >>> public_url("/tmp/a b.html")
    'file:///tmp/a%20b.html'
    """
    found = mapped_url(location, bases)
    if found is not None:
        return found
    scheme, _, rest = _normalise(location).partition("://")
    return f"{scheme}://{quote(rest)}"


def _configured(section: str = CONFIG_SECTION, option: str = CONFIG_OPTION) -> Any:
    from ._compat import airflow_conf

    return airflow_conf().get(section, option, fallback=None)


def _bases(operator: Any) -> dict[str, str]:
    setting = getattr(operator, "link_base_url", None)
    return link_base_urls(setting if setting else _configured())


def resolve_link(operator: Any, location: str | None) -> str:
    """The public URL of ``location`` with the operator's or the configured base URLs."""
    if not location:
        return ""
    return public_url(location, _bases(operator))


def plugin_link(ti_key: Any, key: str) -> str:
    """The provider plugin's page of the task instance's recorded ``key`` location.

    Absolute under ``[api] base_url`` when the workers know it, else a path on the UI's
    own origin (what a browser opening it from the UI resolves against).
    """
    from .plugin_paths import plugin_path

    path = plugin_path(ti_key.dag_id, ti_key.run_id, ti_key.task_id, key,
                       getattr(ti_key, "map_index", -1))
    base = _configured("api", "base_url")
    return (str(base).rstrip("/") + path) if base else path


def push_links(task: Any, context: Mapping[str, Any], **locations: Any) -> dict[str, str]:
    """Record where this task's files are, for its extra links (kept small: paths only)."""
    found = {key: str(value) for key, value in locations.items() if value}
    task._astrid_links = found
    ti = context.get("ti") or context.get("task_instance")
    if found and hasattr(ti, "xcom_push"):  # unit tests pass a bare namespace
        ti.xcom_push(key=LINKS_XCOM_KEY, value=found)
    return found


class _AstridLink(BaseOperatorLink):
    """A link to one of the files recorded by :func:`push_links`."""

    location_key: ClassVar[str] = ""

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The configured public URL (``link_base_url``), else the provider plugin's page."""
        location = (getattr(operator, "_astrid_links", None) or {}).get(self.location_key)
        if not location:
            return ""
        found = mapped_url(location, _bases(operator))
        if found is not None:
            return found
        if ti_key is None or not getattr(ti_key, "run_id", None):
            return public_url(location)
        return plugin_link(ti_key, self.location_key)


class DataDocsLink(_AstridLink):
    """The Great Expectations Data Docs page of the gate run (pass or fail)."""

    name = "Data Docs"
    location_key = "data_docs"


class ReleaseReportLink(_AstridLink):
    """The HTML release report written beside the Data Docs."""

    name = "Release report"
    location_key = "report"


class ArtefactLink(_AstridLink):
    """The artefact version (``artefact.json``) the task learned or used."""

    name = "Artefact"
    location_key = "artefact"
