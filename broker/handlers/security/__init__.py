"""Security: SASL, ACLs, SCRAM credentials and delegation tokens."""
