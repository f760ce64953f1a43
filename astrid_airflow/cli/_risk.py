"""Measure the privacy risk of a surrogate (disclosure and attacks).

``astrid risk``: privacy risk of a surrogate (per group, cross-group, attacks).

An adapter over :func:`~astrid_airflow.pipeline.measure_release_risk`. ``--json``
prints one object whose keys ``groups``, ``pairs``, ``singling_out``, ``linkability``
and ``inference`` (each attack with ``risk``, ``ci`` as ``[low, high]`` and
``n_attacks``; ``inference`` a list with a ``secret`` per entry) are a contract.
Exit 2 on bad input.
"""

from __future__ import annotations

import argparse

from . import _options as options

DESCRIPTION = ("Per-group disclosure and cross-group linkage of the surrogate, and the "
               "singling-out, linkability and inference attacks of Giomi et al. (PETS 2023) "
               "with 95 %% intervals. The attacks use --control rows (not released) when "
               "given, else a shadow release of half the original.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_surrogate_inputs(p, surrogate_help="the released surrogate (CSV or Parquet)")
    p.add_argument("--control", default=None, metavar="DATA",
                   help="rows of the same population that did NOT go into the surrogate "
                        "(default: attack a shadow release of half the original)")
    p.add_argument("--n-attacks", type=int, default=200, metavar="N",
                   help="attacks per measure and side (default 200)")
    options.add_seed_option(p, help="random seed (default: drawn and reported)")
    p.add_argument("--no-remedies", action="store_true",
                   help="the surrogate is a raw release: do not put the original and "
                   "control rows into the release's domain with the artefact's recipe")
    options.add_json_flag(p)
    options.add_attacker_model_flags(p)


def run(args: argparse.Namespace) -> int:
    from astrid_airflow._validation import check_attack_count
    from astrid_airflow.pipeline import RiskRequest, measure_release_risk

    from ._common import print_json

    options.checked_seed(args.seed)  # measure_risk draws one when not given, and reports it
    check_attack_count(args.n_attacks, "--n-attacks")  # before any table is read
    out = measure_release_risk(RiskRequest(
        original=args.original, surrogate=args.surrogate, artefact=args.artefact,
        control=args.control, n_attacks=args.n_attacks, random_state=args.seed,
        remedies=not args.no_remedies,
        attacker_model=options.attacker_model_roles(args) or None))
    if args.json:
        print_json(out)
    else:
        _print_text(out)
    return 0


_MAX_PAIRS = 10


def _ci(d: dict) -> str:
    return f"{d['risk']:.3f} [{d['ci'][0]:.3f}, {d['ci'][1]:.3f}] (n={d['n_attacks']})"


def _print_text(out: dict) -> None:
    print("per group (released values, with the class):")
    for g in out["groups"]:
        print(f"  k_min={g['k_min']:<6} below-k={g['share_below_k']:.3f}  "
              f"class-disclosing={g['class_disclosure_share']:.3f}  {','.join(g['columns'])}")
    if out["pairs"]:
        # Most excess first: a pair far above its expectation is kept together.
        pairs = sorted(out["pairs"], key=lambda p: p["expected_linked_share"] -
                       p["linked_share"])
        print(f"cross-group linkage ({len(pairs)} pairs, most above expectation first; "
              "share of rows whose two group tuples stay together):")
        for p in pairs[:_MAX_PAIRS]:
            names = " | ".join(",".join(g) for g in p["groups"])
            print(f"  {p['linked_share']:.4f} (expected {p['expected_linked_share']:.4f})  "
                  f"{names}")
        if len(pairs) > _MAX_PAIRS:
            print(f"  ... {len(pairs) - _MAX_PAIRS} more (--json lists every pair)")
    where = "control rows given" if out["control"] == "given" else \
        "a shadow release of half the original, the other half as control"
    print(f"attacks (Giomi et al. 2023; risk [95 % interval]; {where}; "
          f"seed {out['random_state']}):")
    lines = [(f"singling-out, {v['variant']}", v) for v in out["singling_out"]["variants"]]
    lines += [(f"linkability, {v.get('variant') or 'split'}", v)
              for v in out["linkability"]["variants"]]
    for v in out["inference"]:
        known = v.get("aux_columns", [])
        shown = ",".join(known) if len(known) <= 2 else f"{len(known)} columns"
        lines.append((f"inference of {v['secret']} from {shown}", v))
    width = max(len(label) for label, _ in lines)
    for label, v in lines:
        print(f"  {label:<{width}}  {_ci(v)}")
