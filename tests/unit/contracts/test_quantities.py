"""Kubernetes quantities and resource vectors: fixed cases from the Kubernetes docs, then properties."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from contracts.resources import Missing, QuantityError, Resources, format_quantity, parse_quantity

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("500m", 500),
        ("2", 2000),
        ("1.5", 1500),
        ("0.1", 100),
        (".5", 500),
        ("1k", 10**6),
        ("1M", 10**9),
        ("1G", 10**9 * 1000),
        ("1Ki", 1024 * 1000),
        ("1Gi", 2**30 * 1000),
        ("100Mi", 100 * 2**20 * 1000),
        ("1.5Gi", 3 * 2**29 * 1000),
        ("1e3", 10**6),
        ("1E3", 10**6),
        ("2e-3", 2),
        ("1.0e3", 10**6),
        ("1E", 10**18 * 1000),
        ("1u", 1),
        ("1n", 1),  # below a milli-unit: rounded up so a request is never under-counted
        ("1500001n", 2),
        ("0", 0),
        ("+3", 3000),
        (" 4 ", 4000),
    ],
)
def test_quantity_strings(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("yaml_text", "milli"),
    [
        ("cpu: 4", 4000),
        ("cpu: 0.25", 250),
        ("cpu: 1.5", 1500),
        ("cpu: 0", 0),
        ("memory: 1073741824", 2**30 * 1000),
    ],
)
def test_yaml_numbers_are_quantities(yaml_text: str, milli: int) -> None:
    # YAML hands these over as int/float, not as text
    (value,) = yaml.safe_load(yaml_text).values()
    assert not isinstance(value, str)
    assert parse_quantity(value) == milli


@pytest.mark.parametrize(
    "bad", ["", "abc", "1.2.3", "5Gb", "1 Gi", "Gi", "1KI", "1ki", "0x10", "1e", "-1", "-500m", "--1", True]
)
def test_invalid_quantities_are_rejected(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)  # type: ignore[arg-type]


def test_negative_yaml_float_is_rejected() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(-0.5)


def test_negative_yaml_int_is_rejected() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(-1)


# --- properties -------------------------------------------------------------------------------------

# far beyond any int64 milli-value Kubernetes itself could hold; exactness is promised up to there
LARGEST_MILLI = 10**27

# at most 8 significant digits, so that even with an Ei suffix the exact value stays within LARGEST_MILLI
mantissas = st.one_of(
    st.integers(min_value=0, max_value=10**8 - 1).map(str),
    st.decimals(min_value=0, max_value=9999, places=4, allow_nan=False, allow_infinity=False).map(
        lambda d: format(d, "f")
    ),
)


suffixes = st.sampled_from(sorted({**BINARY, **DECIMAL}))


def exact_milli(mantissa: str, suffix: str) -> Fraction:
    factor = BINARY.get(suffix) or DECIMAL[suffix]
    return Fraction(mantissa) * factor * 1000


binary_quantities = st.sampled_from(sorted(BINARY)).flatmap(
    lambda suffix: st.tuples(st.integers(0, LARGEST_MILLI // (BINARY[suffix] * 1000)), st.just(suffix))
)


@given(quantity=binary_quantities)
def test_binary_suffix_scales_exactly(quantity: tuple[int, str]) -> None:
    n, suffix = quantity
    assert parse_quantity(f"{n}{suffix}") == n * BINARY[suffix] * 1000


@given(mantissa=mantissas, suffix=suffixes)
def test_parse_is_ceiling_of_exact_value(mantissa: str, suffix: str) -> None:
    assert parse_quantity(mantissa + suffix) == math.ceil(exact_milli(mantissa, suffix))


@given(
    a=st.tuples(mantissas, suffixes),
    b=st.tuples(mantissas, suffixes),
)
def test_parse_is_monotone(a: tuple[str, str], b: tuple[str, str]) -> None:
    (low, low_suffix), (high, high_suffix) = sorted([a, b], key=lambda q: exact_milli(*q))
    assert parse_quantity(low + low_suffix) <= parse_quantity(high + high_suffix)


@given(
    milli=st.integers(min_value=0, max_value=2**62),
    name=st.sampled_from(["cpu", "memory", "ephemeral-storage"]),
)
def test_format_round_trips_through_parse(milli: int, name: str) -> None:
    assert parse_quantity(format_quantity(name, milli)) == milli


def test_format_is_readable() -> None:
    assert format_quantity("memory", 2**30 * 1000) == "1Gi"
    assert format_quantity("memory", 1536 * 2**20 * 1000) == "1536Mi"
    assert format_quantity("cpu", 1500) == "1500m"
    assert format_quantity("cpu", 2000) == "2"


DIMS = ["cpu", "memory", "pods", "nvidia.com/gpu"]
vectors = st.dictionaries(st.sampled_from(DIMS), st.integers(min_value=0, max_value=10**15)).map(Resources)


@given(a=vectors, b=vectors)
def test_add_then_subtract_is_identity(a: Resources, b: Resources) -> None:
    assert (a + b) - b == a


@given(a=vectors, b=vectors)
def test_less_equal_zero_mode_is_per_dimension(a: Resources, b: Resources) -> None:
    # a dimension b does not mention counts as 0 available
    assert a.less_equal(b, Missing.ZERO) == all(v <= b.get(n, 0) for n, v in a.items() if v > 0)


@given(a=vectors, b=vectors)
def test_less_equal_infinity_mode_is_per_dimension(a: Resources, b: Resources) -> None:
    # a dimension b does not mention is unlimited
    assert a.less_equal(b, Missing.INFINITY) == all(v <= b[n] for n, v in a.items() if v > 0 and n in b)


@given(a=vectors, b=vectors)
def test_sum_dominates_both_parts(a: Resources, b: Resources) -> None:
    assert a.less_equal(a + b) and b.less_equal(a + b)


def test_missing_dimension_semantics() -> None:
    request = Resources({"cpu": 1000, "nvidia.com/gpu": 1000})
    cpu_only_cap = Resources.of(cpu=2)
    assert request.less_equal(cpu_only_cap, Missing.INFINITY)
    assert not request.less_equal(cpu_only_cap, Missing.ZERO)
    # an explicit zero is a real cap even where missing means unlimited
    zero_gpu_cap = Resources({"cpu": 2000, "nvidia.com/gpu": 0})
    assert not request.less_equal(zero_gpu_cap, Missing.INFINITY)
    assert request.min_with(cpu_only_cap, Missing.INFINITY) == Resources(
        {"cpu": 1000, "nvidia.com/gpu": 1000}
    )
    assert request.min_with(cpu_only_cap, Missing.ZERO) == Resources({"cpu": 1000})


def test_resources_parse_and_equality_ignore_explicit_zero() -> None:
    parsed = Resources.parse({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 0})
    assert parsed == Resources({"cpu": 500, "memory": 2**30 * 1000})
    assert parsed["nvidia.com/gpu"] == 0
