"""Integrity of the whole store: verify, seal, export evidence.

The pure rules live in `domain.integrity` (`whole_log`, `diagnosis`, `merkle`, `seal`,
`bundle`); this package reads the events table fast (`integrity.scan`), hashes fast
(`integrity.fast_hash`), runs the checks over several processes
(`integrity.verify_log`), and signs (`integrity.signing`). It imports `domain`, never
`api`, `service` or `projections`.
"""
