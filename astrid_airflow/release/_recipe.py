"""The release recipe: what a release does to each group's values before the shuffle.

A GoldenEye release publishes every value next to its true class and keeps a group's
columns aligned, so it is only as safe as each group's projection (its columns plus the
class). The standard statistical-disclosure-control remedies (Hundepool et al.,
*Statistical Disclosure Control*, Wiley 2012, ch. 3-4) make those projections
k-anonymous and class-diverse while keeping as much of the values as they can:

* ``bins``: numeric coarsening to intervals, fitted with the class: every bin holds at
  least two classes and at least ``k`` reference rows of each class it holds
  (``pipeline._fit_bins._cut_order``). A value is published as its bin's
  *representative*: a value inside the bin of the column's type (an integer column
  stays integer) that no reference row or at least k rows have, never one person's
  value (``pipeline._fit_bins.representative``); the recipe also states each bin's
  label ``[low, high)``. Values below the first edge or
  above the last are published as the first/last bin's representative: the bins do the
  top- and bottom-coding;
* ``round``: rounding to a multiple of ``step``, top/bottom-coded at ``low``/``high``;
* ``suppress``: categorical merging of rare categories: categories not in ``keep`` are
  published as missing (one "suppressed" value; the type is unchanged);
* ``mdav``: microaggregation of a multi-column group within class (MDAV, Domingo-Ferrer
  and Mateo-Sanz, "Practical data-oriented microaggregation for statistical disclosure
  control", IEEE TKDE 14(1), 2002): every published tuple is the mean (numeric columns;
  rounded for integer columns) or mode (others) of at least ``k`` similar tuples of the
  same class. MDAV has no parameters to fit: on any batch it is applied *within that
  batch* with the recorded ``k`` (so a new batch is aggregated among its own rows).
* ``partition``: a multi-column group generalised together, across classes: a Mondrian
  tree of cuts fitted on the reference table, every cell with at least two classes and
  at least ``k`` rows of each; a row is published as its cell's representative tuple
  (row by row, on any batch: :mod:`._partition`).
* ``synthesise``: a multi-column group's values drawn from a class-conditional model
  fitted on the reference (:mod:`._synthesis`): numeric values are drawn, never
  copied, and a categorical tuple is one at least k reference rows of its class share,
  so the group is judged by its distance to real tuples, not by k.

A :class:`ReleaseRecipe` records, per column, what was done with its parameters: bin
edges and representatives, not "quantiles of whatever data", so it re-applies exactly to
a new batch. It is deterministic (no randomness) and JSON round-trips; a bad recipe is
refused with a :class:`~astrid_airflow.RecipeError`.
"""


from __future__ import annotations

import dataclasses
import itertools
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from astrid_airflow._errors import ParameterError, RecipeError
from astrid_airflow.engine import Grouping

from ._attacker_model import check_attacker_model
from ._partition import PARTITION_KEYS, check_partition_step
from ._synthesis import STEP_KEYS as SYNTHESIS_KEYS
from ._synthesis import check_synthesis_step

RECIPE_VERSION = 1
_METHODS = ("bins", "round", "suppress", "mdav", "partition", "synthesise")
_TYPES = ("integer", "float", "string", "category", "boolean")
#: The steps on several columns of one group (named by ``columns``).
_GROUP_METHODS = ("mdav", "partition", "synthesise")
#: Bin counts tried per group, most detailed first (the first that passes is kept).
BIN_LADDER = (64, 32, 20, 12, 8, 6, 5, 4, 3, 2)


# ----------------------------------------------------------------------------- recipe

def _finite(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _scalar(x: object) -> bool:
    return x is None or isinstance(x, (str, bool)) or _finite(x)


def _check_step(i: int, s: Any, target: str | None) -> dict[str, Any]:
    where = f"recipe step #{i}"
    if not isinstance(s, Mapping):
        raise RecipeError(f"Invalid {where}: expected an object, got {type(s).__name__}.")
    s = dict(s)
    method = s.get("method")
    if method not in _METHODS:
        raise RecipeError(f"Invalid {where}: method {method!r}; known: {list(_METHODS)}.")
    allowed = {"bins": {"method", "column", "edges", "values", "labels", "published_type"},
               "round": {"method", "column", "step", "low", "high", "published_type"},
               "suppress": {"method", "column", "keep", "published_type"},
               "mdav": {"method", "columns", "k", "published_types"},
               "partition": set(PARTITION_KEYS), "synthesise": set(SYNTHESIS_KEYS)}[method]
    unknown = sorted(set(s) - allowed)
    missing = sorted(allowed - set(s))
    if unknown or missing:
        raise RecipeError(f"Invalid {where} ({method}): unknown key(s) {unknown}, missing "
                          f"key(s) {missing}.")
    cols = s["columns"] if method in _GROUP_METHODS else [s["column"]]
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c
                                                         for c in cols):
        raise RecipeError(f"Invalid {where} ({method}): column names must be non-empty "
                          f"strings, got {cols!r}.")
    if target is not None and target in cols:
        raise RecipeError(f"Invalid {where}: the class column {target!r} is never "
                          "generalised.")
    if method == "bins":
        e, v, lab = s["edges"], s["values"], s["labels"]
        if not (isinstance(e, list) and isinstance(v, list) and isinstance(lab, list)) \
                or not all(_finite(x) for x in e + v) or len(v) != len(e) + 1 \
                or len(lab) != len(v) or not all(isinstance(x, str) for x in lab):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): need finite numeric "
                              "'edges' (n), 'values' (n + 1) and string 'labels' (n + 1).")
        if any(b <= a for a, b in itertools.pairwise(e)):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): edges must "
                              "increase strictly.")
        if any(b <= a for a, b in itertools.pairwise(v)):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): representative "
                              "values must increase strictly (one per bin).")
        if any(not (lo <= x < hi) for x, lo, hi in zip(v, [-math.inf, *e], [*e, math.inf])):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): a representative "
                              "value lies outside its bin (it would invent a value).")
    elif method == "round":
        if not _finite(s["step"]) or s["step"] <= 0:
            raise RecipeError(f"Invalid {where} (round {cols[0]!r}): step must be > 0, got "
                              f"{s['step']!r}.")
        for key in ("low", "high"):
            if s[key] is not None and not _finite(s[key]):
                raise RecipeError(f"Invalid {where} (round {cols[0]!r}): {key} must be a "
                                  f"number or null, got {s[key]!r}.")
        if s["low"] is not None and s["high"] is not None and s["low"] > s["high"]:
            raise RecipeError(f"Invalid {where} (round {cols[0]!r}): low > high.")
    elif method == "partition":  # the tree of cuts (._partition)
        check_partition_step(where, s)
    elif method == "synthesise":  # the class-conditional model (._synthesis)
        check_synthesis_step(where, s)
    elif method == "suppress":
        if not isinstance(s["keep"], list) or not all(_scalar(x) and x is not None
                                                      for x in s["keep"]):
            raise RecipeError(f"Invalid {where} (suppress {cols[0]!r}): 'keep' must be a "
                              "list of category values.")
    else:
        k = s["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise RecipeError(f"Invalid {where} (mdav): k must be an integer >= 1, got "
                              f"{k!r}.")
    if method in _GROUP_METHODS and len(set(cols)) != len(cols):
        raise RecipeError(f"Invalid {where} ({method}): duplicated columns {cols!r}.")
    if method in ("mdav", "synthesise") and len(set(cols)) == len(cols):
        pt = s["published_types"]
        if not isinstance(pt, list) or len(pt) != len(cols) or any(t not in _TYPES
                                                                   for t in pt):
            raise RecipeError(f"Invalid {where} ({method}): published_types must list "
                              f"one of {list(_TYPES)} per column.")
    if method not in _GROUP_METHODS and s["published_type"] not in _TYPES:
        raise RecipeError(f"Invalid {where}: published_type {s['published_type']!r}; "
                          f"known: {list(_TYPES)}.")
    return s


@dataclass(frozen=True)
class ReleaseRecipe:
    """What a release does to each column before the shuffle (frozen, validated).

    Parameters
    ----------
    k : int
        The k the remedies were fitted for (every bin, kept category and MDAV cluster
        holds at least k reference rows).
    steps : tuple of dict
        One entry per remedied column (or MDAV group), applied in order; columns not
        named are published unchanged. Each has ``method`` (``"bins"``, ``"round"``,
        ``"suppress"``, ``"mdav"``, ``"partition"``), its parameters and the published type (see the
        module docstring and ``docs/privacy.md``).
    target : str or None
        The class column (never generalised).
    notes : tuple of str
        Human-readable notes (e.g. how a new batch is treated).
    version : int
        Schema version of the recipe (1).
    fallbacks : tuple of ReleaseRecipe
        Coarser recipes of the same release, each checked by the release choice as any
        release is (``choose_release``), finest first: a batch on which this recipe
        needs more local suppression than ``fallback_share`` in some group is published
        with the first of them that does not (:attr:`rungs`,
        :func:`~astrid_airflow.release._surrogate.release_domain`). Empty: no fallback.
    fallback_share : float or None
        The per-group suppressed share the rungs are chosen by (the policy's
        ``max_suppressed_share`` at the choice); required with ``fallbacks``.
    attacker_model : AttackerModel, dict or None
        The roles local suppression works under (the group tuples' quasi-identifier
        projections and the sensitive columns' diversity); None: none declared, every
        column a quasi-identifier (and no key in the JSON, so such recipes are the
        same bytes as before roles existed).

    Examples
    --------
    >>> r = ReleaseRecipe(k=5, steps=({"method": "round", "column": "a", "step": 10,
    ...                                "low": 0, "high": 100, "published_type": "float"},))
    >>> ReleaseRecipe.from_json(r.to_json()) == r
    True
    """

    k: int
    steps: tuple = ()
    target: str | None = None
    notes: tuple = ()
    version: int = RECIPE_VERSION
    fallbacks: tuple = ()
    fallback_share: float | None = None
    attacker_model: Any = None
    _by_column: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, numbers.Integral) \
                or self.k < 1:
            raise RecipeError(f"Invalid recipe k: {self.k!r}. Must be an integer >= 1.")
        if self.version != RECIPE_VERSION:
            raise RecipeError(f"Unknown recipe version {self.version!r}; supported: "
                              f"{RECIPE_VERSION}.")
        if self.target is not None and not isinstance(self.target, str):
            raise RecipeError(f"Invalid recipe target: {self.target!r}.")
        if isinstance(self.steps, (str, bytes, Mapping)) or not isinstance(self.steps,
                                                                           Sequence):
            raise RecipeError("Invalid recipe: steps must be a list of objects.")
        steps = tuple(_check_step(i, s, self.target) for i, s in enumerate(self.steps))
        seen: dict[str, int] = {}
        for i, s in enumerate(steps):
            for c in s.get("columns") or [s["column"]]:
                if c in seen:
                    raise RecipeError(f"Invalid recipe: column {c!r} is remedied twice "
                                      f"(steps #{seen[c]} and #{i}).")
                seen[c] = i
        if not all(isinstance(n, str) for n in self.notes):
            raise RecipeError("Invalid recipe: notes must be strings.")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "steps", steps)
        model = check_attacker_model(self.attacker_model)
        object.__setattr__(self, "attacker_model", model if model.declared else None)
        self._check_fallbacks()
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "_by_column", seen)

    __hash__ = None  # holds dicts

    def _check_fallbacks(self) -> None:
        if isinstance(self.fallbacks, (str, bytes, Mapping)) or not isinstance(
                self.fallbacks, Sequence):
            raise RecipeError("Invalid recipe: fallbacks must be a list of recipes.")
        rungs = tuple(f if isinstance(f, ReleaseRecipe) else ReleaseRecipe.from_dict(f)
                      for f in self.fallbacks)
        for i, f in enumerate(rungs, 1):
            if f.attacker_model is None and self.attacker_model is not None:
                f = dataclasses.replace(f, attacker_model=self.attacker_model)
            if f.fallbacks or f.k != self.k or f.target != self.target \
                    or f.attacker_model != self.attacker_model:
                raise RecipeError(f"Invalid recipe fallback #{i}: it must have the "
                                  f"recipe's k ({self.k}), target ({self.target!r}) and "
                                  "attacker model, and no fallbacks of its own.")
            rungs = (*rungs[:i - 1], f, *rungs[i:])
        share = self.fallback_share
        if rungs and (isinstance(share, bool) or not _finite(share)
                      or not 0 <= share <= 1):
            raise RecipeError(f"Invalid recipe fallback_share: {share!r}. A recipe with "
                              "fallbacks needs the share they are chosen by, in [0, 1].")
        object.__setattr__(self, "fallbacks", rungs)
        object.__setattr__(self, "fallback_share", float(share) if rungs else None)

    @property
    def rungs(self) -> tuple[ReleaseRecipe, ...]:
        """This recipe without its fallbacks, then each fallback: what a batch may be
        published with, finest first (rung 0 is the chosen release)."""
        if not self.fallbacks:
            return (self,)
        return (dataclasses.replace(self, fallbacks=(), fallback_share=None),
                *self.fallbacks)

    def keeps_fallback_share(self, share: float) -> bool:
        """Whether a group of a batch that needs ``share`` of its rows suppressed on a
        rung may be published with it (always, without fallbacks)."""
        return self.fallback_share is None or share <= self.fallback_share + 1e-12

    def mixed(self, picks: Sequence[int], groups: Sequence[Sequence[str]]
              ) -> ReleaseRecipe:
        """The recipe (without fallbacks) whose steps for ``groups[g]``'s columns are
        those of rung ``picks[g]``: what a batch whose groups fell back is published
        with (a step never spans groups, ``check_columns``)."""
        rungs = self.rungs
        if not any(picks):
            return rungs[0]
        steps = []
        for cols, p in zip(groups, picks):
            steps += [s for s in rungs[p].steps if set(s.get("columns") or [s["column"]])
                      <= set(cols)]
        return dataclasses.replace(rungs[0], steps=tuple(steps))

    @property
    def synthesised_columns(self) -> frozenset[str]:
        """The columns whose values a ``synthesise`` step draws (this rung's steps)."""
        return frozenset(c for s in self.steps if s["method"] == "synthesise"
                         for c in s["columns"])

    def without_synthesis(self) -> ReleaseRecipe:
        """This rung with its ``synthesise`` steps left out (the real values of those
        groups): what a held-out row is scored with."""
        if not self.synthesised_columns:
            return self
        return dataclasses.replace(self, fallbacks=(), fallback_share=None, steps=tuple(
            s for s in self.steps if s["method"] != "synthesise"))

    def is_synthesised(self, columns: Sequence[str]) -> bool:
        """Whether a group publishes no real value: every one of its ``columns`` is
        synthesised or fully suppressed (an identifier), and one at least is drawn."""
        drawn = self.synthesised_columns
        gone = {s["column"] for s in self.steps if s["method"] == "suppress"
                and not s["keep"]}
        return bool(drawn & set(columns)) and set(columns) <= drawn | gone

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the recipe changes."""
        return tuple(self._by_column)

    def check_columns(self, columns: Sequence[str], grouping: Grouping | None = None
                      ) -> None:
        """Refuse a recipe naming unknown columns, or an MDAV/partition step across
        groups."""
        for f in self.fallbacks:
            f.check_columns(columns, grouping)
        missing = [c for c in self.columns if c not in set(columns)]
        if missing:
            raise RecipeError(f"The recipe names column(s) {missing} the table does not "
                              "have.")
        if grouping is not None:
            group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
            for s in self.steps:
                if s["method"] in _GROUP_METHODS and len(
                        {group_of.get(c) for c in s["columns"]}) > 1:
                    raise RecipeError(f"The recipe's {s['method']} step over "
                                      f"{s['columns']} spans several groups of the "
                                      "grouping.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict (``version``, ``k``, ``target``, ``steps``, ``notes``; with
        fallbacks, ``fallbacks`` and ``fallback_share`` too)."""
        out = {"version": self.version, "k": self.k, "target": self.target,
               "steps": [json.loads(json.dumps(s, allow_nan=False)) for s in self.steps],
               "notes": list(self.notes)}
        if self.fallbacks:
            out.update(fallbacks=[f.to_dict() for f in self.fallbacks],
                       fallback_share=self.fallback_share)
        if self.attacker_model is not None:
            out["attacker_model"] = self.attacker_model.to_dict()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) \
            + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> ReleaseRecipe:
        """Validate and build; ``RecipeError`` names the problem."""
        if not isinstance(data, Mapping):
            raise RecipeError(f"Invalid recipe: expected an object, got "
                              f"{type(data).__name__}.")
        known = {"version", "k", "target", "steps", "notes", "fallbacks", "fallback_share",
                 "attacker_model"}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown or "k" not in data or "steps" not in data:
            raise RecipeError(f"Invalid recipe: unknown key(s) {unknown}; 'k' and 'steps' "
                              f"are required (known: {sorted(known)}).")
        steps = data["steps"]
        if not isinstance(steps, list):
            raise RecipeError("Invalid recipe: steps must be a list of objects.")
        notes = data.get("notes", [])
        if not isinstance(notes, list):
            raise RecipeError("Invalid recipe: notes must be a list of strings.")
        fallbacks = data.get("fallbacks", [])
        if not isinstance(fallbacks, list):
            raise RecipeError("Invalid recipe: fallbacks must be a list of recipes.")
        return cls(k=data["k"], steps=tuple(steps), target=data.get("target"),
                   notes=tuple(notes), version=data.get("version", RECIPE_VERSION),
                   fallbacks=tuple(fallbacks), fallback_share=data.get("fallback_share"),
                   attacker_model=data.get("attacker_model"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleaseRecipe:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise RecipeError(f"Invalid recipe JSON: {exc.msg}.") from None


def release_recipe(artefact: Any, remedies: object = True) -> Any:
    """The recipe a release of ``artefact`` applies (None: the raw GoldenEye release).

    ``remedies=False`` (``--no-remedies``) gives the raw release. An artefact whose
    recorded release was refused (no candidate passed its policy) cannot be released
    with remedies: ``RecipeError`` says which trade-off could not be made.
    """
    if not isinstance(remedies, bool):
        raise ParameterError(f"Invalid remedies: {remedies!r}. Must be True or False.")
    if artefact is None or not remedies:
        return None
    refused = getattr(artefact, "release_refused", None)
    if refused:
        raise RecipeError(f"No release of this artefact passes its privacy policy: "
                          f"{refused}. Nothing is published (remedies=False / "
                          "--no-remedies gives the raw release, which the gate judges).")
    return getattr(artefact, "recipe", None)
