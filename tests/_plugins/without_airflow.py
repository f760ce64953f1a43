"""A pytest plugin that makes Airflow uninstalled for one run: ``import airflow`` (or
any ``airflow.*``) raises ``ModuleNotFoundError``, as on a machine without it.

The library never imports Airflow, so its engine's tests must pass without it:
``make test`` runs ``tests/engine`` with ``-p without_airflow`` (this directory on
``PYTHONPATH``). Loaded with ``-p``, the plugin is in place before any conftest or test
module is imported; if something imported Airflow even earlier, the run stops here.
"""

from __future__ import annotations

import importlib.abc
import sys

if any(name == "airflow" or name.startswith("airflow.") for name in sys.modules):
    raise RuntimeError("airflow was imported before the without_airflow plugin loaded")


class _NoAirflow(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == "airflow" or fullname.startswith("airflow."):
            raise ModuleNotFoundError(f"No module named {fullname!r} (Airflow is "
                                      "blocked in this run)", name=fullname)
        return None


sys.meta_path.insert(0, _NoAirflow())


def pytest_report_header(config):
    return "without_airflow: importing airflow raises ModuleNotFoundError in this run"
