"""Who the brokers are and where they listen. ``identity`` is one node as handlers see it
(what Metadata, FindCoordinator and DescribeCluster tell clients); ``controller`` holds
the cluster-wide partition state that a process running several nodes shares,
``placement`` places replicas, ``replication`` keeps them, ``reassignment`` moves them,
``follower_fetch`` and ``selector`` let consumers read followers (KIP-392), ``guard``
answers for what a node does not lead, and ``nodes`` composes those nodes (all imported
only when ``kafkalite.nodes`` is above 1)."""

from .identity import BoundListener, Cluster, ClusterView

__all__ = ["BoundListener", "Cluster", "ClusterView"]
