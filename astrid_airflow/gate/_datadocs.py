"""Data Docs of one gate run as a single HTML page that is readable offline.

Great Expectations renders validation results with Jinja templates whose pages load
Bootstrap, jQuery, Font Awesome, Vega and a logo from CDNs; opened without the internet
(an air-gapped Airflow worker, a reviewer's laptop on a train) such a page is unstyled,
its "show more" sections never open and its status icons are blank. Here the same GX
renderer and view are used, with the few templates that reference the network replaced
by local versions (:data:`_TEMPLATES`, loaded before GX's own): a small stylesheet that
implements the Bootstrap classes the validation page uses, Unicode status icons, and a
few lines of plain JavaScript for the filter and the collapsible sections. A gate summary
(verdict, each expectation's observed value and threshold) is added at the top.
:func:`external_resources` finds anything still loaded from elsewhere, and the renderer
refuses to return a page that has any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from astrid_airflow._html import text

_SPACING = {"0": "0", "1": ".25rem", "2": ".5rem", "3": "1rem", "4": "1.5rem", "5": "3rem"}
_SIDES = {"": ("",), "t": ("-top",), "b": ("-bottom",), "l": ("-left",), "r": ("-right",),
          "x": ("-left", "-right"), "y": ("-top", "-bottom")}


def _spacing_rules() -> str:
    rules = []
    for short, prop in (("m", "margin"), ("p", "padding")):
        for side, props in _SIDES.items():
            for size, value in _SPACING.items():
                body = ";".join(f"{prop}{p}:{value}" for p in props)
                rules.append(f".{short}{side}-{size}{{{body}}}")
                rules.append(f"@media(min-width:576px){{.{short}{side}-sm-{size}{{{body}}}}}")
                rules.append(f"@media(min-width:768px){{.{short}{side}-md-{size}{{{body}}}}}")
    rules.append(".mr-auto{margin-right:auto}.ml-auto{margin-left:auto}")
    return "\n".join(rules)


def _grid_rules() -> str:
    rules = [".row{display:flex;flex-wrap:wrap;margin:0}",
             "[class*='col-']{position:relative;width:100%;box-sizing:border-box}"]
    for n in range(1, 13):
        rules.append(f".col-{n},.col-xs-{n}{{flex:0 0 {n / 12:.4%};max-width:{n / 12:.4%}}}")
    for bp, width in (("sm", 576), ("md", 768), ("lg", 992)):
        body = "".join(f".col-{bp}-{n}{{flex:0 0 {n / 12:.4%};max-width:{n / 12:.4%}}}"
                       for n in range(1, 13))
        rules.append(f"@media(min-width:{width}px){{{body}}}")
    return "\n".join(rules)


_BASE_CSS = """
*{box-sizing:border-box}
html{font-size:15px}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",
  Arial,"Noto Sans","Liberation Sans",sans-serif;color:#212529;background:#f6f7f9;
  line-height:1.45}
a{color:#0b5ed7;text-decoration:none}a:hover{text-decoration:underline}
h1,h2,h3,h4,h5,h6,.h6{margin:0 0 .5rem;font-weight:600;line-height:1.25}
h3{font-size:1.45rem}h4{font-size:1.25rem}h5{font-size:1.1rem}h6,.h6{font-size:1rem}
p{margin:0 0 .75rem}.lead{font-size:1.05rem;color:#495057}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
  font-size:.9em}
pre{white-space:pre-wrap;word-break:break-word}
.container-fluid{width:100%}
.d-none{display:none}.d-flex{display:flex}.d-block{display:block}
@media(min-width:576px){.d-sm-block{display:block}}
@media(min-width:768px){.d-md-block{display:block}.d-md-inline-flex{display:inline-flex}}
.float-left{float:left}.h-100{height:100%}
.justify-content-center{justify-content:center}.align-items-center{align-items:center}
.text-success{color:#198754}.text-danger{color:#c62828}.text-muted{color:#6c757d}
.bg-light{background:#f1f3f5}.rounded{border-radius:.3rem}
.border-bottom{border-bottom:1px solid #dee2e6}
.sticky-top{position:sticky;top:0;z-index:10}
.sticky{position:sticky;top:84px}
.navbar{display:flex;align-items:center;background:#fff;padding:.5rem 1.25rem}
.navbar-brand{font-weight:700;font-size:1.15rem;color:#1b2a4a;margin-right:1rem}
.breadcrumb{display:flex;flex-wrap:wrap;list-style:none;margin:0;padding:.3rem .75rem;
  border-radius:.3rem;align-items:center}
.breadcrumb-item+.breadcrumb-item::before{content:"/";padding:0 .5rem;color:#6c757d}
.nav{display:flex;flex-direction:column;list-style:none;padding-left:0;margin:0}
.nav-link{display:block;padding:.3rem .6rem;border-radius:.25rem}
.nav-pills .nav-link.active{background:#0b5ed7;color:#fff}
.card{background:#fff;border:1px solid #dfe3e8;border-radius:.4rem;margin-bottom:1rem;
  box-shadow:0 1px 2px rgba(0,0,0,.04)}
.card-header{background:#f8f9fa;border-bottom:1px solid #dfe3e8;padding:.6rem 1rem}
.card-header h5,.card-header h6,.card-header h4{margin:0}
.card-body{padding:1rem}.card-text{margin-bottom:.5rem}
.table{width:100%;border-collapse:collapse;margin-bottom:.75rem;background:transparent}
.table th,.table td{padding:.45rem .6rem;border-top:1px solid #e3e6ea;vertical-align:top;
  text-align:left}
.table thead th{border-bottom:2px solid #dee2e6;border-top:0}
.table-sm th,.table-sm td{padding:.3rem .5rem}
.table-responsive{overflow-x:auto}
.badge{display:inline-block;padding:.2em .45em;font-size:.85em;font-weight:600;
  border-radius:.25rem;background:#e9ecef;color:#212529}
.badge-secondary{background:#6c757d;color:#fff}.badge-warning{background:#ffc107}
.badge-success{background:#198754;color:#fff}.badge-danger{background:#c62828;color:#fff}
.alert{padding:.6rem .9rem;border:1px solid transparent;border-radius:.3rem;
  margin-bottom:.75rem}
.alert-secondary{background:#eef0f2;border-color:#d6d8db}
.alert-warning{background:#fff6d6;border-color:#ffe49a}
.alert-success{background:#e3f4ea;border-color:#a9dcbf;color:#0f5132}
.alert-danger{background:#fbe4e4;border-color:#f1b0b0;color:#842029}
.btn{display:inline-block;padding:.3rem .7rem;border:1px solid #0b5ed7;color:#0b5ed7;
  background:#fff;cursor:pointer;font-size:.9rem}
.btn-group{display:inline-flex}.btn-group .btn:first-child{border-radius:.3rem 0 0 .3rem}
.btn-group .btn:last-child{border-radius:0 .3rem .3rem 0}
.btn-primary.active{background:#0b5ed7;color:#fff}
.btn-group-toggle input{position:absolute;clip:rect(0,0,0,0);pointer-events:none}
.collapse:not(.show){display:none}
.ge-section{clear:both;margin-bottom:1.75rem}
.fas{font-style:normal;font-weight:700;display:inline-block;width:1.2em;text-align:center}
.fa-check-circle::before{content:"\\2714"}.fa-times::before{content:"\\2718"}
.fa-question-circle::before{content:"?"}
.show-scrollbars{overflow:auto}
footer{display:none}
.astrid-gate .verdict{font-size:1.2rem;font-weight:700}
.astrid-gate td.num{font-variant-numeric:tabular-nums;white-space:nowrap}
.astrid-gate .bar{display:inline-block;height:.7rem;background:#6c757d;vertical-align:middle}
.astrid-gate .bar.over{background:#dc3545}
.astrid-gate .track{display:inline-block;width:8rem;background:#e9ecef;margin-right:.4rem}
"""

_CSS = "\n".join([_BASE_CSS, _grid_rules(), _spacing_rules()])

# Replaces GX's jQuery/Bootstrap JS: the filter buttons and "Show more info...".
_JS = """
function astridShow(all){
  document.querySelectorAll('.hide-succeeded-validation-target-child').forEach(function(el){
    var row = el.parentElement; if (row) { row.style.display = all ? '' : 'none'; }
  });
  document.querySelectorAll('.hide-succeeded-validation-target').forEach(function(el){
    el.style.display = all ? '' : 'none';
  });
  document.querySelectorAll('.btn-group-toggle .btn').forEach(function(b, i){
    b.classList.toggle('active', (i === 0) === all);
  });
}
document.addEventListener('click', function(ev){
  var a = ev.target.closest('[data-toggle="collapse"]');
  if (!a) { return; }
  ev.preventDefault();
  var id = (a.getAttribute('href') || a.getAttribute('data-target') || '').replace('#', '');
  var el = document.getElementById(id);
  if (el) { el.classList.toggle('show'); }
});
"""

_PAGE = """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>{{ astrid_title }}</title>
    <style>{{ astrid_css }}</style>
    <script>{{ astrid_js }}</script>
  </head>
  <body>
    {% include 'top_navbar.j2' %}
    <div class="container-fluid pt-4 pb-4 pl-5 pr-5">
      <div class="row">
        {% include 'sidebar.j2' %}
        <div class="col-md-10 col-lg-10 col-xs-12 pl-md-4 pr-md-3">
        {{ astrid_summary }}
        {% for section in sections %}
          {% set section_loop = loop -%}
          {% include 'section.j2' %}
        {% endfor %}
        </div>
      </div>
    </div>
  </body>
</html>
"""

_NAVBAR = """<nav class="navbar sticky-top border-bottom">
  <div class="navbar-brand">astrid-airflow &middot; release gate</div>
  {% if page_title %}
  <ol class="breadcrumb bg-light">
    <li class="breadcrumb-item">Great Expectations validation</li>
    <li class="breadcrumb-item active">{{ page_title }}</li>
  </ol>
  {% endif %}
</nav>
"""

_ACTIONS = """<div class="card mb-3">
  <div class="card-header p-2"><strong>Actions</strong></div>
  <div class="card-body p-3">
    <p class="card-text">Validation Filter:</p>
    <div class="btn-group btn-group-toggle">
      <label class="btn btn-primary active" onclick="astridShow(true)">Show All</label>
      <label class="btn btn-primary" onclick="astridShow(false)">Failed Only</label>
    </div>
  </div>
</div>
"""

#: GX templates replaced by offline versions (looked up before GX's own).
_TEMPLATES = {
    "page.j2": _PAGE,
    "top_navbar.j2": _NAVBAR,
    "page_action_card.j2": _ACTIONS,
    "js_script_imports.j2": "",
    "favicon.j2": "",
    "cloud-footer.j2": "",
}

# <script src=...>, <link href=...>, <img src=...>, CSS url(...) and @import.
_RESOURCE = re.compile(
    r"""<(?:script|img|iframe|source|embed|video|audio)\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)"""
    r"""|<link\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)"""
    r"""|url\(\s*["']?([^"')\s]+)|@import\s+["']([^"']+)""",
    re.IGNORECASE)


def external_resources(page: str) -> list[str]:
    """Resources ``page`` would load from outside itself (URLs or relative files).

    Inline ``data:`` URIs and in-page anchors (``#...``) are fine; anything else (a CDN,
    ``//host``, a relative ``static/...`` file that a single page does not have) is
    returned.
    """
    found = []
    for match in _RESOURCE.finditer(page):
        url = next(g for g in match.groups() if g)
        if not url.startswith(("data:", "#")):
            found.append(url)
    return found


def _summary_html(gate: Mapping[str, Any] | None) -> str:
    if not gate:
        return ""
    esc = text
    ok = bool(gate.get("success"))
    rows = []
    for e in gate.get("expectations", []):
        mark = ('<span class="text-success"><i class="fas fa-check-circle"></i> pass</span>'
                if e.get("success") else
                '<span class="text-danger"><i class="fas fa-times"></i> FAIL</span>')
        rows.append(f"<tr><td>{mark}</td><td>{esc(str(e.get('category', '')))}</td>"
                    f"<td><code>{esc(str(e.get('name', '')))}</code></td>"
                    f"<td class='num'>{esc(_fmt(e.get('observed_value')))}</td>"
                    f"<td class='num'>{esc(_fmt(e.get('threshold')))}</td></tr>")
    policy = gate.get("policy", {})
    artefact = gate.get("artefact", {})
    facts = [("grouping", " | ".join(", ".join(g) for g in artefact.get("grouping", []))),
             ("class column", artefact.get("target")),
             ("attacker model", artefact.get("attacker_model_line")
              or "not recorded (every column a quasi-identifier)"),
             ("reference rows", (artefact.get("fingerprint") or {}).get("rows")),
             ("utility", f"{gate.get('utility_source')}, random_state "
                         f"{gate.get('random_state')}, classifier "
                         f"{policy.get('classifier') or 'from the artefact'}"),
             ("thresholds applied", ", ".join(f"{k} = {_fmt(v)}" for k, v in
                                              (gate.get("thresholds") or {}).items())),
             ("suite", _suite_fact(gate.get("suite") or {}))]
    fell = [", ".join(g) for g, r in zip(artefact.get("grouping", []),
                                          artefact.get("recipe_rungs") or []) if r]
    if fell:  # the batch's groups published with a coarser fallback of the recipe
        facts.append(("recipe fallbacks", " | ".join(fell)))
    fact_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(str(v))}</td></tr>" for k, v in facts)
    docs = str(gate.get("data_docs") or "")
    if docs.endswith(".validation.html"):
        # the release report (astrid report) lives beside this page: <stem>.report/
        stem = docs.rstrip("/").rsplit("/", 1)[-1][: -len(".validation.html")]
        # "./" keeps a file named "javascript:..." a relative link
        href = esc("./" + quote(f"{stem}.report/index.html"))
        fact_rows += (f'<tr><th>release report</th><td><a href="{href}">'
                      f"{esc(stem)}.report/index.html</a> "
                      "(groupings, plots and distribution checks)</td></tr>")
    verdict = "PASSED: the surrogate may be published" if ok else \
        "FAILED: the surrogate must not be published"
    return (
        '<div class="card astrid-gate ge-section">'
        '<div class="card-header"><h4>astrid release gate</h4></div><div class="card-body">'
        f'<div class="alert {"alert-success" if ok else "alert-danger"} verdict">'
        f"{esc(verdict)}</div>" + _weaker_html(gate) +
        '<table class="table table-sm"><thead><tr><th>Status</th><th>Category</th>'
        "<th>Expectation</th><th>Observed</th><th>Threshold</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>"
        f'<table class="table table-sm">{fact_rows}</table>'
        + _disclosure_html(gate) + "</div></div>")


def _weaker_html(gate: Mapping[str, Any]) -> str:
    """A warning naming every privacy threshold looser than the default (docs/gate.md)."""
    note = gate.get("policy_note")
    if not note:
        return ""
    flag = {True: "accepted with --allow-weaker-policy / allow_weaker_policy=True",
            False: "", None: "not asked for (a library call)"}.get(
                gate.get("allow_weaker_policy"), "")
    return (f'<div class="alert alert-warning weaker-policy"><strong>'
            f'{text(str(note))}</strong>{"; " + text(flag) if flag else ""}. A release that '
            "passes this gate is not protected to the default policy's level.</div>")


_BELOW_K = "expect_surrogate_group_share_below_k_to_be_at_most"
_CLASS_DISCLOSURE = "expect_surrogate_group_class_disclosure_share_to_be_at_most"
_LINKAGE = "expect_surrogate_cross_group_linkage_to_be_at_most_expected"


def _bar(value: Any, threshold: Any) -> str:
    """A share as a small bar (red above its threshold) and its value."""
    if not isinstance(value, (int, float)):
        return ""
    over = isinstance(threshold, (int, float)) and value > threshold + 1e-9
    width = max(0.0, min(1.0, float(value))) * 100
    return (f'<span class="track"><span class="bar{" over" if over else ""}" '
            f'style="width:{width:.1f}%"></span></span>{text(_fmt(float(value)))}')


def _disclosure_html(gate: Mapping[str, Any]) -> str:
    """Risk per group beside the grouping: k_min, share below k and class
    disclosure for every group, and the pairs of groups that stayed linked."""
    by_name = {e.get("name"): e for e in gate.get("expectations", [])}
    below, disc = by_name.get(_BELOW_K) or {}, by_name.get(_CLASS_DISCLOSURE) or {}
    groups = (below.get("details") or {}).get("groups")
    out = ""
    if groups:
        k = (below.get("details") or {}).get("k")
        rows = "".join(
            f"<tr><td>{text(', '.join(map(str, g.get('columns', []))))}</td>"
            f"<td class='num'>{text(_fmt(g.get('k_min')))}</td>"
            f"<td>{_bar(g.get('share_below_k'), below.get('threshold'))}</td>"
            f"<td>{_bar(g.get('class_disclosure_share'), disc.get('threshold'))}</td></tr>"
            for g in groups)
        out += ("<h5>Disclosure per group (values as published; red: above the "
                "threshold)</h5><table class='table table-sm'><thead><tr><th>group</th>"
                f"<th>k_min</th><th>share in classes below k = {text(_fmt(k))}</th>"
                "<th>class disclosure share</th></tr></thead><tbody>" + rows
                + "</tbody></table>")
    link = by_name.get(_LINKAGE) or {}
    pairs = [p for p in (link.get("details") or {}).get("pairs") or []
             if p.get("excess", 0) > p.get("tolerance", 1)]
    if pairs:
        rows = "".join(
            f"<tr><td>{text(' + '.join(', '.join(map(str, g)) for g in p['groups']))}</td>"
            f"<td class='num'>{text(_fmt(p.get('linked_share')))}</td>"
            f"<td class='num'>{text(_fmt(p.get('expected_linked_share')))}</td>"
            f"<td class='num'>{text(_fmt(p.get('tolerance')))}</td></tr>"
            for p in pairs[:20])
        out += ("<h5>Pairs of groups still linked as in the original</h5>"
                "<table class='table table-sm'><thead><tr><th>pair</th><th>linked share"
                "</th><th>expected</th><th>allowed excess</th></tr></thead><tbody>" + rows
                + "</tbody></table>")
    return out


def _suite_fact(suite: Mapping[str, Any]) -> str:
    if not suite.get("sha256"):
        return "built for this run (no stored suite)"
    bound = "the digest in artefact.json" if suite.get("binding") == "recorded" else \
        "being the default suite"
    text = (f"{suite.get('source')} {suite.get('path')}, sha256 {suite['sha256'][:12]}…, "
            f"bound by {bound}")
    if suite.get("overrides"):
        text += f"; run-time overrides {suite['overrides']}"
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "" if value is None else str(value)


def render_validation_html(validation_result: Any, *, gate: Mapping[str, Any] | None = None,
                           title: str = "astrid release gate") -> str:
    """Render a GX validation result as one self-contained HTML page.

    Parameters
    ----------
    validation_result : ExpectationSuiteValidationResult or dict
        What ``ValidationDefinition.run`` returned, or its JSON form (e.g. the
        ``"great_expectations"`` part of a saved ``*.validation.json``), so a page can
        be rebuilt from a stored result.
    gate : mapping, optional
        ``GateResult.to_dict()``; shown as a summary above GX's own sections.
    title : str
        The page title.

    Returns
    -------
    str
        HTML that loads nothing from outside itself.
    """
    from jinja2 import ChoiceLoader, DictLoader

    from ._kit import import_gx

    import_gx()
    from great_expectations.render.renderer import ValidationResultsPageRenderer
    from great_expectations.render.view import DefaultJinjaPageView

    if isinstance(validation_result, Mapping):
        from great_expectations.core.expectation_validation_result import (
            expectationSuiteValidationResultSchema,
        )

        validation_result = expectationSuiteValidationResultSchema.load(
            dict(validation_result))
    view = DefaultJinjaPageView()
    view.env.loader = ChoiceLoader([DictLoader(_TEMPLATES), view.env.loader])
    document = ValidationResultsPageRenderer().render(validation_result)
    page = view.render(document, data_context_id=None, show_how_to_buttons=False,
                       astrid_title=title, astrid_css=_CSS, astrid_js=_JS,
                       astrid_summary=_markup(_summary_html(gate)))
    leftover = external_resources(page)
    if leftover:  # a GX upgrade added a template that reaches out: fail, do not ship it
        from astrid_airflow._errors import GateError

        raise GateError(f"The Data Docs page would load external resources {leftover[:5]}; "
                        "astrid_airflow.gate._datadocs needs updating for this GX version.")
    return page


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)
