"""
### ASTRID: a downstream consumer of each new surrogate release

Scheduled on the release Asset of `astrid_publish_diabetes`: every successful
`publish` task triggers one run. The task reads the *archived* (immutable) copy named
in the triggering event, so it never races a newer release, checks that its SHA-256 is
the one published, and writes a small profile of the release beside it
(`<release dir>/consumer_profile.json`): rows, class counts and per-column means.
A manual run (no triggering event) profiles the current release named by its manifest.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, task
from astrid_airflow.operators.assets import release_asset
from astrid_airflow.operators.demo import demo_layout

NAME = "diabetes"
PUBLISHED = demo_layout(NAME).published
RELEASE = release_asset(PUBLISHED, NAME)

with DAG(
    dag_id="astrid_consume_diabetes",
    description="Profile each new surrogate release of the diabetes demo data",
    schedule=[RELEASE],
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    tags=["astrid", "example"],
    doc_md=__doc__,
) as dag:

    @task(inlets=[RELEASE])
    def profile_release(*, triggering_asset_events=None) -> list[dict]:
        """Profile every release that triggered this run (usually one)."""
        import hashlib
        import io
        import json

        import pandas as pd
        from airflow.sdk import ObjectStoragePath

        try:  # Airflow after 3.1
            from airflow.sdk.exceptions import AirflowFailException
        except ImportError:  # Airflow 3.1
            from airflow.exceptions import AirflowFailException

        from astrid_airflow.io import load_json

        accessor = triggering_asset_events or {}
        try:
            events = list(accessor.get(RELEASE, []))
        except TypeError:  # Airflow 3.1's accessor fails to hash the Asset: match by name
            try:
                events = [e for key, found in accessor.items()
                          if getattr(key, "name", None) == RELEASE.name for e in found]
            except TypeError:  # then the manifest below names the current release
                events = []
        extras = [dict(e.extra or {}) for e in events]
        if not extras:  # a manual run: the current release, from its manifest
            published = ObjectStoragePath(RELEASE.uri)
            manifest = published.parent / f"{published.stem}.release.json"
            if not manifest.exists():
                raise AirflowFailException(f"No release yet: {manifest} does not exist; "
                                           "run astrid_publish_diabetes first.")
            try:  # the one JSON reader: depth-limited, one line
                extras = [load_json(manifest.read_bytes(), f"release manifest {manifest}")]
            except ValueError as exc:
                raise AirflowFailException(str(exc)) from None
        profiles = []
        for extra in extras:
            path = ObjectStoragePath(extra["archived"])
            data = path.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if digest != extra.get("sha256"):
                raise AirflowFailException(f"{path} hashes to {digest[:12]}…, not the "
                                           f"published {str(extra.get('sha256'))[:12]}….")
            frame = pd.read_parquet(io.BytesIO(data))
            profile = {
                "release_id": extra.get("release_id"),
                "artefact": extra.get("artefact"),
                "rows": len(frame),
                "class_counts": {str(k): int(v) for k, v in
                                 frame["class"].value_counts().sort_index().items()},
                "means": {c: round(float(frame[c].mean()), 6) for c in frame.columns
                          if c != "class" and pd.api.types.is_numeric_dtype(frame[c])},
            }
            (path.parent / "consumer_profile.json").write_text(json.dumps(profile, indent=2))
            profiles.append({"release_id": profile["release_id"], "rows": profile["rows"],
                             "profile": str(path.parent / "consumer_profile.json")})
        return profiles

    profile_release()
