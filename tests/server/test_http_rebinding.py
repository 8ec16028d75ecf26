"""DNS rebinding over real HTTP: the Host/Origin checks hold for every spelling of loopback
(the server needs no token there, so they are all that stands between a web page and it)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp_harness import http_server

from massgen_mcp.urls import canonical_host, host_allowed, is_loopback_host, served_names

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}
EVIL_HOSTS = ["evil.example", "evil.example:80", "EVIL.example.", "localhost.evil.example",
              "127.0.0.1.evil.example", "[::1].evil.example", "", "localhost@evil.example"]
EVIL_ORIGINS = ["https://evil.example", "http://evil.example:8765", "null",
                "http://localhost.evil.example", "file://", "http://127.0.0.1@evil.example"]


@pytest.mark.parametrize(("spelling", "canonical"), [
    ("LOCALHOST", "localhost"), ("localhost.", "localhost"), ("127.1", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("[::1]", "::1"),
    ("0:0:0:0:0:0:0:1", "::1"), ("::ffff:127.0.0.1", "127.0.0.1"), ("127.0.0.2", "127.0.0.2")])
def test_every_loopback_spelling_is_loopback(spelling: str, canonical: str) -> None:
    assert canonical_host(spelling) == canonical
    assert is_loopback_host(spelling)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "example.org", "10.0.0.1", "127.0.0.1.nip.io"])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


def test_allowed_host_entries_may_carry_a_port() -> None:
    names = served_names("127.0.0.1", ["Proxy.Example:8443"])
    assert host_allowed("proxy.example:443", names)
    assert not host_allowed("evil.example", names)


@pytest.mark.parametrize("bind", ["127.0.0.2", "LOCALHOST", "::1", "0:0:0:0:0:0:0:1", "127.1"])
async def test_rebinding_is_refused_for_every_loopback_spelling(tmp_path: Path,
                                                                bind: str) -> None:
    with http_server(tmp_path, "--host", bind) as server:
        assert "token required" not in server.stderr[-1]  # loopback: the checks stand alone
        async with httpx.AsyncClient() as raw:
            for host in EVIL_HOSTS:
                r = await raw.post(server.url, json=INIT, headers={**MCP_HEADERS, "host": host})
                assert r.status_code in (400, 421), (host, r.status_code)
                viewer = server.url.rsplit("/", 1)[0] + "/runs"
                r = await raw.get(viewer, headers={"host": host})
                assert r.status_code in (400, 421), (host, r.status_code)
            for origin in EVIL_ORIGINS:
                r = await raw.post(server.url, json=INIT,
                                   headers={**MCP_HEADERS, "origin": origin})
                assert r.status_code == 403, (origin, r.status_code)
            # The server's own names, in any case, are served.
            port = server.url.rsplit(":", 1)[1].split("/", 1)[0]
            for host in (f"LOCALHOST:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
                ok = await raw.post(server.url, json=INIT, headers={
                    **MCP_HEADERS, "host": host, "origin": f"http://{host}"})
                assert ok.status_code == 200, (host, ok.text)


async def _raw_status(port: int, request: bytes) -> int:
    """Send bytes an HTTP client library would refuse to send; the status code of the reply."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(request)
        reply = b""
        with anyio.fail_after(20):
            while b"\r\n" not in reply:
                reply += await stream.receive()
    return int(reply.split(b" ", 2)[1])


async def test_two_host_headers_are_refused(tmp_path: Path) -> None:
    with http_server(tmp_path) as server:
        port = int(server.url.rsplit(":", 1)[1].split("/", 1)[0])
        body = json.dumps(INIT).encode()
        request = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n"
                   "Accept: application/json, text/event-stream\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                   "Connection: close\r\n\r\n").encode() + body
        assert await _raw_status(port, request) in (400, 421)
        # And an HTTP/1.0 request without any Host header.
        request = (f"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        assert await _raw_status(port, request) in (400, 421)
