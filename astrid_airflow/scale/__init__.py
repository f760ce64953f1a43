"""Beyond one process: the engine's fits on Dask, surrogates on Spark, data
fusion by class and collection plans.

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "astrid_on_dask": "._dask",
    "collect_astrid": "._dask",
    "dask_parallel": "._dask",
    "detached_status": "._dask",
    "submit_astrid": "._dask",
    "test_grouping_on_dask": "._dask",
    "collection_plan": "._fusion",
    "CollectionPlan": "._fusion",
    "fuse_parts": "._fusion",
    "FusionResult": "._fusion",
    "spark_intact_row_proportion": "._spark",
    "spark_shuffle_parquet": "._spark",
    "spark_surrogate": "._spark",
}

if TYPE_CHECKING:
    from ._dask import (
        astrid_on_dask,
        collect_astrid,
        dask_parallel,
        detached_status,
        submit_astrid,
        test_grouping_on_dask,
    )
    from ._fusion import CollectionPlan, FusionResult, collection_plan, fuse_parts
    from ._spark import spark_intact_row_proportion, spark_shuffle_parquet, spark_surrogate

__all__ = [
    "CollectionPlan",
    "FusionResult",
    "astrid_on_dask",
    "collect_astrid",
    "collection_plan",
    "dask_parallel",
    "detached_status",
    "fuse_parts",
    "spark_intact_row_proportion",
    "spark_shuffle_parquet",
    "spark_surrogate",
    "submit_astrid",
    "test_grouping_on_dask",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
