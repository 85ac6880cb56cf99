"""KIP-932 share groups: the parts that do not depend on the coordinator's shape."""
