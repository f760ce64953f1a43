"""The release gate's checks as Great Expectations 1.x custom expectations.

Every check of the gate is a table-level ``BatchExpectation`` with its own
``TableMetricProvider`` metric (named ``astrid.*``), evaluated on the surrogate batch:

==============================================================  =========  ==============
expectation                                                     category   metric
==============================================================  =========  ==============
``expect_surrogate_intact_row_proportion_to_be_at_most``        privacy    P_anon
``expect_surrogate_largest_group_unique_share_to_be_at_most``   privacy    linkage share
``expect_surrogate_group_share_below_k_to_be_at_most``           privacy    worst group
``expect_surrogate_group_class_disclosure_share_to_be_at_most``  privacy    worst group
``expect_surrogate_cross_group_linkage_to_be_at_most_expected``  privacy    worst pair
``expect_surrogate_singling_out_risk_to_be_at_most``             privacy    upper 95 % bound
``expect_surrogate_linkability_risk_to_be_at_most``              privacy    upper 95 % bound
``expect_surrogate_inference_risk_to_be_at_most``                privacy    upper 95 % bound
``expect_surrogate_accuracy_drop_to_be_at_most``                utility    acc_o - acc_s
``expect_surrogate_schema_to_match_original``                   integrity  differences
``expect_surrogate_row_count_to_match_original``                integrity  row count
``expect_surrogate_class_column_to_be_unchanged``               integrity  changed labels
``expect_surrogate_column_values_to_match_original_per_class``  integrity  (class, column)
``expect_surrogate_groups_to_match_original_per_class``         integrity  (class, group)
==============================================================  =========  ==============

Checks that compare the surrogate with the original table need the original. A GX
batch is one table, so the original is *bound* for the duration of one validation run
(:func:`bind_reference`) and named by an opaque handle that the expectations receive as
the ``reference`` kwarg (a ``$PARAMETER`` in the stored suite). The metric functions
themselves live in :mod:`._metrics` (privacy, utility) and below (integrity); this module
only adapts them to GX.

Great Expectations is imported lazily by :func:`import_gx` (its import takes seconds and
its loggers are noisy): ``import astrid_airflow`` never imports it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # the expectations' field types; the real ones come from _gx_kit()
    Threshold = float
    Reference = str
    Count = int

from astrid_airflow.io import native

__all__ = [
    "EXPECTATIONS",
    "bind_reference",
    "class_changes",
    "group_disclosure_values",
    "judge_attack",
    "judge_group_disclosure",
    "judge_linkage",
    "linkage_values",
    "import_gx",
    "quiet_gx_logging",
    "multiset_differences",
    "same_multiset",
    "register_expectations",
    "schema_differences",
]

#: GX type name -> (category, metric name, policy parameter or None). The order is the
#: order of the suite and of every report.
EXPECTATIONS: dict[str, tuple[str, str, str | None]] = {
    "expect_surrogate_intact_row_proportion_to_be_at_most":
        ("privacy", "astrid.intact_row_proportion", "max_intact"),
    "expect_surrogate_largest_group_unique_share_to_be_at_most":
        ("privacy", "astrid.largest_group_unique_share", "max_largest_group_unique_share"),
    "expect_surrogate_group_share_below_k_to_be_at_most":
        ("privacy", "astrid.group_disclosure", "max_share_below_k"),
    "expect_surrogate_group_class_disclosure_share_to_be_at_most":
        ("privacy", "astrid.group_disclosure", "max_class_disclosure_share"),
    "expect_surrogate_cross_group_linkage_to_be_at_most_expected":
        ("privacy", "astrid.cross_group_linkage", "max_linkage_excess"),
    "expect_surrogate_singling_out_risk_to_be_at_most":
        ("privacy", "astrid.attack_risks", "max_singling_out_risk"),
    "expect_surrogate_linkability_risk_to_be_at_most":
        ("privacy", "astrid.attack_risks", "max_linkability_risk"),
    "expect_surrogate_inference_risk_to_be_at_most":
        ("privacy", "astrid.attack_risks", "max_inference_risk"),
    "expect_surrogate_accuracy_drop_to_be_at_most":
        ("utility", "astrid.surrogate_utility", "max_accuracy_drop"),
    "expect_surrogate_schema_to_match_original":
        ("integrity", "astrid.schema_differences", None),
    "expect_surrogate_row_count_to_match_original":
        ("integrity", "astrid.reference_row_count", None),
    "expect_surrogate_class_column_to_be_unchanged":
        ("integrity", "astrid.class_changes", None),
    "expect_surrogate_column_values_to_match_original_per_class":
        ("integrity", "astrid.multiset_differences", None),
    "expect_surrogate_groups_to_match_original_per_class":
        ("integrity", "astrid.multiset_differences", None),
}

_EPS = 1e-9  # floating-point slack of the "at most" comparisons
_MAX_DETAILS = 20  # differences listed in a result; the count is always complete


# ------------------------------------------------------------------------ GX import

def import_gx(*, verbose: bool = False) -> Any:
    """Import ``great_expectations`` with its logging kept at WARNING unless ``verbose``.

    The level must be set before the import: GX logs hundreds of INFO lines while its
    modules load (more inside an Airflow task, whose root logger is at INFO). Some GX
    modules also pin their own logger to INFO, so :func:`quiet_gx_logging` runs again
    after the import.
    """
    quiet_gx_logging(verbose=verbose)
    with warnings.catch_warnings():
        # GX imports PySpark when it is installed (its Spark datasource), and PySpark
        # warns about pandas 3 on import: noise for a gate that never uses Spark.
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark(\.|$)")
        import great_expectations as gx

    quiet_gx_logging(verbose=verbose)
    return gx


def quiet_gx_logging(*, verbose: bool = False) -> None:
    """Set GX's loggers to WARNING (DEBUG with ``verbose``), children included."""
    level = logging.DEBUG if verbose else logging.WARNING
    logging.getLogger("great_expectations").setLevel(level)
    if verbose:
        return
    for name, logger in list(logging.root.manager.loggerDict.items()):
        # e.g. great_expectations.data_context.types.base sets itself to INFO on import
        if name.startswith("great_expectations.") and isinstance(logger, logging.Logger) \
                and logger.level not in (logging.NOTSET,) and logger.level < level:
            logger.setLevel(logging.NOTSET)


# ------------------------------------------------------------------ bound references

@dataclass
class _Reference:
    original: pd.DataFrame
    target: str
    utility: Callable[[], Mapping[str, Any]]
    attacks: Callable[[list, int], Mapping[str, Any] | None] | None = None
    _utility_value: Mapping[str, Any] | None = field(default=None, repr=False)
    _attack_values: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attack_value(self, grouping: list, n_attacks: int) -> Mapping[str, Any] | None:
        """The shadow attacks, computed once per run for the three attack checks."""
        key = (json.dumps(grouping), int(n_attacks))
        with self._lock:
            if key not in self._attack_values:
                self._attack_values[key] = None if self.attacks is None else \
                    self.attacks(grouping, int(n_attacks))
            return self._attack_values[key]

    def utility_value(self) -> Mapping[str, Any]:
        with self._lock:  # computed once per run, however many expectations ask
            if self._utility_value is None:
                self._utility_value = dict(self.utility())
            return self._utility_value


_REFERENCES: dict[str, _Reference] = {}
_REFERENCES_LOCK = threading.Lock()


@contextlib.contextmanager
def bind_reference(original: pd.DataFrame, *, target: str,
                   utility: Callable[[], Mapping[str, Any]],
                   attacks: Callable[[list, int], Mapping[str, Any] | None] | None = None
                   ) -> Iterator[str]:
    """Make ``original`` available to the gate's metrics; yield its handle.

    Parameters
    ----------
    original : DataFrame
        The table the surrogate was made from.
    target : str
        The class column.
    utility : callable
        Returns ``{"accuracy_original", "accuracy_surrogate", ...}``; called at most once,
        when the utility expectation is evaluated.
    attacks : callable, optional
        ``attacks(grouping, n_attacks)`` returns the attack-based risks of a shadow
        release (``_risk.shadow_attacks``) or None; called once per grouping and count.

    Yields
    ------
    str
        The handle to pass as the ``reference`` suite parameter. It is forgotten when
        the ``with`` block ends, so a stale handle fails loudly instead of validating
        against the wrong table.
    """
    handle = f"original-{uuid.uuid4().hex[:12]}"
    with _REFERENCES_LOCK:
        _REFERENCES[handle] = _Reference(original=original, target=target, utility=utility,
                                         attacks=attacks)
    try:
        yield handle
    finally:
        with _REFERENCES_LOCK:
            _REFERENCES.pop(handle, None)


def _reference(handle: object) -> _Reference:
    with _REFERENCES_LOCK:
        ref = _REFERENCES.get(handle) if isinstance(handle, str) else None
    if ref is None:
        raise LookupError(f"No original table is bound to reference {handle!r}; run the "
                          "suite through astrid_airflow.validate_surrogate.")
    return ref


# ------------------------------------------------------------------- integrity metrics

def schema_differences(original: pd.DataFrame, surrogate: pd.DataFrame) -> list[str]:
    """Differences in column names, order and kinds (``integer``, ``float``, ``string``...).

    Kinds rather than exact dtypes are compared (as the artefact's schema check does):
    ``str`` and ``object`` strings, or a nominal column read as ``category`` from
    Parquet and as ``str`` from CSV, are the same data.
    """
    from astrid_airflow.release import column_kind

    out = []
    a, b = [str(c) for c in original.columns], [str(c) for c in surrogate.columns]
    missing = [c for c in a if c not in b]
    extra = [c for c in b if c not in a]
    if missing:
        out.append(f"missing column(s) {missing}")
    if extra:
        out.append(f"unexpected column(s) {extra}")
    if not missing and not extra and a != b:
        out.append(f"columns in another order: {b} instead of {a}")
    for c in a:
        if c in b:
            ka, kb = column_kind(original[c]), column_kind(surrogate[c])
            if ka != kb:
                out.append(f"column {c!r} is {kb} ({surrogate[c].dtype}) instead of "
                           f"{ka} ({original[c].dtype})")
    return out


def class_changes(original: pd.DataFrame, surrogate: pd.DataFrame, target: str) -> int:
    """Number of rows whose class label differs from the original's, row for row.

    Rows present in only one table count as changed; a missing class column changes
    every row.
    """
    n = max(len(original), len(surrogate))
    if target not in surrogate.columns or target not in original.columns:
        return n
    from astrid_airflow.release import row_hashes

    m = min(len(original), len(surrogate))
    # Hashes of the labels: a categorical and its plain values, or 1 and 1.0, agree.
    a = row_hashes(original.iloc[:m], [target])
    b = row_hashes(surrogate.iloc[:m], [target])
    return int(np.count_nonzero(a != b)) + (n - m)


def multiset_differences(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                         groups: Sequence[Sequence[str]] | None = None) -> list[dict]:
    """(class, columns) pairs whose multiset of values differs from the original's.

    For every class label and every group of columns (every column on its own when
    ``groups`` is None), the multiset of the group's value tuples over the rows of that
    class must be identical in both tables. A GoldenEye shuffle with a grouping
    guarantees this for every group of that grouping (and for every column), so any
    difference is a bug, tampering, or a surrogate made with another grouping. Values
    are compared through the 64-bit row hashes of :func:`._metrics.row_hashes` (equal
    values hash equally across containers; a false match has probability ~2^-64).

    Returns
    -------
    list of dict
        ``{"class", "columns", "rows_original", "rows_surrogate", "differing_values"}``
        per differing pair; ``differing_values`` counts tuples in one table but not the
        other (with multiplicity). Empty when the tables agree.
    """
    if target not in original.columns or target not in surrogate.columns:
        return [{"class": None, "columns": [target], "rows_original": len(original),
                 "rows_surrogate": len(surrogate), "differing_values": None}]
    from astrid_airflow.release import row_hashes

    if groups is None:
        groups = [[c] for c in original.columns if c != target]
    # Classes are matched by the hash of their label, so 1 and 1.0 or a categorical and
    # its string values are the same class in both tables.
    la, lb = row_hashes(original, [target]), row_hashes(surrogate, [target])
    uniques, inverse = np.unique(np.concatenate([la, lb]), return_inverse=True)
    ca, cb = inverse[:len(original)], inverse[len(original):]
    seen, first = np.unique(la, return_index=True)
    label_of = dict(zip(seen.tolist(), original[target].iloc[first].tolist()))
    out = []
    for cols in groups:
        cols = [str(c) for c in cols]
        if any(c not in surrogate.columns or c not in original.columns for c in cols):
            out.append({"class": None, "columns": cols, "rows_original": len(original),
                        "rows_surrogate": len(surrogate), "differing_values": None})
            continue
        ha, hb = row_hashes(original, cols), row_hashes(surrogate, cols)
        for k in range(len(uniques)):
            va, vb = np.sort(ha[ca == k]), np.sort(hb[cb == k])
            if same_multiset(va, vb):
                continue
            label = label_of.get(int(uniques[k]), "(only in the surrogate)")
            out.append({"class": _scalar(label), "columns": cols,
                        "rows_original": int(va.size), "rows_surrogate": int(vb.size),
                        "differing_values": _sorted_difference(va, vb)})
    return out


def same_multiset(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays of row hashes (:func:`._metrics.row_hashes`) hold one multiset.

    The one per-class multiset check: the gate's integrity expectation and the release
    report's per-class comparison both use it.
    """
    return a.shape == b.shape and np.array_equal(np.sort(a), np.sort(b))


def _sorted_difference(a: np.ndarray, b: np.ndarray) -> int:
    """Size of the symmetric multiset difference of two sorted arrays."""
    values = np.union1d(a, b)
    ca = np.searchsorted(a, values, side="right") - np.searchsorted(a, values, side="left")
    cb = np.searchsorted(b, values, side="right") - np.searchsorted(b, values, side="left")
    return int(np.abs(ca - cb).sum())


def _scalar(value: Any) -> Any:
    value = native(value)
    if isinstance(value, float) and value != value:
        return None
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def _utility_observation(u: Mapping[str, Any]) -> tuple[float, dict]:
    acc_o, acc_s = float(u["accuracy_original"]), float(u["accuracy_surrogate"])
    details = {k: _scalar(v) if not isinstance(v, (list, dict)) else v for k, v in u.items()}
    return acc_o - acc_s, details


# ------------------------------------------------------------ disclosure metrics

def _present_groups(grouping: Sequence[Sequence[str]], *tables: pd.DataFrame
                    ) -> list[list[str]]:
    """The grouping restricted to the columns every table has (a missing column is an
    integrity failure of its own; privacy is measured on what is there)."""
    groups = [[str(c) for c in g if all(str(c) in t.columns for t in tables)]
              for g in grouping]
    return [g for g in groups if g]


def group_disclosure_values(surrogate: pd.DataFrame, target: str,
                            grouping: Sequence[Sequence[str]], k: int) -> list[dict] | None:
    """``GroupDisclosure.to_dict()`` of every group of ``surrogate``, or None when it
    cannot be measured (no class column, no rows, none of the grouping's columns)."""
    from astrid_airflow.privacy import group_disclosure

    groups = _present_groups(grouping, surrogate)
    if target not in surrogate.columns or len(surrogate) == 0 or not groups:
        return None
    return [d.to_dict() for d in group_disclosure(surrogate, target=target,
                                                  grouping=groups, k=int(k))]


def linkage_values(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                   grouping: Sequence[Sequence[str]]) -> list[dict] | None:
    """``PairLinkage.to_dict()`` of every pair of groups, or None when it cannot be
    measured (no class column or no rows on either side)."""
    from astrid_airflow.privacy import cross_group_linkage

    groups = _present_groups(grouping, original, surrogate)
    if target not in surrogate.columns or target not in original.columns \
            or len(surrogate) == 0 or len(original) == 0 or not groups:
        return None
    return [p.to_dict() for p in cross_group_linkage(original, surrogate, target=target,
                                                     grouping=groups)]


_UNMEASURED = ("cannot be measured: the surrogate or the original lacks the class column, "
               "rows or the grouping's columns (see the integrity checks); failed to be safe")


def judge_group_disclosure(groups: list[dict] | None, measure: str, threshold: float
                           ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of a per-group check: the worst group's ``measure``
    (``share_below_k`` or ``class_disclosure_share``) must be at most ``threshold``."""
    if groups is None:
        return False, None, {"note": _UNMEASURED}
    worst = max(groups, key=lambda g: g[measure])  # first such in the grouping's order
    failing = [g for g in groups if g[measure] > threshold + _EPS]
    details = {"group": worst["columns"], "k": worst["k"], "k_min": worst["k_min"],
               "share_below_k": worst["share_below_k"],
               "class_disclosure_share": worst["class_disclosure_share"],
               "failing_groups": [g["columns"] for g in failing][:_MAX_DETAILS],
               "n_failing_groups": len(failing), "groups": groups}
    return not failing, float(worst[measure]), details


def judge_linkage(pairs: list[dict] | None, threshold: float
                  ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of the cross-group linkage check.

    Every pair's ``excess = linked_share - expected_linked_share`` must be at most its
    tolerance ``max(threshold, LINKAGE_Z * sd_linked_share)``; the observed value is
    the excess of the pair closest to (or furthest over) its tolerance.
    """
    from astrid_airflow.privacy import LINKAGE_Z

    if pairs is None:
        return False, None, {"note": _UNMEASURED}
    if not pairs:
        return True, 0.0, {"note": "one group: no pairs to link", "pairs": []}
    judged = [{**p, "tolerance": max(threshold, LINKAGE_Z * p["sd_linked_share"])}
              for p in pairs]
    worst = max(judged, key=lambda p: p["excess"] - p["tolerance"])
    failing = [p for p in judged if p["excess"] > p["tolerance"] + _EPS]
    details = {"pair": worst["groups"], "linked_share": worst["linked_share"],
               "expected_linked_share": worst["expected_linked_share"],
               "sd_linked_share": worst["sd_linked_share"], "tolerance": worst["tolerance"],
               "z": LINKAGE_Z,
               "failing_pairs": [p["groups"] for p in failing][:_MAX_DETAILS],
               "n_failing_pairs": len(failing), "pairs": judged[:200]}
    return not failing, float(worst["excess"]), details


def _attack_label(r: Mapping[str, Any]) -> str:
    if r.get("secret") is not None:
        known = r.get("aux_columns") or []
        return (f"inference of {r['secret']} from "
                + (",".join(known) if len(known) <= 3 else f"{len(known)} columns"))
    return f"{r['attack'].replace('_', '-')}, {r.get('variant')}"


def judge_attack(values: Mapping[str, Any] | None, attack: str, threshold: float
                 ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of an attack-based check (Giomi et al. 2023).

    Every variant of ``attack`` (``singling_out``, ``linkability`` or ``inference``) must
    have its upper 95 % bound at most ``threshold``; the observed value is the highest
    upper bound, and the details name the attack (and secret) it belongs to.
    """
    if values is None or not values.get(attack):
        return False, None, {"note": _UNMEASURED}
    risks = list(values[attack])
    worst = max(risks, key=lambda r: (r["ci"][1], r["risk"]))
    failing = [r for r in risks if r["ci"][1] > threshold + _EPS]
    details = {"attack": _attack_label(worst), "risk": worst["risk"], "ci": worst["ci"],
               "n_attacks": worst["n_attacks"], "attack_n": values.get("n_attacks"),
               "control": values.get("control"),
               "shadow": values.get("shadow"), "random_state": values.get("random_state"),
               "failing_attacks": [_attack_label(r) for r in failing][:_MAX_DETAILS],
               "n_failing_attacks": len(failing), "risks": risks[:_MAX_DETAILS]}
    if worst.get("note"):
        details["note"] = worst["note"]
    return not failing, float(worst["ci"][1]), details


# ---------------------------------------------------------------- GX registration

_REGISTERED: dict[str, type] = {}
_REGISTER_LOCK = threading.Lock()


def register_expectations(*, verbose: bool = False) -> dict[str, type]:
    """Define and register the gate's metrics and expectations with GX (idempotent).

    Returns the expectation classes by GX type name. GX finds expectation classes by
    that name when a suite is loaded from JSON, so this must run before
    :func:`~astrid_airflow.gate._gate.load_suite`.
    """
    with _REGISTER_LOCK:
        if not _REGISTERED:
            import_gx(verbose=verbose)
            _REGISTERED.update(_define())
        return dict(_REGISTERED)


def _gx_kit() -> SimpleNamespace:
    """What every factory below needs from GX (imported here, lazily), plus two helpers."""
    from typing import Union

    from great_expectations.core.suite_parameters import SuiteParameterDict
    from great_expectations.execution_engine import PandasExecutionEngine
    from great_expectations.expectations.expectation import (
        BatchExpectation,
        render_suite_parameter_string,
    )
    from great_expectations.expectations.metrics.metric_provider import metric_value
    from great_expectations.expectations.metrics.table_metric_provider import (
        TableMetricProvider,
    )
    from great_expectations.render import (
        LegacyRendererType,
        RenderedStringTemplateContent,
    )
    from great_expectations.render.renderer.renderer import renderer

    def table_of(engine: Any, domain_kwargs: dict) -> pd.DataFrame:
        df, _, _ = engine.get_compute_domain(domain_kwargs, domain_type="table")
        return df

    def prescriptive(template: str, params: Sequence[str]):
        """A Data Docs sentence for an expectation (GX shows raw kwargs otherwise)."""

        @classmethod
        @renderer(renderer_type=LegacyRendererType.PRESCRIPTIVE)
        @render_suite_parameter_string
        def _prescriptive_renderer(cls, configuration=None, result=None,
                                   runtime_configuration=None):
            if configuration is None and result is not None:
                configuration = result.expectation_config
            from astrid_airflow.report import text

            kwargs = dict(configuration.kwargs) if configuration is not None else {}
            # GX substitutes params into the page unescaped: a column named
            # "<script>..." must reach it as text (numbers and $PARAMETERs pass as is)
            values = {p: kwargs.get(p) if isinstance(kwargs.get(p), (int, float, dict))
                      else text(kwargs.get(p)) for p in params}
            return [RenderedStringTemplateContent(
                content_block_type="string_template",
                string_template={"template": template, "params": values,
                                 "styling": (runtime_configuration or {}).get("styling", {})},
            )]

        return _prescriptive_renderer

    return SimpleNamespace(
        TableMetricProvider=TableMetricProvider, BatchExpectation=BatchExpectation,
        metric_value=metric_value, PandasExecutionEngine=PandasExecutionEngine,
        table_of=table_of, prescriptive=prescriptive,
        # pydantic v1 field types of the expectations' parameters
        Threshold=Union[float, SuiteParameterDict],  # noqa: UP007
        Reference=Union[str, SuiteParameterDict],  # noqa: UP007
        Count=Union[int, SuiteParameterDict],  # noqa: UP007
    )


# ------------------------------------------------------------------ metrics
# One factory per GX class (GX's own layout: one module per expectation, which the
# layout move brings); a metric registers itself with GX when its class is defined.

def _intact_row_proportion(kit: SimpleNamespace) -> type:
    class IntactRowProportion(kit.TableMetricProvider):
        metric_name = "astrid.intact_row_proportion"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            from astrid_airflow.release import intact_row_proportion

            ref = _reference(metric_value_kwargs["reference"])
            surrogate = kit.table_of(execution_engine, metric_domain_kwargs)
            # On the columns both tables have: a dropped column (an integrity failure
            # of its own) must not hide rows that are intact on the others.
            columns = [c for c in ref.original.columns if c in surrogate.columns]
            if not columns:
                return 0.0
            return float(intact_row_proportion(ref.original, surrogate, columns=columns))

    return IntactRowProportion


def _largest_group_unique_share(kit: SimpleNamespace) -> type:
    class LargestGroupUniqueShare(kit.TableMetricProvider):
        metric_name = "astrid.largest_group_unique_share"
        value_keys = ("grouping",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            from astrid_airflow.engine import Grouping
            from astrid_airflow.release import largest_group_unique_share

            table = kit.table_of(execution_engine, metric_domain_kwargs)
            # Columns missing from the surrogate are an integrity failure; measure the
            # groups on what is there.
            groups = [[c for c in g if c in table.columns]
                      for g in metric_value_kwargs["grouping"]]
            groups = [g for g in groups if g]
            if not groups or len(table) == 0:
                return 0.0
            return _share_value(largest_group_unique_share(table, Grouping(groups)))

    return LargestGroupUniqueShare


def _group_disclosure_metric(kit: SimpleNamespace) -> type:
    class GroupDisclosureMetric(kit.TableMetricProvider):
        metric_name = "astrid.group_disclosure"
        value_keys = ("reference", "grouping", "k")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            return group_disclosure_values(
                kit.table_of(execution_engine, metric_domain_kwargs), ref.target,
                metric_value_kwargs["grouping"], int(metric_value_kwargs["k"]))

    return GroupDisclosureMetric


def _cross_group_linkage(kit: SimpleNamespace) -> type:
    class CrossGroupLinkage(kit.TableMetricProvider):
        metric_name = "astrid.cross_group_linkage"
        value_keys = ("reference", "grouping")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            return linkage_values(ref.original,
                                  kit.table_of(execution_engine, metric_domain_kwargs),
                                  ref.target, metric_value_kwargs["grouping"])

    return CrossGroupLinkage


def _attack_risks(kit: SimpleNamespace) -> type:
    class AttackRisks(kit.TableMetricProvider):
        metric_name = "astrid.attack_risks"
        value_keys = ("reference", "grouping", "n")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            return ref.attack_value([list(g) for g in metric_value_kwargs["grouping"]],
                                    int(metric_value_kwargs["n"]))

    return AttackRisks


def _surrogate_utility(kit: SimpleNamespace) -> type:
    class SurrogateUtility(kit.TableMetricProvider):
        metric_name = "astrid.surrogate_utility"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            return dict(_reference(metric_value_kwargs["reference"]).utility_value())

    return SurrogateUtility


def _schema_differences(kit: SimpleNamespace) -> type:
    class SchemaDifferences(kit.TableMetricProvider):
        metric_name = "astrid.schema_differences"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            return schema_differences(ref.original,
                                      kit.table_of(execution_engine, metric_domain_kwargs))

    return SchemaDifferences


def _reference_row_count(kit: SimpleNamespace) -> type:
    class ReferenceRowCount(kit.TableMetricProvider):
        metric_name = "astrid.reference_row_count"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            return len(_reference(metric_value_kwargs["reference"]).original)

    return ReferenceRowCount


def _class_changes(kit: SimpleNamespace) -> type:
    class ClassChanges(kit.TableMetricProvider):
        metric_name = "astrid.class_changes"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            return class_changes(ref.original, kit.table_of(execution_engine,
                                                        metric_domain_kwargs), ref.target)

    return ClassChanges


def _multiset_differences(kit: SimpleNamespace) -> type:
    class MultisetDifferences(kit.TableMetricProvider):
        metric_name = "astrid.multiset_differences"
        value_keys = ("reference", "groups")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = _reference(metric_value_kwargs["reference"])
            groups = metric_value_kwargs.get("groups")
            return multiset_differences(
                ref.original, kit.table_of(execution_engine, metric_domain_kwargs), ref.target,
                None if groups is None else [list(g) for g in groups])

    return MultisetDifferences


# ----------------------------------------------------------- expectations
# Plain mixins (not Expectation subclasses, which GX would register by name).

class _AtMost:
    """A scalar metric of the surrogate at most ``threshold``."""

    def _observe(self, metrics: dict) -> tuple[float, dict]:
        value = metrics[self.metric_dependencies[0]]
        return float(value), {}

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        observed, details = self._observe(metrics)
        threshold = float(self.configuration.kwargs["threshold"])
        # Accuracies are fractions k/n: 0.96 - 0.94 must not exceed 0.02 by rounding.
        return {"success": bool(observed <= threshold + _EPS),
                "result": {"observed_value": observed,
                           "details": {"threshold": threshold, **details}}}


class _WorstGroup:
    """The worst group's ``measure`` at most ``threshold`` (the failing groups named)."""

    measure: ClassVar[str] = ""

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        threshold = float(self.configuration.kwargs["threshold"])
        ok, observed, details = judge_group_disclosure(
            metrics["astrid.group_disclosure"], self.measure, threshold)
        details = {"threshold": threshold, **details}
        if "k" not in details and "k" in self.configuration.kwargs:  # not measured
            details["k"] = int(self.configuration.kwargs["k"])
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": details}}


class _AttackAtMost:
    """Every variant of one attack with its upper 95 % bound at most ``threshold``."""

    attack: ClassVar[str] = ""

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        threshold = float(self.configuration.kwargs["threshold"])
        ok, observed, details = judge_attack(metrics["astrid.attack_risks"],
                                             self.attack, threshold)
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": {"threshold": threshold, **details}}}


class _NoDifferences:
    """An integrity metric reporting a list (or count) of differences."""

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        found = metrics[self.metric_dependencies[0]]
        count = found if isinstance(found, int) else len(found)
        details: dict[str, Any] = {"threshold": 0}
        if not isinstance(found, int):
            details["differences"] = list(found)[:_MAX_DETAILS]
        return {"success": count == 0,
                "result": {"observed_value": int(count), "details": details}}


def _expect_surrogate_intact_row_proportion_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateIntactRowProportionToBeAtMost(_AtMost, kit.BatchExpectation):
        """Privacy: the proportion of the original's unique rows found unchanged in the
        surrogate (the paper's P_anon, Sec. 6.2) is at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.intact_row_proportion",)
        _prescriptive_renderer = kit.prescriptive(
            "Intact-row proportion (share of the original's unique rows found unchanged "
            "in the surrogate) must be at most $threshold.", ["threshold"])

    return ExpectSurrogateIntactRowProportionToBeAtMost


def _expect_surrogate_largest_group_unique_share_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateLargestGroupUniqueShareToBeAtMost(_AtMost, kit.BatchExpectation):
        """Privacy: for the grouping's largest group, the share of rows whose values on
        that group's columns are unique in the table is at most ``threshold``."""

        threshold: Threshold
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        grouping: list
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "grouping")
        metric_dependencies: ClassVar[tuple[str, ...]] = (
            "astrid.largest_group_unique_share",)
        _prescriptive_renderer = kit.prescriptive(
            "Share of rows unique on the largest group's columns (linkage risk) must be "
            "at most $threshold.", ["threshold"])

    return ExpectSurrogateLargestGroupUniqueShareToBeAtMost


def _expect_surrogate_group_share_below_k_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupShareBelowKToBeAtMost(_WorstGroup, kit.BatchExpectation):
        """Privacy: for every group of the grouping, the share of rows whose (group
        values, class) combination is shared by fewer than ``k`` rows is at most
        ``threshold`` (k-anonymity of each group's projection with a suppression
        budget; Hundepool et al. 2012)."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        k: Count = 5
        measure: ClassVar[str] = "share_below_k"
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "k")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.group_disclosure",)
        _prescriptive_renderer = kit.prescriptive(
            "In every group, the share of rows whose group values and class are shared "
            "by fewer than $k rows must be at most $threshold.", ["threshold", "k"])

    return ExpectSurrogateGroupShareBelowKToBeAtMost


def _expect_surrogate_group_class_disclosure_share_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupClassDisclosureShareToBeAtMost(_WorstGroup, kit.BatchExpectation):
        """Privacy: for every group, the share of rows whose group values occur in one
        class only (so they disclose the class: distinct l-diversity with l = 2 fails)
        is at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        k: Count = 5
        measure: ClassVar[str] = "class_disclosure_share"
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "k")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.group_disclosure",)
        _prescriptive_renderer = kit.prescriptive(
            "In every group, the share of rows whose group values occur in one class only "
            "(class disclosure) must be at most $threshold.", ["threshold"])

    return ExpectSurrogateGroupClassDisclosureShareToBeAtMost


def _expect_surrogate_cross_group_linkage_to_be_at_most_expected(kit: SimpleNamespace) -> type:
    class ExpectSurrogateCrossGroupLinkageToBeAtMostExpected(kit.BatchExpectation):
        """Privacy: for every pair of groups, the share of rows whose two group tuples
        still sit together as in an original row of the same class exceeds its
        expectation under independent within-class shuffles by at most
        ``max(threshold, 6 sd)``: the groups really were shuffled independently."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.cross_group_linkage",)
        _prescriptive_renderer = kit.prescriptive(
            "For every pair of groups, the share of rows still linked as in the original "
            "must exceed its expectation under independent shuffles by at most "
            "$threshold (or 6 standard deviations, if larger).", ["threshold"])

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
            threshold = float(self.configuration.kwargs["threshold"])
            ok, observed, details = judge_linkage(metrics["astrid.cross_group_linkage"],
                                                  threshold)
            return {"success": ok, "result": {"observed_value": observed,
                                              "details": {"threshold": threshold, **details}}}

    return ExpectSurrogateCrossGroupLinkageToBeAtMostExpected


def _expect_surrogate_singling_out_risk_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateSinglingOutRiskToBeAtMost(_AttackAtMost, kit.BatchExpectation):
        """Privacy: the singling-out risk of Giomi et al. (PETS 2023), univariate and
        multivariate predicates, on a shadow release of the original (a GoldenEye
        surrogate of a random half, the rest as control), has its upper 95 % bound at
        most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "n")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.attack_risks",)
        attack: ClassVar[str] = "singling_out"
        _prescriptive_renderer = kit.prescriptive(
            "Singling-out risk (Giomi et al. 2023; shadow release, $n attacks) must have "
            "its upper 95 % bound at most $threshold.", ["threshold", "n"])

    return ExpectSurrogateSinglingOutRiskToBeAtMost


def _expect_surrogate_linkability_risk_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateLinkabilityRiskToBeAtMost(_AttackAtMost, kit.BatchExpectation):
        """Privacy: the linkability risk of Giomi et al. (the attacker's two column sets
        cut the largest group, or split at random), on a shadow release, has its upper
        95 % bound at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "n")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.attack_risks",)
        attack: ClassVar[str] = "linkability"
        _prescriptive_renderer = kit.prescriptive(
            "Linkability risk (Giomi et al. 2023; shadow release, $n attacks) must have "
            "its upper 95 % bound at most $threshold.", ["threshold", "n"])

    return ExpectSurrogateLinkabilityRiskToBeAtMost


def _expect_surrogate_inference_risk_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateInferenceRiskToBeAtMost(_AttackAtMost, kit.BatchExpectation):
        """Privacy: the inference risk of Giomi et al. for every secret (the class from
        the attributes or from one column, each member of a multi-column group from its
        group-mates), on a shadow release, has its upper 95 % bound at most
        ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "n")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.attack_risks",)
        attack: ClassVar[str] = "inference"
        _prescriptive_renderer = kit.prescriptive(
            "Inference risk of every secret (Giomi et al. 2023; shadow release, $n "
            "attacks) must have its upper 95 % bound at most $threshold.",
            ["threshold", "n"])

    return ExpectSurrogateInferenceRiskToBeAtMost


def _expect_surrogate_accuracy_drop_to_be_at_most(kit: SimpleNamespace) -> type:
    class ExpectSurrogateAccuracyDropToBeAtMost(_AtMost, kit.BatchExpectation):
        """Utility: accuracy of the classifier trained on a surrogate is at least the
        accuracy of the one trained on the original minus ``threshold``, both scored on
        the same held-out original rows."""

        threshold: Threshold
        reference: Reference = ""
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.surrogate_utility",)
        _prescriptive_renderer = kit.prescriptive(
            "Surrogate accuracy must be at least the original accuracy minus $threshold "
            "(train on surrogate, test on the same held-out real rows).", ["threshold"])

        def _observe(self, metrics: dict) -> tuple[float, dict]:
            return _utility_observation(metrics["astrid.surrogate_utility"])

    return ExpectSurrogateAccuracyDropToBeAtMost


def _expect_surrogate_schema_to_match_original(kit: SimpleNamespace) -> type:
    class ExpectSurrogateSchemaToMatchOriginal(_NoDifferences, kit.BatchExpectation):
        """Integrity: same columns, in the same order, of the same kinds."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.schema_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Columns, their order and their types must match the original (differences "
            "must be 0).", [])

    return ExpectSurrogateSchemaToMatchOriginal


def _expect_surrogate_row_count_to_match_original(kit: SimpleNamespace) -> type:
    class ExpectSurrogateRowCountToMatchOriginal(kit.BatchExpectation):
        """Integrity: the surrogate has exactly as many rows as the original."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = (
            "table.row_count", "astrid.reference_row_count")
        _prescriptive_renderer = kit.prescriptive(
            "Must have exactly as many rows as the original.", [])

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
            rows, expected = int(metrics["table.row_count"]), \
                int(metrics["astrid.reference_row_count"])
            return {"success": rows == expected,
                    "result": {"observed_value": rows, "details": {"threshold": expected}}}

    return ExpectSurrogateRowCountToMatchOriginal


def _expect_surrogate_class_column_to_be_unchanged(kit: SimpleNamespace) -> type:
    class ExpectSurrogateClassColumnToBeUnchanged(_NoDifferences, kit.BatchExpectation):
        """Integrity: the class column equals the original's, row for row."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.class_changes",)
        _prescriptive_renderer = kit.prescriptive(
            "The class column must equal the original's row for row (changed labels "
            "must be 0).", [])

    return ExpectSurrogateClassColumnToBeUnchanged


def _expect_surrogate_column_values_to_match_original_per_class(kit: SimpleNamespace) -> type:
    class ExpectSurrogateColumnValuesToMatchOriginalPerClass(_NoDifferences, kit.BatchExpectation):
        """Integrity: within every class, every column has the original's multiset of
        values (what a GoldenEye shuffle guarantees)."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.multiset_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Within every class, every column must hold the original's multiset of values "
            "(differing class/column pairs must be 0).", [])

    return ExpectSurrogateColumnValuesToMatchOriginalPerClass


def _expect_surrogate_groups_to_match_original_per_class(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupsToMatchOriginalPerClass(_NoDifferences, kit.BatchExpectation):
        """Integrity: within every class, the value tuples of every group of the
        artefact's grouping have the original's multiset, i.e. the surrogate was
        shuffled with this grouping (or a coarser one), not a finer one."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        groups: list
        success_keys: ClassVar[tuple[str, ...]] = ("reference", "groups")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.multiset_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Within every class, the columns of each group $groups must move together: "
            "each group's value tuples must keep the original's multiset (differing "
            "class/group pairs must be 0).", ["groups"])

    return ExpectSurrogateGroupsToMatchOriginalPerClass


#: The registry: every metric, then every expectation in suite order (EXPECTATIONS).
METRIC_FACTORIES = (
    _intact_row_proportion,
    _largest_group_unique_share,
    _group_disclosure_metric,
    _cross_group_linkage,
    _attack_risks,
    _surrogate_utility,
    _schema_differences,
    _reference_row_count,
    _class_changes,
    _multiset_differences,
)
EXPECTATION_FACTORIES = (
    _expect_surrogate_intact_row_proportion_to_be_at_most,
    _expect_surrogate_largest_group_unique_share_to_be_at_most,
    _expect_surrogate_group_share_below_k_to_be_at_most,
    _expect_surrogate_group_class_disclosure_share_to_be_at_most,
    _expect_surrogate_cross_group_linkage_to_be_at_most_expected,
    _expect_surrogate_singling_out_risk_to_be_at_most,
    _expect_surrogate_linkability_risk_to_be_at_most,
    _expect_surrogate_inference_risk_to_be_at_most,
    _expect_surrogate_accuracy_drop_to_be_at_most,
    _expect_surrogate_schema_to_match_original,
    _expect_surrogate_row_count_to_match_original,
    _expect_surrogate_class_column_to_be_unchanged,
    _expect_surrogate_column_values_to_match_original_per_class,
    _expect_surrogate_groups_to_match_original_per_class,
)


def _define() -> dict[str, type]:
    """Define every metric and expectation class (GX registers them on definition)."""
    kit = _gx_kit()
    for factory in METRIC_FACTORIES:
        factory(kit)
    classes = [factory(kit) for factory in EXPECTATION_FACTORIES]
    for cls in classes:  # annotations are strings here (PEP 563); pydantic resolves them
        cls.update_forward_refs(Threshold=kit.Threshold, Reference=kit.Reference,
                                Count=kit.Count)
    out = {cls.expectation_type: cls for cls in classes}
    assert list(out) == list(EXPECTATIONS), "EXPECTATIONS and the classes disagree"
    return out


def _share_value(value: Any) -> float:
    """The share from ``largest_group_unique_share`` (a number, or a mapping with it)."""
    if isinstance(value, Mapping):
        for key in ("largest_group_unique_share", "share", "value"):
            if key in value:
                return float(value[key])
        raise TypeError(f"largest_group_unique_share returned {value!r}")
    return float(value)
