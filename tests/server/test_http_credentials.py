"""The viewer and the MCP endpoint answer 400/401, never 500, to odd credentials and event
ids (over real HTTP, with a token set)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from mcp_harness import http_server

TOKEN = "viewer-test-token-5k2j"
RUN = "run_20261130T183300Z_a1b2c3"


@pytest.fixture
def state(tmp_path: Path) -> Path:
    run = tmp_path / ".massgen" / "runs" / RUN
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"seq": 1, "kind": "answer", "t": 0.1}\n'
                                      '{"seq": 2, "kind": "vote", "t": 0.2}\n')
    (run / "result.json").write_text("{}")  # final: the event stream ends after replaying
    return tmp_path


CREDENTIALS: list[dict[bytes, bytes]] = [
    {b"authorization": "Bearer pässwörd".encode()},
    {b"authorization": b"Bearer \xff\xfe"},
    {b"authorization": b"Bearer " + TOKEN.encode() + "é".encode()},
    {b"cookie": "massgen_view=é☃".encode()},
    {b"authorization": b"Basic \xe9"},
]


@pytest.mark.parametrize("headers", CREDENTIALS)
async def test_non_ascii_credentials_are_401(state: Path, headers: dict[bytes, bytes]) -> None:
    with http_server(state, "--token", TOKEN) as server:
        base = server.url.rsplit("/", 1)[0]
        async with httpx.AsyncClient() as raw:
            for url in (f"{base}/runs", f"{base}/runs/{RUN}", f"{base}/runs/{RUN}/events"):
                r = await raw.get(url, headers=headers)
                assert r.status_code == 401, (url, r.status_code, r.text[:200])
            r = await raw.post(server.url, json={}, headers={
                **headers, b"content-type": b"application/json"})
            assert r.status_code == 401


async def test_non_ascii_token_in_the_query_is_401(state: Path) -> None:
    with http_server(state, "--token", TOKEN) as server:
        base = server.url.rsplit("/", 1)[0]
        async with httpx.AsyncClient() as raw:
            for value in ("pässwörd", TOKEN + "☃", "\u2028"):
                r = await raw.get(f"{base}/runs", params={"token": value})
                assert r.status_code == 401, (value, r.status_code)


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, "-1", "1e3", "abc", "1.5", "0x10",
                                   "1_000", "\u0661\u0662"])
async def test_odd_event_ids_are_400(state: Path, value: str) -> None:
    with http_server(state, "--token", TOKEN) as server:
        base = server.url.rsplit("/", 1)[0]
        auth = {b"authorization": f"Bearer {TOKEN}".encode()}
        async with httpx.AsyncClient() as raw:
            r = await raw.get(f"{base}/runs/{RUN}/events", params={"after": value},
                              headers=auth)
            assert r.status_code == 400, (value, r.status_code)
            r = await raw.get(f"{base}/runs/{RUN}/events",
                              headers={**auth, b"last-event-id": value.encode()})
            assert r.status_code == 400, (value, r.status_code)


async def test_good_event_ids_replay_from_there(state: Path) -> None:
    with http_server(state, "--token", TOKEN) as server:
        base = server.url.rsplit("/", 1)[0]
        async with httpx.AsyncClient() as raw:
            r = await raw.get(f"{base}/runs/{RUN}/events", params={"after": " 1 "},
                              headers={"authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200
            assert "id: 2" in r.text and "id: 1\n" not in r.text and "event: end" in r.text
