"""Kubernetes resource quantities as exact integer milli-units, and immutable resource vectors.

Every dimension (cpu, memory, pods, nvidia.com/gpu, ...) is stored in milli-units: `cpu: 1` is 1000,
`memory: 1Ki` is 1024000, `nvidia.com/gpu: 2` is 2000. One unit for every dimension keeps arithmetic
uniform; Volcano's special cases (memory in bytes, `pods` as a whole count) are conversions at the edge.

Missing dimensions have explicit semantics (Volcano's `DimensionDefaultValue`): in `Missing.ZERO` mode a
dimension a vector does not mention is 0, in `Missing.INFINITY` mode it is unlimited (used for caps such as
queue capability, where "no GPU limit given" means "not limited").
"""

from __future__ import annotations

import enum
import re
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext

from contracts.limits import MAX_QUANTITY_MILLI

MILLI = 1000
QUANTITY_RANGE = f"expected a quantity of at most {MAX_QUANTITY_MILLI} milli-units (a 64-bit integer)"

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

_BINARY_SUFFIXES = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
_DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
# quantities this large are refused before their integer is built (the bound callers check is far lower)
_HUGE_EXPONENT = 100
_MAX_EXPONENT_CHARS = 6
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE])?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes resource quantity."""


def _shown(value: object) -> str:
    """A found value as an error quotes it: a megabyte of digits is cut short."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() <= 128 else "a huge integer"
    return text if len(text) <= 64 else f"{text[:64]}... ({len(text)} characters)"


def parse_quantity(value: object) -> int:
    """Parse a Kubernetes quantity into integer milli-units, rounding sub-milli values up (as Kubernetes'
    MilliValue does), so that a request is never under-counted. Any other value a manifest may hold (a
    boolean, a list) raises QuantityError."""
    if isinstance(value, bool):
        raise QuantityError(f"expected a quantity, got boolean {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise QuantityError(f"expected a non-negative quantity, got {value!r}")
        return value * MILLI
    if isinstance(value, float):
        value = repr(value)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"expected a quantity such as 500m, 2, 1.5, 1Gi or 1e3, got {_shown(value)}")
    number_text, suffix = match.group(1), match.group(2) or ""
    # enough digits that no quantity a person can write loses exactness
    with localcontext() as ctx:
        ctx.prec = 80
        try:
            number = Decimal(number_text)
        except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid decimals
            raise QuantityError(f"expected a quantity, got {value!r}") from exc
        if suffix in _BINARY_SUFFIXES:
            scaled = number * _BINARY_SUFFIXES[suffix]
        elif suffix[:1] in ("e", "E") and len(suffix) > 1:
            digits = suffix[1:]
            # an exponent far beyond any resource (or with more digits than int() reads) is clamped
            # just past the largest one accepted, so the check below refuses it and nothing overflows
            outside = (_HUGE_EXPONENT + 1) * (-1 if digits.startswith("-") else 1)
            exponent = int(digits) if len(digits) <= _MAX_EXPONENT_CHARS else outside
            scaled = number.scaleb(max(min(exponent, _HUGE_EXPONENT + 1), -_HUGE_EXPONENT - 1))
        else:
            scaled = number * _DECIMAL_SUFFIXES[suffix]
        if scaled and scaled.adjusted() > _HUGE_EXPONENT:
            raise QuantityError(f"{QUANTITY_RANGE}, got {_shown(value)}")
        milli = (scaled * MILLI).to_integral_value(rounding=ROUND_CEILING)
    if milli < 0:
        raise QuantityError(f"expected a non-negative quantity, got {value!r}")
    return int(milli)


def format_quantity(name: str, milli: int) -> str:
    """Render milli-units the way a person reads them: cpu as cores or `m`, memory in binary units."""
    if milli % MILLI:
        return f"{milli}m"
    whole = milli // MILLI
    if name == MEMORY or name.endswith("storage"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            factor = _BINARY_SUFFIXES[suffix]
            if whole >= factor and whole % factor == 0:
                return f"{whole // factor}{suffix}"
    return str(whole)


class Missing(enum.Enum):
    """What a dimension a vector does not mention means when comparing."""

    ZERO = "zero"
    INFINITY = "infinity"


class Resources(Mapping[str, int]):
    """An immutable resource vector: dimension name -> milli-units. Explicit zeros are kept, so a cap of
    `nvidia.com/gpu: 0` differs from no cap on GPUs in INFINITY mode."""

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, int] | Iterable[tuple[str, int]] | None = None) -> None:
        self._items: dict[str, int] = dict(items or {})
        self._hash: int | None = None

    @classmethod
    def parse(cls, spec: Mapping[str, str | int | float] | None) -> Resources:
        """Build from a Kubernetes ResourceList (`{"cpu": "500m", "memory": "1Gi"}`)."""
        return cls({name: parse_quantity(value) for name, value in (spec or {}).items()})

    @classmethod
    def of(cls, **dims: int | float | str) -> Resources:
        """Convenience for code and tests: `Resources.of(cpu=2, memory="4Gi")`; `nvidia_com_gpu` style names
        are not translated, pass a dict to the constructor for those."""
        return cls.parse(dims)

    # Mapping protocol
    def __getitem__(self, name: str) -> int:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # the dict's own views: Mapping's generic ones walk the mapping in Python, a call per dimension, and
    # every sum of requests goes through them
    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def values(self) -> ValuesView[int]:
        return self._items.values()

    def items(self) -> ItemsView[str, int]:
        return self._items.items()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, Resources) and self._items == other._items:
            return True  # the common case, without the per-dimension walk below
        if not isinstance(other, Mapping):
            return NotImplemented
        names = set(self._items) | set(other)
        return all(self._items.get(n, 0) == other.get(n, 0) for n in names)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={format_quantity(k, v)}" for k, v in sorted(self._items.items()))
        return f"Resources({inner})"

    # narrower than Mapping.get (an int default, 0 unless given): a dimension a Resources does not hold is
    # zero of it, and no caller asks for a default of another type
    def get(self, name: str, default: int = 0) -> int:  # type: ignore[override]
        return self._items.get(name, default)

    # arithmetic (per dimension; the union of both sides' dimensions)
    def __add__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._items)
        for name, value in other.items():
            out[name] = out.get(name, 0) + value
        return Resources(out)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._items)
        for name, value in other.items():
            out[name] = out.get(name, 0) - value
        return Resources(out)

    def scale(self, factor: float) -> Resources:
        return Resources({n: int(v * factor) for n, v in self._items.items()})

    def times(self, count: int) -> Resources:
        return Resources({n: v * count for n, v in self._items.items()})

    def clamp_non_negative(self) -> Resources:
        return Resources({n: max(v, 0) for n, v in self._items.items()})

    def max_with(self, other: Mapping[str, int]) -> Resources:
        names = set(self._items) | set(other)
        return Resources({n: max(self._items.get(n, 0), other.get(n, 0)) for n in names})

    def min_with(self, other: Mapping[str, int], missing: Missing = Missing.ZERO) -> Resources:
        """Per-dimension minimum. With INFINITY, a dimension `other` lacks leaves ours unchanged."""
        out = {}
        for name, value in self._items.items():
            if name in other:
                out[name] = min(value, other[name])
            elif missing is Missing.INFINITY:
                out[name] = value
            else:
                out[name] = min(value, 0)
        if missing is Missing.ZERO:
            for name, value in other.items():
                if name not in out:
                    out[name] = min(0, value)
        return Resources(out)

    def exceeded_part(self, other: Mapping[str, int]) -> Resources:
        """Per-dimension max(self - other, 0): what self holds beyond other."""
        names = set(self._items) | set(other)
        return Resources({n: max(self._items.get(n, 0) - other.get(n, 0), 0) for n in names})

    # comparisons
    def is_empty(self) -> bool:
        """No dimension is requested: a BestEffort request."""
        return all(v <= 0 for v in self._items.values())

    def less_equal(self, other: Mapping[str, int], missing: Missing = Missing.ZERO) -> bool:
        """self <= other on every dimension self mentions with a positive value."""
        for name, value in self._items.items():
            if value <= 0:
                continue
            if name in other:
                if value > other[name]:
                    return False
            elif missing is Missing.ZERO:
                return False
        return True

    def to_dict(self) -> dict[str, int]:
        return dict(self._items)


EMPTY = Resources()


def requests_defaulted_to_limits(requests: Resources, limits: Resources) -> Resources:
    """A container's requests as Kubernetes defaults them: every resource that has a limit and no request
    is requested at its limit (extended resources too: a GPU written only under `limits`, as GPU
    manifests usually are, is requested). A request given explicitly, zero included, is kept."""
    if all(name in requests for name in limits):
        return requests
    return Resources({**limits, **requests})
