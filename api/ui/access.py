"""Who is looking: the session's API key, checked as the API checks it, on every request.

The key is authenticated by the same keyring as `Authorization: Bearer`; a
refused key (revoked, unknown) is recorded as a 401 refusal, exactly like the
API's, and ends the session. Each page needs one of the API's permissions
(`api.http.auth.PERMISSIONS`), checked by `api.http.auth.check`, which records a 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from api.http.auth import PERMISSIONS, Permission, check, note, refuse
from api.http.deps import ServicesDep
from api.ui.sessions import Session, current_session, session_table
from domain.access.identity import Principal
from domain.errors import AuthenticationError


class SignInRequiredError(Exception):
    """No live session: the browser goes to the sign-in page, with `message` if any."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or "Sign in to continue")
        self.message = message


@dataclass(frozen=True)
class Viewer:
    """The signed-in principal and their session."""

    principal: Principal
    session: Session

    def may(self, permission: Permission) -> bool:
        return self.principal.role in PERMISSIONS[permission]


def viewer_with(permission: Permission) -> Any:
    """A dependency: the signed-in viewer, if their role holds `permission`.

    Sync, so FastAPI runs it in a worker thread: the keyring may read the store.
    """

    def dependency(request: Request, services: ServicesDep) -> Viewer:
        session = current_session(request)
        if session is None:
            raise SignInRequiredError
        try:
            principal = services.keyring.authenticate(session.api_key)
        except AuthenticationError as error:
            refuse(services, request, None, 401, error.reason, str(error))
            session_table(request).close(session.session_id)
            raise SignInRequiredError(f"You were signed out: {error}") from None
        note(request, principal=principal.id, role=principal.role)
        check(request, services, principal, permission)
        return Viewer(principal, session)

    return Depends(dependency)


QueueViewer = Annotated[Viewer, viewer_with(Permission.QUEUE)]
DecidingViewer = Annotated[Viewer, viewer_with(Permission.DECIDE)]
ReadingViewer = Annotated[Viewer, viewer_with(Permission.READ)]
AuditingViewer = Annotated[Viewer, viewer_with(Permission.AUDIT)]
