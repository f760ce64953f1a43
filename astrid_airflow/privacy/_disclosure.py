"""Exact disclosure measures of a released table: per group, and per pair of groups.

A GoldenEye release publishes every column's values unchanged next to the true class
and keeps each group's columns aligned row by row; groups are shuffled independently
within class. So a release is only as safe as each group's projection (its columns plus
the class), and the groups must really be independent of one another in the file.
This module measures both, exactly, on the values as published (continuous values are
compared as they are, which is honest about what a release reveals):

* :func:`group_disclosure`: for every group (singletons included), the k-anonymity of
  the projection (group columns + class), the share of rows in equivalence classes
  smaller than ``k``, and the share of rows whose group value occurs in one class only
  (distinct ℓ-diversity with ℓ = 2 on the class: "class disclosure");
* :func:`cross_group_linkage`: for every pair of groups, the share of release rows whose
  two group tuples still sit together as in an original row of the same class, beside
  its expected value under the artefact's independent within-class shuffles. A release
  coarser than the artefact (one column shuffled, the rest aligned) or a near-identity
  shows up as a linked share far above its expectation.

References: Hundepool et al., *Statistical Disclosure Control*, Wiley 2012 (k-anonymity,
ℓ-diversity, equivalence classes of quasi-identifiers); Giomi et al., "A Unified
Framework for Quantifying Privacy Risk in Synthetic Data", PETS 2023 (the attack-based
risks built on top of these measures live elsewhere).

Everything is vectorised on 64-bit row hashes (:func:`._hashing.row_hashes`, computed
column by column from Arrow): one sort per group, then O(n) gathers per pair.

This module owns the three public measures; the results are in ``_disclosure_results``,
the measuring pass in ``_disclosure_measure`` (exact codes and pairs in
``_exact_linkage``, the pairs' moments in ``_linkage_moments``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from astrid_airflow._errors import DataError
from astrid_airflow._validation import check_positive_int
from astrid_airflow.release import TableSource, resolve_grouping, table_source

from ._disclosure_measure import risk
from ._disclosure_results import DisclosureRisk, GroupDisclosure, PairLinkage


def _prepare(tables: Sequence[tuple[Any, str]], target: Any, grouping: Any, k: int | None
             ) -> tuple[list[TableSource], Any, str]:
    if k is not None:
        check_positive_int(k, "k")
    resolved, target, _ = resolve_grouping(grouping, target)
    sources = []
    for table, what in tables:
        src = table_source(table, what)
        src.require([*resolved.columns, target], what)
        if src.num_rows == 0:
            raise DataError(f"The {what} is empty (0 rows).")
        sources.append(src)
    return sources, resolved, target


def group_disclosure(released: Any, *, target: str | None = None, grouping: Any,
                     k: int = 5) -> list[GroupDisclosure]:
    """Disclosure measures of every group of a released table, singletons included.

    Parameters
    ----------
    released : DataFrame, pyarrow.Table or Parquet/CSV path
        The table as published (exact values).
    target : str, optional
        The class column (an artefact passed as ``grouping`` supplies it).
    grouping : GroupingArtefact, Grouping, str or list of lists
        The groups to measure.
    k : int, default 5
        Equivalence classes smaller than this count in ``share_below_k``.

    Returns
    -------
    list of GroupDisclosure
        One per group, in the grouping's order.

    Notes
    -----
    The projection of a group is its columns plus the class; its equivalence classes
    are the rows sharing all those values (Hundepool et al. 2012, Sec. 3.3, with the
    group as the quasi-identifier). A GoldenEye shuffle keeps every group's per-class
    multiset of tuples, so these measures are the same for the original and for any
    surrogate of it with that grouping: they describe what the grouping reveals, and
    only coarsening the values (or a finer grouping) changes them.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 1, 2, 2], "b": [5, 5, 5, 5], "y": [0, 0, 0, 1]})
    >>> [(d.columns, d.k_min, d.class_disclosure_share)
    ...  for d in group_disclosure(t, target="y", grouping="a;b", k=2)]
    [(('a',), 1, 0.5), (('b',), 1, 0.0)]
    """
    sources, resolved, target = _prepare([(released, "released table")], target, grouping, k)
    return risk(sources, resolved, target, k, pairs=False)[0]


def cross_group_linkage(original: Any, released: Any, *, target: str | None = None,
                        grouping: Any, n_jobs: int | None = None) -> list[PairLinkage]:
    """Linked share of every pair of groups of a release, beside its expectation.

    Parameters
    ----------
    original : DataFrame, pyarrow.Table or Parquet/CSV path
        The table the release was made from.
    released : DataFrame, pyarrow.Table or Parquet/CSV path
        The release.
    target : str, optional
        The class column (an artefact passed as ``grouping`` supplies it).
    grouping : GroupingArtefact, Grouping, str or list of lists
        The artefact's grouping.
    n_jobs : int, optional
        Threads for the pairs of a large table (default: every core); the result does
        not depend on it.

    Returns
    -------
    list of PairLinkage
        One per pair of groups (i < j in the grouping's order); empty for one group.

    Notes
    -----
    For groups A and B, a release row is *linked* when its (A-tuple, B-tuple, class)
    combination is that of an original row; rows are matched one to one, so
    ``linked_share = sum over keys of min(count_original, count_release) / n``.
    Under the artefact's shuffle A and B are permuted independently within each class
    c of n_c rows. For an original key (a, b) held by m rows, with K_a rows holding a
    and K_b rows holding b in class c, the release rows holding (a, b) number
    H ~ Hypergeometric(n_c, K_a, K_b) (two independent uniform subsets of sizes K_a
    and K_b; their overlap), so

        E[linked rows] = sum_c sum_{(a, b) in class c} E[min(H, m_ab)],

    which is ``sum K_a K_b / n_c`` over keys when every value is unique in its class
    (then E ≈ n_classes / n). A release coarser than the artefact (one column shuffled,
    the others still aligned) or a near-identity has a linked share near 1 for the
    aligned pairs, far above it.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "y": [0, 0, 0, 0]})
    >>> [p.linked_share for p in cross_group_linkage(t, t, target="y", grouping="a;b")]
    [1.0]
    """
    sources, resolved, target = _prepare([(original, "original table"),
                                          (released, "released table")],
                                         target, grouping, None)
    return risk(sources, resolved, target, None, pairs=True, n_jobs=n_jobs)[1]


def disclosure_risk(original: Any, released: Any, *, target: str | None = None,
                    grouping: Any, k: int = 5, n_jobs: int | None = None) -> DisclosureRisk:
    """:func:`group_disclosure` of the release and :func:`cross_group_linkage`, in one
    pass (each group's columns are hashed and sorted once for both).

    Parameters are those of :func:`group_disclosure` and :func:`cross_group_linkage`.

    Returns
    -------
    DisclosureRisk
        ``groups`` (measured on ``released``) and ``pairs``; ``to_dict()`` gives
        ``{"k", "groups", "pairs"}`` with the keys of ``GroupDisclosure.to_dict`` and
        ``PairLinkage.to_dict``.
    """
    sources, resolved, target = _prepare([(original, "original table"),
                                          (released, "released table")],
                                         target, grouping, k)
    groups, pairs = risk(sources, resolved, target, k, pairs=True, n_jobs=n_jobs)
    return DisclosureRisk(groups=tuple(groups), pairs=tuple(pairs), k=int(k))
