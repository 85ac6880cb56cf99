"""The cluster and its metadata: Metadata, ApiVersions, features, quorum, cluster admin."""
