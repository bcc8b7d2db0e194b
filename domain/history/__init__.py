"""History and time travel, read from the record without running graph code."""
