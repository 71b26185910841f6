"""Where a process finds its API token: the environment, or a file (a mounted Secret)."""

from __future__ import annotations

from pathlib import Path

import pytest

from octoric.contracts import auth

pytestmark = pytest.mark.unit


def test_token_from_env_or_file(tmp_path: Path) -> None:
    f = tmp_path / "token"
    f.write_text("s3cret-from-a-secret\n")
    assert auth.token_from_env({}) == ""
    assert auth.token_from_env({auth.TOKEN_FILE_ENV: str(f)}) == "s3cret-from-a-secret"
    both = {auth.TOKEN_ENV: "from-env", auth.TOKEN_FILE_ENV: str(f)}
    assert auth.token_from_env(both) == "from-env"  # the variable wins
    with pytest.raises(OSError, match="OCTORIC_API_TOKEN_FILE"):
        auth.token_from_env({auth.TOKEN_FILE_ENV: str(tmp_path / "missing")})


def test_an_xapp_takes_its_token_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ricsdl.syncstorage import SyncStorage

    from octoric.redis_server import free_port
    from octoric.xapps.base.sdl import SdlStore
    from octoric.xapps.occ.xapp import OccXapp

    f = tmp_path / "token"
    f.write_text("t" * 40)
    monkeypatch.delenv(auth.TOKEN_ENV, raising=False)
    monkeypatch.setenv(auth.TOKEN_FILE_ENV, str(f))
    x = OccXapp(free_port(), free_port(), sdl=SdlStore("occ", SyncStorage(fake_db_backend="dict")))
    x.shell._ready.set()
    body = b'{"ue": 1, "address": "127.0.0.1:9", "format": "json"}'
    assert x.shell.http.dispatch("POST", "/occ/v1/flows", body, auth.bearer("t" * 40)).status == 201
    assert x.shell.http.dispatch("POST", "/occ/v1/flows", body, auth.bearer("x")).status == 401
