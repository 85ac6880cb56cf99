"""Log directories on any filesystem ``pyarrow.fs`` reaches: local paths, ``file://``,
``s3://`` (AWS and S3-compatible stores) and ``hdfs://`` (where libhdfs and a Hadoop
client are installed).

The driver resolves a URI once into a :class:`LogFs`; it is pickled into every Spark
input partition, so the executors open segments themselves and the driver never copies
a log directory. S3 settings come from the URI's query (``?endpoint_override=...&region=
...&scheme=http&anonymous=true``) or from the standard environment (``AWS_ENDPOINT_URL``,
``AWS_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_PROFILE``); keys found in the driver's environment travel with the tasks, so the
executors need none of their own. Without keys, the SDK's own chain (shared credentials
file, instance or pod role) applies on every node.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyarrow.fs as pafs


class LogDirError(OSError):
    """A log directory or segment that cannot be listed or read; names the path."""


_CREDENTIAL_ENV = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
                   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


@dataclass(frozen=True)
class LogFs:
    """A filesystem and the log directory's path in it; ``fs`` None is the local disk."""

    fs: Any
    root: str
    uri: str  # as the user wrote it, for messages
    scheme: str = ""
    credentials: bool = True  # S3: keys, a profile, a role or anonymous access is configured

    @property
    def local(self) -> bool:
        return self.fs is None

    def display(self, path: str) -> str:
        """A path as the user would write it (with the URI's scheme)."""
        return f"{self.scheme}://{path}" if self.scheme and self.scheme != "file" else path


#: Source options carrying S3 settings from the driver's environment to Spark's Python
#: planner and executor processes, which do not share it. Spark redacts option values
#: whose names match ``spark.redaction.regex`` (secret, token, access.key) in plans and UI.
S3_OPTIONS = {
    "AWS_ENDPOINT_URL": "s3.endpoint",
    "AWS_REGION": "s3.region",
    "AWS_ACCESS_KEY_ID": "s3.access.key",
    "AWS_SECRET_ACCESS_KEY": "s3.secret",
    "AWS_SESSION_TOKEN": "s3.session.token",
}


def fs_options(uri: str) -> dict[str, str]:
    """The S3 settings of this process's environment, as source options (S3 URIs only)."""
    if not uri.lower().startswith(("s3://", "s3a://")):
        return {}
    env = os.environ
    found = {
        "AWS_ENDPOINT_URL": env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL"),
        "AWS_REGION": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION"),
        "AWS_ACCESS_KEY_ID": env.get("AWS_ACCESS_KEY_ID"),
        "AWS_SECRET_ACCESS_KEY": env.get("AWS_SECRET_ACCESS_KEY"),
        "AWS_SESSION_TOKEN": env.get("AWS_SESSION_TOKEN"),
    }
    return {S3_OPTIONS[k]: v for k, v in found.items() if v}


def _s3(uri: str, options: dict[str, str]) -> LogFs:
    parts = urlsplit(uri)
    q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    env = dict(os.environ)
    for var, name in S3_OPTIONS.items():
        if options.get(name):
            env[var] = options[name]
    kw: dict[str, Any] = {}
    endpoint = q.get("endpoint_override") or env.get("AWS_ENDPOINT_URL_S3") \
        or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        kw["endpoint_override"] = endpoint
        if endpoint.startswith("http://"):
            kw["scheme"] = "http"
    if "scheme" in q:
        kw["scheme"] = q["scheme"]
    region = q.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        kw["region"] = region
    if q.get("anonymous", "").lower() in ("1", "true", "yes"):
        kw["anonymous"] = True
    elif env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        kw["access_key"] = env["AWS_ACCESS_KEY_ID"]
        kw["secret_key"] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            kw["session_token"] = env["AWS_SESSION_TOKEN"]
    # Few attempts: a wrong endpoint or missing credentials should fail now, not in a minute.
    kw["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=2)
    root = (parts.netloc + parts.path).rstrip("/")
    creds = "access_key" in kw or "anonymous" in kw or _has_credentials(env)
    return LogFs(pafs.S3FileSystem(**kw), root, uri, "s3", creds)


def open_log_fs(uri: str, options: dict[str, str] | None = None) -> LogFs:
    """Resolve a log directory given as a local path or a filesystem URI; ``options`` are
    source options (:func:`fs_options`) that take precedence over the environment."""
    if "://" not in uri:
        return LogFs(None, str(Path(uri).resolve()), uri)
    scheme = uri.split("://", 1)[0].lower()
    if scheme == "file":
        return LogFs(None, urlsplit(uri).path, uri)
    if scheme in ("s3", "s3a"):
        return _s3(uri, options or {})
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (OSError, ValueError) as e:  # pyarrow raises ArrowInvalid (a ValueError)
        raise LogDirError(f"cannot open log directory {uri}: {e}") from e
    return LogFs(fs, path.rstrip("/"), uri, scheme)


def _has_credentials(env: dict[str, str]) -> bool:
    if any(env.get(k) for k in _CREDENTIAL_ENV):
        return True
    shared = env.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    return Path(shared).expanduser().is_file()


def explain(lfs: LogFs, path: str, action: str, e: BaseException) -> LogDirError:
    """One clear error naming the path, for a failure of ``action`` on it."""
    where = lfs.display(path)
    text = str(e)
    if isinstance(e, FileNotFoundError) or "NO_SUCH_BUCKET" in text or "NO_SUCH_KEY" in text:
        if where.rstrip("/") in (lfs.uri.rstrip("/"), lfs.root):
            return LogDirError(f"log directory {lfs.uri} does not exist")
        return LogDirError(f"{where} does not exist (log directory {lfs.uri})")
    if lfs.scheme == "s3":
        if "ACCESS_DENIED" in text:
            return LogDirError(f"cannot {action} {where}: access denied "
                               f"({text.splitlines()[0]})")
        if "INVALID_ACCESS_KEY" in text or "SIGNATURE" in text:
            return LogDirError(f"cannot {action} {where}: the S3 credentials were rejected "
                               f"({text.splitlines()[0]})")
        if not lfs.credentials:
            return LogDirError(
                f"cannot {action} {where}: no S3 credentials (set AWS_ACCESS_KEY_ID and "
                f"AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or add ?anonymous=true for a public "
                f"bucket): {text.splitlines()[0] if text else type(e).__name__}")
    if isinstance(e, PermissionError):
        return LogDirError(f"cannot {action} {where}: permission denied")
    return LogDirError(f"cannot {action} {where}: {text or type(e).__name__}")
