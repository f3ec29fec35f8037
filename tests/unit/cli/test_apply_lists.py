"""`lahar apply -f` of a v1 List (services/cli/apply_lists.py): its items become documents of their own,
as kubectl applies them; any other text goes to admission as it is."""

from __future__ import annotations

import yaml

from services.cli.apply_lists import unpack_lists

JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "a"}}
QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}


def test_a_lists_items_become_documents_in_order() -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [JOB, QUEUE]}
    text = yaml.safe_dump_all([listing, {**JOB, "metadata": {"name": "b"}}])
    docs = list(yaml.safe_load_all(unpack_lists(text)))
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("Job", "a"), ("Queue", "q"), ("Job", "b")]


def test_other_texts_are_left_as_they_are() -> None:
    plain = yaml.safe_dump(JOB)
    assert unpack_lists(plain) == plain
    listed_name = yaml.safe_dump({**JOB, "metadata": {"name": "List"}})  # "List", but no List
    assert unpack_lists(listed_name) == listed_name
    broken = "kind: List\nitems: [\n"
    assert unpack_lists(broken) == broken  # admission says where it is wrong
    other_api = yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "List", "items": [JOB]})
    assert unpack_lists(other_api) == other_api
