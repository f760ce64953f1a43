"""The release protocol: may this gated file replace the current release, and how?

Pure decisions over two small JSON documents, the gate receipt of the candidate and
the manifest of the current release, so the Airflow publish operator and a command-line
publisher apply the same rules. No I/O and no Airflow here: the caller reads the files
(through whatever storage layer it uses), hashes the candidate and acts on the answer.

The rules:

* **Receipt.** Only a file whose receipt says the gate passed, names this file and
  carries the SHA-256 of its current bytes is released (:func:`check_receipt`), and
  only a receipt the gate signed is relied on (:mod:`._receipt`; without a signing key
  the publisher gates again).
* **Monotonic.** Releases are ordered by ``run_after``: when the run that made them was
  due (Airflow's ``run_after``, else its logical date, else the publication time). A
  candidate older than the current release is not published unless forced, so clearing
  an old run cannot roll a newer release back.
* **Idempotent.** The same ``release_id`` with the same SHA-256 as the current release
  is already done: nothing is rewritten and no new event is announced (unless forced).
* **Immutable archive.** A ``release_id`` whose archive already holds *other* bytes is
  refused, forced or not: an archived release never changes.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from astrid_airflow._errors import ReleaseError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

Action = Literal["publish", "same", "older"]


@dataclass(frozen=True)
class ReleaseDecision:
    """What to do with a candidate release.

    Attributes
    ----------
    action : {"publish", "same", "older"}
        ``publish``: make it the current release (and announce it). ``same``: it is
        already the current release, nothing to do. ``older``: a newer release is
        current, leave it.
    reason : str
        One sentence for the log, naming both releases.
    write_archive : bool
        False when the archive of this ``release_id`` already holds these bytes (a
        retry after a partial publication, or a forced re-publication): it is kept as
        it is.
    """

    action: Action
    reason: str
    write_archive: bool = True

    @property
    def publish(self) -> bool:
        return self.action == "publish"


def release_time(value: Any) -> str | None:
    """A release's position in time as an ISO 8601 UTC string, or None.

    Accepts a ``datetime`` (naive ones are taken as UTC), an ISO string or None. All
    values are normalised to UTC with microseconds, so plain string comparison orders
    them.

    >>> release_time("2026-01-02T01:00:00+01:00")
    '2026-01-02T00:00:00.000000+00:00'
    >>> release_time(None) is None
    True
    """
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ReleaseError(f"Invalid release time {value!r}: expected ISO 8601.") from None
    if not isinstance(value, _dt.datetime):
        raise ReleaseError(f"Invalid release time {value!r}: expected a datetime or ISO "
                           "8601 text.")
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value.astimezone(_dt.UTC).isoformat(timespec="microseconds")


def check_release_id(release_id: str) -> str:
    """``release_id`` if it is a safe directory name, else :class:`ReleaseError`."""
    if not release_id or _UNSAFE.search(release_id) or release_id.startswith("."):
        raise ReleaseError(f"Invalid release_id {release_id!r}: use letters, digits, '.', "
                           "'_' and '-'.")
    return release_id


def new_release_id(now: _dt.datetime | None = None) -> str:
    """A release id from the time (UTC, to the microsecond): the default of a publisher
    that is not given one."""
    return (now or _dt.datetime.now(_dt.UTC)).strftime("%Y%m%dT%H%M%S%fZ")


def release_id_from_run(run_id: object) -> str:
    """A safe release id from a run id (``manual__2026-01-01T00:00:00+00:00`` becomes
    ``manual__2026-01-01T00_00_00_00_00``): unsafe runs of characters become ``_``, at
    most 200 characters; :func:`new_release_id` when nothing is left."""
    text = _UNSAFE.sub("_", str(run_id or "")).strip("._-")
    return text[:200] if text else new_release_id()


def check_receipt(receipt: Any, *, surrogate: str, sha256: str, where: str = "") -> None:
    """Refuse a candidate whose gate receipt does not vouch for exactly these bytes.

    Parameters
    ----------
    receipt : dict
        The parsed ``<stem>.gate.json``.
    surrogate : str
        The candidate file as the gate named it (``receipt["surrogate"]``).
    sha256 : str
        Hex SHA-256 of the candidate's bytes now.
    where : str, optional
        Where the receipt was read, for the message.

    Raises
    ------
    ReleaseError
        The receipt is not an object, says the gate failed, or is for other bytes.
    """
    where = where or "the gate receipt"
    if not isinstance(receipt, Mapping):
        raise ReleaseError(f"Refusing to publish {surrogate}: the gate receipt {where} is "
                           "not a JSON object.")
    if receipt.get("success") is not True:
        raise ReleaseError(f"Refusing to publish {surrogate}: it FAILED the release gate "
                           f"(failed: {receipt.get('failed')}); the last release stays in "
                           "place.")
    if receipt.get("sha256") != sha256 or receipt.get("surrogate") != surrogate:
        raise ReleaseError(
            f"Refusing to publish {surrogate}: it is not the file the gate passed (receipt "
            f"{where} is for {receipt.get('surrogate')} with sha256 "
            f"{str(receipt.get('sha256'))[:12]}…, the file now hashes to {sha256[:12]}…).")


def decide_release(current: Mapping[str, Any] | None, *, release_id: str, sha256: str,
                   run_after: Any, archived_sha256: str | None = None,
                   force: bool = False) -> ReleaseDecision:
    """Compare a candidate release with the current one.

    Parameters
    ----------
    current : dict or None
        The current release's manifest (``release_id``, ``sha256``, ``run_after``), or
        None when nothing was released yet.
    release_id : str
        The candidate's release id.
    sha256 : str
        The candidate's SHA-256.
    run_after : datetime or str or None
        When the candidate's run was due (see :func:`release_time`). None: unknown,
        the candidate is not ordered against the current release.
    archived_sha256 : str, optional
        SHA-256 of the file already archived under ``release_id``, if there is one.
    force : bool, default False
        Publish an older release (a deliberate rollback), or re-publish the current
        one (a new event for it); never overwrites an archive with other bytes.

    Returns
    -------
    ReleaseDecision

    Raises
    ------
    ReleaseError
        ``release_id`` is already archived (or current) with other bytes.

    Examples
    --------
    >>> cur = {"release_id": "b", "sha256": "22", "run_after": "2026-01-02T10:00:00+00:00"}
    >>> decide_release(cur, release_id="a", sha256="11",
    ...                run_after="2026-01-02T00:00:00+00:00").action
    'older'
    >>> decide_release(cur, release_id="b", sha256="22", run_after=None).action
    'same'
    """
    check_release_id(release_id)
    for other, what in ((archived_sha256, "archived"),
                        ((current or {}).get("sha256")
                         if (current or {}).get("release_id") == release_id else None,
                         "current")):
        if other is not None and other != sha256:
            raise ReleaseError(
                f"Refusing to publish release {release_id!r}: it is already {what} with "
                f"other bytes (sha256 {str(other)[:12]}…, this file {sha256[:12]}…); "
                "archived releases are immutable, give a new release_id.")
    write_archive = archived_sha256 is None
    if not current:
        return ReleaseDecision("publish", f"first release {release_id!r}.", write_archive)
    cur_id = current.get("release_id")
    if cur_id == release_id:
        if force:
            return ReleaseDecision("publish", f"forced: re-publishing the current release "
                                   f"{release_id!r} (same sha256).", write_archive)
        return ReleaseDecision("same", f"release {release_id!r} is already current with "
                               f"the same sha256 {sha256[:12]}…; nothing to do.", False)
    candidate, now = release_time(run_after), release_time(current.get("run_after"))
    if candidate is None or now is None:
        # manifests from before this protocol carry no run time: behave as before
        return ReleaseDecision("publish", f"release {release_id!r} replaces {cur_id!r} "
                               "(no run time to order them by).", write_archive)
    if candidate < now:
        if force:
            return ReleaseDecision("publish", f"forced rollback: release {release_id!r} "
                                   f"(run due {candidate}) replaces the newer {cur_id!r} "
                                   f"(run due {now}).", write_archive)
        return ReleaseDecision("older", f"release {release_id!r} (run due {candidate}) is "
                               f"older than the current release {cur_id!r} (run due {now}); "
                               "keeping the current one (force=True publishes it anyway).",
                               False)
    return ReleaseDecision("publish", f"release {release_id!r} (run due {candidate}) "
                           f"replaces {cur_id!r} (run due {now}).", write_archive)
