"""The node table kept between sessions: node events rewrite rows, sessions share the static columns."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support.builders import gang, node, pod, podgroup, res

from contracts.objects import Container, Node
from services.scheduler.core.conf import default_conf
from services.scheduler.core.framework.session import Session, run_session
from services.scheduler.core.model.node_base import NodeBase, NodeRows
from services.scheduler.core.snapshot import ClusterSnapshot


def relabelled(n: Node, **labels: str) -> Node:
    return replace(n, meta=replace(n.meta, labels={**n.meta.labels, **labels}))


def test_a_node_event_rewrites_one_row_and_a_new_base_is_made_only_after_a_change() -> None:
    rows = NodeRows()
    nodes = [node(f"n{i}", cpu=4 + i) for i in range(3)]
    for n in nodes:
        rows.put(n)
    first = rows.base()
    assert (rows.rows_built, rows.rows_updated, rows.base() is first) == (3, 0, True)
    rows.set_ready("n1", False)
    rows.set_ready("n1", False)  # no change, no update
    rows.put(relabelled(nodes[2], zone="b"))
    assert (rows.rows_built, rows.rows_updated) == (4, 1)
    second = rows.base()
    assert second is not first
    assert second.ready.tolist() == [True, False, True] and first.ready.tolist() == [True, True, True]
    assert (second.index["n2"], second.labels[2]["zone"]) == (2, "b")
    assert second.allocatable[:, 0].tolist() == [4000, 5000, 6000]
    assert rows.ready_count == 2


def test_a_new_resource_dimension_lays_out_every_row_again() -> None:
    rows = NodeRows()
    rows.put(node("a", cpu=2))
    rows.put(node("b", cpu=2))
    rows.put(node("g", cpu=2, gpu=4))
    base = rows.base()
    assert base.resources.names == ("cpu", "memory", "nvidia.com/gpu")
    assert rows.rows_built == 2 + 2 + 1  # the two older rows were laid out anew
    assert base.allocatable[:, 2].tolist() == [0, 0, 4000]


def test_rows_grow_past_the_initial_capacity() -> None:
    rows = NodeRows()
    for i in range(200):
        rows.put(node(f"n{i:03d}", cpu=1 + i % 7))
    base = rows.base()
    assert (len(base), base.index["n150"], rows.rows_built) == (200, 150, 200)
    assert base.allocatable[150, 0] == 1000 * (1 + 150 % 7)


def test_a_base_is_read_only_and_widening_moves_columns_without_converting_nodes() -> None:
    base = NodeBase.build([node("a", cpu=2, gpu=1), node("b", cpu=3)])
    with pytest.raises(ValueError):
        base.allocatable[0, 0] = 1
    assert base.widened({"cpu"}) is base
    wide = base.widened({"example.com/fpga", "cpu"})
    assert wide.resources.names == ("cpu", "memory", "example.com/fpga", "nvidia.com/gpu")
    assert wide.allocatable[:, [0, 2, 3]].tolist() == [[2000, 0, 1000], [3000, 0, 0]]
    assert wide.labels is base.labels and wide.ready is base.ready


def test_a_session_uses_the_snapshot_base_and_converts_no_node(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [node("n1", cpu=2), node("n2", cpu=2)]
    base = NodeBase.build(nodes)
    snap = replace(ClusterSnapshot.from_objects([*nodes, *gang("g", 3)]), node_base=base)

    def no_conversion(cls: type, nodes: object) -> NodeBase:
        raise AssertionError("the session converted Node objects")

    monkeypatch.setattr(NodeBase, "build", classmethod(no_conversion))
    ssn = Session(snap, default_conf())
    assert ssn.nodes.allocatable is base.allocatable
    assert ssn.nodes.idle.flags.writeable and not np.shares_memory(ssn.nodes.idle, base.allocatable)
    assert len(ssn.run().binds) == 3


def test_a_pod_asking_for_a_resource_no_node_has_fits_nowhere() -> None:
    nodes = [node("n1", cpu=8)]
    plain = pod("f-0", "f")
    asks = Container(name="main", requests=res(cpu=1, **{"example.com/fpga": 1}))
    fpga = replace(plain, spec=replace(plain.spec, containers=(asks,)))
    snap = replace(
        ClusterSnapshot.from_objects([*nodes, podgroup("f"), fpga]), node_base=NodeBase.build(nodes)
    )
    result = run_session(snap, default_conf())
    assert result.binds == {}
    assert "example.com/fpga" in result.podgroups["default/f"].conditions[-1].message
