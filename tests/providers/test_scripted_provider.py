"""The loopback scripted provider itself: wire shapes, helpers, lifecycle."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from scripted_provider import (
    Call,
    Delay,
    Error,
    Hang,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
    answer,
    sequence,
    vote,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data


def _chat(p: ScriptedProvider, model: str, **body: object) -> httpx.Response:
    return httpx.post(f"{p.openai_base_url}/chat/completions", timeout=5, json={
        "model": model, "messages": [{"role": "user", "content": "hi"}], **body})


def test_stop_does_not_wait_for_hanging_or_delayed_replies() -> None:
    p = ScriptedProvider().__enter__()
    p.script("hang", Hang())
    p.script("slow", Delay(30, Text("late")))
    results: list[int | str] = []

    def call(model: str) -> None:
        try:
            results.append(_chat(p, model).status_code)
        except httpx.HTTPError as e:
            results.append(type(e).__name__)

    threads = [threading.Thread(target=call, args=(m,)) for m in ("hang", "slow")]
    for t in threads:
        t.start()
    p.wait_for_sync("hang")
    p.wait_for_sync("slow")
    p.__exit__(None, None, None)
    for t in threads:  # an outer bound: stopping ends both requests (one would take 30 s)
        t.join(20)
        assert not t.is_alive()
    assert len(results) == 2 and 200 not in results


@pytest.mark.parametrize(("url", "body", "error"), [
    ("/v1/chat/completions", {"messages": []}, lambda b: b["error"]["code"] == "model_not_found"),
    ("/v1/messages", {"messages": [], "max_tokens": 5},
     lambda b: b["error"]["type"] == "not_found_error"),
    ("/v1beta/models/{m}:generateContent", {"contents": []},
     lambda b: b["error"]["status"] == "NOT_FOUND"),
])
def test_unknown_model_is_a_wire_shaped_404(provider, url, body, error) -> None:
    r = httpx.post(provider.root + url.format(m="ghost"), json={"model": "ghost", **body})
    assert r.status_code == 404
    assert error(r.json()) and "ghost" in r.text


def test_error_reply_carries_status_headers_and_type(provider) -> None:
    provider.script("limited", Error(429, "slow down", headers={"Retry-After": "7"},
                                     error_type="tokens"))
    r = _chat(provider, "limited")
    assert (r.status_code, r.headers["retry-after"]) == (429, "7")
    assert r.json()["error"] == {"message": "slow down", "type": "tokens", "param": None,
                                 "code": None}


def test_sequence_repeats_its_last_reply_and_requests_are_indexed(provider) -> None:
    provider.script("seq", sequence(Text("one"), Text("two")))
    texts = [_chat(provider, "seq").json()["choices"][0]["message"]["content"]
             for _ in range(3)]
    assert texts == ["one", "two", "two"]
    assert [r.call_index for r in provider.requests_for("seq")] == [0, 1, 2]


def test_async_scripts_see_the_neutral_request(provider) -> None:
    seen: list[ScriptRequest] = []

    async def script(req: ScriptRequest) -> ToolCalls:
        seen.append(req)
        await asyncio.sleep(0)
        return vote(req.tool_enum("vote", "agent_id")[-1], "last one")

    provider.script("voter", script)
    tools = [{"type": "function", "function": {"name": "vote", "parameters": {
        "type": "object", "properties": {"agent_id": {"enum": ["agent1", "agent2"]}}}}}]
    r = _chat(provider, "voter", tools=tools, tool_choice="required", messages=[
        {"role": "system", "content": "sys"}, {"role": "user", "content": "pick"}])
    call = r.json()["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "vote" and '"agent2"' in call["function"]["arguments"]
    (req,) = seen
    assert (req.system, req.last_user_text, req.tool_names, req.tool_choice) == (
        "sys", "pick", ["vote"], "required")
    assert req.text == "sys\npick"


def test_broken_script_is_a_500_and_is_recorded(provider) -> None:
    def script(req: ScriptRequest) -> Text:
        raise RuntimeError("oops")

    provider.script("broken", script)
    assert _chat(provider, "broken").status_code == 500
    assert any("oops" in str(e) for e in provider.script_errors)
    provider.script_errors.clear()  # expected here; the fixture fails tests on script errors


def test_openai_streaming(provider) -> None:
    provider.script("streamer", ToolCalls([Call("new_answer", {"content": "x"})], text="hi"))
    r = _chat(provider, "streamer", stream=True, stream_options={"include_usage": True})
    events = [line.removeprefix("data: ") for line in r.text.splitlines() if line]
    assert events[-1] == "[DONE]"
    assert '"finish_reason": "tool_calls"' in r.text and '"usage"' in events[-2]


async def test_wait_for_times_out(provider) -> None:
    with pytest.raises(TimeoutError):
        await provider.wait_for("never-called", timeout=0.05)


def test_backend_dicts_make_valid_teams(provider, tmp_path) -> None:
    agents = [{"id": w, "backend": provider.backend(w, "m", temperature=0.1)}
              for w in ("openai", "anthropic", "gemini")]
    team = team_from_data({"agents": agents}, "t", Environment({}, dotenv_dir=tmp_path))
    assert [(a.provider.name, a.base_url) for a in team.agents] == [
        ("chatcompletion", provider.openai_base_url), ("claude", provider.root),
        ("gemini", provider.root)]
    assert answer("x") == ToolCalls([Call("new_answer", {"content": "x"})])
