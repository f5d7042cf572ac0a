"""deploy/compose.yaml, deploy/nginx and deploy/systemd: two replicas, Redis and nginx passing
WebSocket upgrades; ``nginx -t`` accepts the configuration (Debian's nginx, which
``make fleet-tools`` installs); the stop timeouts cover the drain."""

from __future__ import annotations

import configparser
import getpass
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.manifests import DEPLOY, PORT, load
from tests.support.servers import free_port

NGINX_DIR = DEPLOY / "nginx"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _compose() -> dict[str, Any]:
    return load(DEPLOY / "compose.yaml")


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)s", value)
    assert match, value
    return float(match.group(1))


def test_compose_runs_two_replicas_redis_and_nginx() -> None:
    services = _compose()["services"]
    replicas = {name: s for name, s in services.items() if name.startswith("voxflow-")}
    assert len(replicas) == 2
    for replica in replicas.values():
        assert replica["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert (DEPLOY / replica["build"]["context"] / replica["build"]["dockerfile"]).exists()
        command = replica["command"]
        assert command[:3] == ["serve", "--host", "0.0.0.0"]
        assert command[command.index("--cache-url") + 1] == "redis://redis:6379/0"
        assert _seconds(replica["stop_grace_period"]) >= (
            float(replica["environment"]["VOXFLOW_DRAIN_S"]) + 3
        )
        assert replica["depends_on"]["redis"]["condition"] == "service_healthy"
    assert "redis" in services
    nginx = services["nginx"]
    mounted = {volume.split(":")[0] for volume in nginx["volumes"]}
    assert mounted == {"./nginx/nginx.conf", "./nginx/voxflow-proxy.conf"}
    assert all((DEPLOY / path).exists() for path in mounted)
    assert set(nginx["depends_on"]) == set(replicas)
    # nginx's upstreams are the replicas, on the image's port.
    upstreams = re.findall(
        r"^\s*server\s+([\w.-]+):(\d+)", (NGINX_DIR / "nginx.conf").read_text(), re.MULTILINE
    )
    assert {(host, int(port)) for host, port in upstreams} == {(r, PORT) for r in replicas}


def _directives(block: str) -> dict[str, str]:
    """A block's simple directives (name to arguments), the nested blocks left out."""
    lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    return {
        line.split(None, 1)[0]: line.split(None, 1)[1].rstrip(";")
        for line in lines
        if line.endswith(";") and not line.startswith(("proxy_set_header", "error_page"))
    }


def _blocks(text: str, kind: str) -> dict[str, str]:
    """The bodies of the ``kind`` blocks (location, upstream) by name."""
    return dict(re.findall(rf"^\s*{kind} (\S+) {{\n(.*?)^\s*}}", text, re.MULTILINE | re.DOTALL))


def test_nginx_passes_websocket_upgrades_and_retries_refusals() -> None:
    proxy = (NGINX_DIR / "voxflow-proxy.conf").read_text()
    conf = (NGINX_DIR / "nginx.conf").read_text()
    locations = _blocks(proxy, "location")
    top = _directives(re.sub(r"^location .*?^}", "", proxy, flags=re.MULTILINE | re.DOTALL))
    headers = dict(re.findall(r"^proxy_set_header (\S+) (\S+);", proxy, re.MULTILINE))
    assert headers["Upgrade"] == "$http_upgrade"
    assert headers["Connection"] == "$connection_upgrade"
    assert top["proxy_http_version"] == "1.1"
    assert top["proxy_buffering"] == "off"
    assert "map $http_upgrade $connection_upgrade" in conf
    # A stopped or draining replica is skipped and counted as failed; a full one's 429 is not
    # a failure (it would take the replica out, and with none left the client would get
    # 502): it is intercepted and the call tried on every replica of an upstream that counts
    # no failure, whose last 429 reaches the client.
    main = _directives(locations["/"])
    assert main["proxy_pass"] == "http://voxflow"
    assert {"error", "http_503", "non_idempotent"} <= set(main["proxy_next_upstream"].split())
    assert "http_429" not in main["proxy_next_upstream"]
    assert main["proxy_intercept_errors"] == "on"
    assert re.search(r"^\s*error_page 429 = @voxflow_full;", locations["/"], re.MULTILINE)
    full = _directives(locations["@voxflow_full"])
    assert full["proxy_pass"] == "http://voxflow_retry"
    assert {"http_429", "http_503", "non_idempotent"} <= set(full["proxy_next_upstream"].split())
    upstreams = {name: _directives(body) for name, body in _blocks(conf, "upstream").items()}
    servers = {
        name: re.findall(r"^\s*server (\S+)(.*);", body, re.MULTILINE)
        for name, body in _blocks(conf, "upstream").items()
    }
    assert upstreams.keys() == {"voxflow", "voxflow_retry"}
    assert {s for s, _ in servers["voxflow"]} == {s for s, _ in servers["voxflow_retry"]}
    assert all("max_fails=0" in params for _, params in servers["voxflow_retry"])
    assert not any("max_fails=0" in params for _, params in servers["voxflow"])


def _nginx_test(config: Path) -> subprocess.CompletedProcess[str]:
    prefix = config.parent
    settings = f"pid {prefix / 'nginx.pid'}; error_log stderr;"
    return subprocess.run(
        [NGINX, "-t", "-p", str(prefix), "-c", str(config), "-g", settings],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_nginx_accepts_the_configuration(tmp_path: Path) -> None:
    """``nginx -t`` on deploy/nginx/nginx.conf as Compose mounts it, with the replicas' names
    resolved to this machine and the paths moved under a temp prefix."""
    if not Path(NGINX).exists():
        pytest.fail("nginx is not installed (`make test` installs Debian's)", pytrace=False)
    config = (NGINX_DIR / "nginx.conf").read_text()
    config = re.sub(r"server voxflow-\d:", "server 127.0.0.1:", config)
    config = config.replace("/etc/nginx/voxflow-proxy.conf", str(NGINX_DIR / "voxflow-proxy.conf"))
    config = config.replace("listen 8080;", f"listen 127.0.0.1:{free_port()};")
    temp = "".join(
        f"    {kind}_temp_path {tmp_path / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = config.replace("http {\n", "http {\n" + temp, 1)
    path = tmp_path / "nginx.conf"
    path.write_text(f"user {getpass.getuser()};\n{config}")
    result = _nginx_test(path)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr
    # And it does check: a broken proxy setting fails it.
    broken = re.sub(r"(listen [^;]*;)", r"\1\n proxy_buffering maybe;", path.read_text())
    path.write_text(broken)
    result = _nginx_test(path)
    assert result.returncode != 0 and "proxy_buffering" in result.stderr


def test_the_systemd_unit_serves_and_stops_after_the_drain() -> None:
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DEPLOY / "systemd" / "voxflow.service")
    service = unit["Service"]
    command = service["ExecStart"].split()
    assert Path(command[0]).name == "voxflow" and command[1] == "serve"
    assert command[command.index("--port") + 1] == str(PORT)
    drain = float(service["Environment"].removeprefix("VOXFLOW_DRAIN_S="))
    assert service["KillSignal"] == "SIGTERM"
    assert float(service["TimeoutStopSec"]) >= drain + 3
    assert service["User"] != "root"
    assert unit["Install"]["WantedBy"] == "multi-user.target"
