"""Fuzzing `lahar validate`: 2,000 mutated manifests (tests/support/manifest_fuzz.py) through the function
the command calls, in process, and some through the command itself. No input may raise, hang, or be
refused without naming where it is wrong (`unnamed`). Below them, what the fuzzing found, here and
through a running stack (tests/e2e/test_fuzz_stack.py), kept as regression tests."""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from support.manifest_fuzz import SEEDS, Mutant, mutated_manifests, unnamed, within

from contracts import payloads
from contracts.errors import FieldError
from contracts.limits import deeper_than
from contracts.parse import parse_documents
from services.admission.api import encode_reply, reply
from services.admission.validate_cmd import validate_files
from services.cli.main import main

# far longer than any manifest takes (the slowest, a mebibyte of YAML, about 1 s on an idle core); 15 s
# failed this test on a machine loaded about ten times over its cores, where it passed alone
HANG_S = 60.0
FUZZ = settings(
    max_examples=2000,
    deadline=None,
    derandomize=True,  # the same examples on every run: CI is reproducible
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@pytest.fixture(scope="module")
def manifest_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "manifest.yaml"


def as_dicts(errors: list) -> list[dict[str, str]]:
    return [{"document": e.document, "path": e.path, "message": e.message} for e in errors]


@pytest.mark.slow  # some 20 s on a 2-core machine
def test_mutated_manifests_are_accepted_or_refused_at_a_field_by_validate(manifest_file: Path) -> None:
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(mutated_manifests())
    def check(mutant: Mutant) -> None:
        manifest_file.write_bytes(mutant.data)
        with within(HANG_S, mutant):
            count, errors = validate_files([str(manifest_file)])
        outcomes["refused" if errors else "accepted"] += 1
        assert not unnamed(as_dicts(errors), str(manifest_file)), (mutant, errors)
        if not errors:
            # an accepted file is one of objects: every document it holds made one
            parsed, problems = parse_documents(mutant.data.decode(), "again")
            assert count == len(parsed) and not problems

    check()
    # both ways out were taken often: the mutants are neither all garbage nor all harmless
    assert outcomes["accepted"] >= 100 and outcomes["refused"] >= 1000, outcomes


def test_mutated_manifests_through_the_validate_command(manifest_file: Path) -> None:
    @settings(FUZZ, max_examples=100)
    @given(mutated_manifests())
    def check(mutant: Mutant) -> None:
        manifest_file.write_bytes(mutant.data)
        out = io.StringIO()
        with (
            within(HANG_S, mutant),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            code = main(["validate", "-f", str(manifest_file), "-o", "json"])
        report = json.loads(out.getvalue())
        assert code == (0 if report["valid"] else 1), (mutant, report)
        assert report["valid"] == (not report["errors"])
        assert not unnamed(report["errors"], str(manifest_file)), (mutant, report)

    check()


# --- found by the fuzzing --------------------------------------------------------------------------------


def billion_laughs(levels: int, width: int) -> str:
    """`levels` lists, each holding `width` aliases of the one before: width**levels paths, a few lines."""
    lines = ["a0: &a0 [lol]"]
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def shared_tree(levels: int) -> Iterator[object]:
    tree: object = "leaf"
    for _ in range(levels):
        tree = [tree, {"again": tree}]
        yield tree


def test_an_alias_bomb_in_a_file_is_measured_without_walking_every_path(manifest_file: Path) -> None:
    # lahar validate reads a user's file, aliases and all: an alias bomb of 9**9 paths beside a valid Job
    # once kept it walking the paths (to measure their depth) for minutes
    job = next(doc for doc in SEEDS if doc["kind"] == "Job" and doc["spec"].get("queue") == "default")
    manifest_file.write_text(yaml.safe_dump(job) + billion_laughs(9, 9))
    with within(HANG_S, "validate of an alias bomb"):
        count, errors = validate_files([str(manifest_file)])
    # the bomb's keys are unknown fields, named without walking what they hold
    assert count == 0
    assert [(e.path, e.message) for e in errors] == [
        (f"a{level}", f'unknown field "a{level}"') for level in range(9)
    ]


def test_nesting_depth_of_shared_and_cyclic_trees() -> None:
    *_, tree = shared_tree(60)  # 2**60 paths, 120 levels deep
    with within(HANG_S, "deeper_than of a shared tree"):
        assert deeper_than(tree)
        assert not deeper_than(tree, limit=120)
        assert deeper_than(tree, limit=119)
    # one list met at two depths, in either order: the deeper meeting is the one that counts
    leaf: list[object] = [[["x"]]]
    for tree in ([leaf, [[[[leaf]]]]], [[[[[leaf]]]], leaf]):
        assert deeper_than(tree, limit=7)
        assert not deeper_than(tree, limit=8)
    loop: list[object] = []
    loop.append(loop)  # YAML's `&l [*l]`
    assert deeper_than({"spec": loop})


def test_an_api_reply_with_more_errors_than_it_lists_counts_the_rest_under_the_requests_source() -> None:
    # the stack fuzz sent 1001 Queue documents without a name as "fuzz-183": 1903 errors, the last of the
    # listed was "and 1902 more errors" of a document named "request" instead of the source
    errors = [
        FieldError(f"fuzz-183#{n} (Queue)", "metadata.name", "required field is missing")
        for n in range(1, 1002)
    ]
    answer = reply(None, code="invalid", dry_run=False, errors=errors, max_bytes=1 << 20, source="fuzz-183")
    assert len(answer["errors"]) == 101
    assert answer["errors"][-1] == {"document": "fuzz-183", "path": "", "message": "and 901 more errors"}
    assert not unnamed(answer["errors"], "fuzz-183")
    # a request that names no source is "request", as before
    unnamed_source = reply(None, code="invalid", dry_run=False, errors=errors, max_bytes=1 << 20)
    assert unnamed_source["errors"][-1]["document"] == "request"


def test_a_lone_surrogate_in_a_manifest_is_refused_with_errors_any_reply_or_event_can_carry(
    manifest_file: Path,
) -> None:
    # the stack fuzz: a mutant named "bad\ud800name" (YAML's escape makes a lone surrogate) was refused,
    # but its rejection could not be encoded, so admission failed on it three times and dead-lettered it
    manifest_file.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\n"
        'metadata: {name: "bad\\ud800name"}\n'
        'spec: {tasks: [{name: "t\\udc80", replicas: 1, template: {spec: {containers: [{name: c}]}}}]}\n'
    )
    _, errors = validate_files([str(manifest_file)])
    assert {e.path for e in errors} >= {"metadata.name", "spec.tasks[0].name"}
    fields = [payloads.RejectedField(document=e.document, path=e.path, message=e.message) for e in errors]
    rejected = payloads.ManifestRejected(errors=tuple(fields), source="fuzz")
    assert (
        msgspec.msgpack.decode(msgspec.msgpack.encode(rejected), type=payloads.ManifestRejected) == rejected
    )
    answer = reply(None, code="invalid", dry_run=False, errors=errors, max_bytes=1 << 20)
    documents = {e["document"] for e in json.loads(encode_reply(answer))["errors"]}
    assert any("bad\\ud800name" in d for d in documents)  # the escape, not the character
