"""Names in an artefact store: valid artefact and file names, version ids and numbers,
and the ``@VERSION`` suffix of an artefact reference.
"""

from __future__ import annotations

import re

from astrid_airflow._errors import ParameterError
from astrid_airflow.io import ARTEFACT_FILE, STORE_NAME

from ._manifest import MANIFEST_FILE

# The layout's names (and the guard that keeps other writers out) live in io.
_NAME = STORE_NAME
_VERSION_REF = re.compile(r"v([0-9]+)|([0-9]+)|latest", re.ASCII)


def check_artefact_name(name: object) -> str:
    """Return ``name`` if it is a valid artefact name, else raise ``ParameterError``.

    Callers check a name before any work (``astrid learn --name`` before learning).
    """
    if not isinstance(name, str) or not valid_name(name):
        raise ParameterError(
            f"Invalid artefact name {name!r}: use letters, digits, '.', '_' and '-' "
            "(no path separators, no '..', at most 200 characters, not starting with '.').")
    return name


def valid_name(name: str) -> bool:
    """What :func:`check_artefact_name` accepts (listing skips anything else)."""
    return bool(_NAME.fullmatch(name)) and ".." not in name


def check_file_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name \
            or name in (ARTEFACT_FILE, MANIFEST_FILE):
        raise ParameterError(f"Invalid file name {name!r} for a version directory: a plain "
                             f"file name other than {ARTEFACT_FILE!r} and {MANIFEST_FILE!r} "
                             "is needed.")
    return name


def version_id(number: int) -> str:
    return f"v{number:04d}"


def version_number(version: object) -> int | None:
    """Number of ``"v0003"``/``"3"``/``3``; ``None`` for ``"latest"``."""
    if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
        return version
    if isinstance(version, str):
        m = _VERSION_REF.fullmatch(version.strip())
        if m:
            if m.group(1) is None and m.group(2) is None:
                return None
            number = int(m.group(1) or m.group(2))
            if number >= 1:
                return number
    raise ParameterError(f"Invalid version {version!r}: expected 'latest', 'v0003' or 3.")


def split_artefact_ref(ref: str) -> tuple[str, str | None]:
    """``"TEXT@VERSION"`` -> ``(TEXT, VERSION)``; ``(ref, None)`` without a version suffix.

    The one parser of the ``@VERSION`` suffix (``v0003``, ``3`` or ``latest``) of an
    artefact reference, for :func:`parse_artefact_ref` and the operators' ``NAME@VERSION``.

    >>> split_artefact_ref("store/syn@v0002"), split_artefact_ref("store/syn")
    (('store/syn', 'v0002'), ('store/syn', None))
    """
    head, at, tail = ref.rpartition("@")
    if at and "/" not in tail and _VERSION_REF.fullmatch(tail.strip()):
        return head, tail.strip()
    return ref, None
