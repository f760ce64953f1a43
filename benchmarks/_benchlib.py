"""Machinery shared by the benchmark scripts (one implementation each).

* Throw-away virtual environments for tools that can never be project dependencies
  (anonymeter 1.1.0 pins numpy<1.27 and pyarrow<22; SDV likewise): :func:`venv_python`.
* anonymeter itself on a release: :data:`ANONYMETER_RUNNER` (runs in its venv),
  :func:`run_anonymeter` and :func:`anonymeter_release_attacks` (the issue-17 targets:
  linkability, the class from any single column, a group member from its group-mates).
* Phases measured in a fresh subprocess (their own peak memory): :func:`run_phase`,
  :func:`peak_mib`, :func:`baseline_mib`.
* Formatting: :func:`fmt_risk` (``risk (low–high)``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ANONYMETER = "anonymeter==1.1.0"
ANONYMETER_VENV = HERE / ".venv-anonymeter"
SDV = "sdv==2.0.0"
SDV_VENV = HERE / ".venv-sdv"
#: Attacks per anonymeter evaluation (as the project's risk benchmarks).
N_ATTACKS = 200


# --------------------------------------------------------------- throw-away venvs

def venv_python(venv: Path, requirement: str, module: str, env_override: str = "") -> Path:
    """Python of a throw-away venv holding ``requirement`` (created on first use).

    ``env_override``: an environment variable naming an existing venv to reuse (e.g. one
    another checkout built), used when ``venv`` has none.
    """
    py = venv / "bin" / "python"
    if not py.exists() and env_override and os.environ.get(env_override):
        py = Path(os.environ[env_override]) / "bin" / "python"

    def works(p: Path) -> bool:
        return p.exists() and subprocess.run([str(p), "-c", f"import {module}"],
                                             capture_output=True).returncode == 0

    if not works(py):
        py = venv / "bin" / "python"
        subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", requirement], check=True)
    return py


def anonymeter_python() -> Path:
    return venv_python(ANONYMETER_VENV, ANONYMETER, "anonymeter", "ASTRID_ANONYMETER_VENV")


def sdv_python() -> Path:
    return venv_python(SDV_VENV, SDV, "sdv", "ASTRID_SDV_VENV")


# Runs inside the anonymeter venv: one JSON spec in, one JSON result out.
ANONYMETER_RUNNER = r'''
import json, sys, warnings
import numpy as np, pandas as pd
from anonymeter.evaluators import (InferenceEvaluator, LinkabilityEvaluator,
                                   SinglingOutEvaluator)
warnings.simplefilter("ignore")
spec = json.load(open(sys.argv[1]))
out = []
for case in spec["cases"]:
    ori, syn, ctl = (pd.read_csv(case[k]) for k in ("ori", "syn", "control"))
    for a in case["attacks"]:
        np.random.seed(a["seed"])  # anonymeter samples targets with pandas' global RNG
        n = a.get("n_attacks", spec["n_attacks"])
        if a["kind"] == "linkability":
            ev = LinkabilityEvaluator(ori, syn, aux_cols=tuple(a["aux"]), n_attacks=n,
                                      control=ctl).evaluate(n_jobs=1)
        elif a["kind"] == "singling_out_multivariate":  # on the attacker's columns only
            cols = a["columns"]
            ev = SinglingOutEvaluator(ori[cols], syn[cols], n_attacks=n, n_cols=a["n_cols"],
                                      control=ctl[cols], max_attempts=a["max_attempts"]
                                      ).evaluate(mode="multivariate")
        elif a["kind"] == "inference":
            # 1.1.0 defaults to regression=False (exact match) for every secret; ask for
            # its 5 % tolerance on numeric secrets, as the project does.
            ev = InferenceEvaluator(ori, syn, aux_cols=a["aux"], secret=a["secret"],
                                    regression=a["regression"], n_attacks=n,
                                    control=ctl).evaluate(n_jobs=1)
        else:
            ev = SinglingOutEvaluator(ori, syn, n_attacks=n,
                                      control=ctl).evaluate(mode="univariate")
        r, res = ev.risk(), ev.results()
        out.append({"case": case["name"], "attack": a["name"], "risk": float(r.value),
                    "ci": [float(r.ci[0]), float(r.ci[1])], "n_attacks": int(res.n_attacks_ori),
                    "n_success": int(res.n_success),
                    "n_control_success": float(res.n_control)})
json.dump(out, open(sys.argv[2], "w"))
'''


def run_anonymeter(spec: dict, tmp: Path) -> list[dict]:
    """Run :data:`ANONYMETER_RUNNER` on ``spec`` (cases of CSV paths and attacks)."""
    (tmp / "anonymeter_spec.json").write_text(json.dumps(spec))
    (tmp / "anonymeter_runner.py").write_text(ANONYMETER_RUNNER)
    subprocess.run([str(anonymeter_python()), str(tmp / "anonymeter_runner.py"),
                    str(tmp / "anonymeter_spec.json"), str(tmp / "anonymeter_out.json")],
                   check=True, cwd=tmp)
    return json.loads((tmp / "anonymeter_out.json").read_text())


#: Row orders of the published file anonymeter attacks (see anonymeter_release_attacks).
ANONYMETER_ORDERS = 5


def _mean_risks(name: str, ori, rel, ctl, attacks: list[dict], tmp: Path,
                orders: int) -> dict[str, dict]:
    """Each attack run on ``orders`` row orders of the published file (its own first),
    by attack name: the mean risk, the mean 95 % bounds and each order's risk."""
    ori_path, ctl_path = tmp / f"{name}-ori.csv", tmp / f"{name}-control.csv"
    ori.to_csv(ori_path, index=False)
    ctl.to_csv(ctl_path, index=False)
    cases = []
    for r in range(orders):
        syn = rel if r == 0 else rel.sample(frac=1.0, random_state=r).reset_index(drop=True)
        syn_path = tmp / f"{name}-syn{r}.csv"
        syn.to_csv(syn_path, index=False)
        cases.append({"name": f"{name}#{r}", "ori": str(ori_path), "syn": str(syn_path),
                      "control": str(ctl_path), "attacks": attacks})
    out = run_anonymeter({"n_attacks": min(len(ori), len(ctl)), "cases": cases}, tmp)
    by_attack: dict[str, list[dict]] = {}
    for o in out:
        by_attack.setdefault(o["attack"], []).append(o)
    return {k: {"risk": sum(o["risk"] for o in v) / len(v),
                "ci": [sum(o["ci"][0] for o in v) / len(v), sum(o["ci"][1] for o in v) / len(v)],
                "attack": k, "runs": [o["risk"] for o in v], "n_attacks": v[0]["n_attacks"]}
            for k, v in by_attack.items()}


def anonymeter_release_attacks(name: str, ori, rel, ctl, target: str, groups, tmp: Path,
                               orders: int = ANONYMETER_ORDERS) -> dict:
    """anonymeter on a release: the worst risk of each issue-17 target.

    ``ori``/``rel``/``ctl`` are DataFrames (or CSV paths) in the release's domain (the
    attacker knows the published recipe); ``groups`` the released grouping's column
    lists. Attacks: linkability with the attributes in two halves; the class from every
    single column; every member of a multi-column group from its group-mates
    (regression tolerance for numeric secrets).

    How anonymeter's point estimate is read (a rule fixed before the runs, for every
    table): every row of the smaller side is a target (anonymeter samples 200 by
    default), and each attack is run on ``orders`` row orders of the published file (the
    file's own first) and its risks averaged. anonymeter guesses from the *first* of the
    released rows nearest to a target, so on a release of binned values, where many rows
    tie, one row order decides every tie, and with 200 targets one column's estimate has
    a standard deviation of about 0.1: the worst of 15 columns then picks that noise.
    Returns, per target, the worst attack by mean risk: ``{"risk"`` (mean), ``"ci"``
    (mean of the orders' 95 % bounds), ``"attack"``, ``"runs"`` (each order's risk)``}``
    (``None`` when there is no such attack).
    """
    import pandas as pd

    frames = [pd.read_csv(t) if isinstance(t, (str, Path)) else t for t in (ori, rel, ctl)]
    ori, rel, ctl = frames
    attrs = [c for c in ori.columns if c != target]
    half = len(attrs) // 2
    attacks = [{"name": "linkability", "kind": "linkability",
                "aux": [attrs[:half], attrs[half:]], "seed": 0}]
    for i, c in enumerate(attrs):
        attacks.append({"name": f"class from {c}", "kind": "inference", "secret": target,
                        "aux": [c], "regression": False, "seed": 1 + i})
    for g in groups:
        for c in g if len(g) > 1 else ():
            attacks.append({"name": f"{c} from group-mates", "kind": "inference",
                            "secret": c, "aux": [m for m in g if m != c],
                            "regression": bool(pd.api.types.is_numeric_dtype(ori[c])),
                            "seed": 100 + len(attacks)})
    mean = _mean_risks(name, ori, rel, ctl, attacks, tmp, orders)

    def worst(pred) -> dict | None:
        rows = [m for k, m in mean.items() if pred(k)]
        return max(rows, key=lambda m: m["risk"]) if rows else None

    return {"linkability": worst(lambda a: a == "linkability"),
            "class_from_one": worst(lambda a: a.startswith("class from")),
            "infer_member": worst(lambda a: a.endswith("group-mates")),
            "orders": orders}


#: Queries anonymeter's multivariate singling out may draw before it stops (its default,
#: 10,000,000, ran for hours on a k-anonymous release, where almost no predicate on the
#: quasi-identifiers singles anyone out; the queries it does not find count as failed
#: attacks in its risk, which is relative to the attacks asked for).
SINGLING_OUT_ATTEMPTS = 100_000


def anonymeter_declared_attacks(name: str, ori, rel, ctl, target: str, model: dict,
                                tmp: Path, orders: int = 3) -> dict:
    """anonymeter with a declared attacker model's auxiliary columns: linkability with
    the quasi-identifiers in two halves, inference of the class and of every declared
    sensitive column from all the quasi-identifiers (regression tolerance for numeric
    secrets), and singling out on predicates of up to three quasi-identifiers (500
    attacks, anonymeter's default). Each run on ``orders`` row orders of the published
    file, averaged as :func:`anonymeter_release_attacks` does. Returns the worst of each
    with its mean 95 % interval; ``at_noise_floor``: every interval reaches 0 or below
    (the attack does no better than on the control rows). Singling out draws at most
    :data:`SINGLING_OUT_ATTEMPTS` queries."""
    import pandas as pd

    frames = [pd.read_csv(t) if isinstance(t, (str, Path)) else t for t in (ori, rel, ctl)]
    ori, rel, ctl = frames
    known = [c for c in model["quasi_identifiers"] if c in ori.columns]
    attacks: list[dict] = []
    if len(known) >= 2:
        half = len(known) // 2
        attacks.append({"name": "linkability", "kind": "linkability",
                        "aux": [known[:half], known[half:]], "seed": 0})
        attacks.append({"name": "singling out", "kind": "singling_out_multivariate",
                        "columns": known, "n_cols": min(3, len(known)), "n_attacks": 500,
                        "max_attempts": SINGLING_OUT_ATTEMPTS, "seed": 1})
    for i, secret in enumerate([target, *model.get("sensitive", [])]):
        attacks.append({"name": f"{secret} from the quasi-identifiers", "kind": "inference",
                        "secret": secret, "aux": known,
                        "regression": secret != target and bool(
                            pd.api.types.is_numeric_dtype(ori[secret])),
                        "seed": 10 + i})
    mean = _mean_risks(name, ori, rel, ctl, attacks, tmp, orders)

    def worst(pred) -> dict | None:
        rows = [m for k, m in mean.items() if pred(k)]
        return max(rows, key=lambda m: m["risk"]) if rows else None

    found = {"linkability": worst(lambda a: a == "linkability"),
             "singling_out": worst(lambda a: a == "singling out"),
             "inference": worst(lambda a: a.endswith("quasi-identifiers")),
             "orders": orders, "auxiliary_columns": known}
    found["at_noise_floor"] = all(m["ci"][0] <= 0.0 for m in mean.values())
    return found


#: The issue-17 targets on anonymeter's point estimates.
ANONYMETER_TARGETS = {"linkability": 0.10, "class_from_one": 0.20, "infer_member": 0.20}


def meets_anonymeter_targets(a: dict) -> bool:
    return all((a.get(k) or {"risk": 0.0})["risk"] <= v for k, v in ANONYMETER_TARGETS.items())


# ------------------------------------------------------------ measured phases

def peak_mib() -> float:
    """This process's peak resident memory (MiB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_phase(script: str, name: str, src: str, out: str) -> dict:
    """Run ``script --phase name --src src --out out`` in a fresh interpreter.

    The script prints one JSON object as its last line; the load average before and
    after is added (on a shared machine the wall time mostly measures the others).
    """
    load = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, script, "--phase", name, "--src", src,
                           "--out", out], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{proc.stderr}")
    d = json.loads(proc.stdout.strip().splitlines()[-1])
    d["load_before_after"] = [load, os.getloadavg()[0]]
    return d


def baseline_mib(setup: str) -> float:
    """Resident memory of an interpreter that only ran ``setup`` (its imports)."""
    code = (f"{setup}; import sys; sys.path.insert(0, {str(HERE)!r}); "
            "import _benchlib; print(_benchlib.peak_mib())")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                text=True, check=True).stdout)


# ----------------------------------------------------------------- formatting

def fmt_risk(d: dict | None) -> str:
    """``risk (low–high)``; empty for a missing estimate."""
    if not d:
        return ""
    return f"{d['risk']:.2f} ({d['ci'][0]:.2f}–{d['ci'][1]:.2f})"


def write_results(out: str | Path, result: dict, markdown: str) -> None:
    """``<out>.json`` (the figures) and ``<out>.md`` (their table), then the table on
    stdout: how every sweep records what it measured."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(markdown)
    print(markdown)
