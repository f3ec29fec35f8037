"""name_uuid gives exactly the standard library's version-5 UUID strings (ids the stream deduplicates
on must not change across a version of lahar)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from shared.name_uuid import name_uuid

_NAMESPACES = st.builds(uuid.UUID, bytes=st.binary(min_size=16, max_size=16))


@given(_NAMESPACES, st.text())
def test_it_is_the_standard_librarys_uuid5(namespace: uuid.UUID, name: str) -> None:
    assert name_uuid(namespace, name) == str(uuid.uuid5(namespace, name))


def test_a_known_id_stays_the_same() -> None:
    # RFC 4122's DNS namespace and the name its errata uses for a version-5 example
    assert name_uuid(uuid.NAMESPACE_DNS, "www.example.com") == "2ed6657d-e927-568b-95e1-2665a8aea6a2"
