"""What the store's mapper is given to read events with personal values, and write them.

The mapper (persistence/event_mapper.py) imports nothing of the domain: it is handed
this object, which names the bytes that mark a stored state with envelopes, the
event's attribute that holds its fields as recorded (sealed), and opens the
envelopes of a decoded event's fields with the keys as they are at that moment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.privacy.envelopes import MARK_BYTES, Cipher, opened, refs_in
from domain.privacy.protector import PROTECTED
from domain.privacy.subject_keys import SubjectKeys


class EnvelopeOpener:
    """Opens the envelopes of an event's fields (its value, or `[erased]`)."""

    marker = MARK_BYTES
    attribute = PROTECTED

    def __init__(self, keys: Callable[[], SubjectKeys], cipher: Callable[[], Cipher]) -> None:
        self._keys = keys
        self._cipher = cipher

    def open(self, fields: dict[str, Any]) -> None:
        """Replace, in place, each envelope in `fields` by its value or `[erased]`."""
        refs = refs_in(fields)
        if not refs:
            return
        keys, cipher = self._keys().keys(refs), self._cipher()
        for name, value in fields.items():
            if type(value) is dict or type(value) is list:
                fields[name] = opened(value, keys, cipher)
