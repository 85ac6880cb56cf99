"""share.auto.offset.reset (coordinator/share/offset_reset.py): the strategies Kafka takes,
durations in java.time.Duration's format, and the start offset each gives."""

from __future__ import annotations

from kafkalite.coordinator.share.offset_reset import OffsetReset, initial_start_offset, parse

HOUR = 3_600_000


def test_parse() -> None:
    assert parse("latest") == OffsetReset("latest")
    assert parse(" EARLIEST ") == OffsetReset("earliest")
    assert parse("by_duration:PT1H") == OffsetReset("by_duration", HOUR)
    assert parse("by_duration:P1DT2H3M4.5S") == OffsetReset(
        "by_duration", 86_400_000 + 2 * HOUR + 3 * 60_000 + 4500)
    assert parse("by_duration:P2D") == OffsetReset("by_duration", 2 * 86_400_000)
    assert parse("by_duration:PT0.25S") == OffsetReset("by_duration", 250)
    for bad in ("none", "by_duration:", "by_duration:xx", "by_duration:-PT1H",
                "by_duration:PT-1H", "by_duration:P", "by_duration:PT", "by_duration:P1DT",
                "by_duration:1H"):
        assert parse(bad) is None, bad


def test_initial_start_offset() -> None:
    def at(ts: int) -> int | None:
        return {1000: 40}.get(ts)

    latest, earliest = OffsetReset("latest"), OffsetReset("earliest")
    assert initial_start_offset(latest, 2000, 10, 100, at) == 100
    assert initial_start_offset(earliest, 2000, 10, 100, at) == 10
    assert initial_start_offset(OffsetReset("by_duration", 1000), 2000, 10, 100, at) == 40
    # Nothing that recent: the log end; the log start caps an offset before it.
    assert initial_start_offset(OffsetReset("by_duration", 5), 2000, 10, 100, at) == 100
    assert initial_start_offset(OffsetReset("by_duration", 1000), 2000, 50, 100, at) == 50
