"""Integrity, pure: the whole log's check, Merkle trees, seals, evidence bundles."""
