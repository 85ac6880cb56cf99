"""DescribeClientQuotas v0-v1 and AlterClientQuotas v0-v1 over the broker's quota store
(``broker/quotas.py``). DescribeClientQuotas needs DescribeConfigs on the cluster (checked
before the handler); AlterClientQuotas needs AlterConfigs on it, and as Kafka answers a
refusal in every entry of the request."""

from __future__ import annotations

from typing import Any

from kafkalite.protocol import apis as codecs
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.protocol.build import build, nested
from kafkalite.protocol.errors import NO_ERROR, ErrorCode
from kafkalite.protocol.names import NO_THROTTLE

from ...auth import CLUSTER_NAME, Access, Operation, ResourceType
from ...context import RequestContext
from ...quotas import Alteration, ClientQuotaStore, QuotaRequestError

DESCRIBE_CLIENT_QUOTAS = ApiKey.DESCRIBE_CLIENT_QUOTAS
ALTER_CLIENT_QUOTAS = ApiKey.ALTER_CLIENT_QUOTAS

#: The versions served, next to the code that branches on them (None: all kio has).
VERSIONS: dict[int, tuple[int | None, int | None]] = {
    DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ALTER_CLIENT_QUOTAS: (0, 1),
}

def describe_client_quotas(store: ClientQuotaStore, ctx: RequestContext, req: Any) -> Any:
    resp_t = codecs.codec(DESCRIBE_CLIENT_QUOTAS, ctx.api_version).response_type
    entry_t = nested(resp_t, "EntryData")
    entity_t = nested(resp_t, "EntityData")
    value_t = nested(resp_t, "ValueData")
    try:
        found = store.describe(((c.entity_type, int(c.match_type), c.match)
                                for c in req.components), bool(req.strict))
    except QuotaRequestError as e:
        return build(resp_t, throttle_time=NO_THROTTLE, error_code=e.code,
                     error_message=e.message, entries=None)
    return build(resp_t, throttle_time=NO_THROTTLE, error_code=NO_ERROR,
                 error_message=None, entries=tuple(
                     build(entry_t,
                           entity=tuple(build(entity_t, entity_type=t, entity_name=n)
                                        for t, n in entity),
                           values=tuple(build(value_t, key=k, value=v)
                                        for k, v in sorted(values.items())))
                     for entity, values in found))


def alter_client_quotas(store: ClientQuotaStore, access: Access, ctx: RequestContext,
                        req: Any) -> Any:
    resp_t = codecs.codec(ALTER_CLIENT_QUOTAS, ctx.api_version).response_type
    entry_t = nested(resp_t, "EntryData")
    entity_t = nested(resp_t, "EntityData")

    def entry(entity: Any, err: ErrorCode, message: str | None) -> Any:
        return build(entry_t, error_code=err, error_message=message, entity=tuple(
            build(entity_t, entity_type=t, entity_name=n) for t, n in entity))

    if not access.permits(ctx, Operation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME):
        return build(resp_t, throttle_time=NO_THROTTLE, entries=tuple(
            entry(((e.entity_type, e.entity_name) for e in r.entity),
                  ErrorCode.cluster_authorization_failed, "Cluster authorization failed.")
            for r in req.entries))
    alterations = [
        Alteration(entity={e.entity_type: e.entity_name for e in r.entity},
                   ops=tuple((o.key, None if o.remove else float(o.value)) for o in r.ops))
        for r in req.entries]
    results = store.alter(alterations, bool(req.validate_only))
    return build(resp_t, throttle_time=NO_THROTTLE, entries=tuple(
        entry(entity.items(), err, message) for entity, err, message in results))
