"""Loopback local model servers that say what they hold the way the real ones do.

`LocalServer(kind, context)` answers, like the real server of that kind:

- ``llama.cpp``: ``GET /props`` -> ``{"default_generation_settings": {"n_ctx": N, ...}}``;
- ``vllm``: ``GET /v1/models`` -> ``{"data": [{"id": ..., "max_model_len": N, ...}]}``;
- ``ollama``: ``POST /api/show`` -> ``{"parameters": "num_ctx N\\n...", "model_info":
  {"llama.context_length": 131072}}`` (no ``num_ctx`` line when `context` is None);

and every kind serves ``POST /v1/chat/completions`` as a plain consensus agent (answer, then
vote for the first answer it may, then present), generating at `tokens_per_second`: a reply
of k completion tokens takes k / tokens_per_second seconds (the speed probe's too). Each
request's ``max_tokens`` is recorded in `caps` (requests with tools: the run's own calls).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class LocalServer:
    def __init__(self, kind: str, context: int | None, tokens_per_second: float = 1000.0,
                 model: str = "local-model") -> None:
        self.kind, self.context, self.speed, self.model = kind, context, tokens_per_second, model
        self.caps: list[int | None] = []  # max_tokens of each run call (with tools)
        self.probes: list[str] = []  # the paths of every other request
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LocalServer:
        ready = threading.Event()
        self._sock.listen(64)
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(ready),),
                                        daemon=True)
        self._thread.start()
        assert ready.wait(10), "the local model server did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

    async def _serve(self, ready: threading.Event) -> None:
        app = Starlette(routes=[Route("/props", self._props),
                                Route("/v1/models", self._models),
                                Route("/api/show", self._show, methods=["POST"]),
                                Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False,
                                                     lifespan="off", log_level="warning"))
        ready.set()
        await self._server.serve(sockets=[self._sock])

    async def _props(self, request: Request) -> Response:
        self.probes.append("/props")
        if self.kind != "llama.cpp":
            return Response(status_code=404)
        return JSONResponse({"default_generation_settings": {"n_ctx": self.context,
                                                             "temperature": 0.8},
                             "total_slots": 1, "model_path": f"/models/{self.model}.gguf"})

    async def _models(self, request: Request) -> Response:
        self.probes.append("/v1/models")
        entry: dict[str, Any] = {"id": self.model, "object": "model", "owned_by": self.kind}
        if self.kind == "vllm":
            entry["max_model_len"] = self.context
        return JSONResponse({"object": "list", "data": [entry]})

    async def _show(self, request: Request) -> Response:
        self.probes.append("/api/show")
        if self.kind != "ollama":
            return Response(status_code=404)
        params = "stop \"<|eot_id|>\""
        if self.context is not None:
            params = f"num_ctx {self.context}\n{params}"
        return JSONResponse({"parameters": params, "details": {"family": "llama"},
                             "model_info": {"general.architecture": "llama",
                                            "llama.context_length": 131072}})

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        tools = [t["function"] for t in body.get("tools") or []]
        if tools:
            self.caps.append(body.get("max_tokens", body.get("max_completion_tokens")))
        else:
            self.probes.append("completion")
        text = next((m["content"] for m in reversed(body["messages"])
                     if m["role"] == "user"), "")
        names = [t["name"] for t in tools]
        if not tools:
            call, tokens = None, min(32, body.get("max_tokens") or 32)
        elif "vote" in names and "Your own latest" in text:
            target = tools[names.index("vote")]["parameters"]["properties"]["agent_id"]["enum"][0]
            call, tokens = ("vote", {"agent_id": target, "reason": "clear"}), 10
        else:
            call, tokens = ("new_answer", {"content": "Paris is the capital of France."}), 10
        await asyncio.sleep(tokens / self.speed)
        message: dict[str, Any] = {"role": "assistant", "content": None if call else
                                   " ".join(str(i) for i in range(1, tokens + 1))}
        if call:
            message["tool_calls"] = [{"id": "call_1", "type": "function", "function": {
                "name": call[0], "arguments": json.dumps(call[1])}}]
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": self.model, "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if call else
                                              "length"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": tokens,
                      "total_tokens": 100 + tokens}})
