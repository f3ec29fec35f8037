"""evolve: what dataclasses.replace gives, for the objects the view changes on every event."""

from __future__ import annotations

import dataclasses

import pytest
from support.builders import pod, podgroup

from shared.evolve import evolve


def test_evolve_is_replace() -> None:
    p = pod("a", "g", node_name="n1")
    assert evolve(p.status, phase="Running", start_time=3.0) == dataclasses.replace(
        p.status, phase="Running", start_time=3.0
    )
    changed = evolve(p, spec=evolve(p.spec, node_name="n2"))
    assert changed == dataclasses.replace(p, spec=dataclasses.replace(p.spec, node_name="n2"))
    assert changed.meta is p.meta and p.spec.node_name == "n1"
    pg = podgroup("g")
    assert evolve(pg, status=evolve(pg.status, phase="Running")).status.phase == "Running"
    assert evolve(p) == p


def test_evolve_names_a_field_the_class_lacks() -> None:
    with pytest.raises(TypeError, match="PodStatus has no field 'phaze'"):
        evolve(pod("a").status, phaze="Running")
