"""The run's API token: how octoric's REST APIs authenticate callers that change state.

``octoric run`` (and ``octoric ric up``) makes one random token per run (or takes
``$OCTORIC_API_TOKEN``), writes it into ``<run folder>/api-token`` (mode 0600) and gives it
to every component and xApp in ``$OCTORIC_API_TOKEN``. A request carries it as
``Authorization: Bearer <token>``, or, from an unmodified ricxappframe xApp that reaches
appmgr through ``HTTP_PROXY``, as the proxy URL's password (``Proxy-Authorization: Basic``).
Standard library only (senders and tools may vendor it).
"""

from __future__ import annotations

import base64
import hmac
import os
import secrets
from collections.abc import Mapping

TOKEN_ENV = "OCTORIC_API_TOKEN"
TOKEN_FILE_ENV = "OCTORIC_API_TOKEN_FILE"  # or a file that holds it (a mounted Secret)
TOKEN_FILE = "api-token"  # in the run folder
PROXY_USER = "octoric"


def token_from_env(environ: Mapping[str, str] | None = None) -> str:
    """The token this process was given: ``$OCTORIC_API_TOKEN``, else the first line of the
    file ``$OCTORIC_API_TOKEN_FILE`` names (the Helm charts mount a Secret there), else ""."""
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    path = env.get(TOKEN_FILE_ENV)
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            return f.readline().strip()
    except OSError as e:
        raise OSError(f"${TOKEN_FILE_ENV}: cannot read the API token from {path}: {e}") from e


def new_token() -> str:
    return secrets.token_hex(32)


def bearer(token: str) -> dict[str, str]:
    """The header a client sends (nothing when there is no token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def proxy_url(host: str, port: int, token: str) -> str:
    """An HTTP proxy URL that makes HTTP clients send the token (requests, urllib)."""
    cred = f"{PROXY_USER}:{token}@" if token else ""
    return f"http://{cred}{host}:{port}"


def presented(headers: Mapping[str, str]) -> str | None:
    """The token a request presents (bearer or proxy basic password), or None."""
    auth = headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    proxy = headers.get("Proxy-Authorization", "")
    if proxy[:6].lower() == "basic ":
        try:
            user_pass = base64.b64decode(proxy[6:].strip(), validate=True).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        return user_pass.partition(":")[2]
    return None


def authorized(headers: Mapping[str, str], token: str) -> bool:
    """Does the request carry ``token``? Constant-time; an empty ``token`` admits nobody."""
    got = presented(headers)
    return bool(token) and got is not None and hmac.compare_digest(got.encode(), token.encode())
