"""Great Expectations, imported lazily (its import takes seconds and its loggers
are noisy): ``import astrid_airflow`` never imports it. ``gx_kit()`` is what the
builders of the metric and expectation classes (``metrics/_base.py``,
``expectations/_families.py``) need from GX."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import pandas as pd


def import_gx(*, verbose: bool = False) -> Any:
    """Import ``great_expectations`` with its logging kept at WARNING unless ``verbose``.

    The level must be set before the import: GX logs hundreds of INFO lines while its
    modules load (more inside an Airflow task, whose root logger is at INFO). Some GX
    modules also pin their own logger to INFO, so :func:`quiet_gx_logging` runs again
    after the import.
    """
    quiet_gx_logging(verbose=verbose)
    with _without_pyspark():
        import great_expectations as gx

    quiet_gx_logging(verbose=verbose)
    return gx


@contextlib.contextmanager
def _without_pyspark() -> Iterator[None]:
    """GX imports PySpark when it is installed (for its Spark datasource, which the gate
    never uses): over a hundred modules, a FutureWarning about pandas 3, and a doctest
    hook that ends a ``python -c`` process early. Unless PySpark is already loaded (the
    Spark path ran first), its import is refused while GX loads — GX treats it as not
    installed — and allowed again afterwards, so the Spark path can still import it."""
    if "pyspark" in sys.modules:
        yield
        return
    sys.modules["pyspark"] = None  # type: ignore[assignment]  # "import pyspark" fails
    try:
        yield
    finally:
        if sys.modules.get("pyspark", 0) is None:
            del sys.modules["pyspark"]


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


def gx_kit() -> SimpleNamespace:
    """What the class builders need from GX (imported here, lazily), plus two helpers."""
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
            from astrid_airflow._html import text

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
