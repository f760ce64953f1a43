"""Groupings: partitions of a table's attributes (the paper's S)."""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import Any

from astrid_airflow._errors import GroupingError, ParameterError, findings


class Grouping:
    """A partition of attribute names into groups that move together.

    Parameters
    ----------
    groups : sequence of sequences of str
        The groups, in order. Order is kept (it is the paper's detach order when the
        grouping comes from ASTRID) but does not change the partition's meaning.

    Examples
    --------
    >>> g = Grouping.parse("a1,a2;a3;a4")
    >>> g.k, g.groups
    (3, (('a1', 'a2'), ('a3',), ('a4',)))
    """

    __slots__ = ("_groups",)

    def __init__(self, groups: Iterable[Iterable[str]]):
        parsed = tuple(tuple(str(c) for c in g) for g in groups)
        if not parsed:
            raise GroupingError("A grouping needs at least one group.")
        seen: set[str] = set()
        for g in parsed:
            if not g:
                raise GroupingError("A grouping may not contain an empty group.")
            for c in g:
                if c in seen:
                    raise GroupingError(f"Column {c!r} appears in more than one group.")
                seen.add(c)
        self._groups = parsed

    @classmethod
    def parse(cls, text: str) -> Grouping:
        """Parse ``"a1,a2;a3;a4"``: groups separated by ``;``, columns by ``,``."""
        if not isinstance(text, str) or not text.strip():
            raise GroupingError("Empty grouping: expected e.g. 'a1,a2;a3;a4'.")
        groups = []
        for part in text.split(";"):
            cols = [c.strip() for c in part.split(",")]
            if not part.strip() or any(not c for c in cols):
                raise GroupingError(f"Malformed grouping {text!r}: empty group or column name.")
            groups.append(cols)
        return cls(groups)

    @classmethod
    def singletons(cls, columns: Sequence[str]) -> Grouping:
        """Every attribute in its own group (the Ojala–Garriga Test 2 grouping)."""
        return cls([[c] for c in columns])

    @classmethod
    def from_cuts(cls, order: Sequence[str], cuts: Iterable[int]) -> Grouping:
        """Split ``order`` after each position in ``cuts`` (1-based, as in Alg. 1)."""
        from ._clustering import cut

        return cls(cut(list(order), sorted(set(cuts))))

    @property
    def groups(self) -> tuple[tuple[str, ...], ...]:
        return self._groups

    @property
    def k(self) -> int:
        """Number of groups (the grouping's cardinality)."""
        return len(self._groups)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for g in self._groups for c in g)

    def to_list(self) -> list[list[str]]:
        return [list(g) for g in self._groups]

    def to_jsonable(self) -> list[list[str]]:
        """How :func:`astrid_airflow.io.strict` stores it: the list of lists."""
        return self.to_list()

    def __str__(self) -> str:
        return ";".join(",".join(g) for g in self._groups)

    def __repr__(self) -> str:
        return f"Grouping({self.to_list()!r})"

    def _canonical(self) -> frozenset[frozenset[str]]:
        return frozenset(frozenset(g) for g in self._groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Grouping):
            return NotImplemented
        return self._canonical() == other._canonical()

    def __hash__(self) -> int:
        return hash(self._canonical())

    def check_partition_of(self, columns: Sequence[str]) -> Grouping:
        """Raise ``GroupingError`` unless the groups cover ``columns`` exactly."""
        expected = list(columns)
        wanted, grouped = set(expected), set(self.columns)
        message = findings("The grouping is not a partition of the attributes", {
            "unknown column(s)": [c for c in self.columns if c not in wanted],
            "column(s) in no group": [c for c in expected if c not in grouped]})
        if message:
            raise GroupingError(message)
        return self

    def indices(self, columns: Sequence[str]) -> list[list[int]]:
        """Groups as lists of positions in ``columns``."""
        pos = {c: i for i, c in enumerate(columns)}
        return [[pos[c] for c in g] for g in self._groups]


def as_grouping(grouping: Any) -> Grouping:
    """A :class:`Grouping` from a Grouping, ``"a,b;c"`` text or a list of lists of names.

    Raises ``ParameterError`` for anything else.
    """
    if isinstance(grouping, Grouping):
        return grouping
    if isinstance(grouping, str):
        return Grouping.parse(grouping)
    if isinstance(grouping, Sequence):
        return Grouping(grouping)
    raise ParameterError(f"Invalid grouping: {grouping!r}. Expected a GroupingArtefact, a "
                         "Grouping, 'a,b;c' text or a list of lists of column names.")


def group_letter(i: int) -> str:
    """Letter of the ``i``-th group (0-based): A..Z, then AA, AB, ...

    >>> [group_letter(i) for i in (0, 25, 26, 27)]
    ['A', 'Z', 'AA', 'AB']
    """
    alphabet = string.ascii_uppercase
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = alphabet[r] + out
    return out


def letters(grouping: Grouping, order: Sequence[str]) -> str:
    """The paper's letter notation of ``grouping`` with attributes in ``order``.

    Consecutive attributes of one group share a letter inside parentheses, e.g.
    ``(A) (B) (C C)`` for ``{a4},{a3},{a2,a1}`` in the order a4, a3, a2, a1.

    >>> letters(Grouping.parse("a1,a2;a3;a4"), ["a4", "a3", "a2", "a1"])
    '(A) (B) (C C)'
    """
    group_of = {c: gi for gi, g in enumerate(grouping.groups) for c in g}
    label: dict[int, str] = {}
    tokens: list[tuple[int, str]] = []
    for c in order:
        gi = group_of[c]
        if gi not in label:
            label[gi] = group_letter(len(label))
        tokens.append((gi, label[gi]))
    out = []
    for i, (gi, lab) in enumerate(tokens):
        opens = i == 0 or tokens[i - 1][0] != gi
        closes = i == len(tokens) - 1 or tokens[i + 1][0] != gi
        out.append(("(" if opens else "") + lab + (")" if closes else ""))
    return " ".join(out)
