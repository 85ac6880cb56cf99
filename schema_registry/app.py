"""The REST API: Confluent Schema Registry's routes, content types and JSON errors, as an
aiohttp application on the broker's event loop.

Every refusal is a ``RegistryError`` answered as ``{"error_code", "message"}`` with a 4xx;
an unexpected exception is logged and answered 500 with code 50001 (a bug, never bad
input)."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web

from . import errors
from .errors import RegistryError
from .formats import TYPES
from .service import Registry

log = structlog.get_logger("kafkalite.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: Largest request body taken (a schema with its JSON envelope).
MAX_BODY = 4 * 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: (user, password) -> whether the broker knows the user with that password.
Authenticate = Callable[[str, str], bool]


def reply(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=CONTENT_TYPE)


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


async def _body(request: web.Request) -> Any:
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.too_large(MAX_BODY) from None
    try:
        return json.loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise errors.malformed_json(str(e)) from None


def _error_middleware(auth: Authenticate | None) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if auth is not None and not _authorized(request, auth):
                denied = errors.unauthorized()
                resp = reply(denied.body(), denied.status)
                resp.headers["WWW-Authenticate"] = 'Basic realm="kafkalite"'
                return resp
            return await handler(request)
        except RegistryError as e:
            return reply(e.body(), e.status)
        except RecursionError:
            # A schema nested deeper than the parsers (and the checks) recurse.
            deep = errors.invalid_schema("nested too deeply")
            return reply(deep.body(), deep.status)
        except web.HTTPRequestEntityTooLarge:
            big = errors.too_large(MAX_BODY)
            return reply(big.body(), big.status)
        except web.HTTPMethodNotAllowed:
            other = errors.method_not_allowed()
            return reply(other.body(), other.status)
        except web.HTTPNotFound:
            missing = errors.not_found_endpoint()
            return reply(missing.body(), missing.status)
        except Exception:
            log.exception("schema_registry.request_failed", path=request.path,
                          method=request.method)
            return reply({"error_code": 50001, "message": "Error in the backend data store"},
                         500)
    return middleware


def _authorized(request: web.Request, auth: Authenticate) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        user, sep, password = base64.b64decode(token, validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    return bool(sep) and auth(user, password)


class Routes:
    """The handlers, bound to one ``Registry``."""

    def __init__(self, registry: Registry) -> None:
        self.r = registry

    async def root(self, request: web.Request) -> web.Response:
        return reply({})

    async def types(self, request: web.Request) -> web.Response:
        return reply(list(TYPES))

    async def subjects(self, request: web.Request) -> web.Response:
        prefix = request.query.get("subjectPrefix", "")
        names = self.r.state.live_subjects(_flag(request, "deleted"))
        return reply([s for s in names if s.startswith(prefix)])

    async def lookup(self, request: web.Request) -> web.Response:
        body = await _body(request)
        return reply(self.r.lookup(request.match_info["subject"], body,
                                   _flag(request, "normalize"), _flag(request, "deleted"),
                                   request.query.get("format")))

    async def delete_subject(self, request: web.Request) -> web.Response:
        return reply(self.r.delete_subject(request.match_info["subject"],
                                           _flag(request, "permanent")))

    async def versions(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        rows = self.r.state.versions(subject, _flag(request, "deleted"))
        if not rows:
            raise errors.subject_not_found(subject)
        return reply([row.version for row in rows])

    async def register(self, request: web.Request) -> web.Response:
        body = await _body(request)
        return reply(self.r.register(request.match_info["subject"], body,
                                     _flag(request, "normalize")))

    async def version(self, request: web.Request) -> web.Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 _flag(request, "deleted"))
        return reply(self.r.version_body(row, request.query.get("format")))

    async def version_schema(self, request: web.Request) -> web.Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 _flag(request, "deleted"))
        return web.Response(text=self.r.state.schemas[row.id].schema,
                            content_type=CONTENT_TYPE)

    async def referenced_by(self, request: web.Request) -> web.Response:
        row = self.r.get_version(request.match_info["subject"], request.match_info["version"],
                                 True)
        return reply(self.r.state.referenced_by(row.subject, row.version))

    async def delete_version(self, request: web.Request) -> web.Response:
        return reply(self.r.delete_version(request.match_info["subject"],
                                           request.match_info["version"],
                                           _flag(request, "permanent")))

    async def schema_by_id(self, request: web.Request) -> web.Response:
        return reply(self.r.schema_by_id(request.match_info["id"], request.query.get("format")))

    async def schema_text_by_id(self, request: web.Request) -> web.Response:
        body = self.r.schema_by_id(request.match_info["id"])
        return web.Response(text=body["schema"], content_type=CONTENT_TYPE)

    async def id_versions(self, request: web.Request) -> web.Response:
        return reply(self.r.id_versions(request.match_info["id"], _flag(request, "deleted")))

    async def id_subjects(self, request: web.Request) -> web.Response:
        return reply(self.r.id_subjects(request.match_info["id"], _flag(request, "deleted")))

    async def get_config(self, request: web.Request) -> web.Response:
        return reply(self.r.get_config(request.match_info.get("subject"),
                                       _flag(request, "defaultToGlobal")))

    async def put_config(self, request: web.Request) -> web.Response:
        return reply(self.r.put_config(request.match_info.get("subject"),
                                       await _body(request)))

    async def delete_config(self, request: web.Request) -> web.Response:
        return reply(self.r.delete_config(request.match_info.get("subject")))

    async def get_mode(self, request: web.Request) -> web.Response:
        return reply(self.r.get_mode(request.match_info.get("subject"),
                                     _flag(request, "defaultToGlobal")))

    async def put_mode(self, request: web.Request) -> web.Response:
        return reply(self.r.put_mode(request.match_info.get("subject"), await _body(request),
                                     _flag(request, "force")))

    async def delete_mode(self, request: web.Request) -> web.Response:
        return reply(self.r.delete_mode(request.match_info["subject"]))

    async def compatibility(self, request: web.Request) -> web.Response:
        body = await _body(request)
        return reply(self.r.check(request.match_info["subject"],
                                  request.match_info.get("version"), body,
                                  _flag(request, "normalize"), _flag(request, "verbose")))


def build_app(registry: Registry, auth: Authenticate | None = None) -> web.Application:
    app = web.Application(middlewares=[_error_middleware(auth)], client_max_size=MAX_BODY)
    h = Routes(registry)
    s = "/subjects/{subject}"
    v = s + "/versions/{version}"
    app.router.add_routes([
        web.get("/", h.root),
        web.get("/schemas/types", h.types),
        web.get("/schemas/ids/{id}", h.schema_by_id),
        web.get("/schemas/ids/{id}/schema", h.schema_text_by_id),
        web.get("/schemas/ids/{id}/versions", h.id_versions),
        web.get("/schemas/ids/{id}/subjects", h.id_subjects),
        web.get("/subjects", h.subjects),
        web.post(s, h.lookup),
        web.delete(s, h.delete_subject),
        web.get(s + "/versions", h.versions),
        web.post(s + "/versions", h.register),
        web.get(v, h.version),
        web.delete(v, h.delete_version),
        web.get(v + "/schema", h.version_schema),
        web.get(v + "/referencedby", h.referenced_by),
        web.get("/config", h.get_config),
        web.put("/config", h.put_config),
        web.delete("/config", h.delete_config),
        web.get("/config/{subject}", h.get_config),
        web.put("/config/{subject}", h.put_config),
        web.delete("/config/{subject}", h.delete_config),
        web.get("/mode", h.get_mode),
        web.put("/mode", h.put_mode),
        web.get("/mode/{subject}", h.get_mode),
        web.put("/mode/{subject}", h.put_mode),
        web.delete("/mode/{subject}", h.delete_mode),
        web.post("/compatibility/subjects/{subject}/versions", h.compatibility),
        web.post("/compatibility/subjects/{subject}/versions/{version}", h.compatibility),
    ])
    return app
