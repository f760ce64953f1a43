"""The HTML report of a learned grouping and, optionally, of one release (surrogate).

:func:`write_report` writes a directory that a reviewer opens offline::

    <out>/index.html           one self-contained page: inline CSS, figures embedded as
                               data: URIs (it still works when copied alone)
    <out>/accuracy.png         mean accuracy with min–max band and p-value against k
    <out>/grouping-matrix.png  which attributes share a group at each k
    <out>/release.png          P_anon observed vs expected, largest-group unique share,
                               original vs surrogate accuracy           (release only)
    <out>/distributions.png    per-class distributions, surrogate vs original (release)
    <out>/report.json          the numbers shown, for machines

The page shows the grouping table in the paper's style (k, acc_ave, acc_min, acc_max,
sd, p, one letter column per attribute in detach order; ASTRID paper, Sec. 5 and
Table 2), the chosen row highlighted, then the figures. For a release it adds the
privacy and utility metrics of Sec. 6.2 and the distribution checks: GoldenEye only
moves values between rows of one class, so every attribute keeps its multiset of values
within every class; the report verifies that exactly and shows it. The directory is
published atomically (written under a temporary name, then renamed), so a reader never
sees half a report. ``docs/reports.md`` describes the page.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import ArtefactError, DataError, ParameterError, StoreError, short_list
from astrid_airflow._html import safe_href, text
from astrid_airflow.engine import group_letter
from astrid_airflow.io import native
from astrid_airflow.io import plain as _plain

REPORT_VERSION = 1
INDEX = "index.html"
REPORT_JSON = "report.json"
REPORT_FILES = ("accuracy.png", "grouping-matrix.png", "release.png", "distributions.png")
#: Keys a surrogate-metrics mapping must have (``astrid shuffle --json`` prints them).
METRIC_KEYS = ("intact_row_proportion", "expected_intact_row_proportion",
               "largest_group_unique_share", "accuracy_original", "accuracy_surrogate", "rows")
#: Numeric columns with more distinct values than this are compared by quantiles.
QUANTILE_MIN_DISTINCT = 20
QUANTILES = np.linspace(0.0, 1.0, 21)


# ------------------------------------------------------------------ distribution checks

@dataclass(frozen=True)
class ClassCheck:
    """One attribute within one class: does the surrogate keep its multiset of values?

    ``x``/``y`` are the original's and the surrogate's quantiles (``kind ==
    "quantiles"``) or counts per category (``"counts"``, categories in ``categories``);
    ``max_difference`` is the largest absolute difference between them.
    """

    label: Any
    rows_original: int
    rows_surrogate: int
    identical: bool
    max_difference: float
    x: tuple[float, ...]
    y: tuple[float, ...]
    categories: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "rows_original": self.rows_original,
                "rows_surrogate": self.rows_surrogate, "identical": self.identical,
                "max_difference": self.max_difference}


@dataclass(frozen=True)
class ColumnCheck:
    """The per-class checks of one attribute."""

    column: str
    kind: str
    classes: tuple[ClassCheck, ...]

    @property
    def passed(self) -> bool:
        return all(c.identical for c in self.classes)

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "kind": self.kind, "passed": self.passed,
                "classes": [c.to_dict() for c in self.classes]}


def _counts(s: pd.Series) -> dict[Any, int]:
    return {native(k): int(v) for k, v in s.dropna().astype(object).value_counts().items()}


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def distribution_checks(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                        columns: Sequence[str]) -> list[ColumnCheck]:
    """Compare every attribute's values within every class of the two tables.

    A GoldenEye surrogate permutes rows within a class, so for each attribute and class
    the surrogate's values must be the original's values reordered: the check is exact
    multiset equality (the gate's check: equal sorted row hashes of the values). For
    display, numeric attributes with more than :data:`QUANTILE_MIN_DISTINCT` distinct
    values are summarised by their quantiles at 0, 5, ..., 100 %, the others by counts
    per category.

    Parameters
    ----------
    original, surrogate : pandas.DataFrame
        The table before and after shuffling; both need ``target`` and ``columns``.
    target : str
        The class column (its multiset kept by the shuffle; rows move).
    columns : sequence of str
        The attributes to check, e.g. in detach order.
    """
    for name, table in (("original", original), ("surrogate", surrogate)):
        missing = [c for c in [target, *columns] if c not in table.columns]
        if missing:
            raise DataError(f"The {name} table lacks column(s) {short_list(missing)}.")
    labels_o = original[target].astype(object)
    labels_s = surrogate[target].astype(object)
    labels = list(dict.fromkeys([native(v) for v in pd.unique(labels_o.dropna())] +
                                [native(v) for v in pd.unique(labels_s.dropna())]))
    rows_o = {lab: (labels_o == lab).to_numpy() for lab in labels}
    rows_s = {lab: (labels_s == lab).to_numpy() for lab in labels}
    from astrid_airflow.gate import same_multiset
    from astrid_airflow.release import row_hashes

    out = []
    for col in columns:
        so, ss = original[col], surrogate[col]
        ho, hs = row_hashes(original, [col]), row_hashes(surrogate, [col])
        numeric = _is_numeric(so) and _is_numeric(ss)
        kind = "quantiles" if numeric and so.nunique() > QUANTILE_MIN_DISTINCT else "counts"
        cats: list[Any] = []
        if kind == "counts":
            cats = list(dict.fromkeys(list(_counts(so)) + list(_counts(ss))))
        checks = []
        for lab in labels:
            a, b = so[rows_o[lab]], ss[rows_s[lab]]
            same = same_multiset(ho[rows_o[lab]], hs[rows_s[lab]])
            if kind == "quantiles":
                x, y = _quantiles(a), _quantiles(b)
                diff = np.abs(x - y)
                gap = float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0
                names: tuple[str, ...] = ()
            else:
                ca, cb = _counts(a), _counts(b)
                na, nb = int(a.isna().sum()), int(b.isna().sum())
                keys = [*cats, "<missing>"] if na or nb else list(cats)
                ca["<missing>"], cb["<missing>"] = na, nb
                x = np.array([ca.get(k, 0) for k in keys], float)
                y = np.array([cb.get(k, 0) for k in keys], float)
                gap = float(np.max(np.abs(x - y))) if len(x) else 0.0
                names = tuple(str(k) for k in keys)
            checks.append(ClassCheck(label=lab, rows_original=len(a), rows_surrogate=len(b),
                                     identical=same, max_difference=gap,
                                     x=tuple(float(v) for v in x),
                                     y=tuple(float(v) for v in y), categories=names))
        out.append(ColumnCheck(column=str(col), kind=kind, classes=tuple(checks)))
    return out


def _quantiles(s: pd.Series) -> np.ndarray:
    v = s.to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    return np.quantile(v, QUANTILES) if v.size else np.full(QUANTILES.size, np.nan)


# ----------------------------------------------------------------------------- inputs

def _resolve(artefact: Any) -> tuple[Any, Any, str | None]:
    """``(AstridResult, GroupingArtefact or None, reference text or None)``."""
    from astrid_airflow.engine import AstridResult
    from astrid_airflow.release import GroupingArtefact, LoadedArtefact, load_artefact

    ref = None
    if isinstance(artefact, (str, os.PathLike)):
        ref = os.fspath(artefact)
        artefact = load_artefact(ref)
    if isinstance(artefact, LoadedArtefact):
        ref = ref or artefact.location.path
        artefact = artefact.artefact
    if isinstance(artefact, AstridResult):
        return artefact, None, ref
    if not isinstance(artefact, GroupingArtefact):
        raise ParameterError(f"Cannot report on {type(artefact).__name__}; pass a "
                             "GroupingArtefact, an artefact reference (path or "
                             "ROOT/NAME[@VERSION]) or an AstridResult.")
    try:
        result = AstridResult.from_dict(artefact.result)
    except KeyError as exc:
        raise ArtefactError(f"The artefact's result lacks the key {exc.args[0]!r}; the "
                            "report needs AstridResult.to_dict() (schema v1).") from None
    except (TypeError, ValueError) as exc:
        raise ArtefactError(f"The artefact's result is malformed: {exc}") from None
    if not result.table:
        raise ArtefactError("The artefact's result has an empty per-k table.")
    return result, artefact, ref


def load_metrics(metrics: Any, k: int) -> dict[str, Any] | None:
    if metrics is None:
        return None
    if isinstance(metrics, (str, os.PathLike)):
        from astrid_airflow.io import load_json, read_bounded

        path = os.fspath(metrics)
        # a regular file of bounded size: a FIFO or /dev/zero is refused, not read
        data = read_bounded(path, "surrogate metrics")
        try:
            metrics = load_json(data, "JSON")
        except DataError as exc:
            raise DataError(f"Surrogate metrics {path!r} are not JSON: {exc}") from None
    elif hasattr(metrics, "to_dict"):
        metrics = metrics.to_dict()
    if not isinstance(metrics, Mapping):
        raise ParameterError(f"Invalid surrogate metrics: {type(metrics).__name__}; pass "
                             "SurrogateMetrics, a mapping or the JSON file of "
                             "`astrid shuffle --json`.")
    missing = [key for key in METRIC_KEYS if key not in metrics]
    if missing:
        raise DataError(f"The surrogate metrics lack key(s) {missing}; expected the output "
                        "of `astrid shuffle --json` (or SurrogateMetrics.to_dict()).")
    out = dict(metrics)
    for key in METRIC_KEYS[:5]:
        v = out[key]
        nullable = key.startswith("accuracy")
        if not ((nullable and v is None) or (isinstance(v, (int, float))
                                             and not isinstance(v, bool) and 0.0 <= v <= 1.0)):
            raise DataError(f"Invalid surrogate metric {key}: {v!r}; expected a number in "
                            "[0, 1]" + (" or null." if key.startswith("accuracy") else "."))
    if out.get("groups") is not None and out["groups"] != k:
        raise DataError(f"The surrogate metrics are for a grouping of {out['groups']} groups "
                        f"but the artefact's grouping has {k}: wrong metrics file?")
    return out


def _table(obj: Any, what: str) -> pd.DataFrame:
    from astrid_airflow.io import read_table

    if hasattr(obj, "to_pandas") and not isinstance(obj, pd.DataFrame):
        obj = obj.to_pandas()
    if not isinstance(obj, (pd.DataFrame, str, os.PathLike)):
        raise ParameterError(f"Invalid {what} table: {type(obj).__name__}; pass a DataFrame, "
                             "an Arrow table or a CSV/Parquet/ARFF path.")
    return read_table(obj)


# ------------------------------------------------------------------------------ HTML

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
    """The local suppression's part of the remedies' cost (artefacts since issue 28)."""
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


def _figure_html(name: str, png: bytes, alt: str, caption: str) -> str:
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


def _release_html(metrics: Mapping[str, Any] | None, checks: list[ColumnCheck] | None,
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


def _tradeoff_html(release: Mapping[str, Any], figure: str) -> str:
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
                   f"{_f(u.get('remedy_cost'))}{_suppression_cost(u)}).</p>")
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


def _page(result: Any, artefact: Any, ref: str | None, figures: dict[str, str],
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


# --------------------------------------------------------------------------- writing

@dataclass(frozen=True)
class WrittenReport:
    """Where :func:`write_report` put the report and what it found."""

    directory: str
    index: str
    files: tuple[str, ...]
    distributions_passed: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.directory, "index": self.index, "files": list(self.files),
                "distributions_passed": self.distributions_passed}


def report_dir_for(surrogate: str | os.PathLike) -> str:
    """The report directory beside a surrogate: ``out.parquet`` -> ``out.report``.

    The gate writes ``out.validation.html`` there too, so the two link each other with
    relative paths (``out.report/index.html`` and ``../out.validation.html``).
    """
    text = os.fspath(surrogate).rstrip("/")
    head, _, name = text.rpartition("/")
    stem = Path(name).stem if Path(name).suffix else name
    return f"{head}/{stem}.report" if head else f"{stem}.report"


def _is_report_dir(path: str) -> bool:
    entries = os.listdir(path)
    if not entries:
        return True
    try:
        from astrid_airflow.io import load_json

        with open(os.path.join(path, REPORT_JSON), "rb") as fh:
            return load_json(fh.read(), REPORT_JSON).get("kind") == "astrid-report"
    except (OSError, ValueError, AttributeError):
        return False


def _publish_local(dest: str, files: dict[str, bytes], overwrite: bool) -> None:
    if os.path.lexists(dest):
        if not os.path.isdir(dest):
            raise StoreError(f"Cannot write the report to {dest!r}: it is a file.")
        if os.listdir(dest) and not overwrite:
            raise StoreError(f"Refusing to overwrite the report directory {dest!r} (pass "
                             "overwrite=True / --overwrite to replace it).")
        if not _is_report_dir(dest):
            raise StoreError(f"Refusing to replace {dest!r}: it is not an astrid report "
                             "directory (no report.json of ours); choose another --out.")
    from astrid_airflow.io import dir_mode, replace_dir, staged_dir

    parent = os.path.dirname(dest) or "."
    try:
        tmp = staged_dir(parent, f".{os.path.basename(dest)}.", files)
    except OSError as exc:
        raise StoreError(f"Cannot write the report to {dest!r}: {exc.strerror or exc}.") \
            from None
    try:
        os.chmod(tmp, dir_mode())  # mkdtemp makes it private; the umask decides
        replace_dir(tmp, dest)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"Cannot write the report to {dest!r}: {exc.strerror or exc}.") \
            from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _publish(out_dir: str | os.PathLike, files: dict[str, bytes], overwrite: bool) -> str:
    from astrid_airflow.io import atomic_write_bytes, check_outside_store, split_url

    _fs, dest, local = split_url(out_dir)
    check_outside_store(dest)  # versions are immutable: no report inside a store
    if local:
        _publish_local(dest, files, overwrite)
        return dest
    # Object stores have no directory rename: each file is written atomically and
    # index.html last, so a visible index.html means a complete report.
    url = os.fspath(out_dir).rstrip("/")
    for name in sorted(files, key=lambda n: n == INDEX):
        atomic_write_bytes(f"{url}/{name}", files[name], overwrite=overwrite)
    return url


def _suppressed_integers(table: pd.DataFrame, art: Any) -> pd.DataFrame:
    """``table`` with each float column the artefact records as integer, and whose
    values are whole numbers or missing, as nullable integers.

    Local suppression publishes a group's values as missing, and a reader gives an
    integer column with missing values a float type; its values are still the integers
    the schema names, so the schema check sees them as such (any fraction still fails).
    """
    import numpy as np

    cast = {}
    for name in table.columns:
        entry = art.column_schema(name) if name in art.columns else None
        col = table[name]
        if entry is None or entry["kind"] != "integer" or col.dtype.kind != "f":
            continue
        values = col.to_numpy(dtype=float, na_value=np.nan)
        present = values[~np.isnan(values)]
        if present.size < values.size and np.all(present == np.round(present)):
            cast[name] = col.astype("Int64")
    return table.assign(**cast) if cast else table


def write_report(artefact: Any, out_dir: str | os.PathLike, *,
                 surrogate_metrics: Any = None, original: Any = None, surrogate: Any = None,
                 title: str | None = None, data_docs: str | None = None,
                 overwrite: bool = False) -> WrittenReport:
    """Write the HTML report of a grouping (and of one release) to ``out_dir``.

    Parameters
    ----------
    artefact : GroupingArtefact, LoadedArtefact, AstridResult or str
        The grouping to report on; a string or path is an artefact reference
        (``artefact.json``, a version directory or ``ROOT/NAME[@VERSION]``).
    out_dir : str or path-like
        The report directory (local path or fsspec URL). Published atomically; an
        existing one is replaced only with ``overwrite`` and only if it is a report.
    surrogate_metrics : SurrogateMetrics, mapping or path, optional
        The metrics of a release: ``SurrogateMetrics``, its ``to_dict()``, or the JSON
        file printed by ``astrid shuffle --json``.
    original, surrogate : DataFrame, Arrow table or path, optional
        The table before and after shuffling (give both). Enables the per-class
        distribution checks; without ``surrogate_metrics`` the privacy metrics are
        computed from them (utility is then not computed).
    title : str, optional
        Page title (default from the artefact reference).
    data_docs : str, optional
        Link (e.g. relative ``../out.validation.html``) to the gate's Data Docs.
    overwrite : bool, default False
        Replace an existing report directory.

    Returns
    -------
    WrittenReport
        The directory, the index page, the files written and whether every
        distribution check passed (None without tables).
    """
    from astrid_airflow.io import refuse_overwriting_inputs

    from ._plots import (
        accuracy_figure,
        disclosure_figure,
        distribution_figure,
        grouping_matrix_figure,
        png_bytes,
        release_figure,
        tradeoff_figure,
    )

    # the report directory is replaced whole: no input may live inside it
    refuse_overwriting_inputs([out_dir], [artefact, original, surrogate, surrogate_metrics])
    result, art, ref = _resolve(artefact)
    if (original is None) != (surrogate is None):
        raise ParameterError("Pass both original and surrogate tables (or neither): the "
                             "distribution checks compare the two.")
    if title is not None and not isinstance(title, str):
        raise ParameterError(f"Invalid title: {title!r}. Must be a string.")
    if data_docs is not None and not isinstance(data_docs, str):
        raise ParameterError(f"Invalid data_docs: {data_docs!r}. Must be a link (string).")
    metrics = load_metrics(surrogate_metrics, result.k)
    checks = note = disclosure = None
    if original is not None:
        orig, surr = _table(original, "original"), _table(surrogate, "surrogate")
        if art is not None:
            art.check_table(orig)
            art.check_table(_suppressed_integers(surr, art))
        if len(orig) != len(surr):
            raise DataError(f"The surrogate has {len(surr)} rows but the original has "
                            f"{len(orig)}: not a surrogate of this table.")
        checks = distribution_checks(orig, surr, result.target, result.order)
        disclosure = _disclosure(orig, surr, result)
        if metrics is None:
            metrics = _privacy_metrics(orig, surr, result)
        elif metrics["rows"] != len(orig):
            note = (f"The surrogate metrics were computed on {metrics['rows']} rows but the "
                    f"tables given have {len(orig)}.")
    table = [r.to_dict() for r in result.table]
    figs = {
        "accuracy.png": (accuracy_figure(table, chosen_k=result.k, alpha=result.alpha,
                                         baseline=result.baseline_accuracy,
                                         scoring=result.scoring, n_test=result.n_test),
                         "Mean accuracy with min-max band and p-value against k",
                         "Top: mean score of the R fits on permuted tables, their min–max "
                         "band, a0 and the search-split mean. Bottom: p-value (log scale), "
                         "alpha dashed; the vertical line is the chosen k."),
        "grouping-matrix.png": (grouping_matrix_figure(table, result.order,
                                                       chosen_k=result.k),
                                "Which attributes share a group at each k",
                                "One row per k, attributes in detach order; a colour and "
                                "letter per group, white rules between groups; framed: the "
                                "chosen k."),
    }
    if metrics is not None:
        figs["release.png"] = (release_figure(metrics), "Privacy and utility of the release",
                               "P_anon observed vs expected, rows unique on the largest "
                               "group, and accuracy trained on original vs surrogate "
                               "(both scored on the same held-out original rows).")
    release_record = getattr(art, "release", None) if art is not None else None
    if release_record and release_record.get("candidates"):
        figs["tradeoff.png"] = (
            tradeoff_figure(release_record["candidates"], release_record.get("chosen"),
                            max_drop=(release_record.get("policy") or {}).get(
                                "max_accuracy_drop")),
            "Candidate releases: risk against accuracy",
            "Each candidate release (grouping plus remedies) tried by the privacy-aware "
            "choice: worst per-group or attack risk against accuracy on held-out real "
            "rows; filled green passes every privacy check, the ring is the release "
            "chosen, dashed the utility bound.")
    if disclosure is not None:
        policy = disclosure["policy"]
        figs["disclosure.png"] = (
            disclosure_figure(disclosure["groups"],
                              max_share_below_k=policy["max_share_below_k"],
                              max_class_disclosure_share=policy["max_class_disclosure_share"]),
            "Disclosure risk per group",
            "Per group (letters as in the grouping table), on the values as published: "
            "rows in equivalence classes smaller than k, and rows whose group values occur "
            "in one class only; red above the gate's default threshold (dashed). See "
            "docs/privacy.md.")
    if checks is not None:
        figs["distributions.png"] = (
            distribution_figure(checks, _class_order(result.classes, checks)),
            "Per-class distributions, surrogate vs original",
            "Per attribute and class: surrogate against original quantiles (numeric) or "
            "category counts; on the diagonal when the values match.")
    files: dict[str, bytes] = {}
    shown: dict[str, str] = {}
    for name, (fig, alt, caption) in figs.items():
        files[name] = png_bytes(fig)
        shown[name] = _figure_html(name, files[name], alt, caption)
    generated = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    release = _release_html(metrics, checks, shown, result.k, note) \
        if metrics is not None or checks is not None else ""
    if disclosure is not None:
        release = release.replace("</section>", _disclosure_html(disclosure, shown)
                                  + "</section>", 1)
    page_title = title or ("ASTRID report: " + (ref or f"grouping of {result.target}"))
    if release_record:
        release = _tradeoff_html(release_record, shown.get("tradeoff.png", "")) + release
    files[INDEX] = _page(result, art, ref, shown, release, page_title, data_docs,
                         generated).encode("utf-8")
    passed = None if checks is None else all(c.passed for c in checks)
    summary = {"kind": "astrid-report", "report_version": REPORT_VERSION, "artefact": ref,
               "generated_at": generated, "k": result.k, "alpha": result.alpha,
               "grouping": result.grouping.to_list(), "order": list(result.order),
               "figures": [n for n in figs], "metrics": _plain(metrics),
               "release": _plain({k: v for k, v in (release_record or {}).items()
                                  if k != "candidates"}) if release_record else None,
               "distributions_passed": passed, "disclosure": disclosure,
               "distribution_checks": None if checks is None else [c.to_dict()
                                                                   for c in checks]}
    files[REPORT_JSON] = (json.dumps(_plain(summary), indent=2, allow_nan=False)
                          + "\n").encode("utf-8")
    directory = _publish(out_dir, files, overwrite)
    sep = "/" if "://" in directory else os.sep
    return WrittenReport(directory=directory, index=f"{directory}{sep}{INDEX}",
                         files=tuple(sorted(files)), distributions_passed=passed)


def _disclosure(original: pd.DataFrame, surrogate: pd.DataFrame, result: Any
                ) -> dict[str, Any]:
    """Per-group disclosure and per-pair linkage of the release (issue 16), judged
    against the gate's default policy."""
    from astrid_airflow.gate import GatePolicy
    from astrid_airflow.privacy import LINKAGE_Z, disclosure_risk

    policy = GatePolicy()
    risk = disclosure_risk(original, surrogate, target=result.target,
                           grouping=result.grouping, k=policy.disclosure_k).to_dict()
    limit = policy.max_linkage_excess
    risk["linked_pairs"] = [p for p in risk.pop("pairs")
                            if p["excess"] > max(limit, LINKAGE_Z * p["sd_linked_share"])]
    risk["policy"] = {"disclosure_k": policy.disclosure_k,
                      "max_share_below_k": policy.max_share_below_k,
                      "max_class_disclosure_share": policy.max_class_disclosure_share,
                      "max_linkage_excess": limit}
    return risk


def _disclosure_html(d: Mapping[str, Any], figures: dict[str, str]) -> str:
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


def _class_order(classes: Sequence[Any], checks: list[ColumnCheck]) -> list[Any]:
    """The artefact's class order, then labels seen only in the tables."""
    seen = [cc.label for c in checks[:1] for cc in c.classes]
    known = [c for c in classes if c in seen]
    return known + [c for c in seen if c not in known]


def _privacy_metrics(original: pd.DataFrame, surrogate: pd.DataFrame, result: Any
                     ) -> dict[str, Any]:
    from astrid_airflow.release import (
        expected_intact_row_proportion,
        intact_row_proportion,
        largest_group_unique_share,
    )

    g, target = result.grouping, result.target
    return {"intact_row_proportion": intact_row_proportion(
                original, surrogate, columns=[*result.order, target]),
            "expected_intact_row_proportion": expected_intact_row_proportion(original, g,
                                                                             target),
            "largest_group_unique_share": largest_group_unique_share(original, g, target),
            "accuracy_original": None, "accuracy_surrogate": None, "rows": len(original),
            "protects_nothing": g.k == 1, "groups": g.k,
            "largest_group": list(max(g.groups, key=len)),
            "utility_note": "utility not computed: pass the metrics of `astrid shuffle "
                            "--json` for the accuracies"}



