"""Who is looking: the session's API key, checked through the keyring on every request,
or the principal and role a provider's claims gave (signing in with OpenID Connect).

The session keeps the key's id (never the key); the keyring reads that key from the
store on every request, so a key revoked by any process ends its sessions at once; a
refused key (revoked, unknown) is recorded as a 401 refusal, exactly like the
API's, and ends the session. A session signed in through a provider keeps its
principal, role and issuer; on every request that provider must still be the one
configured and the role still allowed (`api.ui.oidc_identity`), or the session ends,
recorded the same way. Each page needs one of the API's permissions
(the built-in roles' and the server's custom ones), checked by `api.http.auth.check`,
which records a 403.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from api.http.auth import Permission, check, note, refuse
from api.http.deps import ServicesDep
from api.ui.oidc_identity import principal_of_identity
from api.ui.sessions import current_session, forget_session
from domain.access.identity import Principal
from domain.errors import AuthenticationError
from service.sessions import Session, principal_of


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
    permissions: tuple[str, ...] = ()  # what the principal's role may, on this server

    def may(self, permission: Permission) -> bool:
        return permission.key in self.permissions


def viewer_with(permission: Permission) -> Any:
    """A dependency: the signed-in viewer, if their role holds `permission`.

    Sync, so FastAPI runs it in a worker thread: the keyring may read the store.
    """

    def dependency(request: Request, services: ServicesDep) -> Viewer:
        session = current_session(request)
        if session is None:
            raise SignInRequiredError
        try:
            if session.identity is None:
                principal = principal_of(services.keyring, session.key_id)
            else:
                principal = principal_of_identity(services.settings, session.identity)
        except AuthenticationError as error:
            refuse(services, request, None, 401, error.reason, str(error))
            forget_session(request)
            raise SignInRequiredError(f"You were signed out: {error}") from None
        note(request, principal=principal.id, role=principal.role)
        check(request, services, principal, permission)
        return Viewer(principal, session, services.settings.roles.permissions(principal.role))

    return Depends(dependency)


QueueViewer = Annotated[Viewer, viewer_with(Permission.QUEUE)]
DecidingViewer = Annotated[Viewer, viewer_with(Permission.DECIDE)]
ReadingViewer = Annotated[Viewer, viewer_with(Permission.READ)]
AuditingViewer = Annotated[Viewer, viewer_with(Permission.AUDIT)]
CancellingViewer = Annotated[Viewer, viewer_with(Permission.CANCEL)]
