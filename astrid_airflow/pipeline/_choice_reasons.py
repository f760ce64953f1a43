"""Why the choice refused: each failed check of a candidate with its figures.

:func:`refusal_reason` states the trade-off that could not be made (privacy against utility,
or privacy alone) and names the closest candidates with the group at fault;
:func:`refusal` adds the nearest candidates, each with the single policy change that
would accept it (``astrid_airflow.gate.nearest_candidates``).
"""

from __future__ import annotations

from typing import Any

from ._choice_checks import BATCH_REFUSAL_RATE, batch_excess


def _cols(columns: list[str]) -> str:
    return "{" + ", ".join(columns[:3]) + (f", +{len(columns) - 3} more" if len(columns) > 3
                                           else "") + "}"


def _below_k(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_share_below_k_group") or {}
    return (f"{r['share_below_k']:.3f} of rows in classes below k={policy.disclosure_k} > "
            f"{policy.max_share_below_k} (k_min {w.get('k_min')} in group "
            f"{_cols(w.get('columns', []))})")


def _suppression(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_suppressed_group") or {}
    worst = f"worst group {_cols(w.get('columns', []))}"
    if "batch_over_budget" not in r:  # another check settled it first: no batches drawn
        return f"{r['suppressed_share']:.3f} of rows suppressed, {worst}"
    upper = r.get("batch_over_budget_upper")
    bound = "" if upper is None else f" (95 % upper bound {upper:.1%})"
    drawn = "" if "batch_planned" not in r else \
        f", the first {r['batch_resamples']} of {r['batch_planned']} drawn"
    return (f"{r['suppressed_share']:.3f} of rows suppressed, and more than "
            f"{policy.max_suppressed_share} in {r['batch_over_budget']:.1%}{bound} "
            f"of new batches like the reference{drawn} (at most {BATCH_REFUSAL_RATE:.0%} "
            f"may be), {worst}")


def _class_disclosure(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_class_disclosure_group") or {}
    return (f"class disclosure {r['class_disclosure_share']:.3f} > "
            f"{policy.max_class_disclosure_share} in group {_cols(w.get('columns', []))}")


def _unique_share(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    return (f"largest group's unique share {r['largest_group_unique_share']:.3f} > "
            f"{policy.max_largest_group_unique_share}")


def _intact(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    kept = r.get("intact_row_proportion_after_swaps", r["expected_intact_row_proportion"])
    return (f"intact rows {kept:.3f} after swaps (expected "
            f"{r['expected_intact_row_proportion']:.3f}) > {policy.max_intact}")


def _one_column(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_class_from_one_column") or {}
    return (f"class from column {w.get('column')} alone: risk upper bound "
            f"{r['class_from_one_column_upper']:.3f} > "
            f"{policy.max_class_from_one_column_risk}")


def _utility(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    return f"loses {c['accuracy_drop']:.3f} accuracy > {policy.max_accuracy_drop}"


#: check -> its failure with the figures (and the group at fault); an attack otherwise
_WHY = {"share_below_k": _below_k, "suppression": _suppression,
        "class_disclosure": _class_disclosure, "largest_group_unique_share": _unique_share,
        "intact_rows": _intact, "class_from_one_column": _one_column, "utility": _utility}


def _attack(f: str, r: dict[str, Any], policy: Any) -> str:
    """An attack's failure: the bound the gate's own draw may reach."""
    limit = getattr(policy, f"max_{f}_risk", None)
    return (f"{f} risk upper bound {r.get(f'{f}_upper', float('nan')):.3f} (the "
            f"gate's may reach {r.get(f'{f}_gate_bound', float('nan')):.3f}) > {limit}")


def _why(c: dict[str, Any], policy: Any) -> str:
    """The failed checks of a candidate with their figures (and the group at fault)."""
    r = c["risks"]
    return "; ".join(_WHY[f](c, r, policy) if f in _WHY else _attack(f, r, policy)
                     for f in c["failed"])


def refusal_reason(cands: list[dict[str, Any]], policy: Any) -> str:
    private = [c for c in cands if not (set(c["failed"]) - {"utility"})]
    useful = sorted((c for c in cands if "utility" not in c["failed"]),
                    key=lambda c: -c["accuracy_surrogate"])
    within = (f"; the {len(useful)} release(s) within it fail privacy (most accurate: "
              + " | ".join(f"{c['label']}: {_why(c, policy)}" for c in useful[:2]) + ")"
              if useful else "; no candidate is within it")
    if private:
        best = max(private, key=lambda c: c["accuracy_surrogate"])
        return (f"privacy vs utility: the most accurate release passing every privacy "
                f"expectation checked before the attacks ({best['label']}) loses "
                f"{best['accuracy_drop']:.3f} accuracy on held-out real rows, above "
                f"max_accuracy_drop {policy.max_accuracy_drop}" + within)
    # fewest checks failed, then nearest to the batch check, then the most accurate
    closest = min(cands, key=lambda c: (len(c["failed"]), batch_excess(c["risks"]),
                                        -c["accuracy_surrogate"]))
    worst = sorted({f for c in cands for f in c["failed"]})
    return ("privacy: no candidate grouping with remedies passes every privacy expectation "
            f"of the policy (failing: {', '.join(worst)}; closest: {closest['label']}: "
            f"{_why(closest, policy)})")


def refusal(recorded: list[dict[str, Any]], cands: list[dict[str, Any]], policy: Any
            ) -> dict[str, Any]:
    """A refused release's ``reason`` (the trade-off, then the nearest candidates) and
    ``nearest`` (those candidates, their misses and single policy changes), from the
    candidates as recorded (``recorded``) and as measured (``cands``)."""
    from astrid_airflow.gate import frontier_points, nearest_candidates, nearest_text

    nearest = nearest_candidates(frontier_points(recorded, policy, None), recorded, policy)
    text = nearest_text(nearest)
    return {"reason": refusal_reason(cands, policy) + (f"; {text}" if text else ""),
            "nearest": nearest}
