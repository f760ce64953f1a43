"""The report's figures: which ones the inputs call for, with their alt text and
captions (:func:`report_figures`), and each rendered as PNG bytes and as the page's
embedded ``<figure>`` (:func:`render_figures`). ``_plots.py`` draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._checks import ColumnCheck
from ._sections import figure_html


def report_figures(result: Any, metrics: Mapping[str, Any] | None,
                   release_record: Mapping[str, Any] | None,
                   disclosure: Mapping[str, Any] | None, checks: list[ColumnCheck] | None
                   ) -> dict[str, tuple[Any, str, str]]:
    """The report's figures in page order: ``{file name: (figure, alt text, caption)}``."""
    from ._plots import (
        accuracy_figure,
        disclosure_figure,
        distribution_figure,
        frontier_figure,
        grouping_matrix_figure,
        release_figure,
        tradeoff_figure,
    )

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
    if release_record and release_record.get("candidates"):
        from astrid_airflow.gate import frontier_points

        policy = release_record.get("policy") or {}
        figs["frontier.png"] = (
            frontier_figure(frontier_points(release_record["candidates"], policy,
                                            release_record.get("chosen")),
                            max_drop=policy.get("max_accuracy_drop")),
            "Privacy-utility frontier: accuracy loss against the worst privacy margin",
            "Each candidate release measured by the choice: its accuracy loss (with one "
            "standard error) against its worst privacy margin, the smallest threshold "
            "minus figure over its privacy checks; solid: the privacy bars (left of it a "
            "check fails), dashed: max_accuracy_drop, ring: the release chosen.")
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
    return figs


def render_figures(figs: Mapping[str, tuple[Any, str, str]]
                   ) -> tuple[dict[str, bytes], dict[str, str]]:
    """``(files, shown)``: each figure's PNG bytes and its embedded ``<figure>`` HTML."""
    from ._plots import png_bytes

    files: dict[str, bytes] = {}
    shown: dict[str, str] = {}
    for name, (fig, alt, caption) in figs.items():
        files[name] = png_bytes(fig)
        shown[name] = figure_html(name, files[name], alt, caption)
    return files, shown


def _class_order(classes: Sequence[Any], checks: list[ColumnCheck]) -> list[Any]:
    """The artefact's class order, then labels seen only in the tables."""
    seen = [cc.label for c in checks[:1] for cc in c.classes]
    known = [c for c in classes if c in seen]
    return known + [c for c in seen if c not in known]
