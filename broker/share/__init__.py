"""KIP-932's fetch path on the broker: the share-partition manager (``manager``)."""
