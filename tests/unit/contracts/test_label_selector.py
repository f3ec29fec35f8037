"""kubectl's label selector syntax (contracts/label_selector.py): what each form reads as, what it selects,
and a message naming the place for every selector that cannot be read."""

from __future__ import annotations

import pytest

from contracts.label_selector import SelectorError, matches, parse_selector
from contracts.objects import SelectorRequirement as R

READS = [
    ("", ()),
    ("env=prod", (R("env", "In", ("prod",)),)),
    ("env==prod", (R("env", "In", ("prod",)),)),
    ("env!=prod", (R("env", "NotIn", ("prod",)),)),
    ("env=", (R("env", "In", ("",)),)),
    ("zone in (a, b)", (R("zone", "In", ("a", "b")),)),
    ("zone notin (a)", (R("zone", "NotIn", ("a",)),)),
    ("zone in (a,)", (R("zone", "In", ("a", "")),)),
    ("gpu", (R("gpu", "Exists"),)),
    ("!gpu", (R("gpu", "DoesNotExist"),)),
    ("cores>4", (R("cores", "Gt", ("4",)),)),
    ("cores<-1", (R("cores", "Lt", ("-1",)),)),
    ("volcano.sh/job-name=train", (R("volcano.sh/job-name", "In", ("train",)),)),
    (" a = b , ! c ", (R("a", "In", ("b",)), R("c", "DoesNotExist"))),
    (
        "a=b,c in (d),e,!f",
        (R("a", "In", ("b",)), R("c", "In", ("d",)), R("e", "Exists"), R("f", "DoesNotExist")),
    ),
]


@pytest.mark.parametrize(("text", "requirements"), READS)
def test_each_form_reads_as_kubernetes_requirement(text: str, requirements: tuple[R, ...]) -> None:
    assert parse_selector(text) == requirements


LABELS = {"env": "prod", "zone": "a", "cores": "8", "gpu": ""}
SELECTS = [
    ("", True),
    ("env=prod", True),
    ("env=dev", False),
    ("env!=dev", True),
    ("team!=x", True),  # a missing key is not x
    ("team=x", False),
    ("zone in (a,b)", True),
    ("zone notin (a,b)", False),
    ("team notin (a)", True),
    ("gpu", True),
    ("!gpu", False),
    ("!team", True),
    ("cores>4,cores<16", True),
    ("cores>8", False),
    ("env>1", False),  # not an integer label: no match
    ("gpu=", True),
    ("env=prod,zone=b", False),  # requirements are ANDed
]


@pytest.mark.parametrize(("text", "selected"), SELECTS)
def test_what_a_selector_selects(text: str, selected: bool) -> None:
    assert matches(parse_selector(text), LABELS) is selected


REFUSED = [
    ("a in ()", "at ')' (character 7): expected at least one value in 'in (...)'"),
    ("a in b", "at 'b' (character 6): expected '(' after 'in'"),
    ("a in (b", "at the end: expected ')' to close 'in (...)'"),
    ("a in (b c)", "at 'c' (character 9): expected ',' or ')' in a value list"),
    ("a b", "at 'b' (character 3): expected =, ==, !=, in, notin, >, < or ',' after a key"),
    ("a=b,", "at the end: expected a requirement after ','"),
    ("a,,b", "at ',' (character 3): expected a label key"),
    ("!", "at the end: expected a label key"),
    ("=b", "at '=' (character 1): expected a label key"),
    ("in", "at 'in' (character 1): expected a label key"),
    ("a>x", "at 'x' (character 3): expected an integer"),
    ("a>", "at the end: expected an integer"),
    ("a=b=c", "at '=' (character 4): expected ',' between requirements"),
    ("Bad_/x=1", "at 'Bad_/x' (character 1): a label key: prefix part 'Bad_' is not a lowercase RFC 1123"),
    ("-a", "at '-a' (character 1): a label key: '-a' is not a qualified name"),
    ("a=-b", "at '-b' (character 3): a label value: '-b' is not a label value"),
    ("a=" + "v" * 64, "a label value: must be no more than 63 characters, got 64"),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_a_selector_that_cannot_be_read_says_where_and_why(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as refused:
        parse_selector(text)
    assert str(refused.value).startswith(f"selector {text!r}: ")
    assert message in str(refused.value)
