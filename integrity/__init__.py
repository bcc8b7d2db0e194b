"""Integrity of the whole store: verify, seal, export evidence.

The pure rules live in `domain` (`domain.integrity.whole_log`, `domain.integrity.diagnosis`,
`domain.integrity.merkle`, `domain.integrity.seal`, `domain.integrity.bundle`); this package reads the
events table fast (`integrity.scan`), hashes fast (`integrity.fast_hash`), runs the
checks over several processes (`integrity.verify_log`), and signs (`integrity.signing`).
It imports `domain`, never `api` or `projections`.
"""
