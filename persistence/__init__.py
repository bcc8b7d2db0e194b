"""Holdpoint's own persistence modules for the `eventsourcing` library.

`domain.record.store` names them by `PERSISTENCE_MODULE`, as the library's own
modules are named, so the domain never imports a driver or holds SQL.
"""
