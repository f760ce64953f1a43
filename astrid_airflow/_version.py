"""The installed distribution's version, in a kernel module of its own.

Every layer may name it (artefacts, reports, the Dask worker check) without importing
the package root, whose lazy exports depend on every subpackage.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("astrid-airflow")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
