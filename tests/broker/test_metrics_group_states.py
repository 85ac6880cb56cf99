"""The group-count gauges name the classic group states the coordinator has, in the
order Kafka's GroupMetadataManager names them."""

from __future__ import annotations

from kafkalite.broker.metrics import GROUP_STATES
from kafkalite.coordinator.classic.states import VALID_PREVIOUS_STATES


def test_gauges_name_every_classic_group_state_in_kafkas_order() -> None:
    assert GROUP_STATES == ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead",
                            "Empty")
    assert set(GROUP_STATES) == {s.value for s in VALID_PREVIOUS_STATES}
