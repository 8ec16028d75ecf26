"""A loopback model provider that plays scripted agents, for tests and benchmarks.

`ScriptedProvider` is a real HTTP server on 127.0.0.1 that speaks enough of four wire
formats for the real SDKs to work against it unchanged:

- OpenAI Chat Completions: ``POST /v1/chat/completions`` (JSON, or SSE when ``stream``)
- OpenAI Responses:        ``POST /v1/responses`` (JSON, or SSE; see `scripted_responses`)
- Anthropic Messages:      ``POST /v1/messages``
- Gemini:                  ``POST /v1beta/models/{model}:generateContent``
                           (and ``:streamGenerateContent?alt=sse``)

The model name in a request selects a *script*: a function of the parsed request
(`ScriptRequest`, the same neutral view whatever the wire format) that returns a reply
(`Text`, `ToolCalls`, `Error`, `Delay`, `Hang`, `Raw`). A model with no script gets a wire-shaped
404 "model not found". Only the model is fake: sockets, HTTP, JSON and the SDKs are real.

    with ScriptedProvider() as p:
        p.script("alice", sequence(answer("42"), vote("agent1", "best")))
        team = {"agents": [{"id": "a", "backend": p.backend("anthropic", "alice")}]}

Misbehaving models and servers (see "misbehaviours" below): scripts that never vote or repeat
their answer, sloppy JSON arguments (code fences, raw control characters, single quotes),
vote labels such as ``Agent 1``, calls written as text, the same call twice in one reply,
huge answers, agents that vote for themselves (`votes_for_itself`), a resumed agent that
ends its later turns with chatter (`chatter_after_answer`), a model that never stops
talking (`Endless`: a body that never ends); `Raw` sends any 200 body (HTML, a list,
``message: null``); `strict_content` answers a replayed assistant message with
``content: null`` the way llama.cpp's server does (HTTP 500); `jitter` adds a random delay
of up to that many seconds to every reply.

The server runs in a background thread with its own event loop, so it serves sync and
async tests alike; stopping it releases hanging and delayed replies first, so it never
waits for them.

Wire notes (where the formats cannot say what the neutral view needs):

- OpenAI tool messages carry no error flag; a tool result whose text starts with
  ``Error:`` is reported as ``is_error``. Gemini reports ``is_error`` when the function
  response holds an ``error`` key; Anthropic has a real ``is_error`` field.
- `Call.arguments` given as a string is sent verbatim as OpenAI's raw ``arguments``. Anthropic
  carries arguments as a JSON value, so there the string is sent parsed when it is valid JSON
  (e.g. a list) and as a JSON string when it is not. Gemini's arguments must be an object (the
  SDK rejects anything else), so a call whose arguments are not one becomes what Gemini really
  sends for a broken call: no parts and ``finishReason: MALFORMED_FUNCTION_CALL`` with a
  ``finishMessage`` naming the function.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import itertools
import json
import random
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import scripted_native
import scripted_responses
import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

WireName = Literal["openai", "responses", "anthropic", "gemini"]
TEST_KEY = "test-key"

# ---------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Text:
    """A plain text reply."""

    text: str


@dataclass(frozen=True)
class Call:
    """One tool call. A `str` in `arguments` is sent as raw JSON text (may be malformed)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCalls:
    """A reply that calls tools, with optional text before the calls."""

    calls: list[Call]
    text: str = ""


@dataclass(frozen=True)
class Error:
    """A provider-shaped error body with this HTTP status (401, 404, 429, 500, 529, ...)."""

    status: int
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    error_type: str | None = None  # overrides the wire's error type / status name


@dataclass(frozen=True)
class Delay:
    """Wait `seconds`, then send `then`."""

    seconds: float
    then: Reply


@dataclass(frozen=True)
class Hang:
    """Never answer, until the client disconnects or the server stops."""


@dataclass(frozen=True)
class Endless:
    """A model that never stops talking: a 200 whose body never ends, a few bytes every
    `interval` seconds (JSON whitespace, or SSE comments when the request streams). Each
    read succeeds, so a per-read timeout never fires: only a deadline on the whole call
    stops it."""

    interval: float = 0.05


@dataclass(frozen=True)
class Raw:
    """Send exactly this body (a malformed reply: an HTML page, a JSON list, a null message)."""

    body: str
    status: int = 200
    content_type: str = "application/json"


Reply = Text | ToolCalls | Error | Delay | Hang | Raw | Endless


def answer(text: str) -> ToolCalls:
    """The agent submits `text` as its answer."""
    return ToolCalls([Call("new_answer", {"content": text})])


def vote(agent_id: str, reason: str = "it is the best answer") -> ToolCalls:
    """The agent votes for `agent_id`."""
    return ToolCalls([Call("vote", {"agent_id": agent_id, "reason": reason})])


def sequence(*replies: Reply) -> Callable[[ScriptRequest], Reply]:
    """A script returning `replies` in order, then repeating the last one."""
    if not replies:
        raise ValueError("sequence() needs at least one reply")
    counter = itertools.count()
    lock = threading.Lock()

    def script(_: ScriptRequest) -> Reply:
        with lock:
            i = next(counter)
        return replies[min(i, len(replies) - 1)]

    return script


# ---------------------------------------------------------------------------- misbehaviours


def raw_call(name: str, raw_arguments: str) -> ToolCalls:
    """One call whose arguments are this exact text (fenced, single-quoted, ... JSON)."""
    return ToolCalls([Call(name, raw_arguments)])


def fenced(arguments: dict[str, Any]) -> str:
    """Arguments as JSON in a Markdown code fence."""
    return "```json\n" + json.dumps(arguments) + "\n```"


def single_quoted(arguments: dict[str, str]) -> str:
    """Arguments as a Python dict literal: single-quoted strings."""
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in arguments.items()) + "}"


def with_control_characters(arguments: dict[str, str]) -> str:
    """JSON whose strings hold raw newlines and tabs (strict JSON forbids them)."""
    return json.dumps(arguments).replace("\\n", "\n").replace("\\t", "\t")


def written_call(name: str, arguments: dict[str, Any], prose: str = "Here is my call:") -> Text:
    """A model without tool calling: the call as JSON text inside prose and a fence."""
    return Text(f"{prose}\n```json\n{json.dumps({'tool': name, 'arguments': arguments})}\n```")


def twice(reply: ToolCalls) -> ToolCalls:
    """The same call sent twice in one reply."""
    return ToolCalls([*reply.calls, *reply.calls], reply.text)


def never_votes(text: str) -> Callable[[ScriptRequest], Reply]:
    """A model that re-submits the same answer on every turn and never votes."""
    return lambda _req: answer(text)


def own_label(req: ScriptRequest) -> str | None:
    """The agent's own anonymous id, from "Your own latest answer is agent2.1." (None before
    its first answer)."""
    marker = "Your own latest "
    text = req.last_user_text
    if marker not in text:
        return None
    tail = text.split(marker, 1)[1].split(" is ", 1)[1]
    return tail.split(".", 1)[0].strip()


def votes_for_itself(text: str) -> Callable[[ScriptRequest], Reply]:
    """A model that answers, then always votes for its own answer (and presents it)."""

    def script(req: ScriptRequest) -> Reply:
        me = own_label(req)
        if "Present the best final" in req.last_user_text:
            return answer(text)
        return answer(text) if me is None else vote(me, "mine is the best")

    return script


def chatter_after_answer(text: str, chatter: str = "Submitted.") -> Callable[
        [ScriptRequest], Reply]:
    """A resumed coding agent: answers once, then ends every later turn with `chatter` and
    no tool call (reminders included), as a CLI does that thinks it already submitted."""

    def script(req: ScriptRequest) -> Reply:
        if own_label(req) is None and "Present the best final" not in req.last_user_text \
                and "You did not call a tool" not in req.last_user_text:
            return answer(text)
        return Text(chatter)

    return script


def always_new_answer(prefix: str) -> Callable[[ScriptRequest], Reply]:
    """A model that submits a different answer on every turn and never votes."""
    counter = itertools.count(1)
    return lambda _req: answer(f"{prefix} revision {next(counter)}")


# ---------------------------------------------------------------------------- requests


@dataclass
class ScriptRequest:
    """One request, parsed into a wire-neutral view.

    `messages` are OpenAI-like dicts: ``{role, content, tool_calls?, tool_call_id?, name?,
    is_error?}``; an assistant's ``tool_calls`` are ``{id, name, arguments}`` with the
    arguments parsed when they are valid JSON.
    """

    wire: WireName
    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    tool_choice: Any
    headers: dict[str, str]
    raw: dict[str, Any]
    call_index: int = 0
    stream: bool = False
    path: str = ""  # the URL path, e.g. /v1/chat/completions
    query: dict[str, str] = field(default_factory=dict)
    # Set when the client went away before it got a reply (e.g. a cancelled call).
    disconnected: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def last_user_text(self) -> str:
        for m in reversed(self.messages):
            if m["role"] == "user":
                return str(m.get("content") or "")
        return ""

    @property
    def text(self) -> str:
        parts = [self.system] + [str(m.get("content") or "") for m in self.messages]
        return "\n".join(p for p in parts if p)

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        return [
            {"name": m.get("name"), "content": m.get("content", ""),
             "is_error": bool(m.get("is_error"))}
            for m in self.messages if m["role"] == "tool"
        ]

    def tool_enum(self, tool: str, arg: str) -> list[Any]:
        """The `enum` of argument `arg` in tool `tool`'s schema ([] if none)."""
        for t in self.tools:
            if t["name"] == tool:
                prop = (t.get("parameters") or {}).get("properties", {}).get(arg) or {}
                return list(prop.get("enum") or (prop.get("items") or {}).get("enum") or [])
        return []


Script = Callable[[ScriptRequest], Reply | Awaitable[Reply]]


def _loads(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _text_of(content: Any) -> str:
    """Text of a content value: a string, or a list of text blocks/parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        if "text" in content and not content.get("thought"):
            return str(content["text"])
        if "content" in content:
            return _text_of(content["content"])
    return ""


def _parse_openai(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    system, messages, names = [], [], {}
    for m in body.get("messages", []):
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(m.get("content")))
        elif role == "assistant":
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function", {})
                names[c.get("id")] = fn.get("name")
                calls.append({"id": c.get("id"), "name": fn.get("name"),
                              "arguments": _loads(fn.get("arguments"))})
            msg: dict[str, Any] = {"role": "assistant", "content": _text_of(m.get("content"))}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
        elif role == "tool":
            content = _text_of(m.get("content"))
            messages.append({"role": "tool", "content": content,
                             "tool_call_id": m.get("tool_call_id"),
                             "name": names.get(m.get("tool_call_id")),
                             "is_error": content.startswith("Error:")})
        else:
            messages.append({"role": "user", "content": _text_of(m.get("content"))})
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "parameters": t["function"].get("parameters") or {}}
             for t in body.get("tools") or [] if t.get("type") == "function"]
    return "\n".join(system), messages, tools


def _parse_anthropic(
    body: dict[str, Any],
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for m in body.get("messages", []):
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if m.get("role") == "assistant":
            calls = []
            for b in blocks:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
                    calls.append({"id": b["id"], "name": b["name"], "arguments": b.get("input")})
            msg: dict[str, Any] = {"role": "assistant", "content": _text_of(
                [b for b in blocks if b.get("type") == "text"])}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            continue
        for b in blocks:
            if b.get("type") == "tool_result":
                messages.append({"role": "tool", "content": _text_of(b.get("content")),
                                 "tool_call_id": b.get("tool_use_id"),
                                 "name": names.get(b.get("tool_use_id")),  # type: ignore[arg-type]
                                 "is_error": bool(b.get("is_error"))})
        text = _text_of([b for b in blocks if b.get("type") == "text"])
        if text or not any(b.get("type") == "tool_result" for b in blocks):
            messages.append({"role": "user", "content": text})
    tools = [{"name": t["name"], "description": t.get("description", ""),
              "parameters": t.get("input_schema") or {}} for t in body.get("tools") or []]
    return _text_of(body.get("system")), messages, tools


# Values that are user data (schemas, arguments), not Gemini field names.
_OPAQUE = {"args", "response", "parameters", "parametersJsonSchema", "responseSchema",
           "responseJsonSchema"}


def _camel(value: Any) -> Any:
    """Gemini accepts proto field names in snake_case or lowerCamelCase: normalize to camel."""
    if isinstance(value, list):
        return [_camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        head, *rest = key.split("_")
        name = head + "".join(w[:1].upper() + w[1:] for w in rest)
        out[name] = v if name in _OPAQUE else _camel(v)
    return out


def _parse_gemini(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    for c in body.get("contents", []):
        parts = c.get("parts") or []
        if c.get("role") == "model":
            calls = [{"id": p["functionCall"].get("id"), "name": p["functionCall"]["name"],
                      "arguments": p["functionCall"].get("args")}
                     for p in parts if "functionCall" in p]
            msg: dict[str, Any] = {"role": "assistant", "content": _text_of(parts)}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            continue
        for p in parts:
            if "functionResponse" in p:
                fr = p["functionResponse"]
                resp = fr.get("response") or {}
                is_error = "error" in resp
                value = resp.get("error") if is_error else resp.get("output", resp.get("result"))
                if value is None:
                    value = resp
                messages.append({"role": "tool", "tool_call_id": fr.get("id"),
                                 "name": fr.get("name"), "is_error": is_error,
                                 "content": value if isinstance(value, str) else json.dumps(value)})
        text = _text_of([p for p in parts if "text" in p])
        if text or not any("functionResponse" in p for p in parts):
            messages.append({"role": "user", "content": text})
    tools = [{"name": d["name"], "description": d.get("description", ""),
              "parameters": d.get("parametersJsonSchema") or d.get("parameters") or {}}
             for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]
    return _text_of((body.get("systemInstruction") or {}).get("parts")), messages, tools


# ---------------------------------------------------------------------------- rendering

_OPENAI_ERRORS = {400: "invalid_request_error", 401: "invalid_request_error",
                  403: "permission_denied", 404: "invalid_request_error",
                  429: "rate_limit_exceeded", 500: "server_error", 503: "service_unavailable"}
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                     403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                     429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
_GEMINI_ERRORS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_DEFAULT_MESSAGES = {401: "invalid authentication credentials", 403: "permission denied",
                     429: "rate limit exceeded", 500: "internal server error",
                     529: "overloaded", 503: "service unavailable"}


def _error_body(wire: WireName, err: Error, model: str) -> dict[str, Any]:
    message = err.message or _DEFAULT_MESSAGES.get(err.status, f"error {err.status}")
    if wire in ("openai", "responses"):
        code = {401: "invalid_api_key", 404: "model_not_found"}.get(err.status)
        kind = err.error_type or _OPENAI_ERRORS.get(err.status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}
    if wire == "anthropic":
        kind = err.error_type or _ANTHROPIC_ERRORS.get(
            err.status, "api_error" if err.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = err.error_type or _GEMINI_ERRORS.get(err.status, "UNKNOWN")
    return {"error": {"code": err.status, "message": message, "status": kind}}


async def _probe(request: Request) -> Response:
    return Response(status_code=200)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


# ---------------------------------------------------------------------------- the server


class ScriptedProvider:
    """A loopback OpenAI/Anthropic/Gemini-compatible server whose models are scripts."""

    def __init__(self) -> None:
        self.requests: list[ScriptRequest] = []
        self.script_errors: list[BaseException] = []  # exceptions raised by scripts
        self.latency: float = 0.0
        self.jitter: float = 0.0  # extra random delay per reply, uniform in [0, jitter]
        self.strict_content = False  # answer a null assistant content with 500 (llama.cpp)
        self._random = random.Random(7)
        self.gemini_call_ids = True  # send `id` in Gemini functionCall parts
        self.gemini_thought_signatures = True  # sign the first functionCall part
        # (url, title) pairs a native web search "finds" (see scripted_native)
        self.web_sources: list[tuple[str, str]] = []
        self._scripts: dict[str, Script] = {}
        self._counts: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        # proto must be named: asyncio only sets TCP_NODELAY on sockets that say IPPROTO_TCP,
        # and without it every keep-alive reply waits ~40 ms for a delayed ACK.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.root = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._server: uvicorn.Server | None = None

    # -- endpoints ---------------------------------------------------------------------

    @property
    def openai_base_url(self) -> str:
        return self.root + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.root

    @property
    def gemini_base_url(self) -> str:
        return self.root

    def backend(self, wire: str, model: str, **backend_fields: Any) -> dict[str, Any]:
        """A team-file backend dict pointing at this server (fields override the defaults)."""
        kinds = {"openai": ("chatcompletion", self.openai_base_url),
                 "responses": ("openai", self.openai_base_url),
                 "anthropic": ("claude", self.anthropic_base_url),
                 "gemini": ("gemini", self.gemini_base_url)}
        aliases = {"openai_chat": "openai", "chatcompletion": "openai", "claude": "anthropic",
                   "google": "gemini"}
        kind, url = kinds[aliases.get(wire, wire)]
        return {"type": kind, "model": model, "base_url": url, "api_key": TEST_KEY,
                **backend_fields}

    # -- scripts and records -----------------------------------------------------------

    def script(self, model: str, fn: Script | Reply) -> None:
        """Play `fn` for requests naming `model` (a bare reply is sent every time)."""
        if isinstance(fn, Text | ToolCalls | Error | Delay | Hang | Raw | Endless):
            reply = fn
            self._scripts[model] = lambda _req: reply
        else:
            self._scripts[model] = fn

    def requests_for(self, model: str) -> list[ScriptRequest]:
        with self._lock:
            return [r for r in self.requests if r.model == model]

    def reset(self) -> None:
        """Forget scripts, requests and latency (to reuse one server across tests)."""
        with self._lock:
            self._scripts.clear()
            self._counts.clear()
            self.requests.clear()
            self.script_errors.clear()
            self.latency = 0.0
            self.jitter = 0.0
            self.strict_content = False
            self._random.seed(7)
            self.web_sources = []

    def wait_for_sync(
        self, model: str, count: int = 1, timeout: float = 5.0
    ) -> list[ScriptRequest]:
        """Block until `count` requests for `model` arrived; TimeoutError otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._for(model)) >= count, timeout):
                raise TimeoutError(f"{count} request(s) for {model!r} did not arrive in {timeout}s")
            return self._for(model)

    async def wait_for(
        self, model: str, count: int = 1, timeout: float = 5.0
    ) -> list[ScriptRequest]:
        """Await until `count` requests for `model` arrived (without blocking the loop)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            event = asyncio.Event()
            with self._lock:
                got = self._for(model)
                if len(got) >= count:
                    return got
                self._waiters.append((loop, event))
            try:
                async with asyncio.timeout_at(deadline):
                    await event.wait()
            except TimeoutError:
                raise TimeoutError(
                    f"{count} request(s) for {model!r} did not arrive in {timeout}s") from None
            finally:
                with self._lock:
                    self._waiters.remove((loop, event))

    def _for(self, model: str) -> list[ScriptRequest]:
        return [r for r in self.requests if r.model == model]

    def _record(self, req: ScriptRequest) -> None:
        with self._lock:
            req.call_index = self._counts.get(req.model, 0)
            self._counts[req.model] = req.call_index + 1
            self.requests.append(req)
            self._lock.notify_all()
            for loop, event in self._waiters:
                with contextlib.suppress(RuntimeError):  # a closed loop: its waiter is gone
                    loop.call_soon_threadsafe(event.set)

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> ScriptedProvider:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        ready = threading.Event()
        self._sock.listen(128)  # clients may connect (and queue) before uvicorn accepts
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(ready),), name="scripted-provider",
            daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted provider did not start")

    def stop(self) -> None:
        """Stop serving; in-flight hanging or delayed replies are released, not awaited."""
        if self._loop is None or self._thread is None:
            return
        server, stopping = self._server, self._stopping
        assert server is not None and stopping is not None
        server.should_exit = True
        with contextlib.suppress(RuntimeError):  # the loop already ended
            self._loop.call_soon_threadsafe(stopping.set)
        self._thread.join(10)
        self._loop = None
        self._sock.close()

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"]),
                                # Claude Code probes the base URL with HEAD / first
                                Route("/{path:path}", _probe, methods=["HEAD", "GET"])])
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off",
                                timeout_graceful_shutdown=1, log_level="warning")
        self._server = uvicorn.Server(config)
        ready.set()
        await self._server.serve(sockets=[self._sock])

    # -- request handling --------------------------------------------------------------

    async def _handle(self, request: Request) -> Response:
        path = request.url.path
        try:
            body = await request.json()
        except ClientDisconnect:  # the client gave up while sending (e.g. a killed process)
            return Response(status_code=499)
        except ValueError:
            return JSONResponse({"error": {"message": "body is not JSON"}}, status_code=400)
        stream = bool(body.get("stream"))
        if path.endswith("/chat/completions"):
            wire: WireName = "openai"
            model = str(body.get("model", ""))
            system, messages, tools = _parse_openai(body)
            tool_choice = body.get("tool_choice")
        elif path.endswith("/v1/responses"):
            wire, model = "responses", str(body.get("model", ""))
            system, messages, tools = scripted_responses.parse(body)
            tool_choice = body.get("tool_choice")
        elif path.endswith("/v1/messages"):
            wire, model = "anthropic", str(body.get("model", ""))
            system, messages, tools = _parse_anthropic(body)
            tool_choice = body.get("tool_choice")
        elif "/models/" in path and ":" in path:
            wire = "gemini"
            model, _, action = path.split("/models/", 1)[1].partition(":")
            body = _camel(body)
            stream = action == "streamGenerateContent"
            system, messages, tools = _parse_gemini(body)
            tool_choice = body.get("toolConfig")
        else:
            return JSONResponse({"error": {"message": f"no such endpoint: {path}"}}, 404)
        req = ScriptRequest(wire, model, system, messages, tools, tool_choice,
                            {k.lower(): v for k, v in request.headers.items()}, body,
                            stream=stream, path=path, query=dict(request.query_params))
        self._record(req)
        if self.strict_content and wire == "openai" and any(
                m.get("role") == "assistant" and m.get("content") is None
                for m in body.get("messages", [])):
            # what llama-cpp-python's server answers (its schema wants a string)
            return JSONResponse({"error": {"message": "content: Input should be a valid string",
                                           "type": "internal_server_error"}}, 500)
        reply = await self._run_script(req)
        delay = self.latency + (self._random.uniform(0, self.jitter) if self.jitter else 0.0)
        if delay and not await self._pause(request, req, delay):
            return Response(status_code=503)
        while isinstance(reply, Delay | Hang):
            seconds = reply.seconds if isinstance(reply, Delay) else None
            if not await self._pause(request, req, seconds):
                return Response(status_code=503)  # nobody will read it
            reply = reply.then if isinstance(reply, Delay) else reply
        if isinstance(reply, Error):
            return JSONResponse(_error_body(wire, reply, model), reply.status,
                                headers=reply.headers)
        if isinstance(reply, Raw):
            return Response(reply.body, reply.status, media_type=reply.content_type)
        if isinstance(reply, Endless):
            return StreamingResponse(self._endless(request, req, reply), media_type=(
                "text/event-stream" if req.stream else "application/json"))
        return self._render(req, reply)

    async def _endless(self, request: Request, req: ScriptRequest, reply: Endless) -> Any:
        """The body of an `Endless` reply: it ends when the client goes away (then
        `req.disconnected` is set) or the server stops."""
        assert self._stopping is not None
        try:
            yield b"" if req.stream else b'{"id": "endless", "choices": ['
            while not self._stopping.is_set():
                if await request.is_disconnected():
                    break
                yield b": still talking\n\n" if req.stream else b" "
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), reply.interval)
        finally:
            if not self._stopping.is_set():
                req.disconnected.set()

    async def _run_script(self, req: ScriptRequest) -> Reply:
        fn = self._scripts.get(req.model)
        if fn is None:
            return Error(404, f"model '{req.model}' not found", error_type=None)
        try:
            reply = fn(req)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as e:  # a broken script is a test bug: report it loudly
            self.script_errors.append(e)
            return Error(500, f"script for {req.model!r} raised {e!r}")
        if not isinstance(reply, Text | ToolCalls | Error | Delay | Hang | Raw | Endless):
            self.script_errors.append(TypeError(f"script returned {reply!r}"))
            return Error(500, f"script for {req.model!r} returned {type(reply).__name__}")
        return reply

    async def _pause(self, request: Request, req: ScriptRequest, seconds: float | None) -> bool:
        """Wait `seconds` (None: forever). False when the client left or the server stops."""
        assert self._stopping is not None

        async def client_gone() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass

        gone = asyncio.ensure_future(client_gone())
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({gone, stop}, timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            gone.cancel()
            stop.cancel()
        if gone.done() and not gone.cancelled():
            req.disconnected.set()
            return False
        return not self._stopping.is_set()

    def _render(self, req: ScriptRequest, reply: Text | ToolCalls) -> Response:
        text = reply.text
        calls = reply.calls if isinstance(reply, ToolCalls) else []
        ids = [next(self._ids) for _ in calls]
        out = text + "".join(c.name + (c.arguments if isinstance(c.arguments, str)
                                       else json.dumps(c.arguments)) for c in calls)
        usage = (_tokens(req.text), _tokens(out))
        if req.wire == "openai":
            return self._render_openai(req, text, calls, ids, usage)
        if req.wire == "responses":
            return self._render_responses(req, text, calls, ids, usage)
        if req.wire == "anthropic":
            return self._render_anthropic(req, text, calls, ids, usage)
        return self._render_gemini(req, text, calls, ids, usage)

    def _render_openai(self, req: ScriptRequest, text: str, calls: list[Call], ids: list[int],
                       usage: tuple[int, int]) -> Response:
        tool_calls = [{"id": f"call_{i}", "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments if isinstance(
                           c.arguments, str) else json.dumps(c.arguments)}}
                      for c, i in zip(calls, ids, strict=True)]
        finish = "tool_calls" if calls else "stop"
        base = {"id": f"chatcmpl-{next(self._ids)}", "created": int(time.time()),
                "model": req.model}
        tokens = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                  "total_tokens": sum(usage)}
        if not req.stream:
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            return JSONResponse({**base, "object": "chat.completion", "choices": [
                {"index": 0, "message": message, "finish_reason": finish}], "usage": tokens})
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": text}]
        deltas += [{"tool_calls": [{"index": n, **tc}]} for n, tc in enumerate(tool_calls)]
        events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                  for d in deltas]
        events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (req.raw.get("stream_options") or {}).get("include_usage"):
            events.append({**chunk, "choices": [], "usage": tokens})
        lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
        return StreamingResponse(iter(lines), media_type="text/event-stream")

    def _searched(self, req: ScriptRequest) -> list[tuple[str, str]]:
        return list(self.web_sources) if self.web_sources and scripted_native.offered(
            req.wire, req.raw) else []

    def _render_responses(self, req: ScriptRequest, text: str, calls: list[Call],
                          ids: list[int], usage: tuple[int, int]) -> Response:
        search = self._searched(req)
        annotations = None
        if search:
            item, text, annotations = scripted_native.responses_search(search, text, ids[0]
                                                                       if ids else 0)
        items = scripted_responses.output_items(req.raw, req.model, req.call_index, text,
                                                calls, ids, annotations)
        if search:
            items.insert(0, item)
        body = scripted_responses.response_object(req.raw, req.model, f"resp_{next(self._ids)}",
                                                  items, usage)
        if req.stream:
            return StreamingResponse(scripted_responses.sse(body), media_type="text/event-stream")
        return JSONResponse(body)

    def _render_anthropic(self, req: ScriptRequest, text: str, calls: list[Call],
                          ids: list[int], usage: tuple[int, int]) -> Response:
        if req.stream:
            from scripted_anthropic_stream import anthropic_stream

            return anthropic_stream(req.model, f"msg_{next(self._ids):06d}", text, [
                (f"toolu_{i:06d}", c.name, _loads(c.arguments))
                for c, i in zip(calls, ids, strict=True)], usage)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        search = self._searched(req)
        if search:
            content = scripted_native.anthropic_search(search, text, next(self._ids))
        content += [{"type": "tool_use", "id": f"toolu_{i:06d}", "name": c.name,
                     "input": _loads(c.arguments)} for c, i in zip(calls, ids, strict=True)]
        return JSONResponse({
            "id": f"msg_{next(self._ids):06d}", "type": "message", "role": "assistant",
            "model": req.model, "content": content,
            "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1],
                      **(scripted_native.ANTHROPIC_USAGE if search else {})}})

    def _render_gemini(self, req: ScriptRequest, text: str, calls: list[Call], ids: list[int],
                       usage: tuple[int, int]) -> Response:
        parts: list[dict[str, Any]] = [{"text": text}] if text else []
        candidate: dict[str, Any] = {"finishReason": "STOP", "index": 0}
        bad = next((c for c in calls if not isinstance(_loads(c.arguments), dict)), None)
        if bad is not None:
            # Gemini's args are a Struct, so a broken call arrives as this finish reason.
            candidate = {"finishReason": "MALFORMED_FUNCTION_CALL", "index": 0,
                         "finishMessage": f"Malformed function call: {bad.name}({bad.arguments})"}
            calls = []
        for n, (c, i) in enumerate(zip(calls, ids, strict=False)):
            fc: dict[str, Any] = {"name": c.name, "args": _loads(c.arguments)}
            if self.gemini_call_ids:
                fc["id"] = f"gcall-{i}"
            part: dict[str, Any] = {"functionCall": fc}
            if n == 0 and self.gemini_thought_signatures:
                signature = f"sig-{req.call_index}".encode()
                part["thoughtSignature"] = base64.b64encode(signature).decode()
            parts.append(part)
        if search := self._searched(req):
            candidate["groundingMetadata"] = scripted_native.gemini_grounding(search)
        body = {"candidates": [{"content": {"role": "model", "parts": parts}, **candidate}],
                "usageMetadata": {"promptTokenCount": usage[0],
                                  "candidatesTokenCount": usage[1],
                                  "totalTokenCount": sum(usage)},
                "modelVersion": req.model, "responseId": f"resp-{next(self._ids)}"}
        if req.stream:
            return StreamingResponse(iter([f"data: {json.dumps(body)}\r\n\r\n"]),
                                     media_type="text/event-stream")
        return JSONResponse(body)
