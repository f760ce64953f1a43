"""The publish protocol on S3-compatible stores: no lock, a compare-and-swap instead.

An object store has no lock that a dead holder releases, so publishers of one
destination coordinate through the manifest itself, with conditional writes:

1. Read the manifest's ETag, then the manifest; decide (:func:`decide_release`).
2. Archive: the receipt and the gate's files, then the archived surrogate with
   ``If-None-Match: *``. A release id is claimed by the first bytes archived under it;
   other bytes under the same id are refused, the same bytes are not rewritten.
3. Claim: write the new manifest with ``If-Match: <ETag>`` (``If-None-Match: *`` for
   the first release). If another publisher moved the manifest since step 1, the write
   fails and the publisher starts again at 1 with the manifest it now finds; so the
   manifest only ever moves forward, and exactly one publisher claims each release:
   the one that announces it.
4. Converge: copy the archive of the release the manifest names onto the current
   file, re-read the manifest, repeat until the two agree. Every publisher, also one
   with nothing to publish, ends here: the last write to the current file is followed
   by its writer's check against the manifest, so after any interleaving the current
   file holds the manifest's bytes. A publisher killed between 3 and 4 leaves the old
   bytes current for a moment; the next publisher or a retry puts them right.

Readers that must not see the moment between 3 and 4 read the immutable archive the
manifest (and the Asset event) names.
"""

from __future__ import annotations

import random
import time
from typing import Any

from astrid_airflow._errors import ReleaseError

from ._publication import Candidate, Published
from ._publish_files import (
    manifest_text,
    parse_manifest,
    repair_current,
    sha256_of,
    where,
    write_bytes_atomic,
)
from ._successive import check_successive

#: Claims lost to other publishers before giving up (each loss means one of them won).
MAX_ATTEMPTS = 200


def promote_cas(cand: Candidate, outcome: dict[str, Any]) -> Published:
    """Decide, archive, claim the manifest by compare-and-swap, converge."""
    from astrid_airflow.io import s3_etag, s3_put

    fs, key = where(cand.manifest_path)
    for attempt in range(MAX_ATTEMPTS):
        fs.invalidate_cache()  # decide on what the store holds now, not on a listing
        etag = s3_etag(fs, key)
        current = _manifest_at(fs, key, cand.manifest_path) if etag else None
        decision = cand.decide(current)
        if not decision.publish:
            converge(cand)
            return Published(decision.action, decision.reason, **outcome,
                             manifest_path=cand.manifest_path, write_archive=False)
        plan = cand.plan(decision.write_archive, check_successive(cand))
        for data, dst in plan.copies[:-1]:  # the archive; the current file comes last
            if dst == cand.archived:
                _archive_once(cand, data)
            else:
                write_bytes_atomic(dst, data)
        text = manifest_text(plan.manifest).encode("utf-8")
        if s3_put(fs, key, text, if_match=etag, if_none_match=etag is None):
            converge(cand)
            return Published("publish", decision.reason, **outcome,
                             manifest_path=plan.manifest_path, manifest=plan.manifest,
                             extra=plan.extra, write_archive=decision.write_archive)
        time.sleep(random.uniform(0, min(0.5, 0.01 * 2 ** min(attempt, 6))))
    raise TimeoutError(f"Could not claim the manifest {cand.manifest_path} in "
                       f"{MAX_ATTEMPTS} attempts (other publishers kept moving it); "
                       "nothing of this release is current. Retry.")


def _manifest_at(fs: Any, key: str, path: Any) -> dict[str, Any] | None:
    try:
        data = fs.cat_file(key)
    except FileNotFoundError:  # removed since its ETag was read
        return None
    return parse_manifest(data, path)


def _archive_once(cand: Candidate, data: bytes) -> None:
    """Create the archived release if absent; refuse other bytes under its id."""
    from astrid_airflow.io import s3_put

    fs, key = where(cand.archived)
    if s3_put(fs, key, data, if_none_match=True):
        return
    fs.invalidate_cache()
    if sha256_of(cand.archived) != cand.digest:
        raise ReleaseError(
            f"Refusing to publish release {cand.request.release_id!r}: it is already "
            "archived with other bytes; archived releases are immutable, give a new "
            "release_id.")


def converge(cand: Candidate) -> None:
    """Copy the manifest's archived release onto the current file until they agree."""
    fs, key = where(cand.manifest_path)
    for _ in range(MAX_ATTEMPTS):
        fs.invalidate_cache()
        manifest = _manifest_at(fs, key, cand.manifest_path)
        if not repair_current(cand.request.destination, manifest):
            return  # they agree (or there is nothing trustworthy to copy)
    raise TimeoutError(f"The current file {cand.request.destination} did not settle on "
                       "the manifest's release; retry.")
