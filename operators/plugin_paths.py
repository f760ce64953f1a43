"""Where the provider plugin serves a task's files (no imports: the workers build links).

The plugin itself (``astrid_airflow.operators.plugin``) imports FastAPI and the API
server's security; the links only need the paths.
"""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["KINDS", "PLUGIN_PREFIX", "plugin_path"]

PLUGIN_PREFIX = "/astrid"
KINDS = {"data_docs": "data-docs", "report": "report/", "artefact": "artefact"}


def plugin_path(dag_id: str, run_id: str, task_id: str, key: str, map_index: int = -1) -> str:
    """The plugin's path (below the API server's base URL) of one recorded location."""
    parts = "/".join(quote(str(p), safe="") for p in (dag_id, run_id, task_id))
    query = f"?map_index={map_index}" if map_index is not None and map_index >= 0 else ""
    return f"{PLUGIN_PREFIX}/runs/{parts}/{KINDS[key]}{query}"
