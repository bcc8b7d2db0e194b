"""Read-your-writes: commands say where their last event is in the log.

A command's response carries `X-Holdpoint-Position`, the notification id of
the last event it recorded (an upper bound where the exact one is not known);
reads of read models take `wait_for=<position>` and answer only once every
read model has applied it.
"""

from __future__ import annotations

from fastapi import Response

POSITION_HEADER = "X-Holdpoint-Position"


def set_position(response: Response, position: int | None) -> None:
    if position is not None:
        response.headers[POSITION_HEADER] = str(position)
