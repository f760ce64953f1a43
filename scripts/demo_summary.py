"""Print where a demo run left its files and the key metrics of the current release.

Usage: ``python scripts/demo_summary.py DEMO_ROOT [NAME]`` (NAME defaults to
``diabetes``). Reads only files: the release manifest, the archived
validation result, and the artefact; exits 1 if nothing was published. Shows the
release the learn step chose (grouping and remedies), the gate's verdict with its
policy, and the privacy and utility figures the gate judged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _local(path: str) -> Path:
    return Path(path.removeprefix("file://"))


def _fmt(value: object, spec: str = ".4f") -> str:
    return "n/a" if value is None else format(value, spec)


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root = Path(argv[0])
    name = argv[1] if len(argv) > 1 else "diabetes"
    published = root / "published" / name
    manifest_path = published / "surrogate.release.json"
    if not manifest_path.is_file():
        print(f"No release under {published}: the publishing DAG did not publish.",
              file=sys.stderr)
        return 1
    manifest = json.loads(manifest_path.read_text())
    gate = json.loads(_local(manifest["validation"]).read_text())["gate"]
    artefact_name, version = manifest["artefact"].split("@")
    version_dir = root / "artefacts" / artefact_name / version
    artefact = json.loads((version_dir / "artefact.json").read_text())

    by_name = {e["name"]: e for e in gate["expectations"]}
    acc = by_name.get("expect_surrogate_accuracy_drop_to_be_at_most", {})
    intact = by_name.get("expect_surrogate_intact_row_proportion_to_be_at_most", {})
    passed = sum(e["success"] for e in gate["expectations"])
    groups = " | ".join(",".join(g) for g in artefact["grouping"])

    print()
    try:  # the paper-style table of the search, when the engine can render it
        from astrid_airflow import AstridResult

        print(AstridResult.from_dict(artefact["result"]).format_table())
        print()
    except Exception as exc:  # the summary must not fail on a display detail
        print(f"(ASTRID table not shown: {exc})")
    print(f"Artefact        {version_dir / 'artefact.json'}")
    k = len(artefact["grouping"])
    print(f"                {artefact_name}@{version}: grouping {groups} (k={k}), "
          f"fingerprint {artefact['fingerprint']['rows']} rows")
    print(f"  gate suite    {version_dir / 'suite.json'}")
    release = artefact.get("release") or {}
    if release:
        print(f"  release       {_release_line(release)}")
    print(f"Surrogate       {_local(manifest['published'])}")
    print(f"  release       {manifest['release_id']} (sha256 {manifest['sha256'][:16]}…)")
    print(f"  archived      {_local(manifest['archived'])}")
    print(f"Validation      {_local(manifest['validation'])}")
    print(f"Data Docs       {_local(manifest['data_docs'])}")
    if manifest.get("report"):
        print(f"Release report  {_local(manifest['report'])}")
    print()
    print("Key metrics")
    # the gate's own figures: only what the receipt lists is archived with a release
    unique = by_name.get("expect_surrogate_largest_group_unique_share_to_be_at_most", {})
    every = (intact.get("details") or {}).get("intact_row_proportion_all_rows")
    if every is None:
        print(f"  intact-row proportion (P_anon)  {_fmt(intact.get('observed_value'))}"
              f"  (gate <= {_fmt(intact.get('threshold'), 'g')})")
    else:  # a declared model: the rows that disclose someone are what the gate counts
        print(f"  {'intact rows that disclose someone':<34}{_fmt(intact.get('observed_value'))}"
              f"  (gate <= {_fmt(intact.get('threshold'), 'g')}; every distinct row, "
              f"P_anon: {_fmt(every)})")
    print(f"  largest-group unique share      {_fmt(unique.get('observed_value'))}"
          f"  (gate <= {_fmt(unique.get('threshold'), 'g')})")
    details = acc.get("details") or {}
    acc_o = _fmt(details.get("accuracy_original"), ".3f")
    print(f"  accuracy on held-out real rows  original {acc_o},"
          f" surrogate {_fmt(details.get('accuracy_surrogate'), '.3f')}"
          f"  (drop {_fmt(acc.get('observed_value'), '+.3f')}, se "
          f"{_fmt(details.get('difference_se'), '.3f')}; gate <= "
          f"{_fmt(acc.get('threshold'), 'g')} + 2.33 se = "
          f"{_fmt(details.get('allowed_drop'), '.3f')})")
    print()
    for line in _model_lines(gate.get("artefact") or {}, by_name):
        print(line)
    print("Privacy (the gate's figures on the published file)")
    for line in _privacy_lines(by_name):
        print(f"  {line}")
    print()
    verdict = "PASSED" if gate.get("success") else "FAILED"
    print(f"Release gate    {verdict}: {passed}/{len(gate['expectations'])} expectations "
          f"passed, policy: {_policy_name(gate.get('policy') or {})}")
    return 0


def _model_lines(judged: dict, by_name: dict) -> list[str]:
    """The attacker model the gate judged under, and what it guarantees under it."""
    model = judged.get("attacker_model") or {}
    if not judged.get("attacker_model_line"):
        return []
    below = next((e for n, e in by_name.items() if "group_share_below_k" in n), {})
    k = (below.get("details") or {}).get("k", "k")
    known = model.get("quasi_identifiers")
    known = "every column" if known is None else ", ".join(known) or "none"
    sensitive = ", ".join(model.get("sensitive", []))
    lines = ["Attacker model  " + judged["attacker_model_line"].removeprefix(
                 "attacker model: "),
             "  guaranteed on every published group tuple: its quasi-identifiers "
             f"({known}) shared by at least {k} rows of its class and by rows of at "
             "least 2 classes" + (f", with at least 2 distinct values of each sensitive "
                                  f"column ({sensitive})" if sensitive else "")]
    if model.get("identifiers"):
        lines.append(f"  never published: {', '.join(model['identifiers'])}")
    return [*lines, ""]


def _release_line(release: dict) -> str:
    """The release the learn step chose: its grouping and what was remedied."""
    if release.get("status") != "chosen":
        return f"{release.get('status')}: {release.get('reason')}"
    chosen = release.get("chosen")
    candidates = release.get("candidates") or []
    label = candidates[chosen]["label"] if isinstance(chosen, int) and chosen < len(
        candidates) else "?"
    steps = (release.get("recipe") or {}).get("steps") or []
    remedied = sorted({c for s in steps for c in (s.get("columns") or [s.get("column")])
                       if c})
    return (f"chosen '{label}' of {len(candidates)} candidates, "
            f"{len(remedied)} column(s) remedied ({', '.join(remedied) or 'none'})")


def _policy_name(policy: dict) -> str:
    """``default GatePolicy()`` when every field is the library default, else the diff."""
    try:
        from astrid_airflow import GatePolicy

        default = GatePolicy().to_dict()
    except Exception:  # the summary must not fail on a display detail
        return "n/a"
    changed = {k: v for k, v in policy.items() if k in default and default[k] != v}
    if not changed:
        return "the default GatePolicy()"
    return "GatePolicy(" + ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) + ")"


def _privacy_lines(by_name: dict) -> list[str]:
    def exp(short: str) -> dict:
        return next((e for n, e in by_name.items() if short in n), {})

    def verdict(e: dict) -> str:
        return "ok" if e.get("success") else "FAILED"

    lines = []
    below = exp("group_share_below_k")
    d = below.get("details") or {}
    label = f"share of rows below k={d.get('k', '?')} (worst group)"
    lines.append(f"{label:<39}{_fmt(below.get('observed_value'))}  (gate <= "
                 f"{_fmt(below.get('threshold'), 'g')}, {verdict(below)})")
    disc = exp("group_class_disclosure_share")
    lines.append(f"{'class disclosure share (worst group)':<39}"
                 f"{_fmt(disc.get('observed_value'))}  (gate <= "
                 f"{_fmt(disc.get('threshold'), 'g')}, {verdict(disc)})")
    link = exp("cross_group_linkage")
    d = link.get("details") or {}
    lines.append(f"{'cross-group linkage excess (worst)':<39}{_fmt(link.get('observed_value'))}"
                 f"  (tolerance {_fmt(d.get('tolerance'), '.3f')}, {verdict(link)})")
    for short, label in (("singling_out_risk", "singling-out risk"),
                         ("linkability_risk", "linkability risk"),
                         ("inference_risk", "inference risk (worst)")):
        e = exp(short)
        d = e.get("details") or {}
        ci = d.get("ci") or [None, None]
        lines.append(f"{label:<39}{_fmt(d.get('risk'), '.3f')} (95 % up to "
                     f"{_fmt(ci[1], '.3f')}; gate: upper bound <= "
                     f"{_fmt(e.get('threshold'), 'g')}, {verdict(e)})")
    return lines


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
