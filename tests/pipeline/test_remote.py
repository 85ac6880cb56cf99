"""Log directories on S3 (a local moto server with IAM checks on): the same rows and job
results as the local directory, and one clear error naming the path when the directory,
the credentials or a segment is missing or unreadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pyarrow.fs as pafs
import pytest

from kafkalite.pipeline import jobs
from kafkalite.pipeline import segments as sg
from kafkalite.pipeline.cli import run as cli_run
from kafkalite.pipeline.fs import LogDirError
from kafkalite.pipeline.source import reader

from .conftest import write_history
from .test_source import spark_read, write_mixed_log

pytestmark = pytest.mark.timeout(1200)

SERVER = str(Path(__file__).with_name("s3_server.py"))
BUCKET = "kafka-backups"
DENIED = "denied-0"  # a partition whose segments the policy forbids reading


@dataclass
class S3:
    endpoint: str
    key_id: str
    secret: str

    def env(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("AWS_ENDPOINT_URL", self.endpoint)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", self.key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", self.secret)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    # The first three requests (user, key, policy) need no signature; every later one does.
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
    proc = subprocess.Popen([sys.executable, SERVER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert proc.stdout is not None
        endpoint = f"http://127.0.0.1:{int(proc.stdout.readline())}"
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="pipeline")
        key = iam.create_access_key(UserName="pipeline")["AccessKey"]
        iam.put_user_policy(UserName="pipeline", PolicyName="read-most", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "*", "Resource": "*"},
                {"Effect": "Deny", "Action": "s3:GetObject",
                 "Resource": f"arn:aws:s3:::{BUCKET}/*/{DENIED}/*"},
            ]}))
        s = S3(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        local = tmp_path_factory.mktemp("s3-source")
        write_history(local)
        write_mixed_log(local)
        (local / DENIED).mkdir()
        (local / DENIED / "00000000000000000000.log").write_bytes(
            (local / "beta-0" / "00000000000000000000.log").read_bytes())
        fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                               access_key=s.key_id, secret_key=s.secret,
                               allow_bucket_creation=True)
        fs.create_dir(BUCKET)
        pafs.copy_files(str(local), f"{BUCKET}/logs", destination_filesystem=fs)
        s.local = local  # type: ignore[attr-defined]
        yield s
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _rows(df: Any) -> list[str]:
    return sorted(repr(r.asDict(recursive=True)) for r in df.collect())


def test_s3_log_dir_reads_like_the_local_one(spark: Any, s3: S3,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    s3.env(monkeypatch)
    local: Path = s3.local  # type: ignore[attr-defined]
    uri = f"s3://{BUCKET}/logs"
    remote = sg.list_all_segments(uri, ["alpha", "beta"])
    assert [(s.topic, s.partition, s.base_offset, s.size) for s in remote] == [
        (s.topic, s.partition, s.base_offset, s.size)
        for s in sg.list_all_segments(local, ["alpha", "beta"])]

    def read(path: str) -> Any:
        return reader(spark, path).option("topics", "alpha,beta").load()

    df = read(uri)
    assert df.rdd.getNumPartitions() == len(remote)
    assert spark_read(df) == spark_read(read(str(local)))
    for name in jobs.JOBS:
        kw = {"bucket_seconds": 10.0} if name == "lag" else {}
        assert _rows(jobs.run(spark, name, uri, **kw)) == _rows(
            jobs.run(spark, name, str(local), **kw)), name


def test_s3_errors_name_the_path(spark: Any, s3: S3, monkeypatch: pytest.MonkeyPatch,
                                 tmp_path: Path) -> None:
    s3.env(monkeypatch)
    with pytest.raises(LogDirError, match=f"log directory s3://{BUCKET}/nothing-here does not"):
        sg.list_all_segments(f"s3://{BUCKET}/nothing-here")
    with pytest.raises(LogDirError, match="log directory s3://no-such-bucket/logs does not"):
        sg.list_partitions("s3://no-such-bucket/logs")

    # A segment the policy forbids: the executor's error names it.
    denied = f"s3://{BUCKET}/logs/{DENIED}/00000000000000000000.log"
    df = reader(spark, f"s3://{BUCKET}/logs").option("topics", "denied").load()
    with pytest.raises(Exception, match=f"cannot (open|read) {denied}: access denied"):
        df.collect()

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(LogDirError, match=f"cannot list s3://{BUCKET}/logs: the S3 "
                                          "credentials were rejected"):
        sg.list_partitions(f"s3://{BUCKET}/logs")

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(LogDirError, match=f"cannot list s3://{BUCKET}/logs: no S3 credentials"):
        sg.list_partitions(f"s3://{BUCKET}/logs")
    # The command says the same, before starting Spark.
    args = type("A", (), {"log_dir": f"s3://{BUCKET}/logs", "out": str(tmp_path / "o"),
                          "conf": []})()
    assert cli_run(args) == 2  # type: ignore[arg-type]


def test_local_errors_name_the_path(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(LogDirError, match=f"log directory {tmp_path / 'nope'} does not exist"):
        sg.list_partitions(tmp_path / "nope")
    root = tmp_path / "logs"
    write_mixed_log(root)
    seg = root / "beta-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[100] ^= 0xFF  # inside the first batch: its CRC no longer matches
    seg.write_bytes(bytes(data))
    df = spark.read.format("kafkalite").option("path", root.as_uri()).option("topics", "beta") \
        .load()
    with pytest.raises(Exception, match=f"CRC mismatch at offset 0 in {seg}"):
        df.collect()


def test_a_job_on_a_damaged_segment_prints_one_line_naming_it(
        spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "logs"
    write_history(root)
    damaged = []
    for seg in sorted(root.glob("__consumer_offsets-*/*.log")):
        if seg.stat().st_size > 100:
            data = bytearray(seg.read_bytes())
            data[100] ^= 0xFF  # inside the first batch
            seg.write_bytes(bytes(data))
            damaged.append(str(seg))
    assert damaged
    args = type("A", (), {"job": "rebalances", "log_dir": str(root), "out": str(tmp_path / "o"),
                          "conf": [], "master": "local[2]", "shuffle_partitions": 2,
                          "bucket_seconds": 10.0})()
    assert cli_run(args) == 1  # type: ignore[arg-type]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rebalances: record batch CRC mismatch at offset 0 in ")
    assert err[0].rsplit(" in ", 1)[1] in damaged
