import pytest

from astrid_airflow import Grouping, GroupingError, letters


def test_parse_and_properties():
    g = Grouping.parse(" a1, a2 ;a3;a4")
    assert g.groups == (("a1", "a2"), ("a3",), ("a4",))
    assert g.k == 3
    assert str(g) == "a1,a2;a3;a4"
    assert g == Grouping([["a4"], ["a2", "a1"], ["a3"]])  # a partition: order-free
    assert hash(g) == hash(Grouping([["a3"], ["a4"], ["a1", "a2"]]))


@pytest.mark.parametrize("text", ["", ";", "a,;b", "a;;b", "a,a;b", "a;a"])
def test_parse_rejects_malformed(text):
    with pytest.raises(GroupingError):
        Grouping.parse(text)


def test_partition_check_names_the_problem():
    g = Grouping.parse("a1,a2;x")
    with pytest.raises(GroupingError, match=r"unknown column\(s\) \['x'\].*no group \['a3'\]"):
        g.check_partition_of(["a1", "a2", "a3"])


def test_from_cuts_and_singletons():
    assert Grouping.from_cuts(list("abcd"), [1, 3]).groups == (("a",), ("b", "c"), ("d",))
    assert Grouping.from_cuts(list("abcd"), []).k == 1
    assert Grouping.singletons(list("abc")).k == 3


def test_letters_matches_paper_notation():
    # Table 2(a) of the paper: order a4 a3 a2 a1, grouping {1,2},{3},{4}
    order = ["a4", "a3", "a2", "a1"]
    assert letters(Grouping.parse("a1,a2;a3;a4"), order) == "(A) (B) (C C)"
    assert letters(Grouping([order]), order) == "(A A A A)"
    assert letters(Grouping.singletons(order), order) == "(A) (B) (C) (D)"


def test_letters_beyond_26_groups():
    cols = [f"c{i}" for i in range(30)]
    assert letters(Grouping.singletons(cols), cols).split()[-1] == "(AD)"
