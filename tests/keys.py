"""The tests' signing keys: by default every store and receipt is signed with the key
file tests/conftest.py makes for the run; :func:`without_any_key` takes every key away,
as on a machine that never saved a store and has no key configured."""

from __future__ import annotations


def without_any_key(monkeypatch, tmp_path) -> None:
    """No ``$ASTRID_SIGNING_KEY`` and a key file that does not exist (until a save
    creates it)."""
    monkeypatch.delenv("ASTRID_SIGNING_KEY", raising=False)
    monkeypatch.setenv("ASTRID_KEY_FILE", str(tmp_path / "no-key-yet" / "signing.key"))
