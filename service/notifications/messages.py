"""What a delivery sends: the body of a notification or of a run's webhook, as JSON or as
a Slack incoming webhook's message, and its signature.

A signed delivery carries `X-Holdpoint-Signature: sha256=<hex>`, the HMAC-SHA256 of the
exact body bytes under the target's secret; the body holds the delivery's id and time,
so that a receiver can refuse a replayed one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

SIGNATURE_HEADER = "X-Holdpoint-Signature"
EVENT_HEADER = "X-Holdpoint-Event"
DELIVERY_HEADER = "X-Holdpoint-Delivery"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def slack_message(notice: dict[str, Any]) -> dict[str, Any]:
    """A Slack incoming webhook's message: a line of text, and the same as a block."""
    event = notice["event"]
    where = f"thread `{notice.get('thread_id')}`, node `{notice.get('node') or '?'}`"
    lines = {
        "interrupt.raised": f"A decision is needed: {where}",
        "interrupt.assigned": f"Assigned to {notice.get('assigned_to')}: {where}",
        "interrupt.near_deadline": f"Due by {notice.get('due_by')}: {where}",
        "interrupt.breached": f"Deadline passed ({notice.get('due_by')}): {where}",
        "interrupt.decided": (
            f"Decided ({notice.get('decision')}) by "
            f"{(notice.get('actor') or {}).get('id')}: {where}"
        ),
    }
    text = lines.get(event, f"{event}: {where}")
    link = notice.get("link")
    if link:
        text += f" <{link}|open>"
    return {"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]}
