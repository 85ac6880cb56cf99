"""Time series of the broker's counters for the console: a bounded store and its sampler."""
