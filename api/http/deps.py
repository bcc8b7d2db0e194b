"""The dependencies routes declare: the server's services, from the app's state."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from service.services import Services


async def get_services(request: Request) -> Services:
    """Async, so that FastAPI calls it on the event loop, not in a worker thread."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
