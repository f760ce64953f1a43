"""The release protocol (``astrid_airflow.release._release``): pure decisions, no Airflow."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import pytest

from astrid_airflow._errors import ReleaseError
from astrid_airflow.release._release import check_receipt, decide_release, release_time

EARLY, LATE = "2026-01-02T00:00:00+00:00", "2026-01-02T10:00:00+00:00"
CURRENT = {"release_id": "new", "sha256": "b" * 64, "run_after": LATE}


def decide(**kw):
    args = {"release_id": "old", "sha256": "a" * 64, "run_after": EARLY, **kw}
    current = args.pop("current", CURRENT)
    return decide_release(current, **args)


class TestDecide:
    def test_first_release_is_published(self):
        assert decide(current=None).action == "publish"

    def test_newer_release_is_published(self):
        d = decide(release_id="newer", run_after="2026-01-03T00:00:00+00:00")
        assert d.publish and d.write_archive and "'new'" in d.reason

    def test_older_release_is_refused_unless_forced(self):
        d = decide()
        assert d.action == "older" and not d.publish
        assert "older than the current release 'new'" in d.reason
        forced = decide(force=True)
        assert forced.publish and "rollback" in forced.reason

    def test_same_release_is_already_done(self):
        d = decide(release_id="new", sha256="b" * 64, run_after=None)
        assert d.action == "same" and not d.write_archive
        assert decide(release_id="new", sha256="b" * 64, run_after=LATE,
                      force=True).publish

    @pytest.mark.parametrize("kw", [
        pytest.param({"release_id": "new"}, id="current-with-other-bytes"),
        pytest.param({"archived_sha256": "c" * 64}, id="archived-with-other-bytes"),
        pytest.param({"archived_sha256": "c" * 64, "force": True}, id="even-forced"),
    ])
    def test_an_archive_never_changes(self, kw):
        with pytest.raises(ReleaseError, match="immutable"):
            decide(**kw)

    def test_an_archive_with_these_bytes_is_kept(self):
        d = decide(release_id="newer", run_after="2026-01-03T00:00:00+00:00",
                   archived_sha256="a" * 64)
        assert d.publish and not d.write_archive

    def test_unordered_releases_replace_as_before(self):
        assert decide(run_after=None).publish
        assert decide(current={"release_id": "legacy", "sha256": "x"}).publish

    @pytest.mark.parametrize("bad", ["", "../x", ".hidden", "a b"])
    def test_unsafe_release_id(self, bad):
        with pytest.raises(ReleaseError, match="Invalid release_id"):
            decide(release_id=bad)


OK = {"success": True, "surrogate": "s.parquet", "sha256": "a" * 64}


class TestReceipt:
    def test_a_passing_receipt_for_these_bytes(self):
        check_receipt(OK, surrogate="s.parquet", sha256="a" * 64)

    @pytest.mark.parametrize("receipt,match", [
        ({**OK, "success": False, "failed": ["expect_x"]}, "FAILED the release gate"),
        ({**OK, "sha256": "b" * 64}, "not the file the gate passed"),
        ({**OK, "surrogate": "other.parquet"}, "not the file the gate passed"),
        (["not", "an", "object"], "not a JSON object"),
    ])
    def test_refusals(self, receipt, match):
        with pytest.raises(ReleaseError, match=match):
            check_receipt(receipt, surrogate="s.parquet", sha256="a" * 64)


def test_release_time_orders_across_time_zones():
    assert release_time(dt.datetime(2026, 1, 2, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))) \
        == release_time("2026-01-02T00:00:00Z") == release_time(dt.datetime(2026, 1, 2))
    assert release_time("2026-01-02T09:00:00-02:00") > release_time(LATE)
    with pytest.raises(ReleaseError):
        release_time("yesterday")


def test_the_protocol_imports_no_airflow():
    code = ("import sys, astrid_airflow.release._release\n"
            "assert not [m for m in sys.modules if m.split('.')[0] == 'airflow']")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
