"""Figures of the ASTRID report (matplotlib, Agg, no pyplot).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so no
global backend is touched (a user's interactive session keeps its own) and nothing needs
a display; :func:`png_bytes` renders one with Agg. Figure sizes grow with the number of
attributes and of k values and tick labels are rotated and shortened so that a
36-attribute table (kr-vs-kp) stays readable; ``tests/report/test_report.py`` checks that no
two tick labels overlap. matplotlib is imported lazily.

The figures:

* :func:`accuracy_figure`: mean null accuracy (``acc_ave``) with its min–max band and
  the p-value against k, alpha and the chosen k marked (the paper's Table 2 as a plot);
* :func:`grouping_matrix_figure`: which attributes share a group at each k, attributes
  in detach order, one colour and letter per group (the paper's letter notation);
* :func:`release_figure`: intact-row proportion (P_anon, Sec. 6.2) observed vs expected,
  the largest group's unique share and original vs surrogate accuracy;
* :func:`frontier_figure`: accuracy loss against the worst privacy margin of every
  candidate of the release choice, the chosen one and the policy's bars marked;
* :func:`distribution_figure`: per attribute and class, surrogate vs original quantiles
  (numeric) or category counts: GoldenEye keeps every column's multiset of values within
  each class, so every point lies on the diagonal.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from astrid_airflow.engine import group_letter

DPI = 100
#: Group colours: matplotlib's tab20 with the saturated shades first, so neighbouring
#: groups (consecutive letters) never get two shades of one hue.
GROUP_COLOURS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
    "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)
_PASS, _FAIL, _ALPHA = "#2ca02c", "#d62728", "#d62728"
_MAX_LABEL = 30
#: At most this many attribute panels in the distribution figure (failures first).
MAX_PANELS = 60


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def png_bytes(fig: Any) -> bytes:
    """The figure as PNG bytes (Agg; no timestamp or software metadata)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def short(name: Any, limit: int = _MAX_LABEL) -> str:
    """``name`` as text, cut to ``limit`` characters with an ellipsis, shown literally."""
    text = str(name)
    return literal(text if len(text) <= limit else text[:limit - 1] + "\u2026")


def literal(text: str) -> str:
    """``text`` as matplotlib draws it literally: a user's ``$...$`` is not mathtext
    (which would misrender, or fail the whole report on a malformed expression)."""
    return text.replace("$", r"\$")


def short_labels(names: Sequence[Any], limit: int = _MAX_LABEL) -> list[str]:
    """Labels of at most ``limit`` characters that still tell ``names`` apart.

    Cut at the end first; if that makes two labels equal (``attribute_01_...`` and
    ``attribute_02_...``), cut in the middle, keeping both ends; if they still collide,
    the position is prefixed.
    """
    names = [str(n) for n in names]
    for cut in (lambda t: short(t, limit), lambda t: literal(_middle(t, limit))):
        labels = [cut(n) for n in names]
        if len(set(labels)) == len(set(names)):
            return labels
    return [short(f"{i + 1}:{n}", limit) for i, n in enumerate(names)]


def _middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    tail = (limit - 1) // 2
    return text[:limit - 1 - tail] + "\u2026" + text[len(text) - tail:]


def _values(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows])


def _k_ticks(ax: Any, ks: np.ndarray) -> None:
    from matplotlib.ticker import MaxNLocator

    if len(ks) <= 40:
        ax.set_xticks(ks)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=20, integer=True))
    ax.tick_params(axis="x", labelsize=8)


# -------------------------------------------------------------------- accuracy and p

def accuracy_figure(table: Sequence[Mapping[str, Any]], *, chosen_k: int, alpha: float,
                    baseline: float | None = None, scoring: str = "accuracy",
                    n_test: int | None = None) -> Any:
    """Mean null score with its min–max band (top) and p-value (bottom) against k.

    Parameters
    ----------
    table : sequence of mapping
        ``AstridResult.to_dict()["table"]``: ``k``, ``acc_ave``, ``acc_min``,
        ``acc_max``, ``p`` and ``acc_search`` per row (None where undefined, e.g. k = 1).
    chosen_k, alpha : the chosen k (highest k with p >= alpha) and the level.
    baseline : float, optional
        a0, the score of the unpermuted fit (drawn as a dashed line).
    n_test : int, optional
        R; the smallest attainable p-value is 1 / (R + 1), which sets the axis floor.
    """
    ks = np.array([int(r["k"]) for r in table])
    ave, lo, hi = (_values(table, k) for k in ("acc_ave", "acc_min", "acc_max"))
    search, p = _values(table, "acc_search"), _values(table, "p")
    width = float(np.clip(5.0 + 0.26 * len(ks), 7.5, 16.0))
    fig = _figure(width, 6.2)
    ax, axp = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    band = np.isfinite(lo) & np.isfinite(hi)
    if band.any():
        ax.fill_between(ks, lo, hi, where=band, color="#1f77b4", alpha=0.18, linewidth=0,
                        label="min\u2013max over the R null fits")
    ax.plot(ks, ave, "o-", color="#1f77b4", markersize=4, label=f"mean {scoring} (acc_ave)")
    if np.isfinite(search).any():
        ax.plot(ks, search, ".:", color="#7f7f7f", label="mean on the search split (R')")
    if baseline is not None and math.isfinite(baseline):
        ax.axhline(baseline, color="#444444", linestyle="--", linewidth=1,
                   label=f"a0 = {baseline:.3f} (no permutation)")
    ax.set_ylabel(scoring)
    ax.set_title(f"{scoring.capitalize()} of the best grouping per k (chosen k = {chosen_k})",
                 fontsize=11)
    ax.grid(alpha=0.3)
    finite = np.isfinite(p)
    floor = min([1.0 / (n_test + 1)] if n_test else [1.0], default=1.0)
    if finite.any():
        floor = min(floor, float(np.nanmin(p)))
        ok = finite & (p >= alpha)
        axp.plot(ks[finite], p[finite], "-", color="#999999", linewidth=1)
        axp.scatter(ks[ok], p[ok], color=_PASS, zorder=3, s=22, label="p \u2265 alpha")
        axp.scatter(ks[finite & ~ok], p[finite & ~ok], color=_FAIL, marker="x", zorder=3,
                    s=26, label="p < alpha (rejected)")
    floor = min(floor, alpha)  # alpha must be on the axis even if no p can reach it
    axp.set_yscale("log")
    axp.set_ylim(floor / 2.0, 1.6)
    axp.axhspan(floor / 2.0, alpha, color=_ALPHA, alpha=0.07, linewidth=0)
    axp.axhline(alpha, color=_ALPHA, linestyle="--", linewidth=1.2,
                label=f"alpha = {alpha:g}")
    axp.set_ylabel("p-value (log)")
    axp.set_xlabel("k (number of groups)")
    axp.grid(alpha=0.3, which="major")
    for a in (ax, axp):
        a.axvline(chosen_k, color="#000000", linewidth=1.4, alpha=0.55,
                  label=f"chosen k = {chosen_k}" if a is ax else None)
    _k_ticks(axp, ks)
    ax.legend(fontsize=8, loc="lower left", framealpha=0.85)
    axp.legend(fontsize=8, loc="lower left", framealpha=0.85)
    return fig


# ---------------------------------------------------------------------- group matrix

def group_ids(groups: Sequence[Sequence[str]], order: Sequence[str]) -> list[int]:
    """Group number of each attribute of ``order``, numbered by first appearance.

    The numbering of the paper's letters: group 0 is ``A``, the group of the first
    attribute in detach order.
    """
    group_of = {c: gi for gi, g in enumerate(groups) for c in g}
    ids: dict[int, int] = {}
    return [ids.setdefault(group_of[c], len(ids)) for c in order]


def _ink(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "#ffffff"


def grouping_matrix_figure(table: Sequence[Mapping[str, Any]], order: Sequence[str], *,
                           chosen_k: int) -> Any:
    """Which attributes share a group at each k: one row per k, one column per attribute.

    Cells are coloured and lettered by group (the paper's letters: A is the group of the
    first attribute in detach order); white rules separate groups; the chosen row is
    framed.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Rectangle

    d, n_k = len(order), len(table)
    ids = np.array([group_ids(r["grouping"], order) for r in table]).reshape(n_k, d)
    rgb = np.array([to_rgb(GROUP_COLOURS[i % len(GROUP_COLOURS)]) for i in ids.ravel()])
    cell = 0.55 if d <= 10 else 0.34 if d <= 40 else max(0.16, 14.0 / d)
    names = short_labels(order)
    longest = max(len(c) for c in names)
    rotate = d > 6 or longest > 6
    label_space = (0.075 * longest + 0.3) if rotate else 0.45
    width = min(max(d * cell + 1.6, 6.0), 26.0)
    height = min(max(n_k * min(cell, 0.34) + label_space + 1.0, 2.8), 18.0)
    fig = _figure(width, height)
    ax = fig.subplots()
    ax.imshow(rgb.reshape(n_k, d, 3), aspect="auto", interpolation="nearest")
    cell_pt = min(width / d, (height - label_space) / n_k) * 72
    rules = [[(j + 0.5, i - 0.5), (j + 0.5, i + 0.5)]
             for i in range(n_k) for j in range(d - 1) if ids[i, j] != ids[i, j + 1]]
    ax.add_collection(LineCollection(rules, colors="white", linewidths=2.0))
    for i in range(n_k):
        for j in range(d):
            text = group_letter(int(ids[i, j]))
            size = min(9.0, 0.5 * cell_pt / max(1, len(text)) * 1.6)
            if size >= 4.5:
                colour = GROUP_COLOURS[ids[i, j] % len(GROUP_COLOURS)]
                ax.text(j, i, text, ha="center", va="center", fontsize=size,
                        color=_ink(colour))
    ks = [int(r["k"]) for r in table]
    if chosen_k in ks:
        ci = ks.index(chosen_k)
        ax.add_patch(Rectangle((-0.5, ci - 0.5), d, 1, fill=False, edgecolor="black",
                               linewidth=2.4, clip_on=False))
    tick_size = 8.0 if d <= 40 else max(5.0, 8.0 * 40 / d)
    ax.set_xticks(range(d), names, rotation=90 if rotate else 0,
                  fontsize=tick_size)
    step = 1 if n_k <= 45 else math.ceil(n_k / 45)
    rows = list(range(0, n_k, step))
    ax.set_yticks(rows, [f"{ks[i]}" for i in rows], fontsize=8)
    for label, i in zip(ax.get_yticklabels(), rows):
        if ks[i] == chosen_k:
            label.set_fontweight("bold")
    ax.set_ylabel("k")
    ax.set_xlabel("attribute (detach order)")
    ax.set_title(f"Groups at each k (framed: chosen k = {chosen_k})", fontsize=11)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    return fig


# --------------------------------------------------------------------------- release

def _bars(ax: Any, names: Sequence[str], values: Sequence[float | None], colours: Sequence[str],
          fmt: str, top: float) -> None:
    shown = [0.0 if v is None else float(v) for v in values]
    bars = ax.bar(names, shown, color=colours, width=0.6)
    for bar, v in zip(bars, values):
        text = "n/a" if v is None else _format(float(v), fmt)
        ax.annotate(text, xy=(bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                    fontsize=9)
    ax.set_ylim(0, top)
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="y", alpha=0.3)


def _format(v: float, fmt: str) -> str:
    # Tiny proportions (an expected P_anon of 1e-8) would all read 0.0000.
    return "0" if v == 0 else f"{v:.1e}" if abs(v) < 1e-3 else format(v, fmt)


def release_figure(metrics: Mapping[str, Any]) -> Any:
    """Privacy and utility of one surrogate (keys of ``astrid shuffle --json``).

    Left: the intact-row proportion P_anon measured and its expectation from the class and
    group sizes; middle: the share of original rows unique on the largest group's
    columns (the linkage risk P_anon misses); right: accuracy of the classifier trained
    on the original and on the surrogate, scored on the same held-out original rows.
    """
    fig = _figure(12.0, 3.9)
    ax_i, ax_u, ax_a = fig.subplots(1, 3, width_ratios=[1.1, 0.8, 1.1])
    obs, exp = metrics.get("intact_row_proportion"), metrics.get("expected_intact_row_proportion")
    top = max([v for v in (obs, exp) if v is not None] + [1e-3]) * 1.35
    _bars(ax_i, ["observed", "expected"], [obs, exp], ["#1f77b4", "#aec7e8"], ".4f",
          min(top, 1.2))
    ax_i.set_ylabel("proportion of unique original rows")
    nothing = bool(metrics.get("protects_nothing"))
    ax_i.set_title("Intact rows (P_anon)" + (": PROTECTS NOTHING" if nothing else ""),
                   fontsize=11, color=_FAIL if nothing else "black")
    share = metrics.get("largest_group_unique_share")
    _bars(ax_u, ["largest group"], [share], ["#9467bd"], ".4f", 1.15)
    group = list(metrics.get("largest_group") or [])
    ax_u.set_title("Rows unique on the largest group", fontsize=11)
    if group:  # the columns are listed in the page's table
        ax_u.set_xticks([0], [short(group[0], 30) if len(group) == 1
                              else f"{len(group)} columns"], fontsize=9)
    ax_u.set_ylabel("share of original rows")
    acc_o, acc_s = metrics.get("accuracy_original"), metrics.get("accuracy_surrogate")
    _bars(ax_a, ["trained on original", "trained on surrogate"], [acc_o, acc_s],
          ["#7f7f7f", "#2ca02c"], ".4f", 1.15)
    title = "Accuracy on held-out original rows"
    if acc_o is not None and acc_s is not None:
        title += f"\n(difference {acc_s - acc_o:+.4f})"
    ax_a.set_title(title, fontsize=11)
    if acc_o is None and acc_s is None:
        ax_a.text(0.5, 0.5, "utility not computed", transform=ax_a.transAxes, ha="center",
                  va="center", fontsize=10, color="#666666")
    return fig


def tradeoff_figure(candidates: Sequence[Mapping[str, Any]], chosen: int | None, *,
                    max_drop: float | None = None) -> Any:
    """Risk against accuracy of the candidate releases of :func:`choose_release`.

    x: the worst per-group disclosure of the remedied release (the larger of the share
    of rows below k and the class-disclosure share; attacked candidates use the highest
    attack upper bound when it is larger); y: accuracy of the classifier trained on the
    remedied surrogate, on held-out real rows. Filled: passed every privacy check;
    ring: the chosen release; dashed: the original's accuracy minus the allowed drop.
    """
    fig = _figure(7.5, 4.6)
    ax = fig.subplots()
    for i, c in enumerate(candidates):
        r = c.get("risks") or {}
        risk = max([float(r.get(k) or 0.0) for k in ("share_below_k", "class_disclosure_share",
                                                      "singling_out_upper",
                                                      "linkability_upper")])
        acc = c.get("accuracy_surrogate")
        if acc is None:
            continue
        private = not (set(c.get("failed") or []) - {"utility"})
        ax.scatter([risk], [acc], s=46, color=_PASS if private else _FAIL,
                   facecolors=None if private else "none", zorder=3)
        ax.annotate(str(i), (risk, acc), textcoords="offset points", xytext=(5, 3),
                    fontsize=8)
        if chosen is not None and i == chosen:
            ax.scatter([risk], [acc], s=220, facecolors="none", edgecolors="black",
                       linewidths=1.6, zorder=4)
    if candidates and max_drop is not None:
        acc_o = candidates[0].get("accuracy_original")
        if acc_o is not None:
            ax.axhline(acc_o - max_drop, ls="--", color="#555555", lw=1)
            ax.axhline(acc_o, ls=":", color="#7f7f7f", lw=1)
    ax.set_xlabel("worst risk (per-group share below k / class disclosure / attack bound)")
    ax.set_ylabel("accuracy on held-out real rows")
    ax.set_title("Candidate releases: risk against accuracy (numbers: table rows)",
                 fontsize=11)
    ax.legend(handles=[_handle(_PASS, "o", "passes privacy"),
                       _handle(_FAIL, "o", "fails privacy")], fontsize=8, loc="lower right")
    return fig


def frontier_figure(points: Sequence[Any], *, max_drop: float | None = None) -> Any:
    """The privacy-utility frontier of a release choice (``gate.FrontierPoint``s).

    x: each candidate's worst privacy margin (``gate.privacy_margin``: threshold minus
    figure, the smallest over its measured privacy checks; the solid line at 0 is the
    policy's privacy bars, left of it a check fails); y: its accuracy loss on held-out
    real rows with one standard error, the dashed line the policy's
    ``max_accuracy_drop``. Filled green: passed every check; ring: the chosen release.
    """
    fig = _figure(7.5, 4.6)
    ax = fig.subplots()
    for p in points:
        if p.worst_margin is None or p.accuracy_drop is None:
            continue
        colour = _PASS if p.passed else _FAIL
        ax.errorbar([p.worst_margin], [p.accuracy_drop], yerr=[p.accuracy_drop_se or 0.0],
                    fmt="o", ms=6, color=colour, mfc=colour if p.passed else "none",
                    elinewidth=0.8, zorder=3)
        ax.annotate(str(p.index), (p.worst_margin, p.accuracy_drop),
                    textcoords="offset points", xytext=(5, 3), fontsize=8)
        if p.chosen:
            ax.scatter([p.worst_margin], [p.accuracy_drop], s=220, facecolors="none",
                       edgecolors="black", linewidths=1.6, zorder=4)
    ax.axvline(0.0, color="#333333", lw=1)
    if max_drop is not None:
        ax.axhline(max_drop, ls="--", color="#555555", lw=1)
    ax.set_xlabel("worst privacy margin (threshold minus figure; < 0: a check fails)")
    ax.set_ylabel("accuracy loss on held-out real rows")
    ax.set_title("Privacy-utility frontier of the candidates (numbers: table rows)",
                 fontsize=11)
    ax.legend(handles=[_handle(_PASS, "o", "passed"),
                       _handle(_FAIL, "o", "failed / not measured")], fontsize=8,
              loc="upper left")
    return fig


def disclosure_figure(groups: Sequence[Mapping[str, Any]], *, max_share_below_k: float,
                      max_class_disclosure_share: float) -> Any:
    """Risk per group: one row per group, lettered as in the grouping table.

    Left: share of rows in (group values, class) equivalence classes smaller than k;
    right: share of rows whose group values occur in one class only. Red bars exceed the
    gate's default thresholds (dashed), green ones do not.
    """
    n = len(groups)
    fig = _figure(10.0, 1.2 + 0.38 * n)
    axes = fig.subplots(1, 2, sharey=True)
    labels = [f"{group_letter(i)}: " + (short(g["columns"][0], 24) if len(g["columns"]) == 1
                                       else f"{len(g['columns'])} columns")
              for i, g in enumerate(groups)]
    y = np.arange(n)[::-1]
    k = groups[0].get("k") if groups else None
    for ax, key, limit, title in (
            (axes[0], "share_below_k", max_share_below_k,
             f"Rows in equivalence classes below k = {k}"),
            (axes[1], "class_disclosure_share", max_class_disclosure_share,
             "Rows whose group values disclose the class")):
        values = [float(g[key]) for g in groups]
        colours = [_FAIL if v > limit + 1e-9 else _PASS for v in values]
        ax.barh(y, values, color=colours, height=0.6)
        ax.axvline(limit, color="#333333", linestyle="--", linewidth=1)
        for yi, v in zip(y, values):
            ax.text(min(v, 1.0) + 0.01, yi, f"{v:.3f}", va="center", fontsize=8)
        ax.set_xlim(0, 1.12)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("share of rows")
    axes[0].set_yticks(y, labels, fontsize=9)
    return fig


# ---------------------------------------------------------------------- distributions

def distribution_figure(checks: Sequence[Any], classes: Sequence[Any]) -> Any:
    """Surrogate vs original per attribute and class: every point on the diagonal.

    ``checks`` are the report's column checks (``column``, ``kind``, ``passed`` and per
    class ``label``, ``x`` (original) and ``y`` (surrogate)): quantiles at 0, 5, ..., 100 %
    for numeric columns, counts per category otherwise. Failing columns come first; at
    most :data:`MAX_PANELS` panels are drawn.
    """
    shown = sorted(checks, key=lambda c: c.passed)[:MAX_PANELS]
    titles = dict(zip([c.column for c in shown], short_labels([c.column for c in shown], 24)))
    n = max(1, len(shown))
    ncols = min(6, n)
    nrows = math.ceil(n / ncols)
    fig = _figure(2.25 * ncols + 0.6, 2.15 * nrows + 0.9)
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    colour = {_key(c): GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, c in enumerate(classes)}
    markers = "os^DvP*X"
    for ax, check in zip(axes, shown):
        lo, hi = math.inf, -math.inf
        for i, cc in enumerate(check.classes):
            x, y = np.asarray(cc.x, float), np.asarray(cc.y, float)
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.any():
                lo, hi = min(lo, x[ok].min(), y[ok].min()), max(hi, x[ok].max(), y[ok].max())
            ax.scatter(x, y, s=12, marker=markers[i % len(markers)], alpha=0.8,
                       color=colour.get(_key(cc.label), "#333333"), linewidths=0)
        if math.isfinite(lo):
            pad = (hi - lo) * 0.05 or 0.5
            ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="#888888",
                    linewidth=0.8, zorder=0)
        mark = "\u2713" if check.passed else "\u2717 differs"
        ax.set_title(f"{titles[check.column]}  {mark}", fontsize=8,
                     color=_PASS if check.passed else _FAIL, fontweight="bold")
        ax.tick_params(labelsize=6.5, length=2)
        ax.locator_params(nbins=4)
        ax.text(0.03, 0.97, "quantiles" if check.kind == "quantiles" else "counts",
                transform=ax.transAxes, fontsize=6.5, va="top", color="#666666")
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    handles = [_handle(colour.get(_key(c), "#333333"), markers[i % len(markers)], c)
               for i, c in enumerate(list(classes)[:20])]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, title="class",
               title_fontsize=8, frameon=False)
    fig.supxlabel("original (within class)", fontsize=9)
    fig.supylabel("surrogate (within class)", fontsize=9)
    more = f" ({len(checks) - len(shown)} passing columns not drawn)" \
        if len(checks) > len(shown) else ""
    fig.suptitle("Per-class distributions: surrogate vs original" + more, fontsize=11)
    return fig


def _key(label: Any) -> str:
    return str(label)


def _handle(colour: str, marker: str, label: Any) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="", marker=marker, color=colour, label=short(label, 16))
