"""The REST API: Confluent Schema Registry's routes, content types and JSON errors, on the
registry's small HTTP server (``http.py``) on the broker's event loop.

Every refusal is a ``RegistryError`` answered as ``{"error_code", "message"}`` with a 4xx;
an unexpected exception is logged and answered 500 with code 50001 (a bug, never bad
input)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from . import errors
from .errors import RegistryError
from .formats import TYPES
from .http import Request, Response, Routes
from .service import Registry

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: Largest request body taken (a schema with its JSON envelope).
MAX_BODY = 4 * 1024 * 1024

#: (user, password) -> whether the broker knows the user with that password.
Authenticate = Callable[[str, str], bool]


def reply(body: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(body).encode(), CONTENT_TYPE)


def refusal(e: RegistryError) -> Response:
    return reply(e.body(), e.status)


def _flag(request: Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


def _body(request: Request) -> Any:
    raw = request.body
    try:
        return json.loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise errors.malformed_json(str(e)) from None


def _authorized(request: Request, auth: Authenticate) -> bool:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        user, sep, password = base64.b64decode(token, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(sep) and auth(user, password)


def rejection(status: int, message: str) -> Response:
    """A request the HTTP layer refused (malformed, too large) or a handler's failure."""
    if status == 413:
        return refusal(errors.too_large(MAX_BODY))
    if status >= 500:
        return reply({"error_code": 50001, "message": "Error in the backend data store"},
                     status)
    return reply({"error_code": status, "message": message}, status)


class App:
    """Authentication, routing and error answers around the handlers."""

    def __init__(self, routes: Routes, auth: Authenticate | None) -> None:
        self.routes = routes
        self.auth = auth

    def __call__(self, request: Request) -> Response:
        if self.auth is not None and not _authorized(request, self.auth):
            denied = refusal(errors.unauthorized())
            denied.headers["WWW-Authenticate"] = 'Basic realm="kafkalite"'
            return denied
        handler, params, other_method = self.routes.find(request.method, request.path)
        if handler is None:
            return refusal(errors.method_not_allowed() if other_method
                           else errors.not_found_endpoint())
        request.match_info = params
        try:
            return handler(request)
        except RegistryError as e:
            return refusal(e)
        except RecursionError:
            # A schema nested deeper than the parsers (and the checks) recurse.
            return refusal(errors.invalid_schema("nested too deeply"))


class Handlers:
    """The handlers, bound to one ``Registry``."""

    def __init__(self, registry: Registry) -> None:
        self.r = registry

    def root(self, request: Request) -> Response:
        return reply({})

    def types(self, request: Request) -> Response:
        return reply(list(TYPES))

    def subjects(self, request: Request) -> Response:
        prefix = request.query.get("subjectPrefix", "")
        names = self.r.state.live_subjects(_flag(request, "deleted"))
        return reply([s for s in names if s.startswith(prefix)])

    def lookup(self, request: Request) -> Response:
        body = _body(request)
        return reply(self.r.lookup(request.match_info["subject"], body,
                                   _flag(request, "normalize"), _flag(request, "deleted"),
                                   request.query.get("format")))

    def delete_subject(self, request: Request) -> Response:
        return reply(self.r.delete_subject(request.match_info["subject"],
                                           _flag(request, "permanent")))

    def versions(self, request: Request) -> Response:
        subject = request.match_info["subject"]
        rows = self.r.state.versions(subject, _flag(request, "deleted"))
        if not rows:
            raise errors.subject_not_found(subject)
        return reply([row.version for row in rows])

    def register(self, request: Request) -> Response:
        body = _body(request)
        return reply(self.r.register(request.match_info["subject"], body,
                                     _flag(request, "normalize")))

    def version(self, request: Request) -> Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 _flag(request, "deleted"))
        return reply(self.r.version_body(row, request.query.get("format")))

    def version_schema(self, request: Request) -> Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 _flag(request, "deleted"))
        return Response(200, self.r.state.schemas[row.id].schema.encode(), CONTENT_TYPE)

    def referenced_by(self, request: Request) -> Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 True)
        return reply(self.r.state.referenced_by(row.subject, row.version))

    def delete_version(self, request: Request) -> Response:
        return reply(self.r.delete_version(request.match_info["subject"],
                                           request.match_info["version"],
                                           _flag(request, "permanent")))

    def schema_by_id(self, request: Request) -> Response:
        return reply(self.r.schema_by_id(request.match_info["id"], request.query.get("format")))

    def schema_text_by_id(self, request: Request) -> Response:
        body = self.r.schema_by_id(request.match_info["id"])
        return Response(200, str(body["schema"]).encode(), CONTENT_TYPE)

    def id_versions(self, request: Request) -> Response:
        return reply(self.r.id_versions(request.match_info["id"], _flag(request, "deleted")))

    def id_subjects(self, request: Request) -> Response:
        return reply(self.r.id_subjects(request.match_info["id"], _flag(request, "deleted")))

    def get_config(self, request: Request) -> Response:
        return reply(self.r.get_config(request.match_info.get("subject"),
                                       _flag(request, "defaultToGlobal")))

    def put_config(self, request: Request) -> Response:
        return reply(self.r.put_config(request.match_info.get("subject"),
                                       _body(request)))

    def delete_config(self, request: Request) -> Response:
        return reply(self.r.delete_config(request.match_info.get("subject")))

    def get_mode(self, request: Request) -> Response:
        return reply(self.r.get_mode(request.match_info.get("subject"),
                                     _flag(request, "defaultToGlobal")))

    def put_mode(self, request: Request) -> Response:
        return reply(self.r.put_mode(request.match_info.get("subject"), _body(request),
                                     _flag(request, "force")))

    def delete_mode(self, request: Request) -> Response:
        return reply(self.r.delete_mode(request.match_info["subject"]))

    def compatibility(self, request: Request) -> Response:
        body = _body(request)
        return reply(self.r.check(request.match_info["subject"],
                                  request.match_info.get("version"), body,
                                  _flag(request, "normalize"), _flag(request, "verbose")))


def build_app(registry: Registry, auth: Authenticate | None = None) -> App:
    h = Handlers(registry)
    s = "/subjects/{subject}"
    v = s + "/versions/{version}"
    r = Routes()
    for method, path, handler in [
        ("GET", "/", h.root),
        ("GET", "/schemas/types", h.types),
        ("GET", "/schemas/ids/{id}", h.schema_by_id),
        ("GET", "/schemas/ids/{id}/schema", h.schema_text_by_id),
        ("GET", "/schemas/ids/{id}/versions", h.id_versions),
        ("GET", "/schemas/ids/{id}/subjects", h.id_subjects),
        ("GET", "/subjects", h.subjects),
        ("POST", s, h.lookup),
        ("DELETE", s, h.delete_subject),
        ("GET", s + "/versions", h.versions),
        ("POST", s + "/versions", h.register),
        ("GET", v, h.version),
        ("DELETE", v, h.delete_version),
        ("GET", v + "/schema", h.version_schema),
        ("GET", v + "/referencedby", h.referenced_by),
        ("GET", "/config", h.get_config),
        ("PUT", "/config", h.put_config),
        ("DELETE", "/config", h.delete_config),
        ("GET", "/config/{subject}", h.get_config),
        ("PUT", "/config/{subject}", h.put_config),
        ("DELETE", "/config/{subject}", h.delete_config),
        ("GET", "/mode", h.get_mode),
        ("PUT", "/mode", h.put_mode),
        ("GET", "/mode/{subject}", h.get_mode),
        ("PUT", "/mode/{subject}", h.put_mode),
        ("DELETE", "/mode/{subject}", h.delete_mode),
        ("POST", "/compatibility/subjects/{subject}/versions", h.compatibility),
        ("POST", "/compatibility/subjects/{subject}/versions/{version}", h.compatibility),
    ]:
        r.add(method, path, handler)
    return App(r, auth)
