"""The admin HTTP listener: a JSON API under ``/api/v1``, ``/metrics`` and the console.

aiohttp on the broker's own event loop: handlers read the broker's state directly, with
no locking, between two Kafka requests. Bad input gets a 4xx with a JSON body
``{"error": "..."}`` that says what was wrong; the broker carries on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from ..auth import Operation, ResourceType
from ..control.clock import ClockControl, ClockNotManual
from ..control.faults import FaultError, FaultRules
from ..control.scenarios import NAMES as SCENARIO_NAMES
from ..control.scenarios import CoordinatorScenarios, ScenarioError
from ..metrics import BrokerMetrics
from ..series.sampler import Sampler
from .lag import LagBoard
from .produce import produce, synced
from .reset import GroupNotEmpty, reset_offsets
from .search import Query, search
from .views import BadRequest, BrokerView, NotFound

log = structlog.get_logger("kafkalite.admin")

STATIC = Path(__file__).parent / "static"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status >= 400 and e.content_type != "application/json":
            return _error(e.status, e.reason if e.status != 404 else
                          f"no such endpoint: {request.method} {request.path}")
        raise
    except Forbidden as e:
        return _error(403, str(e))
    except GroupNotEmpty as e:
        return _error(409, str(e))
    except NotFound as e:
        return _error(404, str(e.args[0] if e.args else e))
    except (BadRequest, FaultError, ClockNotManual) as e:
        return _error(400, str(e))
    except Exception:
        log.exception("admin.request_failed", path=request.path, method=request.method)
        return _error(500, "internal error; see the broker log")


class Forbidden(PermissionError):
    pass


def _authorize(view: BrokerView, op: Operation, rtype: ResourceType, name: str) -> None:
    """The broker's ACLs for the admin listener's principal (``admin.principal``)."""
    access = view.access
    if access is not None and not access.allowed(view.principal, op, rtype, name):
        raise Forbidden(f"{view.principal} is not authorized to {op.value} "
                        f"{rtype.value} {name!r}")


async def _json_body(request: web.Request) -> Any:
    if not request.can_read_body:
        return {}
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError as e:
        raise BadRequest(f"malformed JSON body: {e}") from None


def _int_param(request: web.Request, name: str, default: int | None = None) -> int | None:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name} must be an integer, got {raw!r}") from None


def _int_field(body: Any, name: str, required: bool = True, default: int = 0) -> int:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    if name not in body:
        if required:
            raise BadRequest(f"missing field {name}")
        return default
    v = body[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise BadRequest(f"field {name} must be an integer, got {v!r}")
    return v


def build_app(view: BrokerView, faults: FaultRules, metrics: BrokerMetrics,
              clock: ClockControl, scenarios: CoordinatorScenarios,
              sampler: Sampler | None = None) -> web.Application:
    app = web.Application(middlewares=[_errors])
    r = app.router

    async def index(_req: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html")

    async def metrics_text(_req: web.Request) -> web.Response:
        return web.Response(body=metrics.render(),
                            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    async def cluster(_req: web.Request) -> web.Response:
        return web.json_response(view.cluster())

    async def brokers(_req: web.Request) -> web.Response:
        return web.json_response({"brokers": view.brokers()})

    async def broker_switch(req: web.Request) -> web.Response:
        raw = req.match_info["node"]
        if not raw.isdigit():
            raise BadRequest(f"broker id must be an integer, got {raw!r}")
        body = await _json_body(req) if req.can_read_body else {}
        controlled = body.get("controlled", True) if isinstance(body, dict) else True
        if not isinstance(controlled, bool):
            raise BadRequest(f"field controlled must be true or false, got {controlled!r}")
        return web.json_response(await view.switch_node(int(raw), req.match_info["action"],
                                                        controlled))

    async def topics(_req: web.Request) -> web.Response:
        return web.json_response({"topics": view.topics()})

    async def schemas(_req: web.Request) -> web.Response:
        listed = view.schemas
        return web.json_response({"enabled": listed is not None,
                                  "subjects": listed() if listed is not None else []})

    async def topic(req: web.Request) -> web.Response:
        return web.json_response(view.topic(req.match_info["topic"]))

    async def messages(req: web.Request) -> web.Response:
        try:
            partition = int(req.match_info["partition"])
        except ValueError:
            raise BadRequest("partition must be an integer") from None
        _authorize(view, Operation.READ, ResourceType.TOPIC, req.match_info["topic"])
        offset = _int_param(req, "offset")
        limit = _int_param(req, "limit", 50)
        assert limit is not None
        return web.json_response(view.messages(req.match_info["topic"], partition, offset,
                                               limit))

    async def topic_search(req: web.Request) -> web.Response:
        name = req.match_info["topic"]
        _authorize(view, Operation.READ, ResourceType.TOPIC, name)
        qs = req.query
        limit = _int_param(req, "limit", 50)
        assert limit is not None
        q = Query(partition=_int_param(req, "partition"), offset=_int_param(req, "offset"),
                  timestamp=_int_param(req, "timestamp"), key=qs.get("key") or None,
                  value=qs.get("value") or None, limit=limit)
        return web.json_response(search(view, name, q))

    async def group_reset(req: web.Request) -> web.Response:
        name = req.match_info["group"]
        body = await _json_body(req)
        # What an OffsetCommit from kafka-consumer-groups needs: Read on the group and topic.
        _authorize(view, Operation.READ, ResourceType.GROUP, name)
        if isinstance(body, dict) and isinstance(body.get("topic"), str):
            _authorize(view, Operation.READ, ResourceType.TOPIC, body["topic"])
        out = reset_offsets(view, name, body)
        log.info("admin.offsets_reset", group=name, topic=out["topic"], to=out["to"],
                 dry_run=out["dry_run"])
        return web.json_response(out)

    async def topic_produce(req: web.Request) -> web.Response:
        name = req.match_info["topic"]
        _authorize(view, Operation.WRITE, ResourceType.TOPIC, name)
        body = await _json_body(req)
        out = produce(view, metrics, name, body)
        await synced(view, name, out["partition"])
        log.info("admin.produced", topic=name, partition=out["partition"],
                 offset=out["offset"], principal=view.principal)
        return web.json_response(out, status=201)

    async def groups(_req: web.Request) -> web.Response:
        return web.json_response({"groups": view.groups()})

    async def group(req: web.Request) -> web.Response:
        return web.json_response(view.group(req.match_info["group"]))

    async def clients(_req: web.Request) -> web.Response:
        return web.json_response({"clients": view.clients()})

    async def client_history(req: web.Request) -> web.Response:
        iid = req.match_info["instance"]
        registry = view.clients_registry
        series = registry.history(iid) if registry is not None else None
        if series is None:
            raise NotFound(f"no client instance {iid}")
        return web.json_response({"client_instance_id": iid, "series": series})

    # --- series over time (broker/series) ------------------------------------------------

    def _sampler() -> Sampler:
        if sampler is None:
            raise NotFound("series are not sampled by this broker")
        return sampler

    async def topic_series(req: web.Request) -> web.Response:
        name = req.match_info["topic"]
        s = _sampler()
        if name not in s.topics and view.storage.catalog.get(name) is None:
            raise NotFound(f"unknown topic {name!r}")
        return web.json_response(s.topic(name))

    async def group_series(req: web.Request) -> web.Response:
        name = req.match_info["group"]
        s = _sampler()
        if name not in s.groups and not any(g["group_id"] == name for g in view.groups()):
            raise NotFound(f"unknown group {name!r}")
        return web.json_response(s.group(name))

    async def node_series(_req: web.Request) -> web.Response:
        return web.json_response(_sampler().all_nodes())

    # --- faults ---------------------------------------------------------------------------

    async def fault_list(_req: web.Request) -> web.Response:
        now = faults.clock()
        return web.json_response({"rules": [x.to_json(now) for x in faults.rules()]})

    async def fault_add(req: web.Request) -> web.Response:
        body = await _json_body(req)
        rule = faults.add_json(body)
        log.info("fault.added", rule=rule.id, api=rule.api_key, action=rule.action.value)
        return web.json_response(rule.to_json(), status=201)

    async def fault_clear(_req: web.Request) -> web.Response:
        n = faults.clear()
        log.info("fault.cleared", rules=n)
        return web.json_response({"removed": n})

    async def fault_delete(req: web.Request) -> web.Response:
        raw = req.match_info["rule"]
        if not raw.isdigit():
            raise BadRequest(f"rule id must be an integer, got {raw!r}")
        if not faults.remove(int(raw)):
            raise NotFound(f"no fault rule with id {raw}")
        log.info("fault.removed", rule=int(raw))
        return web.json_response({"removed": 1})

    # --- clock ----------------------------------------------------------------------------

    async def clock_get(_req: web.Request) -> web.Response:
        return web.json_response(clock.to_json())

    async def clock_advance(req: web.Request) -> web.Response:
        body = await _json_body(req)
        ms = _int_field(body, "ms")
        if not 0 <= ms <= 10 * 365 * 86_400_000:
            raise BadRequest("ms must be within 0 and ten years")
        clock.advance(ms)
        return web.json_response(clock.to_json())

    # --- lag written by ``kafkalite pipeline watch --admin`` ---------------------------------

    lag = LagBoard()

    async def lag_get(req: web.Request) -> web.Response:
        return web.json_response({"rows": lag.rows(req.query.get("group"))})

    async def lag_post(req: web.Request) -> web.Response:
        return web.json_response({"accepted": lag.post(await _json_body(req))})

    # --- scenarios ------------------------------------------------------------------------

    async def scenario(req: web.Request) -> web.Response:
        name = req.match_info["scenario"]
        if name not in SCENARIO_NAMES:
            raise NotFound(f"unknown scenario {name!r}; known: {', '.join(SCENARIO_NAMES)}")
        body = await _json_body(req)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        try:
            return web.json_response(scenarios.run(name, body))
        except ScenarioError as e:
            raise BadRequest(str(e)) from None

    r.add_get("/", index)
    r.add_static("/static/", STATIC)
    r.add_get("/metrics", metrics_text)
    r.add_get("/api/v1/cluster", cluster)
    r.add_get("/api/v1/brokers", brokers)
    r.add_post("/api/v1/brokers/{node}/{action}", broker_switch)
    r.add_get("/api/v1/topics", topics)
    r.add_get("/api/v1/topics/{topic}", topic)
    r.add_get("/api/v1/topics/{topic}/series", topic_series)
    r.add_get("/api/v1/topics/{topic}/search", topic_search)
    r.add_post("/api/v1/topics/{topic}/produce", topic_produce)
    r.add_get("/api/v1/topics/{topic}/partitions/{partition}/messages", messages)
    r.add_get("/api/v1/groups", groups)
    r.add_get("/api/v1/schemas", schemas)
    r.add_get("/api/v1/groups/{group}", group)
    r.add_get("/api/v1/groups/{group}/series", group_series)
    r.add_post("/api/v1/groups/{group}/reset-offsets", group_reset)
    r.add_get("/api/v1/nodes/series", node_series)
    r.add_get("/api/v1/clients", clients)
    r.add_get("/api/v1/clients/{instance}/metrics", client_history)
    r.add_get("/api/v1/faults", fault_list)
    r.add_post("/api/v1/faults", fault_add)
    r.add_delete("/api/v1/faults", fault_clear)
    r.add_delete("/api/v1/faults/{rule}", fault_delete)
    r.add_get("/api/v1/clock", clock_get)
    r.add_post("/api/v1/clock/advance", clock_advance)
    r.add_post("/api/v1/scenarios/{scenario}", scenario)
    r.add_get("/api/v1/lag", lag_get)
    r.add_post("/api/v1/lag", lag_post)
    return app


class AdminServer:
    """The listener: ``await start()`` on the broker's loop, ``await stop()``."""

    def __init__(self, host: str, port: int, view: BrokerView, faults: FaultRules,
                 metrics: BrokerMetrics, clock: ClockControl,
                 scenarios: CoordinatorScenarios, sampler: Sampler | None = None) -> None:
        self.app = build_app(view, faults, metrics, clock, scenarios, sampler)
        self._runner: web.AppRunner | None = None
        self.host = host
        self.port = port
        self._requested_port = port

    async def start(self) -> None:
        runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        await site.start()
        self._runner = runner
        for address in runner.addresses:
            # (host, port) or (host, port, flowinfo, scope): the port bound for port 0.
            self.port = int(address[1])
            break

    @property
    def url(self) -> str:
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
