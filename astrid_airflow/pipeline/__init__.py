"""The stages as library functions, each written once for the CLI and the operators.

The layer above every other part of the library: a stage orchestrates io, release,
privacy and gate. ``publish_release`` is the publish stage: read (or write) the gate
receipt, decide, archive, promote, with the release protocol's guarantees under
concurrent publishers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._integrity import CanonicalRelease, trusted_canonical
    from ._publish import Published, PublishRequest, publish_release, read_receipt

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
