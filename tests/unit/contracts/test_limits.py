"""Bounded input: the limits every manifest is read within, and errors that stay small whatever they
quote (contracts/limits.py, applied by the parser and FieldError)."""

from __future__ import annotations

import json

import pytest

from contracts.errors import FieldError
from contracts.limits import (
    DOCUMENT_MAX_CHARS,
    ECHO_MAX_CHARS,
    INT32_MAX,
    MAX_NESTING_DEPTH,
    MAX_QUANTITY_MILLI,
    MESSAGE_MAX_CHARS,
    clip,
    deeper_than,
    quote,
)
from contracts.parse import json_deeper_than, parse_documents
from contracts.resources import QuantityError, parse_quantity

MEGABYTE = 1_000_000


def nested_list(depth: int) -> object:
    tree: object = "leaf"
    for _ in range(depth):
        tree = [tree]
    return tree


def job(replicas: object = 2, cpu: object = "500m") -> str:
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "train"},
            "spec": {
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": replicas,
                        "template": {
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
                        },
                    }
                ]
            },
        }
    )


def errors_of(text: str) -> list[FieldError]:
    parsed, errors = parse_documents(text, "f.yaml")
    assert not parsed
    return errors


# --- the helpers -------------------------------------------------------------------------------------


def test_clip_keeps_short_text_and_cuts_long_text_saying_how_long_it_was() -> None:
    assert clip("x" * ECHO_MAX_CHARS) == "x" * ECHO_MAX_CHARS
    assert clip("x" * MEGABYTE) == "x" * ECHO_MAX_CHARS + f"... ({MEGABYTE} characters)"
    assert quote("Job") == "'Job'"
    assert quote("y" * 100) == repr("y" * ECHO_MAX_CHARS) + "... (100 characters)"


def test_nesting_depth_is_measured_without_recursion() -> None:
    assert not deeper_than(nested_list(MAX_NESTING_DEPTH))
    assert deeper_than(nested_list(MAX_NESTING_DEPTH + 1))
    assert deeper_than({"a": [{"b": nested_list(3)}]}, limit=4)
    assert not deeper_than({"a": [{"b": nested_list(2)}]}, limit=5)
    assert deeper_than(nested_list(200_000))  # far past Python's recursion limit


def test_a_field_error_stays_small_whatever_it_quotes() -> None:
    error = FieldError("d" * MEGABYTE, "spec", "m" * MEGABYTE)
    assert error.document.startswith("d" * DOCUMENT_MAX_CHARS) and error.document.endswith(
        f"... ({MEGABYTE} characters)"
    )
    assert len(error.message) < MESSAGE_MAX_CHARS + 30
    assert FieldError("doc", "path", "short").message == "short"


# --- integers, quantities, durations, timestamps ---------------------------------------------------------


def test_replicas_beyond_int32_are_refused_at_their_field() -> None:
    (error,) = errors_of(job(replicas=9223372036854775807))
    assert error.path == "spec.tasks[0].replicas"
    assert error.message == (
        f"expected an integer <= {INT32_MAX} (a 32-bit integer), got 9223372036854775807"
    )
    parsed, errors = parse_documents(job(replicas=INT32_MAX), "f.yaml")
    assert parsed and not errors  # the cap on pods per job is admission's rule, not the parser's


def test_int64_fields_take_int64_and_no_more() -> None:
    spec = "spec: {containers: [{name: c}], activeDeadlineSeconds: %d}"
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n" + spec
    assert parse_documents(pod % (2**62), "f")[0][0].object.spec.active_deadline_seconds == 2**62
    (error,) = parse_documents(pod % (2**63), "f")[1]
    assert error.path == "spec.activeDeadlineSeconds" and "64-bit" in error.message


@pytest.mark.parametrize("cpu", ["1e400", "1e9999999999", "9223372036854775808m", "99999999999999999999Ei"])
def test_quantities_beyond_int64_milli_units_are_refused(cpu: str) -> None:
    (error,) = errors_of(job(cpu=cpu))
    assert error.path == "spec.tasks[0].template.spec.containers[0].resources.requests.cpu"
    assert error.message.startswith(f"expected a quantity of at most {MAX_QUANTITY_MILLI} milli-units")


def test_the_largest_quantity_is_accepted_and_a_huge_integer_is_not() -> None:
    assert parse_quantity(f"{MAX_QUANTITY_MILLI}m") == MAX_QUANTITY_MILLI
    (error,) = errors_of(job(cpu=10**30))
    assert "at most" in error.message
    with pytest.raises(QuantityError, match="at most"):
        parse_quantity("1" * 200_000)


@pytest.mark.parametrize("cpu", ["NaN", "inf", ".inf"])
def test_quantities_that_are_not_finite_are_refused(cpu: str) -> None:
    (error,) = errors_of(job(cpu=cpu).replace(f'"{cpu}"', cpu))
    assert error.path.endswith("requests.cpu") and "expected a quantity" in error.message


def test_durations_beyond_gos_and_times_beyond_rfc3339_are_refused() -> None:
    policy = 'spec: {policies: [{action: AbortJob, event: PodFailed, timeout: "%sh"}], tasks: []}'
    text = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\n" + policy
    (error,) = errors_of(text % ("9" * 400))
    assert error.path == "spec.policies[0].timeout" and "at most" in error.message
    stamped = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, creationTimestamp: %d}\nspec: {}"
    (error,) = errors_of(stamped % 10**300)
    assert error.path == "metadata.creationTimestamp" and "epoch seconds" in error.message


# --- documents: depth, values YAML cannot make, echoed strings ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",  # too deep for the JSON parser: read as YAML
        '{"a": ' + "[" * 500 + "]" * 500 + "}",  # deep enough for the JSON parser, too deep for lahar
        "a:\n" + "".join("  " * level + "b:\n" for level in range(1, 2_000)),
    ],
    ids=["yaml-flow", "json-deeper-than-its-parser", "json", "yaml-block"],
)
def test_deeply_nested_documents_are_refused_with_a_clear_error(text: str) -> None:
    (error,) = errors_of(text)
    assert error.document == "f.yaml#1" and error.path == ""
    assert f"nest more than {MAX_NESTING_DEPTH} levels deep" in error.message


def test_a_document_just_within_the_depth_is_read() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]},
    }
    # unknown fields, when not validated, are passed over but still count: the top mapping is the first level
    within = json.dumps({**pod, "extra": nested_list(MAX_NESTING_DEPTH - 1)})
    parsed, errors = parse_documents(within, "f", validate="ignore")
    assert parsed and not errors
    too_deep = json.dumps({**pod, "extra": nested_list(MAX_NESTING_DEPTH)})
    parsed, errors = parse_documents(too_deep, "f", validate="ignore")
    assert not parsed and "levels deep" in errors[0].message


def mixed_tree(depth: int) -> object:
    """Mappings and lists alternating, `depth` levels, with scalars and shallower siblings beside them."""
    tree: object = "leaf"
    for level in range(depth):
        tree = {"deep": tree, "flat": level, "empty": []} if level % 2 else [1, {"x": "y"}, tree]
    return tree


@pytest.mark.parametrize("depth", [0, 1, 2, 3, 5, 8])
@pytest.mark.parametrize("limit", [1, 2, 3, 4, 6, 9])
def test_a_json_document_is_measured_as_any_other(depth: int, limit: int) -> None:
    """The JSON parser's trees are measured by a walk of their own (contracts/parse.py): its answer is
    the general one's."""
    tree = mixed_tree(depth)
    assert json_deeper_than(json.loads(json.dumps(tree)), limit) == deeper_than(tree, limit)


def test_a_json_document_of_nested_mappings_is_refused_past_the_depth() -> None:
    def nested_mapping(depth: int) -> object:
        tree: object = "leaf"
        for _ in range(depth):
            tree = {"a": tree}
        return tree

    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    within = json.dumps({**job, "extra": nested_mapping(MAX_NESTING_DEPTH - 1)})
    assert not [e for e in parse_documents(within, "f", validate="ignore")[1] if "levels deep" in e.message]
    too_deep = json.dumps({**job, "extra": nested_mapping(MAX_NESTING_DEPTH)})
    (error,) = parse_documents(too_deep, "f", validate="ignore")[1]
    assert error.path == "" and f"nest more than {MAX_NESTING_DEPTH} levels deep" in error.message


@pytest.mark.parametrize(("value", "fragment"), [("1" * 5_000, "digits"), ("2024-13-45", "month")])
def test_values_yaml_cannot_make_are_errors_not_crashes(value: str, fragment: str) -> None:
    (error,) = errors_of(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{priority: {value}}}\n")
    assert error.message.startswith("cannot read a value") and fragment in error.message


def test_a_megabyte_kind_is_quoted_short_in_the_document_name_and_the_message() -> None:
    kind = "K" * MEGABYTE
    (error,) = errors_of(f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: p}}\n")
    assert error.path == "kind"
    assert len(error.document) < 200 and f"({MEGABYTE} characters)" in error.document
    assert len(error.message) < 300 and f"({MEGABYTE} characters)" in error.message
