"""Groups and their offsets: coordinators, classic, consumer, share and streams groups."""
