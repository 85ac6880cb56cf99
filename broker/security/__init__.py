"""Security: listener protocols, TLS, SASL mechanisms, SCRAM credentials and ACLs.

Each module has one job and no dependency on the server, so each is tested directly;
the broker wires them into its listeners, connections and authorization hook.
"""
