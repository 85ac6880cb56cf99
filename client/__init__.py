"""Blocking clients for tools, tests and benchmarks: raw Kafka requests over a socket
(``kafka``) and the broker's admin HTTP API (``admin``). The broker never imports them."""
