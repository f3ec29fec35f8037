"""Mutated manifests for fuzzing admission, and what "a rejection names a field" means.

`mutated_manifests()` starts from the real manifests in examples/ (Volcano Jobs, Queues, PodGroups,
HyperNodes, Commands, Pods, PriorityClasses, Nodes) and breaks them the ways a user, a buggy producer or an
attacker would: fields dropped, retyped or duplicated, numbers past every width, very long strings,
unicode, deep nesting, the wrong kind, another kind's spec, and YAML's oddities (anchors and aliases,
tags, several documents, an alias bomb, binary junk, truncation). The unit fuzz test runs them through
`lahar validate`'s path; the stack fuzz test through the admission API and the intake stream.

`unnamed(errors, source)` is the check both apply to every rejection: each error names its document and
either a field path or one of the few problems that belong to a document (or a request) as a whole.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from contracts.limits import DOCUMENT_MAX_CHARS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

KINDS = ("Job", "Queue", "PodGroup", "Pod", "PriorityClass", "HyperNode", "Command", "Node")


def _load_seeds() -> tuple[dict[str, Any], ...]:
    seeds = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") in KINDS:
                seeds.append(doc)
    return tuple(seeds)


SEEDS: tuple[dict[str, Any], ...] = _load_seeds()


# --- what a rejection must say ---------------------------------------------------------------------

# a field path starts with a field's name: "kind", "spec.tasks[0].replicas", "metadata.labels[a/b]", or
# with a bracketed key when a document's own key is no plain name (an unknown field "[a.b]", "[]")
FIELD_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:[.\[].*)?|\[.*", re.DOTALL)

# the problems that belong to a document or a request as a whole, so have no field path
DOCUMENT_LEVEL = re.compile(
    "|".join(
        (
            r"YAML syntax error",
            r"document too deep",
            r"mappings and lists nest more than \d+ levels",
            r"expected a mapping \(an API object\), got ",
            r"cannot read a value: ",
            r"cannot read the file: ",
            r"the (?:file|manifest|request) is \d+ bytes",
            r"the manifest is not UTF-8 text",
            r"the manifest holds no object",
            r"\d+ objects in one request",
            r"the documents make \d+ pods together",
            r"its events would be larger than the \d+ bytes a bus message holds",
            r"and \d+ more errors$",
            r"\d+ errors, too many to list in one message$",
        )
    )
)


def _names_source(document: str, source: str) -> bool:
    # a document's name is cut short past DOCUMENT_MAX_CHARS (a long intake subject makes a long source)
    return document.startswith(source) or (
        len(source) > DOCUMENT_MAX_CHARS and document.startswith(source[:DOCUMENT_MAX_CHARS])
    )


def unnamed(errors: Iterable[Mapping[str, str]], source: str) -> list[Mapping[str, str]]:
    """The errors (as {"document", "path", "message"}) that do not name a field: an error names one when
    its document is named after `source` (the file, request or intake message) and either its path is a
    field path, or its path is empty and its message is one of DOCUMENT_LEVEL's problems (a name past
    DOCUMENT_MAX_CHARS is cut short, so then its first characters are the source's). A crash caught
    and reported ("admission failed on this ...") names nothing, so it is always among them."""
    return [
        error
        for error in errors
        if not _names_source(error["document"], source)
        or not error["message"]
        or not (
            FIELD_PATH.fullmatch(error["path"]) if error["path"] else DOCUMENT_LEVEL.match(error["message"])
        )
    ]


class Hang(AssertionError):
    """Something took longer than any input may make it take."""


@contextlib.contextmanager
def within(seconds: float, what: object) -> Iterator[None]:
    """Fail with Hang, naming `what`, if the block runs longer than `seconds` (an interval timer's
    signal interrupts it, so a hang in process becomes a failure that names its input). A timer already
    running (pytest-timeout's, for the whole test) is put back afterwards, less the time spent; if it
    would fire first, it is left alone to do so."""
    running = signal.getitimer(signal.ITIMER_REAL)[0]
    if threading.current_thread() is not threading.main_thread() or 0 < running <= seconds:
        yield  # signals reach the main thread only
        return

    def expired(_signum: int, _frame: object) -> None:
        raise Hang(f"still running after {seconds}s: {what!r}")

    previous = signal.signal(signal.SIGALRM, expired)
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if running:
            signal.setitimer(signal.ITIMER_REAL, max(running - (time.monotonic() - started), 0.001))


# --- odd values ------------------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_NUMBERS = st.sampled_from(
    [
        0,
        -1,
        2**31 - 1,
        2**31,
        -(2**31) - 1,
        2**63 - 1,
        2**63,
        -(2**63) - 1,
        10**30,
        10**400,
        1e308,
        -1e-308,
        0.5,
        float("inf"),
        float("-inf"),
        float("nan"),
    ]
)
_QUANTITIES = st.sampled_from(
    [
        "1e400",
        "-1",
        "-500m",
        "NaN",
        ".inf",
        "1Ei",
        "9223372036854775807",
        "9999999999Ei",
        "0.0001m",
        "1.5.2",
        "100Mi ",
        "m",
        "",
        "１０",
    ]
)
_DURATIONS = st.sampled_from(["-5s", "99999999999h", "1.5.5s", "0", "1h2m3s4ms5us6ns", "s", "1d"])
_NAMES = st.sampled_from(
    [
        "default",
        "root",
        "q1",
        "-bad-",
        "UPPER",
        "a" * 64,
        "b" * 254,
        "dots.in.name",
        "ü-nicode",
        "has/slash",
        "x_y",
        "1",
        "null",
        "true",
        "~",
    ]
)
# how long a very long string is: mostly around the limits, now and then far past them
_LONG = st.sampled_from([63, 64, 65, 253, 254, 1024, 5000, 70_000])
_LONG_TEXT = st.builds(lambda char, n: char * n, st.sampled_from(["a", "é", "字", "😀", "-", " "]), _LONG)


def odd_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        _NUMBERS,
        st.floats(),
        _TEXT,
        _QUANTITIES,
        _DURATIONS,
        _NAMES,
        _LONG_TEXT,
        st.dates(),
        st.datetimes(timezones=st.just(UTC)),
        st.binary(max_size=8),  # YAML's !!binary
        st.frozensets(st.integers(0, 3), max_size=2).map(set),  # YAML's !!set
    )


def odd_keys() -> st.SearchStrategy[Any]:
    return st.one_of(
        _TEXT,
        _NAMES,
        st.sampled_from(["kind", "apiVersion", "metadata", "spec", "status", "name", "replicas", "<<"]),
        st.integers(-2, 2**70),
        st.none(),
        st.booleans(),
        st.sampled_from([1.5, float("nan")]),
    )


# --- mutating a document tree ----------------------------------------------------------------------

Slot = tuple[Any, Any]  # (container, key or index)


def _slots(tree: Any, limit: int = 400) -> list[Slot]:
    """Every (container, key) in the tree, breadth first, at most `limit` of them."""
    slots: list[Slot] = []
    queue = [tree]
    while queue and len(slots) < limit:
        node = queue.pop(0)
        if isinstance(node, dict):
            items: Iterable[tuple[Any, Any]] = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        for key, value in items:
            slots.append((node, key))
            queue.append(value)
    return slots


def _nested(value: Any, depth: int, as_list: bool) -> Any:
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


_RENDERED_DEPTH = 120
_DEEP = re.compile(r'"?__deep_(\d+)_(list|map)__"?')


def _deep_marker(depth: int, as_list: bool) -> str:
    return f"__deep_{depth}_{'list' if as_list else 'map'}__"


def _deepen(text: str) -> str:
    """Each deep-nesting marker replaced by that many nested flow lists or mappings."""

    def nested(match: re.Match[str]) -> str:
        depth = int(match.group(1))
        if match.group(2) == "list":
            return "[" * depth + "0" + "]" * depth
        return '{"a": ' * depth + "0" + "}" * depth

    return _DEEP.sub(nested, text)


def _retype(value: Any) -> list[Any]:
    """Other types the same content could have been written as."""
    return [[value], {"value": value}, str(value), len(str(value)), value is not None, None]


@st.composite
def _mutate(draw: st.DrawFn, doc: Any, notes: list[str]) -> Any:
    """One structural mutation of `doc` (mutated in place where it can be; the new root is returned)."""
    slots = _slots(doc)
    operation = draw(
        st.sampled_from(
            [
                "drop",
                "replace",
                "replace",
                "retype",
                "nest",
                "long",
                "multiply",
                "add",
                "share",
                "swap",
                "kind",
                "whole",
            ]
        )
    )
    if operation == "whole" or not slots:
        notes.append("whole document replaced")
        return draw(st.one_of(odd_scalars(), st.lists(odd_scalars(), max_size=3)))
    if operation == "kind" and isinstance(doc, dict):
        kind = draw(
            st.one_of(st.sampled_from(KINDS), st.sampled_from(["job", "Deployment", "", "Job "]), _TEXT)
        )
        notes.append(f"kind {kind!r}")
        doc["kind"] = kind
        if draw(st.booleans()):
            doc["apiVersion"] = draw(st.sampled_from(["v1", "batch.volcano.sh/v1alpha1", "x/y", "", 1]))
        return doc
    container, key = draw(st.sampled_from(slots))
    value = container[key]
    where = f"{key!r}"
    if operation == "drop":
        notes.append(f"drop {where}")
        del container[key]
    elif operation == "replace":
        container[key] = draw(odd_scalars())
        notes.append(f"replace {where} with {container[key]!r:.80}")
    elif operation == "retype":
        container[key] = draw(st.sampled_from(_retype(value)))
        notes.append(f"retype {where}")
    elif operation == "nest":
        depth = draw(st.sampled_from([20, 99, 100, 101, 120, 1000, 100_000]))
        as_list = draw(st.booleans())
        # deeper than the YAML and JSON writers recurse: written into the text after rendering
        deep = depth > _RENDERED_DEPTH
        container[key] = _deep_marker(depth, as_list) if deep else _nested(value, depth, as_list)
        notes.append(f"nest {where} {depth} deep")
    elif operation == "long":
        container[key] = draw(_LONG_TEXT)
        notes.append(f"long string at {where}")
    elif operation == "multiply":
        # some 20 kB of copies at most: a longer manifest is made by "over a mebibyte" below
        times = min(draw(st.sampled_from([2, 3, 30, 300])), 20_000 // max(1, len(repr(value))))
        try:
            copies = [copy.deepcopy(value) for _ in range(times - 1)]
        except RecursionError:  # an earlier "nest" made it deeper than deepcopy goes beside Hypothesis
            notes.append(f"{where} too deep to multiply")
            return doc
        if isinstance(container, list):
            container.extend(copies)
        else:
            container[key] = [value, *copies]
        notes.append(f"{where} {times} times")
    elif operation == "add":
        target = value if isinstance(value, dict) else container if isinstance(container, dict) else None
        if target is not None:
            new_key = draw(odd_keys())
            target[new_key] = draw(odd_scalars())
            notes.append(f"add {new_key!r}")
    elif operation == "share":
        # the same object twice: YAML writes it once with an anchor and then as an alias
        other_container, other_key = draw(st.sampled_from(slots))
        if other_container is not container or other_key != key:
            container[key] = other_container[other_key]
            notes.append(f"{where} aliases {other_key!r}")
    elif operation == "swap":
        other = copy.deepcopy(draw(st.sampled_from(SEEDS)))
        if isinstance(key, str) and key in other:
            container[key] = other[key]
            notes.append(f"{where} from a {other.get('kind')}")
        else:
            container[key] = other
            notes.append(f"{where} is a whole {other.get('kind')}")
    return doc


# --- rendering and text-level oddities -------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, date | datetime):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def _yaml(docs: Sequence[Any], draw: st.DrawFn) -> str:
    return yaml.safe_dump_all(
        docs,
        allow_unicode=draw(st.booleans()),
        default_flow_style=draw(st.sampled_from([False, None, True])),
        sort_keys=False,
        width=draw(st.sampled_from([80, 10**6])),
    )


def _render(docs: Sequence[Any], draw: st.DrawFn) -> str:
    if len(docs) == 1 and draw(st.booleans()):
        try:
            return json.dumps(docs[0], default=_json_default, ensure_ascii=draw(st.booleans()))
        except (TypeError, ValueError):
            pass  # keys JSON cannot hold, or a document that contains itself: YAML then
    return _yaml(docs, draw)


def _billion_laughs(levels: int, width: int) -> str:
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


_TEXT_ODDITIES: dict[str, Callable[[str, st.DrawFn], str | bytes]] = {
    "BOM": lambda text, draw: "\ufeff" + text,
    "directive": lambda text, draw: "%YAML 1.1\n---\n" + text,
    "local tag": lambda text, draw: "--- !Job\n" + text,
    "python tag": lambda text, draw: text + "\nevil: !!python/object/apply:os.system ['true']\n",
    "timestamp tag": lambda text, draw: text + "\ncreated: !!timestamp 2024-13-45\n",
    "int of 5000 digits": lambda text, draw: text + "\nhuge: " + "9" * 5000 + "\n",
    "duplicate key": lambda text, draw: text + "\nkind: Queue\nkind: Pod\n",
    "merge key": lambda text, draw: text + "\n<<: {kind: Pod}\n",
    "more documents": lambda text, draw: text + "\n---\n" + text + "\n...\n---\n",
    "empty documents": lambda text, draw: "---\n---\n" + text + "\n---\n",
    "many documents": lambda text, draw: "--- {kind: Queue}\n" * draw(st.sampled_from([3, 1001])),
    "alias bomb": lambda text, draw: (
        text + "\n" + _billion_laughs(draw(st.sampled_from([4, 9])), draw(st.sampled_from([4, 9])))
    ),
    "recursive alias": lambda text, draw: text + "\nloop: &loop [*loop, {x: *loop}]\n",
    "truncated": lambda text, draw: text[: draw(st.integers(0, max(0, len(text) - 1)))],
    "control characters": lambda text, draw: text.replace("\n", "\n\x00\x07", 1),
    "tabs": lambda text, draw: text.replace("  ", "\t"),
    "binary junk": lambda text, draw: text.encode() + draw(st.binary(min_size=1, max_size=64)),
    "invalid UTF-8": lambda text, draw: b"\xff\xfe\xc3(" + text.encode(),
    "only whitespace": lambda text, draw: draw(st.sampled_from(["", "\n", "   ", "---", "# nothing"])),
}
# past admission's limit on a request; rare, since reading a mebibyte of YAML takes a second
_OVER_A_MEBIBYTE = "over a mebibyte"


def _over_a_mebibyte(text: str) -> str:
    return text + "\n# " + "x" * (1024 * 1024) + "\n"


@dataclass
class Mutant:
    """A mutated manifest: its bytes, the identity its first document claims (for an intake subject),
    and how it was made (for a failure's report)."""

    data: bytes
    kind: str
    namespace: str
    name: str
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"Mutant({'; '.join(self.notes)}, {len(self.data)} bytes: {self.data[:300]!r})"


def _identity(doc: Any) -> tuple[str, str, str]:
    if not isinstance(doc, dict):
        return "job", "default", "fuzz"
    kind = doc.get("kind")
    meta = doc.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    name, namespace = meta.get("name"), meta.get("namespace")
    return (
        kind.lower() if isinstance(kind, str) and kind else "job",
        namespace if isinstance(namespace, str) and namespace else "default",
        name if isinstance(name, str) and name else "fuzz",
    )


@st.composite
def mutated_manifests(
    draw: st.DrawFn,
    seeds: Sequence[dict[str, Any]] = SEEDS,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Mutant:
    """A manifest made from one to three seed documents, each mutated one to four times, rendered as YAML
    or JSON, sometimes with a YAML oddity on top. `prepare` adapts each seed before it is mutated."""
    count = draw(st.sampled_from([1, 1, 1, 2, 3]))
    docs: list[Any] = []
    notes: list[str] = []
    for _ in range(count):
        doc = copy.deepcopy(draw(st.sampled_from(seeds)))
        if prepare is not None:
            doc = prepare(doc)
        notes.append(f"a {doc.get('kind')} {doc.get('metadata', {}).get('name')!r}")
        for _ in range(draw(st.integers(0, 4))):
            doc = draw(_mutate(doc, notes))
        docs.append(doc)
    text: str | bytes = _deepen(_render(docs, draw))
    roll = draw(st.integers(0, 399))
    if roll < 100:  # a quarter of the manifests
        oddity = draw(st.sampled_from(sorted(_TEXT_ODDITIES)))
        notes.append(oddity)
        text = _TEXT_ODDITIES[oddity](text, draw)
    elif roll == 137:  # not an end of the range: Hypothesis draws those often
        notes.append(_OVER_A_MEBIBYTE)
        text = _over_a_mebibyte(text)
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return Mutant(data, *_identity(docs[0]), notes=notes)


def draw_mutants(count: int, strategy: st.SearchStrategy[Mutant] | None = None) -> list[Mutant]:
    """`count` mutants, the same ones on every run, for a test that sends them somewhere asynchronously
    (a running stack) rather than inside a Hypothesis test."""
    drawn: list[Mutant] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy if strategy is not None else mutated_manifests())
    def collect(mutant: Mutant) -> None:
        drawn.append(mutant)

    collect()
    return drawn
