"""Time for the whole broker: the one clock, the keyed timers and the scheduler that runs
every deadline (group sessions, transactions, log retention, flushing, cleaning) on it."""
