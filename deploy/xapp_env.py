"""The environment an unmodified ricxappframe xApp needs to join the embedded RIC.

On O-RAN SC, Kubernetes provides it (service env vars, the appmgr's DNS name, the dbaas
service). Here:

- ``SERVICE_RICXAPP_<HOSTNAME>_HTTP_PORT`` / ``_RMR_PORT`` ("tcp://host:port"): what the xApp
  registers with appmgr;
- ``HTTP_PROXY`` pointing at appmgr-lite, so ricxappframe's POST to
  ``http://service-ricplt-appmgr-http.ricplt:8080/ric/v1/register`` lands here (``NO_PROXY``
  keeps every loopback call direct);
- ``RMR_SEED_RT`` (the platform's current table), ``RMR_RTG_SVC`` (its route port, where
  rtmgr-lite pushes updates), ``RMR_SRC_ID``; ``DBAAS_SERVICE_HOST``/``PORT`` for the SDL,
  and, when the run's Redis wants credentials, ``OCTORIC_REDIS_USER`` /
  ``OCTORIC_REDIS_PASSWORD_FILE`` (``octoric.xapps.base.sdl.use_redis_credentials`` hands
  them to ricsdl); ``CONFIG_FILE``, the xApp descriptor;
- ``OCTORIC_SUBMGR_CALLBACK_AUTH=token`` (octoric's submgr sends the token with subscription
  outcomes) and ``OCTORIC_ALLOWED_HOSTS`` (``ric.allowed_hosts``).
"""

from __future__ import annotations

import os
from pathlib import Path

from octoric.contracts import auth, hosts
from octoric.redis_server import PASSWORD_FILE_ENV, USER_ENV
from octoric.ric.services import HOST, RicRuntime
from octoric.xapps.base.shell import CALLBACK_AUTH_ENV


def xapp_environment(
    rt: RicRuntime,
    hostname: str,
    rmr_port: int,
    http_port: int,
    config_file: Path,
    route_port: int | None = None,
) -> dict[str, str]:
    env = dict(os.environ)
    key = hostname.upper().replace("-", "_")
    env.update(
        {
            "HOSTNAME": hostname,
            f"SERVICE_RICXAPP_{key}_HTTP_PORT": f"tcp://{HOST}:{http_port}",
            f"SERVICE_RICXAPP_{key}_RMR_PORT": f"tcp://{HOST}:{rmr_port}",
            # the proxy URL carries the run's API token: appmgr-lite's register call needs it
            "HTTP_PROXY": auth.proxy_url(HOST, rt.ric.appmgr_port, rt.api_token),
            "http_proxy": auth.proxy_url(HOST, rt.ric.appmgr_port, rt.api_token),
            auth.TOKEN_ENV: rt.api_token,
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            "RMR_SEED_RT": str(rt.seed_file),
            "RMR_RTG_SVC": str(route_port or rmr_port + 1),
            "RMR_SRC_ID": HOST,
            "RMR_BIND_IF": rt.ric.bind_address,  # the data and route ports: loopback by default
            # only the run's route manager may install routes (its tables are signed)
            "OCTORIC_RMR_RT_KEY": rt.rt_key,
            "DBAAS_SERVICE_HOST": rt.redis_host,
            "DBAAS_SERVICE_PORT": str(rt.redis_port),
            "CONFIG_FILE": str(config_file),
            "SUBMGR_URL": f"http://{HOST}:{rt.ric.submgr_rest_port}/ric/v1/subscriptions",
            # octoric's submgr sends the token with every subscription outcome: want it
            CALLBACK_AUTH_ENV: "token",
            # the Host names the xApp's HTTP server answers beyond loopback (contracts.hosts)
            hosts.HOSTS_ENV: ",".join(rt.ric.allowed_hosts),
        }
    )
    for name in (USER_ENV, PASSWORD_FILE_ENV):  # this run's Redis user, never another's
        env.pop(name, None)
    env.update(rt.redis_auth().env())
    return env


def descriptor(
    name: str, rmr_port: int, rx: list[str], tx: list[str], policies: list[int] | None = None
) -> dict[str, object]:
    """A minimal O-RAN SC xApp descriptor (config-file.json) for an embedded xApp."""
    return {
        "name": name,
        "xapp_name": name,
        "version": "1.0.0",
        "containers": [{"name": name, "image": {"registry": "local", "name": name, "tag": "dev"}}],
        "messaging": {
            "ports": [
                {
                    "name": "rmr-data",
                    "container": name,
                    "port": rmr_port,
                    "rxMessages": rx,
                    "txMessages": tx,
                    "policies": policies or [],
                    "description": "rmr data",
                },
                {
                    "name": "rmr-route",
                    "container": name,
                    "port": rmr_port + 1,
                    "description": "rmr route",
                },
            ]
        },
    }
