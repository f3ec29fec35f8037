"""`lahar apply -f` of a listing: kubectl applies the items of a v1 List (what `get -o yaml` prints for
several objects), so `lahar get jobs -o yaml | lahar apply -f -` applies each job. The CLI unpacks the
List before the text goes to admission, which reads API objects only."""

from __future__ import annotations

from typing import Any

import yaml


def _is_list(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("apiVersion") == "v1"
        and doc.get("kind") == "List"
        and isinstance(doc.get("items"), list)
    )


def unpack_lists(text: str) -> str:
    """The text with every v1 List replaced by its items, one document each; the text itself when it holds
    no List (or cannot be read: admission then says where it is wrong)."""
    if "List" not in text:
        return text
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        return text
    if not any(_is_list(doc) for doc in docs):
        return text
    unpacked: list[Any] = []
    for doc in docs:
        unpacked.extend(doc["items"] if _is_list(doc) else [doc])
    return yaml.safe_dump_all(unpacked, sort_keys=False)
