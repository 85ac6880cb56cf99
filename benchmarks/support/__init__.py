"""The shared harness of the benchmark commands: broker processes, clients, tables."""
