"""Produce errors as Kafka sends them, over a raw socket with hand-built batches:
corrupt batches, sequence gaps, duplicates, transactional ids, bad acks, acks=0 failures."""

from __future__ import annotations

import datetime
import socket
import struct
from typing import Any

from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from kafkalite.broker.testing.fixtures import BrokerThread
from kafkalite.protocol import apis as codecs
from kafkalite.protocol.errors import ErrorCode
from kafkalite.protocol.headers import encode_request_header
from kafkalite.protocol.records import ATTR_TRANSACTIONAL, NewRecord, build_batch

PRODUCE = 0
VERSION = 9


class Client:
    def __init__(self, broker: BrokerThread) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
        self.corr = 0

    def produce(self, topic: str, records: bytes, acks: int = -1,
                transactional_id: str | None = None) -> Any:
        req = ProduceRequest(
            transactional_id=transactional_id, acks=acks,
            timeout=datetime.timedelta(seconds=5),
            topic_data=(TopicProduceData(name=topic, partition_data=(
                PartitionProduceData(index=0, records=records),)),),
        )
        self.corr += 1
        body = encode_request_header(PRODUCE, VERSION, self.corr, "raw", True)
        body += codecs.encode_request(req)
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        if acks == 0:
            return None
        size = struct.unpack(">i", self._recv(4))[0]
        frame = self._recv(size)
        resp = codecs.decode_response(PRODUCE, VERSION, frame, 5)  # corr id + tagged fields
        return resp.responses[0].partition_responses[0]

    def _recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return out


def records(n: int, pid: int = -1, epoch: int = -1, seq: int = -1) -> bytes:
    return build_batch([NewRecord(b"k", f"v{i}".encode()) for i in range(n)], timestamp=1,
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_corrupt_and_oversized_batches(make_broker: Any) -> None:
    b = make_broker({"message.max.bytes": "2000"})
    c = Client(b)
    assert c.produce("e", records(2)).error_code == ErrorCode.none
    bad = bytearray(records(2))
    bad[-1] ^= 0x01
    r = c.produce("e", bytes(bad))
    assert r.error_code == ErrorCode.corrupt_message
    assert c.produce("e", records(300)).error_code == ErrorCode.message_too_large
    r = c.produce("e", records(1))
    assert (r.error_code, r.base_offset) == (ErrorCode.none, 2)


def test_idempotent_sequences_over_the_wire(broker: BrokerThread) -> None:
    c = Client(broker)
    pid = 4242
    assert c.produce("s", records(3, pid, 0, 0)).base_offset == 0
    assert c.produce("s", records(2, pid, 0, 3)).base_offset == 3
    dup = c.produce("s", records(3, pid, 0, 0))
    assert (dup.error_code, dup.base_offset) == (ErrorCode.none, 0)  # the original offset
    assert c.produce("s", records(1, pid, 0, 9)).error_code == (
        ErrorCode.out_of_order_sequence_number)
    assert c.produce("s", records(1, pid, 1, 0)).base_offset == 5
    assert c.produce("s", records(1, pid, 0, 6)).error_code == ErrorCode.invalid_producer_epoch
    assert broker.broker is not None
    assert broker.broker.logs.get("s", 0).log_end_offset == 6


def test_transactional_batches_need_a_transactional_id_and_bad_acks_refused(
        broker: BrokerThread) -> None:
    c = Client(broker)
    txn = build_batch([NewRecord(b"k", b"v")], timestamp=1, producer_id=77, producer_epoch=0,
                      base_sequence=0, attributes=ATTR_TRANSACTIONAL)
    r = c.produce("t", txn)
    assert r.error_code == ErrorCode.transactional_id_authorization_failed
    assert c.produce("t", records(1), acks=2).error_code == ErrorCode.invalid_required_acks
    assert broker.broker is not None
    plog = broker.broker.logs.get("t", 0)
    assert plog is not None and plog.log_end_offset == 0
    # With it, the transaction coordinator is asked first (KIP-890 verification): it has
    # no producer 77 for "tx", so nothing is written.
    r = c.produce("t", txn, transactional_id="tx")
    assert r.error_code == ErrorCode.invalid_producer_id_mapping
    assert plog.last_stable_offset == 0 and plog.log_end_offset == 0


def test_failed_acks0_produce_closes_the_connection(broker: BrokerThread) -> None:
    c = Client(broker)
    c.produce("z", records(1), acks=0)
    bad = bytearray(records(1))
    bad[-1] ^= 0x01
    c.produce("z", bytes(bad), acks=0)
    c.sock.settimeout(5)
    try:
        assert c.sock.recv(1) == b""
    except ConnectionResetError:
        pass
    assert broker.broker is not None
    assert broker.broker.logs.get("z", 0).log_end_offset == 1
