"""Mutual exclusion and compare-and-swap for publishers that share one destination.

Two mechanisms, one per kind of storage:

* **Local/POSIX filesystems**: :func:`file_lock`, an exclusive ``flock(2)`` on a lock
  file. The kernel drops it when its holder dies, so a crashed publisher never blocks
  the next one; waiting is bounded.
* **S3-compatible object stores**: conditional writes (:func:`s3_put`):
  ``If-None-Match: *`` creates an object only if it is absent, ``If-Match: <ETag>``
  replaces it only if nobody replaced it since it was read. AWS S3 has both since 2024,
  as do MinIO, Cloudflare R2 and moto's server; a store without them answers 501 or
  ignores the header, which :func:`s3_put` cannot tell from success, so the publish
  protocol checks what it wrote (``docs/reliability.md``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Iterator
from typing import Any

from ._modes import file_mode, make_dirs

#: How long a publisher waits for another one to finish with the same destination.
LOCK_TIMEOUT = 600.0


@contextlib.contextmanager
def file_lock(path: str, *, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) within the block.

    Raises ``TimeoutError`` (retryable: nothing was changed) after ``timeout`` seconds.
    """
    import fcntl

    make_dirs(os.path.dirname(path) or ".")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, file_mode())
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"Waited {timeout:.0f} s for the publication lock "
                                   f"{path}; another publisher holds it. Nothing changed.")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_s3(fs: Any) -> bool:
    """True for an s3fs filesystem (the one object store with conditional writes here)."""
    proto = fs.protocol
    return bool({"s3", "s3a"} & ({proto} if isinstance(proto, str) else set(proto)))


def _bucket_key(fs: Any, path: str) -> tuple[str, str]:
    bucket, key, _version = fs.split_path(path)
    return bucket, key


def _status(exc: BaseException) -> int | None:
    """The HTTP status of a botocore ``ClientError`` (also when s3fs wrapped it)."""
    for err in (exc, exc.__cause__, exc.__context__):
        response = getattr(err, "response", None)
        if isinstance(response, dict):
            meta = response.get("ResponseMetadata", {})
            code = response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict"):
                return 412
            if code in ("NoSuchKey", "404", "NotFound"):
                return 404
            return meta.get("HTTPStatusCode")
    if isinstance(exc, FileExistsError):  # s3fs's name for a failed If-None-Match
        return 412
    if isinstance(exc, FileNotFoundError):
        return 404
    return None


def s3_etag(fs: Any, path: str) -> str | None:
    """The object's current ETag, read from the store (no listing cache); None if absent."""
    bucket, key = _bucket_key(fs, path)
    try:
        head = fs.call_s3("head_object", Bucket=bucket, Key=key)
    except Exception as exc:  # s3fs maps a 404 to FileNotFoundError
        if _status(exc) == 404 or isinstance(exc, FileNotFoundError):
            return None
        raise
    return head["ETag"]


def s3_put(fs: Any, path: str, data: bytes, *, if_match: str | None = None,
           if_none_match: bool = False) -> bool:
    """Write ``data`` to ``path`` in one ``PutObject``, conditionally.

    ``if_none_match``: only if the object is absent; ``if_match``: only if its ETag is
    still this one. Returns False when the condition failed (HTTP 412, or 409 for a
    concurrent conditional write), True when written.
    """
    bucket, key = _bucket_key(fs, path)
    kwargs: dict[str, Any] = {"Bucket": bucket, "Key": key, "Body": bytes(data)}
    if if_none_match:
        kwargs["IfNoneMatch"] = "*"
    if if_match is not None:
        kwargs["IfMatch"] = if_match
    try:
        fs.call_s3("put_object", **kwargs)
    except Exception as exc:
        if _status(exc) in (409, 412):
            return False
        raise
    fs.invalidate_cache(path)
    return True
