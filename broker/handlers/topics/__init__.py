"""Topics and configs: creating and deleting topics, the config APIs, client quotas."""
