"""KIP-714 client telemetry, built in: the client-metrics subscriptions (config resources
of type CLIENT_METRICS), the client instances that fetch them and push metrics
(GetTelemetrySubscriptions, PushTelemetry), the pushed OTLP metrics decoded, and the
registry of connected clients the admin API lists (``/api/v1/clients``, ``/metrics``).

Kafka serves APIs 71 and 72 only with a metrics-reporter plugin installed; kafkalite's is
this package. Nothing here runs on the produce or fetch path.
"""
