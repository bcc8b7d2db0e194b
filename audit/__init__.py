"""Integrity of the whole store: verify, seal, export evidence.

The pure rules live in `domain` (`domain.integrity`, `domain.diagnosis`,
`domain.merkle`, `domain.seal`, `domain.evidence`); this package reads the
events table fast (`audit.scan`), hashes fast (`audit.fast_hash`), runs the
checks over several processes (`audit.verify_log`), and signs (`audit.signing`).
It imports `domain`, never `api` or `projections`.
"""
