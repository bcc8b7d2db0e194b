"""Webhooks and notifications: a run's webhook when it ends, and configured targets told
when an interrupt is raised, assigned, nears its deadline, breaches it or is decided.

Deliveries are rows beside the runs (`deliveries.py`), made from the log by any server
process and sent by whichever claims them first, retried with backoff, each attempt
kept on the row for auditors (`GET /audit/deliveries`). A target's host must be on
the allow-list, and an address in a loopback or private range is refused unless that
is allowed too (`hosts.py`).
"""
