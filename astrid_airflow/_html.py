"""Escaping for every HTML page the project writes (Data Docs, release report).

Every string that comes from the user's data or arguments (column names, class labels,
paths, links) goes through :func:`text` before it is placed in a page, and a link
through :func:`safe_href`: only ``http(s)``, ``file`` and relative links become links, so
``javascript:``, ``data:``, ``vbscript:`` and friends can never run from a page.
"""

from __future__ import annotations

import html
import re
from typing import Any

_SAFE_SCHEMES = ("http", "https", "file")
# Browsers drop ASCII control characters and whitespace inside a scheme ("java\tscript:").
_IGNORED = re.compile(r"[\x00-\x20\x7f]+")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def text(value: Any) -> str:
    """``value`` as HTML text or attribute content (quotes escaped too)."""
    return html.escape(str(value), quote=True)


def safe_href(url: Any) -> str | None:
    """``url`` escaped for an ``href``, or None if it must not become a link.

    Relative links (no scheme) and ``http``, ``https`` and ``file`` URLs are kept;
    anything with another scheme (``javascript:``, ``data:``, ``vbscript:``...) is None,
    so the caller shows it as text.
    """
    if not isinstance(url, str) or not url.strip():
        return None
    scheme = _SCHEME.match(_IGNORED.sub("", html.unescape(url)))
    if scheme and scheme.group(1).lower() not in _SAFE_SCHEMES:
        return None
    return text(url)
