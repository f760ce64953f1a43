"""The HTML of the report page: its style, the facts, the grouping table, the release
section (metrics, distribution checks, disclosure per group), the privacy-aware
choice's table of candidate releases, and the page that holds them. Every value from
the artefact or the tables is escaped (``astrid_airflow._html.text``).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from astrid_airflow._html import safe_href, text
from astrid_airflow.engine import group_letter

from ._checks import ClassCheck, ColumnCheck

_CSS = """
:root { --ink:#1d2330; --muted:#5b6475; --line:#d9dee7; --chosen:#fff3c4; --ok:#1e7b34;
        --bad:#b3261e; }
* { box-sizing: border-box; }
body { font: 15px/1.45 -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); margin: 0; background: #f5f6f8; }
main { max-width: 1480px; margin: 0 auto; padding: 18px 28px 40px; background: #fff; }
h1 { font-size: 24px; margin: 4px 0 2px; } h2 { font-size: 19px; margin: 30px 0 8px;
  border-bottom: 2px solid var(--line); padding-bottom: 4px; }
.sub { color: var(--muted); margin: 0 0 14px; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr));
  gap: 6px 18px; margin: 10px 0; }
.facts div { border-left: 3px solid var(--line); padding: 2px 8px; }
.facts b { display: block; font-size: 12px; color: var(--muted); font-weight: 600; }
.groups span { display: inline-block; margin: 2px 4px 2px 0; padding: 1px 7px;
  border-radius: 4px; font-family: "DejaVu Sans Mono", Menlo, monospace; font-size: 13px; }
.scroll { overflow-x: auto; border: 1px solid var(--line); }
table { border-collapse: collapse; font-size: 13px; }
th, td { padding: 3px 7px; border-bottom: 1px solid var(--line); text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
thead th { background: #eef1f5; vertical-align: bottom; }
th.attr { padding: 4px 1px; min-width: 24px; }
th.attr div { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap;
  font-weight: 600; font-size: 12px; margin: 0 auto; }
td.l { text-align: center; padding: 3px 1px; border-left: 1px solid #fff;
  font: 12px "DejaVu Sans Mono", Menlo, monospace; white-space: nowrap; }
tr.chosen td { background: var(--chosen) !important; font-weight: 700; }
tr.chosen td.l { box-shadow: inset 0 2px 0 #c99a00, inset 0 -2px 0 #c99a00; }
td.pbad { color: var(--bad); }
figure { margin: 14px 0; } figure img { max-width: 100%; height: auto;
  border: 1px solid var(--line); } figcaption { color: var(--muted); font-size: 13px; }
.banner { padding: 10px 14px; border-radius: 6px; margin: 10px 0; font-weight: 600; }
.banner.ok { background: #e6f4ea; color: var(--ok); }
.banner.bad { background: #fce8e6; color: var(--bad); border: 2px solid var(--bad); }
.banner.note { background: #eef1f5; color: var(--muted); font-weight: 400; }
.pass { color: var(--ok); font-weight: 700; } .fail { color: var(--bad); font-weight: 700; }
img.broken { display: none; } .broken-note { color: var(--bad); }
footer { color: var(--muted); font-size: 12px; margin-top: 30px; }
"""

# Marks figures that could not be decoded (and counts the rendered ones for tests).
_JS = """
window.addEventListener('load', function () {
  var ok = 0;
  document.querySelectorAll('figure img').forEach(function (img) {
    if (img.complete && img.naturalWidth > 0) { ok += 1; return; }
    img.classList.add('broken');
    var p = document.createElement('p'); p.className = 'broken-note';
    p.textContent = 'This figure could not be displayed: ' + img.alt;
    img.parentNode.insertBefore(p, img);
  });
  document.body.setAttribute('data-figures-rendered', String(ok));
});
"""


def _e(v: Any) -> str:
    return text(v)


def _suppression_cost(u: dict) -> str:
    """The local suppression's part of the remedies' cost (absent in older artefacts)."""
    if u.get("suppression_cost") is None:
        return ""
    return (f"; local suppression {_f(u['suppression_cost'])} of it: "
            f"{_f(u.get('accuracy_unsuppressed_release'))} without it")


def _f(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.{digits}f}"


def _colour(i: int, alpha: str = "55") -> str:
    from ._plots import GROUP_COLOURS

    return GROUP_COLOURS[i % len(GROUP_COLOURS)] + alpha


def _grouping_table(result: Any) -> str:
    from ._plots import group_ids

    head = "".join(f"<th>{h}</th>" for h in ("k", "acc_ave", "acc_min", "acc_max", "sd", "p"))
    attrs = "".join(f'<th class="attr" title="{_e(c)}"><div>{_e(c)}</div></th>'
                    for c in result.order)
    body = []
    for r in result.table:
        ids = group_ids(r.grouping.to_list(), result.order)
        tokens = r.letters.split(" ")
        if len(tokens) != len(result.order):  # a hand-made table: letters from the grouping
            tokens = [chr(65 + i % 26) for i in ids]
        p_bad = r.p is not None and r.p < result.alpha
        cells = [f'<td class="num">{r.k}</td>'] + [
            f'<td class="num">{_f(v)}</td>' for v in (r.acc_ave, r.acc_min, r.acc_max, r.sd)]
        cells.append(f'<td class="num{" pbad" if p_bad else ""}">{_f(r.p)}</td>')
        cells += [f'<td class="l" style="background:{_colour(i)}">{_e(t)}</td>'
                  for t, i in zip(tokens, ids)]
        chosen = r.grouping == result.grouping
        body.append(f'<tr class="{"chosen" if chosen else ""}" data-k="{r.k}">'
                    + "".join(cells) + "</tr>")
    return ('<div class="scroll"><table id="grouping-table"><thead><tr>' + head + attrs +
            "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>")


def figure_html(name: str, png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="fig-{_e(Path(name).stem)}"><img src="data:image/png;base64,{data}" '
            f'alt="{_e(alt)}" data-file="{_e(name)}"><figcaption>{caption} '
            f'(<a href="{_e(name)}">{_e(name)}</a>)</figcaption></figure>')


def _facts(result: Any, artefact: Any, ref: str | None) -> str:
    items = [("chosen k", f"{result.k} of {len(result.order)} attributes"),
             ("class column", f"{result.target} ({len(result.classes)} classes)"),
             ("classifier", result.classifier.get("preset") or json.dumps(result.classifier)),
             ("scoring", result.scoring), ("alpha", f"{result.alpha:g}"),
             ("R' (search) / R (test)", f"{result.n_search} / {result.n_test}"),
             ("a0 (baseline)", _f(result.baseline_accuracy)),
             ("p_OG (all singletons)", _f(result.p_og) or "n/a"),
             ("fits / seconds", f"{result.n_fits} / {result.seconds:.1f}"),
             ("random_state", result.random_state)]
    if artefact is not None:
        from astrid_airflow.release import release_attacker_model

        items.append(("attacker model", release_attacker_model(artefact).describe()))
        # columns the model leaves unknown that single people out: never silently safe
        flagged = (artefact.release or {}).get("singling_out_columns") or []
        if flagged:
            items.append(("not declared known, yet singling people out", ", ".join(
                f"{f['column']} ({f['role']}, {f['unique_share']:.0%} of rows unique)"
                for f in flagged)))
        items += [("reference rows", artefact.fingerprint.get("rows")),
                  ("reference sha256", str(artefact.fingerprint.get("sha256", ""))[:16] + "…"),
                  ("created", artefact.created_at),
                  ("library version", artefact.library_version)]
    if ref:
        items.append(("artefact", ref))
    return '<div class="facts">' + "".join(
        f"<div><b>{_e(k)}</b>{_e(v)}</div>" for k, v in items) + "</div>"


def _chosen_k(result: Any) -> str:
    """The sentence on k: ASTRID's choice, or the release the privacy-aware choice took."""
    if result.is_learned_choice:
        return f"chosen k = <b>{result.k}</b>, the highest k with p &ge; {result.alpha:g}"
    return (f"released k = <b>{result.k}</b>, chosen for privacy (ASTRID's choice: k = "
            f"{result.learned_k}, the highest k with p &ge; {result.alpha:g})")


def _groups_html(result: Any) -> str:
    from ._plots import group_ids

    ids = group_ids(result.grouping.to_list(), result.order)
    first: dict[int, list[str]] = {}
    for c, i in zip(result.order, ids):
        first.setdefault(i, []).append(c)
    return '<p class="groups">' + "".join(
        f'<span style="background:{_colour(i)}">{_e(group_letter(i))}: {{'
        f'{_e(", ".join(cols))}}}</span>' for i, cols in first.items()) + "</p>"


def release_html(metrics: Mapping[str, Any] | None, checks: list[ColumnCheck] | None,
                  figures: dict[str, str], k: int, note: str | None) -> str:
    parts = ['<section id="release"><h2>Release</h2>']
    if k == 1 or (metrics or {}).get("protects_nothing"):
        parts.append('<div class="banner bad" id="protects-nothing">The grouping has a '
                     "single group: every surrogate row is an original row (intact-row "
                     "proportion 1). This surrogate PROTECTS NOTHING.</div>")
    if note:
        parts.append(f'<div class="banner note">{_e(note)}</div>')
    if metrics is not None:
        rows = [("intact-row proportion (P_anon), observed", metrics["intact_row_proportion"]),
                ("intact-row proportion, expected", metrics["expected_intact_row_proportion"]),
                ("largest group: share of rows unique on its columns",
                 metrics["largest_group_unique_share"]),
                ("accuracy, trained on original", metrics["accuracy_original"]),
                ("accuracy, trained on surrogate", metrics["accuracy_surrogate"]),
                ("rows", metrics["rows"])]
        if metrics.get("largest_group"):
            rows.append(("largest group", ", ".join(map(str, metrics["largest_group"]))))
        if metrics.get("utility_note"):
            rows.append(("utility note", metrics["utility_note"]))
        cells = "".join(
            f"<tr><th>{_e(k_)}</th><td class='num'>"
            f"{_e(_metric(v))}</td></tr>"
            for k_, v in rows)
        parts.append(f'<table id="release-metrics">{cells}</table>')
        parts.append(figures.get("release.png", ""))
    if checks is not None:
        n = sum(len(c.classes) for c in checks)
        bad = [c for c in checks if not c.passed]
        if bad:
            parts.append(f'<div class="banner bad" id="distribution-verdict">Distribution '
                         f"check FAILED for {len(bad)} of {len(checks)} attributes "
                         f"({', '.join(_e(c.column) for c in bad[:10])}): the surrogate "
                         "is not a within-class shuffle of this original.</div>")
        else:
            parts.append(f'<div class="banner ok" id="distribution-verdict">\u2713 All {n} '
                         f"per-class distribution checks passed ({len(checks)} attributes): "
                         "within every class each attribute keeps exactly its values.</div>")
        parts.append(figures.get("distributions.png", ""))
        labels = list(checks[0].classes) if checks else []
        head = "".join(f"<th>class {_e(c.label)}</th>" for c in labels)
        body = []
        for c in checks:
            cells = "".join(
                f'<td class="{"pass" if cc.identical else "fail"}">{_verdict(cc)}'
                f" <small>(n = {cc.rows_original})</small></td>" for cc in c.classes)
            body.append(f'<tr data-passed="{str(c.passed).lower()}"><th>{_e(c.column)}</th>'
                        f"<td>{_e(c.kind)}</td>{cells}</tr>")
        parts.append('<div class="scroll"><table id="distribution-checks"><thead><tr>'
                     f"<th>attribute</th><th>compared by</th>{head}</tr></thead><tbody>"
                     + "".join(body) + "</tbody></table></div>")
    parts.append("</section>")
    return "".join(parts)


def _fallbacks(release: Mapping[str, Any]) -> str:
    """The sentence on the recipe's coarser fallbacks (none: nothing)."""
    rungs = release.get("fallbacks") or []
    if not rungs:
        return ""
    return (f" A batch on which a group would need more local suppression than the "
            f"budget publishes that group with the first of {len(rungs)} coarser "
            f"fallback(s) that keeps it (candidate(s) {_e(', '.join(map(str, rungs)))}).")


def _synthesis_costs(candidates: list) -> str:
    """Which groups each synthesised candidate draws from its model, and its accuracy
    beside the same grouping's groups kept with the remedies (the candidate it was
    derived from)."""
    by_label = {c.get("label"): c for c in candidates}
    parts = []
    for c in candidates:
        if c.get("method") != "synthesise":
            continue
        groups = [", ".join(map(str, g.get("columns", []))) for g in c.get("remedies")
                  or [] if str(g.get("remedy", "")).startswith("synthesised")]
        base = by_label.get(str(c.get("label")).rsplit(", ", 1)[0]) or {}
        parts.append(f"{_e(c.get('label'))}: {_e('; '.join(groups) or 'none')} "
                     f"synthesised, accuracy {_f(c.get('accuracy_surrogate'))} (kept with "
                     f"the remedies: {_f(base.get('accuracy_surrogate'))})")
    return ("<p>Groups drawn from their class-conditional model (no person's own "
            "values): " + "; ".join(parts) + ".</p>") if parts else ""


def tradeoff_html(release: Mapping[str, Any], figure: str) -> str:
    """The privacy-aware choice: verdict, utility cost and the candidates tried."""
    rows = []
    chosen = release.get("chosen")
    for i, c in enumerate(release.get("candidates") or []):
        r = c.get("risks") or {}
        remedies = "; ".join(f"{', '.join(map(str, g.get('columns', [])))}: "
                             f"{g.get('remedy')}" for g in c.get("remedies") or []
                             if g.get("remedy") != "unchanged")
        cls = ' class="chosen"' if i == chosen else ""
        outcome = ", ".join(c.get("failed") or []) or (
            "passed" if c.get("passed") else "not attacked")
        if c.get("fallback_rung"):  # what it failed in full, each batch is judged on
            outcome = f"fallback {c['fallback_rung']} of the release" + (
                f" (in full: {outcome})" if c.get("failed") else "")
        rows.append(
            f"<tr{cls}><td>{i}</td><td>{_e(c.get('label'))}</td>"
            f"<td>{_e(len(c.get('grouping') or []))}</td>"
            f"<td>{_e(remedies or 'none')}</td>"
            f"<td>{_f(r.get('share_below_k'))}</td>"
            f"<td>{_f(r.get('class_disclosure_share'))}</td>"
            f"<td>{_f(r.get('singling_out_upper'))}</td>"
            f"<td>{_f(r.get('linkability_upper'))}</td>"
            f"<td>{_f(r.get('inference_upper'))}</td>"
            f"<td>{_f(c.get('accuracy_surrogate'))}</td>"
            f"<td>{_f(c.get('accuracy_drop'))}</td>"
            f"<td>{_e(outcome)}</td></tr>")
    costs = [f"{_e(c.get('label'))}: accuracy {_f(c.get('accuracy_surrogate'))} "
             f"partitioned, {_f(w.get('accuracy_surrogate'))} split"
             for c in release.get("candidates") or []
             if (w := c.get("without_partition"))]
    partition = ("<p>Unsafe multi-column groups partitioned (Mondrian, two classes per "
                 "cell) rather than split: " + "; ".join(costs) + ".</p>") if costs else ""
    partition += _synthesis_costs(release.get("candidates") or [])
    status = release.get("status")
    if status == "refused":
        verdict = (f'<p class="fail"><b>No release within the policy: nothing may be '
                   f"published.</b> {_e(release.get('reason'))}</p>")
    else:
        u = release.get("utility") or {}
        verdict = (f"<p>Release chosen: candidate {_e(chosen)} "
                   f"({_e((release.get('candidates') or [{}])[chosen or 0].get('label'))}). "
                   f"Accuracy on held-out real rows: original {_f(u.get('accuracy_original'))}, "
                   f"raw GoldenEye release {_f(u.get('accuracy_raw_release'))}, remedied "
                   f"release {_f(u.get('accuracy_remedied_release'))} (the remedies cost "
                   f"{_f(u.get('remedy_cost'))}{_suppression_cost(u)}).{_fallbacks(release)}"
                   "</p>")
    return f"""<h2>Release: privacy-aware choice</h2>
<p class="sub">Candidate releases (a grouping of the per-k table or a split of it, plus
per-group remedies) measured as the gate measures them; the most accurate one that passes
every privacy and utility expectation of the policy is the release. Risks: largest
per-group share below k and class-disclosure share; upper 95 % bounds of the attacks
(shadow release; blank: not attacked, a more accurate candidate passed first or a
cheaper check failed).</p>
{verdict}{partition}
<table><thead><tr><th>#</th><th>candidate</th><th>groups</th><th>remedies</th>
<th>share below k</th><th>class disclosure</th><th>singling-out</th><th>linkability</th>
<th>inference</th><th>accuracy</th><th>drop</th><th>failed</th></tr></thead>
<tbody>{''.join(rows)}</tbody></table>
{figure}
"""


def _metric(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return "0" if v == 0 else f"{v:.2e}" if abs(v) < 1e-3 else f"{v:.4f}"
    return str(v)


def _verdict(check: ClassCheck) -> str:
    if check.identical:
        return "\u2713 identical"
    if check.rows_original != check.rows_surrogate:
        return f"\u2717 {check.rows_surrogate} rows, expected {check.rows_original}"
    return f"\u2717 max |\u0394| {_f(check.max_difference, 4)}"


def page(result: Any, artefact: Any, ref: str | None, figures: dict[str, str],
          release: str, title: str, data_docs: str | None, generated: str) -> str:
    from astrid_airflow._version import __version__

    link = ""
    if data_docs:
        href = safe_href(data_docs)  # a javascript:/data: link stays text, never a link
        link = (f'<p id="data-docs-link">Release gate: <a href="{href}">Data Docs '
                "(validation result)</a></p>" if href else
                f'<p id="data-docs-link">Release gate: Data Docs at {_e(data_docs)} (not '
                "linked: only http(s), file and relative links are)</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title><style>{_CSS}</style></head>
<body><main>
<h1>{_e(title)}</h1>
<p class="sub">ASTRID grouping of <b>{_e(len(result.order))}</b> attributes predicting
<b>{_e(result.target)}</b>: {_chosen_k(result)}.</p>
{link}
{_facts(result, artefact, ref)}
<h3>Chosen grouping</h3>
{_groups_html(result)}
<h2>Grouping table</h2>
<p class="sub">The best grouping of each cardinality k (paper, Alg. 1 and Table 2):
accuracy of R fits on GoldenEye permutations (mean, min, max, sd) and the p-value of the
test against the unpermuted fit. Letters: attributes in detach order sharing a letter
share a group. Highlighted: the chosen row.</p>
{_grouping_table(result)}
<h2>Accuracy and p-value against k</h2>
{figures["accuracy.png"]}
<h2>Which attributes share a group</h2>
{figures["grouping-matrix.png"]}
{release}
<footer>Generated by astrid-airflow {_e(__version__)} on {_e(generated)}. The page loads
nothing from the network; the figures are embedded and also saved beside it.</footer>
</main><script>{_JS}</script></body></html>
"""



def disclosure_html(d: Mapping[str, Any], figures: dict[str, str]) -> str:
    pol = d["policy"]
    rows = "".join(
        f"<tr><th>{_e(group_letter(i))}</th><td>{_e(', '.join(map(str, g['columns'])))}</td>"
        f"<td class='num'>{g['k_min']}</td>"
        f"<td class='num {'fail' if g['share_below_k'] > pol['max_share_below_k'] else ''}'>"
        f"{_f(g['share_below_k'])}</td>"
        f"<td class='num {'fail' if g['class_disclosure_share'] > pol['max_class_disclosure_share'] else ''}'>"  # noqa: E501
        f"{_f(g['class_disclosure_share'])}</td></tr>"
        for i, g in enumerate(d["groups"]))
    linked = d["linked_pairs"]
    pairs = ("<p>No pair of groups is linked above its expectation under independent "
             "shuffles.</p>" if not linked else
             f'<div class="banner bad">{len(linked)} pair(s) of groups still linked as in '
             "the original: "
             + "; ".join(_e(" + ".join(", ".join(map(str, g)) for g in p["groups"]))
                         + f" ({_f(p['linked_share'])} vs {_f(p['expected_linked_share'])})"
                         for p in linked[:10]) + "</div>")
    return ('<h3 id="disclosure">Disclosure per group</h3>'
            + figures.get("disclosure.png", "")
            + f'<table id="disclosure-groups"><thead><tr><th></th><th>group</th>'
              f"<th>k_min</th><th>share below k = {pol['disclosure_k']}</th>"
              "<th>class disclosure share</th></tr></thead><tbody>" + rows
            + "</tbody></table>" + pairs)
