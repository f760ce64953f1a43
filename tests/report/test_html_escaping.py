"""Hostile names in every HTML page the project writes: shown as text, never as markup.

A column name, a class label or a link comes from the user. Each page (the gate's Data
Docs, passing and failing, and the release report) is rendered once with benign names
and once with each hostile one; parsed with ``html.parser``, both must have exactly the
same elements and attributes, so nothing in the page came from a name. The hostile
text must also be in the page (escaped): otherwise the comparison proves nothing.
"""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser

import numpy as np
import pytest

from astrid_airflow import (
    GatePolicy,
    GroupingArtefact,
    astrid,
    make_surrogate,
    make_synthetic,
    validate_surrogate,
    write_report,
)
from astrid_airflow._html import safe_href

COLUMN, LABEL = "zzcolumnzz", "zzlabelzz"
HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "' onmouseover='alert(1)",
    "</style><script>alert(1)</script>",
    "</title><iframe src=javascript:alert(1)>",
    "&lt;b&gt;already-escaped&lt;/b&gt;",
    "$\\frac{1}{$ {{7*7}}",
    "${threshold} %(x)s {0}",
]
METRICS = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}


class _Shape(HTMLParser):
    """Every element with its attribute names, and every URL-valued attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, tuple[str, ...]]] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, tuple(sorted(a for a, _ in attrs))))
        self.urls += [v or "" for a, v in attrs if a in ("href", "src", "action")]


def shape(page: str) -> _Shape:
    parser = _Shape()
    parser.feed(page)
    return parser


@pytest.fixture(scope="module")
def learned():
    """An artefact learned with placeholder names, and its table (learned once)."""
    t = make_synthetic(60, random_state=0).rename(columns={"a3": COLUMN})
    t["class"] = np.where(t["class"] == 1, f"{LABEL}1", f"{LABEL}0")
    result = astrid(t, target="class", classifier="nb", n_search=2, n_test=3,
                    random_state=0, progress=False)
    return GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z"), t


def named(learned, column: str, label: str):
    """The artefact and table with the placeholders replaced by ``column``/``label``."""
    artefact, table = learned

    def swap(text: str) -> str:
        return text.replace(COLUMN, json.dumps(column)[1:-1]).replace(
            LABEL, json.dumps(label)[1:-1])

    art = GroupingArtefact.from_json(swap(artefact.to_json()))
    t = table.rename(columns={COLUMN: column})
    t["class"] = t["class"].str.replace(LABEL, label, regex=False)
    return art, t


def pages(learned, tmp_path, column: str, label: str, link: str) -> dict[str, str]:
    art, table = named(learned, column, label)
    surrogate = make_surrogate(table, art, random_state=1)
    out = {}
    for verdict, s in (("pass", surrogate), ("fail", surrogate.assign(
            **{column: surrogate[column].to_numpy() + 1.0}))):
        path = tmp_path / f"{verdict}.parquet"
        s.to_parquet(path, index=False)
        # a raw surrogate: the per-group disclosure checks are relaxed (and still shown)
        r = validate_surrogate(table, path, art, random_state=0, metrics=METRICS,
                               policy=GatePolicy.raw_release_demo())
        assert r.success == (verdict == "pass")
        out[f"data docs ({verdict})"] = open(r.data_docs, encoding="utf-8").read()
    written = write_report(art, tmp_path / "report", original=table, surrogate=surrogate,
                           data_docs=link, title=f"report {column}")
    out["release report"] = open(written.index, encoding="utf-8").read()
    return out


@pytest.fixture(scope="module")
def benign(learned, tmp_path_factory):
    # the same inert link on both sides (a safe one would add an <a>)
    return pages(learned, tmp_path_factory.mktemp("benign"), "a3", "c",
                 "javascript:alert(1)")


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_text_in_every_page(learned, benign, tmp_path, name):
    hostile = pages(learned, tmp_path, name, name, "javascript:alert(1)")
    assert set(hostile) == set(benign)
    for page, text in hostile.items():
        found, expected = shape(text), shape(benign[page])
        assert found.elements == expected.elements, f"{page}: markup came from a name"
        assert html.escape(name, quote=True) in text or html.escape(name) in text, page
        bad = [u for u in found.urls if safe_href(u) is None
               and not u.startswith("data:image/png;base64,")]
        assert bad == [], f"{page}: unsafe link {bad}"


@pytest.mark.parametrize("link", [
    "javascript:alert(1)", "JaVaScRiPt:alert(1)", " javascript:alert(1)",
    "java\tscript:alert(1)", "java\nscript:alert(1)", "&#106;avascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", "vbscript:msgbox(1)",
    "livescript:x", "blob:https://x/1"])
def test_links_that_could_run_code_never_become_links(link):
    assert safe_href(link) is None


@pytest.mark.parametrize("link", ["../s.validation.html", "s.validation.html",
                                  "https://example.org/docs?a=1&b=2", "file:///tmp/x.html",
                                  "./javascript:x.html", "#top"])
def test_ordinary_links_stay_links(link):
    assert safe_href(link) == html.escape(link, quote=True)


def test_report_shows_an_unsafe_data_docs_link_as_text(learned, tmp_path):
    art, _ = named(learned, "a3", "c")
    written = write_report(art, tmp_path / "r", data_docs="javascript:alert(document.domain)")
    page = open(written.index, encoding="utf-8").read()
    assert "javascript:alert(document.domain)" in page  # shown to the reader...
    assert all(not u.lower().startswith("javascript") for u in shape(page).urls)  # ...inert
    safe = write_report(art, tmp_path / "r2", data_docs="../s.validation.html")
    assert '<a href="../s.validation.html">' in open(safe.index, encoding="utf-8").read()
