"""Random mixes of transactional commits of two producers, plain commits, offset
tombstones and transaction ends, through the real runtime: after every step the committed
offsets are those of a model of Kafka's OffsetMetadataManager (record offsets compared at
the COMMIT marker), and a restart from the logs (which loads only the last record of each
key, holding transactional ones until their marker) holds the same state."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol.errors import ErrorCode as E

from .txn_runtime import GROUP, TOPIC, Both, check_reload

WHO = ("a", "b")
OPS = st.lists(
    st.tuples(st.sampled_from(["txn", "plain", "delete", "commit", "abort"]),
              st.sampled_from(WHO), st.integers(min_value=0, max_value=1),
              st.integers(min_value=0, max_value=99)),
    min_size=1, max_size=25,
)


class Model:
    """Kafka's replay, with every record's position."""

    def __init__(self) -> None:
        self.pos = 0
        self.committed: dict[int, tuple[int, int]] = {}
        self.pending: dict[str, dict[int, tuple[int, int]]] = {w: {} for w in WHO}

    def txn(self, who: str, part: int, offset: int) -> None:
        self.pos += 1
        self.pending[who][part] = (offset, self.pos)

    def plain(self, part: int, offset: int) -> None:
        self.pos += 1
        self.committed[part] = (offset, self.pos)

    def delete(self, part: int) -> None:
        self.pos += 1
        self.committed.pop(part, None)
        for offsets in self.pending.values():
            offsets.pop(part, None)

    def end(self, who: str, commit: bool) -> None:
        offsets, self.pending[who] = self.pending[who], {}
        if not commit:
            return
        for part, (offset, pos) in offsets.items():
            existing = self.committed.get(part)
            if existing is None or pos > existing[1]:
                self.committed[part] = (offset, pos)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_committed_offsets_follow_kafkas_replay(ops: list[tuple[str, str, int, int]]) -> None:
    h = Both.make()
    model = Model()
    ids = {w: h.init(w) for w in WHO}
    open_txn = dict.fromkeys(WHO, False)
    for i, (op, who, part, offset) in enumerate(ops):
        pid, epoch = ids[who]
        if op == "txn":
            if not open_txn[who]:
                assert h.add_offsets(pid, epoch, tid=who) is E.none
                open_txn[who] = True
            assert h.txn_commit(pid, epoch, {(TOPIC, part): offset}) == {(TOPIC, part): E.none}
            model.txn(who, part, offset)
        elif op == "plain":
            h.commit({(TOPIC, part): offset})
            model.plain(part, offset)
        elif op == "delete":
            h.run(h.core.delete_offsets(h.now, GROUP, [(TOPIC, (part,))]))
            model.delete(part)
        elif open_txn[who]:
            assert h.end(pid, epoch, op == "commit", tid=who).error is E.none
            open_txn[who] = False
            model.end(who, op == "commit")
        committed = {p: o.offset for (_t, p), o in h.core.offsets.offsets(GROUP).items()}
        assert committed == {p: o for p, (o, _pos) in model.committed.items()}
        for p in (0, 1):
            unstable = any(p in offsets for offsets in model.pending.values())
            assert (h.fetch((TOPIC, p), stable=True)[(TOPIC, p)][1]
                    is E.unstable_offset_commit) == unstable
        if i % 8 == 7:
            check_reload(h)
    h = check_reload(h)
    # After the restart both transactions can still end, with the same outcome.
    for who in WHO:
        if open_txn[who]:
            assert h.end(*ids[who], True, tid=who).error is E.none
            model.end(who, True)
    committed = {p: o.offset for (_t, p), o in h.core.offsets.offsets(GROUP).items()}
    assert committed == {p: o for p, (o, _pos) in model.committed.items()}
