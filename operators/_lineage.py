"""OpenLineage for the ASTRID operators: datasets in and out, the gate's quality facets.

During ``execute`` each operator records plain data under ``self._lineage``
(``{"inputs": [...], "outputs": [...]}``, each entry a dict with ``location`` and
optional ``version``, ``rows``, ``metrics``, ``assertions``). The OpenLineage provider
(``apache-airflow-providers-openlineage``, the ``openlineage`` extra) calls
``get_openlineage_facets_on_complete`` when a task ends (also after a failure, for want
of an ``…_on_failure``), and only then is OpenLineage imported: without the provider
this costs a few dicts per task.

Dataset names follow the OpenLineage naming spec as Airflow's own Asset conversion does:
``file`` + absolute path for local files, ``s3://bucket`` + key (etc.) on object
storage, ``<conn_type>://host:port`` + ``database.schema.table`` for a database table
behind an Airflow connection (``conn://CONN_ID/SCHEMA.TABLE``).

On the gate's surrogate input:

* ``dataQualityAssertions``: one assertion per expectation, with its success, observed
  value (``actual``), threshold (``expected``) and category;
* ``dataQualityMetrics``: the row count;
* ``astrid_metrics`` (custom facet, numbers only): every numeric observed value of the
  gate, by short name (``intact_row_proportion``, ``accuracy_drop``,
  ``largest_group_unique_share``, ``row_count``...). OpenLineage's metrics facet is
  per column, so the dataset-level figures go in this facet.

The shuffle's staged surrogate carries ``astrid_metrics`` with the shuffle's own
measurements (intact-row proportion and its expectation, accuracies).

A published release (:func:`published`) carries on each output the ``version`` facet
(the release id) and ``astrid_release`` (custom facet: ``releaseId``, ``sha256`` of
the published bytes, ``artefact``, and the gate's verdict: ``gateSuccess``,
``gateFailed``, ``gateExpectations``); its input, the staged surrogate, carries the
gate's ``dataQualityAssertions`` from the receipt.

Every operator records its inputs when ``execute`` starts, so a failed run's event
(the provider calls ``get_openlineage_facets_on_failure``) names what it read.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["RecordsLineage", "gate_verdict", "metric_name", "metrics_facet_class",
           "numeric", "operator_lineage", "published", "release_facet_class"]

_PREFIX = "expect_surrogate_"


class RecordsLineage:
    """Mixin: the OpenLineage datasets of what ``execute`` recorded in ``self._lineage``."""

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return operator_lineage(getattr(self, "_lineage", None))

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """What the task recorded before it failed: at least its inputs."""
        return operator_lineage(getattr(self, "_lineage", None))


@functools.cache
def metrics_facet_class() -> type:
    """``AstridMetricsDatasetFacet`` (defined on first use: it needs OpenLineage)."""
    import attr
    from openlineage.client.generated.base import DatasetFacet

    @attr.define
    class AstridMetricsDatasetFacet(DatasetFacet):
        """Dataset-level figures of an ASTRID surrogate (name → number)."""

        metrics: dict[str, float]

        @staticmethod
        def _get_schema() -> str:
            return "urn:astrid-airflow:openlineage:AstridMetricsDatasetFacet:1"

    return AstridMetricsDatasetFacet


@functools.cache
def release_facet_class() -> type:
    """``AstridReleaseDatasetFacet`` (defined on first use: it needs OpenLineage)."""
    import attr
    from openlineage.client.generated.base import DatasetFacet

    @attr.define
    class AstridReleaseDatasetFacet(DatasetFacet):
        """A published release: its id, the sha256 of its bytes, the gate's verdict."""

        releaseId: str  # OpenLineage facets name their fields in camelCase
        sha256: str
        artefact: str | None = None
        gateSuccess: bool | None = None
        gateFailed: list[str] = attr.field(factory=list)
        gateExpectations: int | None = None

        @staticmethod
        def _get_schema() -> str:
            return "urn:astrid-airflow:openlineage:AstridReleaseDatasetFacet:1"

    return AstridReleaseDatasetFacet


def gate_verdict(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's verdict in a receipt: passed, the failed expectations, how many."""
    return {"gateSuccess": bool(receipt.get("success")),
            "gateFailed": [str(f) for f in receipt.get("failed") or []],
            "gateExpectations": len(receipt.get("expectations") or [])}


def published(location: Any, *, release_id: str, sha256: str,
              receipt: Mapping[str, Any], rows: int | None = None) -> dict[str, Any]:
    """The lineage record of a published release at ``location``."""
    return {"location": str(location), "version": release_id, "rows": rows,
            "release": {"releaseId": release_id, "sha256": sha256,
                        "artefact": receipt.get("artefact"), **gate_verdict(receipt)}}


def metric_name(expectation: str) -> str:
    """``expect_surrogate_accuracy_drop_to_be_at_most`` → ``accuracy_drop``."""
    return expectation.removeprefix(_PREFIX).split("_to_", 1)[0]


def numeric(values: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of ``values`` (booleans and text dropped)."""
    return {str(k): float(v) for k, v in values.items()
            if isinstance(v, numbers.Real) and not isinstance(v, bool)
            and math.isfinite(float(v))}


def _namespace_and_name(location: str) -> tuple[str, str] | None:
    text = str(location)
    if text.startswith("conn://"):
        return _table(text)
    if "://" not in text or text.startswith("file://"):
        return "file", os.path.abspath(text.removeprefix("file://"))
    from airflow.sdk import ObjectStoragePath

    path = ObjectStoragePath(text)
    return path.namespace, path.key


def _table(text: str) -> tuple[str, str] | None:
    """``conn://CONN_ID/SCHEMA.TABLE`` as OpenLineage names it; queries are not datasets."""
    conn_id, _, table = text.removeprefix("conn://").partition("/")
    if not table or "?" in conn_id or "?" in table:
        return None
    try:
        from airflow.sdk import Connection

        conn = Connection.get(conn_id)
        namespace = f"{conn.conn_type}://{conn.host}:{conn.port or ''}".rstrip(":")
        return namespace, f"{conn.schema}.{table}" if conn.schema else table
    except Exception:  # no connection where lineage is built: still name it
        return f"conn://{conn_id}", table


def _assertions(expectations: Sequence[Mapping[str, Any]]) -> Any:
    from openlineage.client.generated.data_quality_assertions_dataset import (
        Assertion,
        DataQualityAssertionsDatasetFacet,
    )

    def text(value: Any) -> str | None:
        return None if value is None else json.dumps(value, default=str)

    return DataQualityAssertionsDatasetFacet(assertions=[
        Assertion(assertion=e["name"], success=bool(e.get("success")), name=e["name"],
                  severity="error", expected=text(e.get("threshold")),
                  actual=text(e.get("observed_value")),
                  params={"category": e.get("category")})
        for e in expectations])


def _facets(spec: Mapping[str, Any], *, output: bool) -> tuple[dict, dict]:
    """(dataset facets, input or output facets) of one recorded dataset."""
    facets: dict[str, Any] = {}
    io_facets: dict[str, Any] = {}
    if spec.get("version"):
        from openlineage.client.generated.dataset_version_dataset import (
            DatasetVersionDatasetFacet,
        )

        facets["version"] = DatasetVersionDatasetFacet(datasetVersion=str(spec["version"]))
    if spec.get("metrics"):
        facets["astrid_metrics"] = metrics_facet_class()(metrics=dict(spec["metrics"]))
    if spec.get("release"):
        facets["astrid_release"] = release_facet_class()(**dict(spec["release"]))
    if spec.get("assertions"):
        io_facets["dataQualityAssertions"] = _assertions(spec["assertions"])
    rows = spec.get("rows")
    if rows is not None and output:
        from openlineage.client.generated.output_statistics_output_dataset import (
            OutputStatisticsOutputDatasetFacet,
        )

        io_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(rowCount=int(rows))
    elif rows is not None:
        from openlineage.client.generated.data_quality_metrics_input_dataset import (
            DataQualityMetricsInputDatasetFacet,
        )

        io_facets["dataQualityMetrics"] = DataQualityMetricsInputDatasetFacet(
            columnMetrics={}, rowCount=int(rows))
    return facets, io_facets


def operator_lineage(recorded: Mapping[str, Any] | None) -> Any:
    """The ``OperatorLineage`` of what a task recorded (empty if it recorded nothing)."""
    from airflow.providers.common.compat.openlineage.facet import InputDataset, OutputDataset
    from airflow.providers.openlineage.extractors import OperatorLineage

    inputs: list[Any] = []
    outputs: list[Any] = []
    for kind, target in (("inputs", inputs), ("outputs", outputs)):
        for spec in (recorded or {}).get(kind, []):
            named = _namespace_and_name(spec["location"]) if spec.get("location") else None
            if named is None:
                continue
            facets, io_facets = _facets(spec, output=kind == "outputs")
            if kind == "inputs":
                target.append(InputDataset(namespace=named[0], name=named[1], facets=facets,
                                           inputFacets=io_facets))
            else:
                target.append(OutputDataset(namespace=named[0], name=named[1],
                                            facets=facets, outputFacets=io_facets))
    return OperatorLineage(inputs=inputs, outputs=outputs)
