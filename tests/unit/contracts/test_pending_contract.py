"""contracts/pending.py: how long a pod is expected to run, from its PodGroup's running estimate or its
simulated duration; and which pending reasons are worth new nodes."""

from __future__ import annotations

import pytest

from contracts.pending import (
    INSUFFICIENT_CLUSTER_CAPACITY,
    PENDING_REASONS,
    RUNNING_ESTIMATE,
    SCALE_UP_REASONS,
    SIM_DURATION,
    expected_run_seconds,
)


@pytest.mark.parametrize(
    ("pod", "group", "seconds"),
    [
        pytest.param({SIM_DURATION: "90s"}, {}, 90.0, id="simulated-duration"),
        pytest.param({SIM_DURATION: "90s"}, {RUNNING_ESTIMATE: "1h"}, 3600.0, id="the-estimate-comes-first"),
        pytest.param({}, {RUNNING_ESTIMATE: "1m30s"}, 90.0, id="estimate-only"),
        pytest.param({}, {}, None, id="unknown"),
        pytest.param({SIM_DURATION: "soon"}, {}, None, id="malformed-is-unknown"),
        pytest.param({SIM_DURATION: "-5s"}, {}, None, id="negative-is-unknown"),
        pytest.param({SIM_DURATION: "0"}, {}, 0.0, id="zero"),
    ],
)
def test_expected_run_seconds(pod: dict[str, str], group: dict[str, str], seconds: float | None) -> None:
    assert expected_run_seconds(pod, group) == seconds


def test_only_a_cluster_short_of_room_is_worth_new_nodes() -> None:
    assert {INSUFFICIENT_CLUSTER_CAPACITY} == SCALE_UP_REASONS
    assert SCALE_UP_REASONS <= PENDING_REASONS
