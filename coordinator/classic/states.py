"""The classic group's states and the transitions Kafka allows between them.

``VALID_PREVIOUS_STATES`` below is Kafka's ``ClassicGroupState.validPreviousStates``, the
one place the table is written: a group may only enter a state from one of the states
listed for it (a rebalance ends Empty with no members; a member joining, leaving,
changing or expiring starts PreparingRebalance; every member joined: CompletingRebalance,
the leader assigns; the assignment stored: Stable; a tombstone replayed: Dead), and every
transition is checked against it.

Loading a group from its record is not a transition: the group starts in the state the
record implies (Stable with members, Empty without), as Kafka's loader does.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping


class GroupState(enum.Enum):
    """In Kafka's ``ClassicGroupState`` order, which its group-count gauges follow."""

    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"


EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = {
    EMPTY: frozenset({PREPARING}),
    PREPARING: frozenset({EMPTY, STABLE, COMPLETING}),
    COMPLETING: frozenset({PREPARING}),
    STABLE: frozenset({COMPLETING}),
    DEAD: frozenset({EMPTY, PREPARING, COMPLETING, STABLE, DEAD}),
}

#: States from which a rebalance may start (Kafka's ``canRebalance``).
CAN_REBALANCE = VALID_PREVIOUS_STATES[PREPARING]

#: States in which a group has members taking part in a generation.
ACTIVE = frozenset({PREPARING, COMPLETING, STABLE})


class IllegalStateTransition(RuntimeError):
    """A transition the table does not allow: a bug in the core, never a client's fault."""


def check_transition(group_id: str, old: GroupState, new: GroupState) -> None:
    if old not in VALID_PREVIOUS_STATES[new]:
        raise IllegalStateTransition(
            f"group {group_id} should be in {sorted(s.value for s in VALID_PREVIOUS_STATES[new])}"
            f" to move to {new.value}, but is {old.value}")
