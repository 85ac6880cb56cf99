"""The broker's admin HTTP API (``admin.listener``) as a blocking JSON client, for
``kafkalite ctl`` and ``kafkalite pipeline watch``."""

from __future__ import annotations

import json
from typing import Any

#: The environment variable naming the admin listener for the command-line tools.
ADMIN_ENV = "KAFKALITE_ADMIN"


class CtlError(Exception):
    pass


class AdminUnreachable(CtlError):
    """No answer from the admin listener (as opposed to an answer refusing the request)."""


def request(admin: str, method: str, path: str, body: Any = None,
            timeout: float = 30) -> Any:
    # Here, not at module load: the parser that registers these commands is also built
    # by ``kafkalite serve``, whose start-up should not pay for an HTTP client.
    import urllib.error
    import urllib.request

    url = admin.rstrip("/") + path
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        try:
            message = json.loads(e.read())["error"]
        except (ValueError, KeyError, TypeError):
            message = e.reason
        raise CtlError(f"{e.code}: {message}") from None
    except (urllib.error.URLError, TimeoutError) as e:
        reason = e.reason if isinstance(e, urllib.error.URLError) else e
        raise AdminUnreachable(f"cannot reach the admin listener at {admin}: {reason} "
                       f"(set admin.listener on the broker; --admin or {ADMIN_ENV} here)"
                       ) from None
