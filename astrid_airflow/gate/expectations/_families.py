"""The expectations' families, and the one builder of their GX classes.

An expectation module defines one plain class (no GX import) in one of the families
below, declaring only what is its own: its docstring, the Data Docs ``sentence`` (with
``$kwarg`` placeholders), the policy ``parameter`` of its threshold and, when its family
leaves them open, its ``category``, ``metric`` and kwargs. The family holds the rest:
the kwargs it takes (``kwarg_defaults``), the metric it reads and its ``_validate``.
:func:`define` turns such a class into its GX ``BatchExpectation`` once GX is imported;
GX registers an expectation class by its name when it is defined, so the families and
the plain classes never become GX classes themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, ClassVar

from astrid_airflow.gate._checks import EPS, MAX_DETAILS, judge_attack, judge_group_disclosure

#: The default of a kwarg the suite must always give.
REQUIRED: Any = object()
#: The pydantic field type of each kwarg that is not a plain list (the kit's types
#: also accept a ``{"$PARAMETER": name}``, filled when the suite runs).
_KIT_TYPES = {"threshold": "Threshold", "reference": "Reference", "k": "Count", "n": "Count"}


class GateExpectation:
    """A check of the gate, evaluated on the surrogate batch as a whole.

    ``category``, ``metric`` and ``parameter`` are what the suite is built from
    (:data:`astrid_airflow.gate._registry.EXPECTATIONS`); ``kwarg_defaults`` lists the
    kwargs in suite order (its success keys), each with its default or
    :data:`REQUIRED`; ``gx_metrics`` are built-in GX metrics read besides ``metric``.
    """

    category: ClassVar[str]
    metric: ClassVar[str]
    parameter: ClassVar[str | None] = None
    sentence: ClassVar[str]
    kwarg_defaults: ClassVar[Mapping[str, Any]]
    gx_metrics: ClassVar[tuple[str, ...]] = ()
    domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)


class Thresholded(GateExpectation):
    """A measure judged against the ``threshold`` kwarg (the policy's ``parameter``).

    A member judges its metric's value with ``_judge(value, threshold)``, returning
    ``(success, observed, details)``; the threshold heads the details.
    """

    kwarg_defaults: ClassVar[Mapping[str, Any]] = {"threshold": REQUIRED, "reference": ""}

    def _judge(self, value: Any, threshold: float) -> tuple[bool, float | None, dict]:
        raise NotImplementedError

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        threshold = float(self.configuration.kwargs["threshold"])
        ok, observed, details = self._judge(metrics[self.metric], threshold)
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": {"threshold": threshold, **details}}}


class AtMost(Thresholded):
    """A number at most ``threshold``; ``_observe`` reads it (and its details) from the
    metric's value."""

    def _observe(self, value: Any) -> tuple[float, dict]:
        return float(value), {}

    def _judge(self, value: Any, threshold: float) -> tuple[bool, float, dict]:
        observed, details = self._observe(value)
        # Accuracies are fractions k/n: 0.96 - 0.94 must not exceed 0.02 by rounding.
        return bool(observed <= threshold + EPS), observed, details


class GroupingRisk(Thresholded):
    """A privacy risk of the surrogate measured on the artefact's ``grouping``."""

    category: ClassVar[str] = "privacy"
    kwarg_defaults: ClassVar[Mapping[str, Any]] = {
        "threshold": REQUIRED, "reference": "", "grouping": REQUIRED}


class WorstGroup(GroupingRisk):
    """The worst group's ``measure`` at most ``threshold`` (the failing groups named)."""

    metric: ClassVar[str] = "astrid.group_disclosure"
    kwarg_defaults: ClassVar[Mapping[str, Any]] = {**GroupingRisk.kwarg_defaults, "k": 5}
    measure: ClassVar[str]

    def _judge(self, groups: list[dict] | None, threshold: float
               ) -> tuple[bool, float | None, dict]:
        ok, observed, details = judge_group_disclosure(groups, self.measure, threshold)
        if "k" not in details and "k" in self.configuration.kwargs:  # not measured
            details = {**details, "k": int(self.configuration.kwargs["k"])}
        return ok, observed, details


class AttackAtMost(GroupingRisk):
    """Every variant of one ``attack`` with its upper 95 % bound at most ``threshold``."""

    metric: ClassVar[str] = "astrid.attack_risks"
    kwarg_defaults: ClassVar[Mapping[str, Any]] = {**GroupingRisk.kwarg_defaults, "n": 500}
    attack: ClassVar[str]

    def _judge(self, values: Mapping[str, Any] | None, threshold: float
               ) -> tuple[bool, float | None, dict]:
        return judge_attack(values, self.attack, threshold)


class NoDifferences(GateExpectation):
    """An integrity metric reporting a list (or count) of differences: none allowed."""

    category: ClassVar[str] = "integrity"
    kwarg_defaults: ClassVar[Mapping[str, Any]] = {"reference": REQUIRED}

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        found = metrics[self.metric]
        count = found if isinstance(found, int) else len(found)
        details: dict[str, Any] = {"threshold": 0}
        if not isinstance(found, int):
            details["differences"] = list(found)[:MAX_DETAILS]
        return {"success": count == 0,
                "result": {"observed_value": int(count), "details": details}}


def define(kit: SimpleNamespace, check: type[GateExpectation]) -> type:
    """Define (and so register with GX) the ``BatchExpectation`` of ``check``.

    The GX class has ``check``'s name, so GX types it as the module ``check`` lives in;
    its kwargs become pydantic fields, they and ``metric`` its GX keys, and
    ``sentence`` its Data Docs renderer, showing the kwargs it names.
    """
    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for name, default in check.kwarg_defaults.items():
        fields[name] = getattr(kit, _KIT_TYPES[name]) if name in _KIT_TYPES else list
        if default is not REQUIRED:
            defaults[name] = default
    shown = list(dict.fromkeys(re.findall(r"\$(\w+)", check.sentence)))
    return type(check.__name__, (check, kit.BatchExpectation), {
        "__module__": check.__module__, "__qualname__": check.__qualname__,
        "__doc__": check.__doc__, "__annotations__": fields, **defaults,
        "success_keys": tuple(check.kwarg_defaults),
        "metric_dependencies": (*check.gx_metrics, check.metric),
        "_prescriptive_renderer": kit.prescriptive(check.sentence, shown),
    })
