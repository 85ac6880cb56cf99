"""The data path: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, ShareFetch."""
