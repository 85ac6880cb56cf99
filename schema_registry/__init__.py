"""A Confluent-compatible Schema Registry served by the broker (``--schema-registry``):
Confluent's REST API (``app``) over the registry's operations (``service``), kept in the
compacted ``_schemas`` topic (``store``), with AVRO, JSON Schema and PROTOBUF parsing and
compatibility (``formats``)."""
