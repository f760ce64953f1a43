"""Provider registration: the entry point, its metadata and ``airflow providers list``."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from airflow.sdk import BaseOperator
from astrid_airflow.operators.get_provider_info import get_provider_info


def test_entry_point_resolves_to_get_provider_info():
    (ep,) = [e for e in entry_points(group="apache_airflow_provider")
             if e.value.startswith("astrid_airflow.")]
    assert ep.load() is get_provider_info


def test_provider_info_matches_airflows_schema_and_lists_real_operator_modules():
    import airflow
    import jsonschema

    info = get_provider_info()
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(info, schema)
    assert info["package-name"] == "astrid-airflow"
    (group,) = info["operators"]
    assert group["python-modules"], "no operator modules listed"
    for name in group["python-modules"]:
        module = importlib.import_module(name)
        operators = [v for v in vars(module).values() if isinstance(v, type)
                     and issubclass(v, BaseOperator) and v.__module__ == name]
        assert operators, f"{name} defines no operator"


def test_airflow_providers_list_shows_the_provider(tmp_path):
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    bin_dir = Path(sys.executable).parent
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run([str(bin_dir / "airflow"), "providers", "list", "--output", "json"],
                         env=env, capture_output=True, text=True, timeout=180, check=True)
    rows = json.loads(out.stdout[out.stdout.index("["):])
    ours = [r for r in rows if r["package_name"] == "astrid-airflow"]
    assert ours, [r["package_name"] for r in rows]
    from astrid_airflow import __version__

    assert ours[0]["version"] == __version__


def test_extra_links_are_registered_and_cover_every_operators_links():
    from airflow.sdk import BaseOperatorLink
    from astrid_airflow.operators.gate import SurrogateGateOperator
    from astrid_airflow.operators.learn import AstridLearnOperator
    from astrid_airflow.operators.publish import PublishSurrogateOperator

    info = get_provider_info()
    registered = set()
    for path in info["extra-links"]:
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, BaseOperatorLink), path
        registered.add(cls)
    used = {type(link) for op in (AstridLearnOperator, SurrogateGateOperator,
                                   PublishSurrogateOperator) for link in op.operator_extra_links}
    assert used == registered
    assert {link.name for link in SurrogateGateOperator.operator_extra_links} == {
        "Data Docs", "Release report", "Artefact"}
    assert "link_base_url" in info["config"]["astrid"]["options"]
    # unset, a link is the plugin's page (resolve_link's default), not the file's URL
    described = info["config"]["astrid"]["options"]["link_base_url"]["description"]
    assert "/astrid/runs/" in described and "file://" not in described


def test_airflow_providers_get_lists_everything_registered(tmp_path):
    """``airflow providers get astrid-airflow --full``: what Airflow registered from us.

    Every key of ``get_provider_info()`` comes back unchanged, and no placeholder
    ``documentation-url`` (Airflow takes it from ``[project.urls] Documentation``; the
    project has no public site, so it declares none).
    """
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    bin_dir = Path(sys.executable).parent
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run([str(bin_dir / "airflow"), "providers", "get", "astrid-airflow",
                          "--full", "--output", "json"],
                         env=env, capture_output=True, text=True, timeout=180, check=True)
    (got,) = json.loads(out.stdout[out.stdout.index("["):])
    info = get_provider_info()
    for key, value in info.items():
        if key == "description":  # Airflow strips the trailing full stop
            assert got[key].rstrip(".") == value.rstrip(".")
        else:
            assert got[key] == value, key
    assert ".invalid" not in str(got.get("documentation-url") or "")
    for key in ("operators", "extra-links", "config"):
        assert got[key], key


def test_package_metadata_ships_a_license_and_no_placeholder_url():
    """The wheel's metadata: MIT with its license file, no URL on a placeholder host,
    Airflow from 3.1 to before 4, and scikit-learn-intelex only behind the onedal extra."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    meta = distribution("astrid-airflow").metadata
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert not [u for u in meta.get_all("Project-URL") or [] if ".invalid" in u]
    reqs = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    (airflow,) = [r for r in reqs if r.name == "apache-airflow"]
    assert str(airflow.specifier) in ("<4,>=3.1", ">=3.1,<4")
    intelex = [r for r in reqs if r.name == "scikit-learn-intelex"]
    assert intelex and all(r.marker is not None and 'extra == "onedal"' in str(r.marker)
                           for r in intelex)


def test_the_astrid_connection_type_is_registered_with_its_form(tmp_path):
    """``airflow providers hooks``: the ``astrid`` connection type and its hook."""
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    bin_dir = Path(sys.executable).parent
    out = subprocess.run([str(bin_dir / "airflow"), "providers", "hooks", "--output", "json"],
                         env=env, capture_output=True, text=True, timeout=180, check=True)
    rows = json.loads(out.stdout[out.stdout.index("["):])
    ours = [r for r in rows if r.get("connection_type") == "astrid"]
    assert ours and ours[0]["class"] == "astrid_airflow.operators.hooks.AstridStoreHook"
    assert ours[0]["package_name"] == "astrid-airflow"
    assert ours[0]["hook_name"] == "ASTRID artefact store"
    from astrid_airflow.operators.hooks import AstridStoreHook

    (conn_type,) = get_provider_info()["connection-types"]
    assert conn_type["connection-type"] == AstridStoreHook.conn_type
    assert "storage_conn_id" in conn_type["conn-fields"]
