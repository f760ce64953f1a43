"""The results of the disclosure measures: :class:`GroupDisclosure` (one group's
projection), :class:`PairLinkage` (one pair of groups, with :data:`LINKAGE_Z`, the
tolerance of a genuine shuffle), :class:`DisclosureRisk` (both, for one release), and
:func:`worst_group` / :func:`worst_pair`, the figures a gate judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from astrid_airflow._errors import ParameterError

#: A pair fails linkage when its excess over the expectation exceeds both the policy's
#: absolute margin and this many of its standard deviations. ``sd_linked_share`` ignores
#: covariances and is up to ~2x too small for strongly associated binary columns
#: (simulated: kr-vs-kp, soybean); 6 of them kept every one of ~140 000 simulated
#: genuine pair shuffles of seven UCI tables (30 shuffles at 60 rows, 200 rows and
#: full size) below the tolerance.
LINKAGE_Z = 6.0


@dataclass(frozen=True)
class GroupDisclosure:
    """Disclosure measures of one group's projection (its columns plus the class).

    Attributes
    ----------
    columns : tuple of str
        The group's columns.
    k : int
        The k of ``share_below_k``.
    k_min : int
        Smallest equivalence-class size: rows sharing the group's values *and* class
        (the projection is ``k_min``-anonymous).
    share_below_k : float
        Share of rows in equivalence classes of fewer than ``k`` rows.
    class_disclosure_share : float
        Share of rows whose group value occurs in one class only: anyone who knows
        those values learns the class (the projection fails distinct ℓ-diversity with
        ℓ = 2 for them).
    n_rows : int
        Rows measured.
    """

    columns: tuple[str, ...]
    k: int
    k_min: int
    share_below_k: float
    class_disclosure_share: float
    n_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "k": self.k, "k_min": self.k_min,
                "share_below_k": self.share_below_k,
                "class_disclosure_share": self.class_disclosure_share,
                "n_rows": self.n_rows}


@dataclass(frozen=True)
class PairLinkage:
    """How much two groups of a release still sit together as in the original.

    Attributes
    ----------
    groups : pair of tuples of str
        The two groups' columns.
    linked_share : float
        Share of release rows whose (group-A tuple, group-B tuple, class) combination
        can be matched one to one (multiset matching, so duplicated rows count at most
        as often as in the original) to an original row.
    expected_linked_share : float
        Its expected value when the two groups are permuted independently within each
        class (what the artefact's shuffle does).
    sd_linked_share : float
        Its standard deviation under the same shuffles, summing the variances of the
        keys' matched counts (ignoring their covariances, which are mostly negative
        within a class: simulation shows the true sd is at most about this).
    n_rows : int
        Release rows.
    """

    groups: tuple[tuple[str, ...], tuple[str, ...]]
    linked_share: float
    expected_linked_share: float
    sd_linked_share: float = 0.0
    n_rows: int = 0
    sample_fraction: float = 1.0

    @property
    def excess(self) -> float:
        """``linked_share - expected_linked_share``."""
        return self.linked_share - self.expected_linked_share

    def tolerance(self, max_excess: float) -> float:
        """Largest excess a genuine shuffle is allowed: ``max(max_excess, LINKAGE_Z * sd)``."""
        return max(float(max_excess), LINKAGE_Z * self.sd_linked_share)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [list(g) for g in self.groups], "linked_share": self.linked_share,
                "expected_linked_share": self.expected_linked_share,
                "sd_linked_share": self.sd_linked_share, "excess": self.excess,
                "n_rows": self.n_rows, "sample_fraction": self.sample_fraction}


@dataclass(frozen=True)
class DisclosureRisk:
    """Per-group disclosure and per-pair linkage of one release (:func:`disclosure_risk`)."""

    groups: tuple[GroupDisclosure, ...]
    pairs: tuple[PairLinkage, ...]
    k: int

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "groups": [g.to_dict() for g in self.groups],
                "pairs": [p.to_dict() for p in self.pairs]}


def worst_group(disclosures: Sequence[GroupDisclosure],
                measure: str = "class_disclosure_share") -> GroupDisclosure | None:
    """The group with the highest ``measure`` (``share_below_k``,
    ``class_disclosure_share``) or the lowest ``k_min``; None for no groups.
    Ties go to the first group in the grouping's order."""
    if measure not in ("share_below_k", "class_disclosure_share", "k_min"):
        raise ParameterError(f"Invalid measure: {measure!r}. Must be 'share_below_k', "
                             "'class_disclosure_share' or 'k_min'.")
    if not disclosures:
        return None
    sign = -1 if measure == "k_min" else 1
    return max(disclosures, key=lambda d: sign * getattr(d, measure))


def worst_pair(linkages: Sequence[PairLinkage]) -> PairLinkage | None:
    """The pair whose linked share exceeds its expectation the most; None for no pairs."""
    return max(linkages, key=lambda p: p.excess) if linkages else None
