"""Bounds on what a manifest may hold, shared by `lahar validate`, the admission API and the intake.

One accepted value that is too large can stop a service long after admission let it through (a Job of
2^63 replicas makes the job-controller create pods until it dies, and again on every restart), and one
rejected value that is echoed whole can make its own rejection too large to publish. So every count,
quantity, duration, name and nesting level is bounded where manifests are parsed and admitted, and every
value an error quotes is cut short. docs/reliability.md lists each limit and where it is enforced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# --- integers: the widths Kubernetes and Volcano give their fields --------------------------------

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# a quantity is held in milli-units; Kubernetes' MilliValue is an int64
MAX_QUANTITY_MILLI = INT64_MAX
# a Go time.Duration is int64 nanoseconds: about 292 years
MAX_DURATION_S = INT64_MAX / 1e9
# 9999-12-31T23:59:59Z, the last moment RFC 3339 can write
MAX_EPOCH_SECONDS = 253_402_300_799.0

# --- names and strings (Kubernetes' apimachinery validation) --------------------------------------

DNS_LABEL_MAX = 63  # namespaces, task and container names, label values, a label key's name part
DNS_SUBDOMAIN_MAX = 253  # object names, a label key's prefix
ANNOTATIONS_MAX_BYTES = 256 * 1024  # all of one object's annotations together, keys and values

# --- documents --------------------------------------------------------------------------------------

MAX_NESTING_DEPTH = 100  # mappings and lists inside each other; a Volcano Job needs about 15
MAX_MANIFEST_BYTES = 1024 * 1024  # one request or intake message (admission's max_request_bytes)

# --- pods a manifest makes ----------------------------------------------------------------------------

MAX_PODS_PER_JOB = 10_000  # the sum of a Job's replicas
MAX_PODS_PER_REQUEST = 10_000  # every Job's replicas and plain Pod of one request, intake message or file

# --- how errors quote what they found ---------------------------------------------------------------

ECHO_MAX_CHARS = 64  # a found value quoted in a message
DOCUMENT_MAX_CHARS = 256  # FieldError.document
PATH_MAX_CHARS = 512  # FieldError.path
MESSAGE_MAX_CHARS = 1024  # FieldError.message


def clip(text: str, limit: int = ECHO_MAX_CHARS) -> str:
    """`text`, or its first characters, an ellipsis and how long it was when it is longer than `limit`."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def encodable(text: str) -> str:
    """`text` as UTF-8 can carry it: a lone surrogate (which YAML's "\\ud800" escape and JSON make, and
    which no event, reply or log can encode) becomes its backslash escape; any other text is returned as
    it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def quote(text: str) -> str:
    """A found string as an error message quotes it: repr'd, at most ECHO_MAX_CHARS of it."""
    if len(text) <= ECHO_MAX_CHARS:
        return repr(text)
    return f"{text[:ECHO_MAX_CHARS]!r}... ({len(text)} characters)"


def deeper_than(tree: object, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether mappings and lists nest more than `limit` levels in `tree` (a parsed document). Walked with
    an explicit stack, so a tree of any depth is measured without recursion. A collection met again (a
    YAML alias makes one object appear in many places) is walked again only when met deeper than before,
    so an alias bomb, a few lines that stand for billions of paths, is measured in time linear in its
    text instead of in its paths."""
    stack: list[tuple[object, int]] = [(tree, 0)]
    deepest: dict[int, int] = {}  # id of a collection walked -> the greatest depth it was walked at
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children: Iterable[object] = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth + 1 > limit:
            return True
        if deepest.get(id(node), -1) >= depth:
            continue  # everything below it was measured from as deep already
        deepest[id(node)] = depth
        stack.extend((child, depth + 1) for child in children)
    return False
