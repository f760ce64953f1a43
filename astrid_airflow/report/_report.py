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

This module reads the inputs, writes and publishes; the distribution checks are
``_checks.py``, the page's HTML ``_sections.py``, the figures chosen and rendered
``_figures.py`` (drawn by ``_plots.py``).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from astrid_airflow._errors import ArtefactError, DataError, ParameterError, StoreError
from astrid_airflow.io import plain as _plain

from ._checks import ColumnCheck, distribution_checks
from ._figures import render_figures, report_figures
from ._sections import disclosure_html, page, release_html, tradeoff_html

REPORT_VERSION = 1
INDEX = "index.html"
REPORT_JSON = "report.json"
REPORT_FILES = ("accuracy.png", "grouping-matrix.png", "release.png", "distributions.png")
#: Keys a surrogate-metrics mapping must have (``astrid shuffle --json`` prints them).
METRIC_KEYS = ("intact_row_proportion", "expected_intact_row_proportion",
               "largest_group_unique_share", "accuracy_original", "accuracy_surrogate", "rows")


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
    checks, note, disclosure, metrics = _compare_tables(original, surrogate, result, art,
                                                        metrics)
    release_record = getattr(art, "release", None) if art is not None else None
    figs = report_figures(result, metrics, release_record, disclosure, checks)
    files, shown = render_figures(figs)
    generated = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    release = _release_section(result, metrics, checks, shown, note, disclosure,
                               release_record)
    page_title = title or ("ASTRID report: " + (ref or f"grouping of {result.target}"))
    files[INDEX] = page(result, art, ref, shown, release, page_title, data_docs,
                        generated).encode("utf-8")
    passed = None if checks is None else all(c.passed for c in checks)
    summary = _summary(result, ref, generated, figs, metrics, release_record, passed,
                       disclosure, checks)
    files[REPORT_JSON] = (json.dumps(_plain(summary), indent=2, allow_nan=False)
                          + "\n").encode("utf-8")
    directory = _publish(out_dir, files, overwrite)
    sep = "/" if "://" in directory else os.sep
    return WrittenReport(directory=directory, index=f"{directory}{sep}{INDEX}",
                         files=tuple(sorted(files)), distributions_passed=passed)


def _compare_tables(original: Any, surrogate: Any, result: Any, art: Any,
                    metrics: dict[str, Any] | None
                    ) -> tuple[list[ColumnCheck] | None, str | None, dict[str, Any] | None,
                               dict[str, Any] | None]:
    """``(checks, note, disclosure, metrics)`` from the original and surrogate tables:
    the distribution checks, a note when the metrics count other rows, the disclosure
    risk, and the metrics (the privacy ones computed from the tables when none were
    given). Without tables: ``(None, None, None, metrics)``."""
    checks = note = disclosure = None
    if original is not None:
        orig, surr = _table(original, "original"), _table(surrogate, "surrogate")
        if art is not None:
            orig, _ = art.without_identifiers(orig)
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
    return checks, note, disclosure, metrics


def _release_section(result: Any, metrics: Mapping[str, Any] | None,
                     checks: list[ColumnCheck] | None, shown: dict[str, str],
                     note: str | None, disclosure: Mapping[str, Any] | None,
                     release_record: Mapping[str, Any] | None) -> str:
    """The page's release part: the privacy-aware choice's candidates, then the release
    section (metrics, distribution checks, disclosure per group); "" when none apply."""
    release = release_html(metrics, checks, shown, result.k, note) \
        if metrics is not None or checks is not None else ""
    if disclosure is not None:
        release = release.replace("</section>", disclosure_html(disclosure, shown)
                                  + "</section>", 1)
    if release_record:
        release = tradeoff_html(release_record, shown.get("tradeoff.png", "")
                                + shown.get("frontier.png", "")) + release
    return release


def _summary(result: Any, ref: str | None, generated: str, figs: Mapping[str, Any],
             metrics: Mapping[str, Any] | None, release_record: Mapping[str, Any] | None,
             passed: bool | None, disclosure: Mapping[str, Any] | None,
             checks: list[ColumnCheck] | None) -> dict[str, Any]:
    """The numbers shown, for machines (``report.json``)."""
    return {"kind": "astrid-report", "report_version": REPORT_VERSION, "artefact": ref,
            "generated_at": generated, "k": result.k, "alpha": result.alpha,
            "grouping": result.grouping.to_list(), "order": list(result.order),
            "figures": [n for n in figs], "metrics": _plain(metrics),
            "release": _plain({k: v for k, v in (release_record or {}).items()
                               if k != "candidates"}) if release_record else None,
            "distributions_passed": passed, "disclosure": disclosure,
            "distribution_checks": None if checks is None else [c.to_dict()
                                                                for c in checks]}


def _disclosure(original: pd.DataFrame, surrogate: pd.DataFrame, result: Any
                ) -> dict[str, Any]:
    """Per-group disclosure and per-pair linkage of the release, judged
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
