"""What the expectations share: plain mixins with their ``_validate`` (not Expectation
subclasses, which GX would register by name)."""

from __future__ import annotations

from typing import Any, ClassVar

from astrid_airflow.gate._checks import EPS, MAX_DETAILS, judge_attack, judge_group_disclosure


class AtMost:
    """A scalar metric of the surrogate at most ``threshold``."""

    def _observe(self, metrics: dict) -> tuple[float, dict]:
        value = metrics[self.metric_dependencies[0]]
        return float(value), {}

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        observed, details = self._observe(metrics)
        threshold = float(self.configuration.kwargs["threshold"])
        # Accuracies are fractions k/n: 0.96 - 0.94 must not exceed 0.02 by rounding.
        return {"success": bool(observed <= threshold + EPS),
                "result": {"observed_value": observed,
                           "details": {"threshold": threshold, **details}}}


class WorstGroup:
    """The worst group's ``measure`` at most ``threshold`` (the failing groups named).

    The family's keys live here; a member declares its fields and ``measure``.
    """

    measure: ClassVar[str] = ""
    domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
    success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "k")
    metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.group_disclosure",)

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        threshold = float(self.configuration.kwargs["threshold"])
        ok, observed, details = judge_group_disclosure(
            metrics["astrid.group_disclosure"], self.measure, threshold)
        details = {"threshold": threshold, **details}
        if "k" not in details and "k" in self.configuration.kwargs:  # not measured
            details["k"] = int(self.configuration.kwargs["k"])
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": details}}


class AttackAtMost:
    """Every variant of one attack with its upper 95 % bound at most ``threshold``.

    The family's keys live here; a member declares its fields and ``attack``.
    """

    attack: ClassVar[str] = ""
    domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
    success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping", "n")
    metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.attack_risks",)

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        threshold = float(self.configuration.kwargs["threshold"])
        ok, observed, details = judge_attack(metrics["astrid.attack_risks"],
                                             self.attack, threshold)
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": {"threshold": threshold, **details}}}


class NoDifferences:
    """An integrity metric reporting a list (or count) of differences."""

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        found = metrics[self.metric_dependencies[0]]
        count = found if isinstance(found, int) else len(found)
        details: dict[str, Any] = {"threshold": 0}
        if not isinstance(found, int):
            details["differences"] = list(found)[:MAX_DETAILS]
        return {"success": count == 0,
                "result": {"observed_value": int(count), "details": details}}
