"""Beyond one process: the engine's fits on Dask, surrogates on Spark, data
fusion by class and collection plans.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._dask import (
        astrid_on_dask,
        collect_astrid,
        dask_parallel,
        detached_status,
        submit_astrid,
        test_grouping_on_dask,
    )
    from ._fusion import FusionResult, fuse_parts
    from ._plan import CollectionPlan, collection_plan
    from ._spark import spark_intact_row_proportion, spark_shuffle_parquet, spark_surrogate

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
