"""Hostile names in every HTML page the project writes: shown as text, never as markup.

A column name, a class label or a link comes from the user. Each page (the gate's Data
Docs, passing and failing, and the release report) is rendered once with benign names
and once with every hostile name at once (each hostile name is one column's name and
one class's label); parsed with ``html.parser``, both must have exactly the same
elements and attributes, so nothing in the page came from a name. Each hostile text
must also be in every page (escaped): otherwise the comparison proves nothing for it.
A page whose markup differs names the hostile names found in the differing tags.
"""

from __future__ import annotations

import difflib
import html
import json
from html.parser import HTMLParser

import numpy as np
import pandas as pd
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
# one placeholder column and one placeholder class per hostile name (none a prefix of
# another), and the benign names the same pages are compared with
COLUMNS = [f"zzcolumn{i}zz" for i in range(len(HOSTILE))]
LABELS = [f"zzlabel{i}zz" for i in range(len(HOSTILE))]
BENIGN = [f"b{i}" for i in range(len(HOSTILE))]
METRICS = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}
UNATTRIBUTED = "(no name: the differing tags hold none)"


class _Shape(HTMLParser):
    """Every element with its attribute names (and its source), every URL-valued attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, tuple[str, ...]]] = []
        self.sources: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, tuple(sorted(a for a, _ in attrs))))
        self.sources.append(self.get_starttag_text() or "")
        self.urls += [v or "" for a, v in attrs if a in ("href", "src", "action")]


def shape(page: str) -> _Shape:
    parser = _Shape()
    parser.feed(page)
    return parser


def _holds(tag: str, name: str) -> bool:
    """Whether a start tag's source holds ``name`` (raw or partly escaped) or is part of it."""
    raw = html.unescape(tag)
    forms = (name, html.escape(name), html.escape(name, quote=False))
    return any(f in tag for f in forms) or name in raw or (len(raw) > 2 and raw in name)


def markup_from_names(found: _Shape, expected: _Shape) -> dict[str, list[str]]:
    """The differing start tags of ``found`` (vs ``expected``) by the hostile name they
    hold (or that holds them); tags no name explains under ``UNATTRIBUTED``."""
    blamed: dict[str, list[str]] = {}
    matcher = difflib.SequenceMatcher(None, expected.elements, found.elements,
                                      autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        tags = found.sources[j1:j2] or [f"missing: {e}" for e in expected.elements[i1:i2]]
        for tag in tags:
            names = [n for n in HOSTILE if _holds(tag, n)]
            for name in names or [UNATTRIBUTED]:
                blamed.setdefault(name, []).append(tag)
    return blamed


@pytest.fixture(scope="module")
def learned():
    """An artefact learned with placeholder names, and its table (learned once)."""
    base = make_synthetic(9 * 12, random_state=0)
    rng = np.random.default_rng(0)
    classes = np.arange(len(base)) % len(LABELS)
    t = base[["a1", "a2", "a4"]].copy()
    for i, column in enumerate(COLUMNS):  # each placeholder column a3-like
        t[column] = rng.normal(0.6 * ((classes + i) % 3 - 1), 1.0)
    t["class"] = np.array(LABELS)[classes]
    result = astrid(t, target="class", classifier="nb", n_search=2, n_test=3,
                    random_state=0, progress=False)
    return GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z"), t


def named(learned, names: list[str]) -> tuple[GroupingArtefact, pd.DataFrame]:
    """The artefact and table with placeholder ``i`` (column and label) named ``names[i]``."""
    artefact, table = learned
    text = artefact.to_json()
    for placeholders in (COLUMNS, LABELS):
        for placeholder, name in zip(placeholders, names):
            text = text.replace(placeholder, json.dumps(name)[1:-1])
    t = table.rename(columns=dict(zip(COLUMNS, names)))
    t["class"] = t["class"].map(dict(zip(LABELS, names)))
    return GroupingArtefact.from_json(text), t


def pages(learned, tmp_path, names: list[str], link: str) -> dict[str, str]:
    art, table = named(learned, names)
    surrogate = make_surrogate(table, art, random_state=1)
    out = {}
    for verdict, s in (("pass", surrogate), ("fail", surrogate.assign(
            **{n: surrogate[n].to_numpy() + 1.0 for n in names}))):
        path = tmp_path / f"{verdict}.parquet"
        s.to_parquet(path, index=False)
        # a raw surrogate: the per-group disclosure checks are relaxed (and still shown)
        r = validate_surrogate(table, path, art, random_state=0, metrics=METRICS,
                               policy=GatePolicy.raw_release_demo())
        assert r.success == (verdict == "pass")
        out[f"data docs ({verdict})"] = open(r.data_docs, encoding="utf-8").read()
    written = write_report(art, tmp_path / "report", original=table, surrogate=surrogate,
                           data_docs=link, title="report " + " ".join(names))
    out["release report"] = open(written.index, encoding="utf-8").read()
    return out


@pytest.fixture(scope="module")
def benign(learned, tmp_path_factory):
    # the same inert link on both sides (a safe one would add an <a>)
    return pages(learned, tmp_path_factory.mktemp("benign"), BENIGN, "javascript:alert(1)")


@pytest.fixture(scope="module")
def hostile(learned, benign, tmp_path_factory):
    """Every page with every hostile name in it, each page parsed beside the benign one."""
    try:
        out = pages(learned, tmp_path_factory.mktemp("hostile"), HOSTILE, "javascript:alert(1)")
    except Exception as exc:  # name the culprits: each hostile name alone among benign ones
        alone = {}
        for i, name in enumerate(HOSTILE):
            try:
                pages(learned, tmp_path_factory.mktemp("alone"),
                      [*BENIGN[:i], name, *BENIGN[i + 1:]], "javascript:alert(1)")
            except Exception as one:
                alone[name] = repr(one)
        pytest.fail(f"the pages with every hostile name failed: {exc!r}; "
                    f"with one hostile name: {alone or 'none fails'}")
    assert set(out) == set(benign)
    return {page: (text, shape(text), markup_from_names(shape(text), shape(benign[page])))
            for page, text in out.items()}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_text_in_every_page(hostile, name):
    for page, (text, found, blamed) in hostile.items():
        for culprit in (name, UNATTRIBUTED):
            assert culprit not in blamed, (
                f"{page}: markup came from {culprit!r}: {blamed[culprit][:5]}")
        assert html.escape(name, quote=True) in text or html.escape(name) in text, (
            f"{page}: {name!r} is not in the page")
        bad = [u for u in found.urls if safe_href(u) is None
               and not u.startswith("data:image/png;base64,")]
        assert bad == [], f"{page}: unsafe link {bad}"


def test_markup_from_a_name_is_caught_and_named():
    """The comparison can fail: an unescaped name adds a tag, and the tag names it."""
    page = "<html><body><table><tr><th title='{}'>{}</th></tr></table></body></html>"
    expected = shape(page.format("b3", "b0"))
    blamed = markup_from_names(shape(page.format(HOSTILE[3], HOSTILE[1])), expected)
    assert set(blamed) == {HOSTILE[1], HOSTILE[3]}, blamed
    gone = "<html><body><textarea>" + page.format("b3", "b0")[12:]
    assert UNATTRIBUTED in markup_from_names(shape(gone), expected)
    escaped = page.format(html.escape(HOSTILE[3]), html.escape(HOSTILE[1]))
    assert markup_from_names(shape(escaped), expected) == {}


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
    art, _ = named(learned, BENIGN)
    written = write_report(art, tmp_path / "r", data_docs="javascript:alert(document.domain)")
    page = open(written.index, encoding="utf-8").read()
    assert "javascript:alert(document.domain)" in page  # shown to the reader...
    assert all(not u.lower().startswith("javascript") for u in shape(page).urls)  # ...inert
    safe = write_report(art, tmp_path / "r2", data_docs="../s.validation.html")
    assert '<a href="../s.validation.html">' in open(safe.index, encoding="utf-8").read()
