"""AG2 members (MassGen's ``type: ag2``): one AG2 agent per member, called through AG2's own
OpenAI client. Needs the optional extra: ``pip install 'massgen-mcp[ag2]'`` (ag2 0.14, the
last release with the ``autogen`` ConversableAgent API MassGen's files are written for).

Each turn asks the member's `ConversableAgent` / `AssistantAgent` (built from the file's
``agent_config``: name, system message, ``llm_config`` with its fallback entries) for one
reply through its `OpenAIWrapper`, the offered tools (``new_answer``, ``vote``, MCP and file
tools, ``execute_command``) passed as the llm_config ``tools`` of that call, as MassGen's
adapter registers tool signatures without functions: the orchestrator runs the calls, so an
AG2 member answers and votes like any other. AG2 never executes code itself here (its code
execution is off; `config/ag2.py` turns a code executor into the sandboxed tool).

AG2's client is synchronous: a call runs in a worker thread, and a cancelled turn leaves it
to finish there (bounded by ``request_timeout_seconds``). AG2 writes logs and console output
to stdout, which is the MCP stdio transport: both are sent to stderr logging instead.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import logging
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.backends._common import (
    count,
    reading_reply,
    stainless_errors,
    timeout_error,
    tool_call,
)
from massgen_mcp.backends.openai_chat import _wire_messages  # one Chat Completions mapping
from massgen_mcp.config.ag2 import DEFAULT_SYSTEM_MESSAGE, INSTALL, LLMEntry, llm_entries
from massgen_mcp.errors import ConfigError, MissingKeyError, PermanentBackendError
from massgen_mcp.messages import Message, ToolSpec, Turn, Usage, new_call_id
from massgen_mcp.redaction import redact_text

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

log = logging.getLogger(__name__)
#: AG2's loggers that add a stdout handler of their own when they have none at import.
_STDOUT_LOGGERS = ("autogen.oai.client", "autogen.oai.cohere", "ag2.event.processor")


def ag2_installed() -> bool:
    """Whether the extra is installed (without importing AG2: it takes seconds)."""
    try:
        return importlib.util.find_spec("autogen") is not None
    except (ImportError, ValueError):  # a broken installation counts as none
        return False


class _LogStream:
    """AG2's console (IOStream) as debug logging on stderr: stdout is the MCP transport."""

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        log.debug("ag2: %s", sep.join(str(o) for o in objects))

    def send(self, message: Any) -> None:
        log.debug("ag2 event: %s", type(message).__name__)

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        return ""  # human_input_mode is NEVER: never asked


def _not_its_price_table(record: logging.LogRecord) -> bool:
    """AG2 warns on every call to a model missing from its own price table; costs here come
    from massgen-mcp's (config/prices.py), so that warning says nothing."""
    return "The cost will be 0" not in record.getMessage()


@functools.cache
def _autogen() -> Any:
    """The `autogen` module, imported once with its stdout output turned to logging."""
    if not ag2_installed():
        raise ConfigError(f"type ag2 needs AG2: {INSTALL}")
    for name in _STDOUT_LOGGERS:  # a handler now: AG2 adds its stdout one only if none
        logger = logging.getLogger(name)
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
    logging.getLogger("ag2.event.processor").propagate = False
    logging.getLogger("autogen.oai.client").addFilter(_not_its_price_table)
    try:
        with warnings.catch_warnings():  # its own deprecations (jsonschema), at import only
            warnings.simplefilter("ignore", DeprecationWarning)
            module = importlib.import_module("autogen")
            io_base = importlib.import_module("autogen.io.base")
    except ImportError as e:  # e.g. ag2 1.x, which has no `autogen` package
        raise ConfigError(f"type ag2 needs ag2 0.14 (the `autogen` API): {INSTALL} "
                          f"({e})") from None
    io_base.IOStream.set_global_default(_LogStream())
    return module


def _key(entry: LLMEntry, index: int, spec: AgentSpec, env: Mapping[str, str]) -> str:
    """The entry's key: the member's (first entry, resolved when the file was loaded), its
    own, or its provider's variable; none for a server on this machine, which is never sent
    a key it did not ask for (as for type chatcompletion)."""
    from massgen_mcp.urls import is_loopback_url

    if index == 0 and spec.api_key is not None:
        return spec.api_key.get_secret_value()
    if entry.api_key:
        return entry.api_key
    if entry.endpoint and is_loopback_url(entry.endpoint):
        return "not-needed"  # the SDK refuses to start without one
    for name in entry.key_env:
        if env.get(name):
            return str(env[name])
    raise MissingKeyError(entry.api_type, entry.key_env, f"{spec.id} (ag2 llm_config[{index}])")


class AG2Backend:
    """`Backend` for an AG2 agent."""

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        extra = spec.backend.model_extra or {}
        raw = extra.get("agent_config")
        cfg: dict[str, Any] = raw if isinstance(raw, dict) else {}
        try:
            entries = llm_entries(cfg or None, f"{spec.id}: agent_config")
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if not entries:  # `--models ag2/<model>`: an OpenAI-compatible entry of its own
            entries = [LLMEntry("openai", spec.model, spec.base_url, None, spec.backend.temperature,
                                spec.backend.top_p, None)]
        if context is not None and context.env is not None:
            env: Mapping[str, str] = context.env
        else:
            from massgen_mcp.config.env import Environment

            env = Environment()
        autogen = _autogen()
        self._keys = [_key(e, i, spec, env) for i, e in enumerate(entries)]
        config = autogen.LLMConfig(*[self._entry(e, i) for i, e in enumerate(entries)])
        kind = autogen.AssistantAgent if cfg.get("type") == "assistant" \
            else autogen.ConversableAgent
        self.agent = kind(
            name=str(cfg.get("name") or spec.id), human_input_mode="NEVER",
            system_message=cfg.get("system_message") or DEFAULT_SYSTEM_MESSAGE,
            llm_config=config, code_execution_config=False)
        self._autogen = autogen
        self._free: list[Any] = [self.agent.client]  # idle AG2 clients (see turn)
        # Errors name the first entry's key variable when a key is refused.
        self._error_spec = dataclasses.replace(spec, provider=dataclasses.replace(
            spec.provider, key_env=entries[0].key_env))

    def _entry(self, e: LLMEntry, index: int) -> dict[str, Any]:
        b = self._spec.backend
        # Only the first entry's endpoint can come from backend.base_url (config/ag2.py).
        base_url = (self._spec.base_url if index == 0 else None) or e.endpoint
        entry: dict[str, Any] = {
            "api_type": "openai", "model": e.model, "api_key": self._keys[index],
            "timeout": b.request_timeout_seconds, "max_retries": b.max_retries,
            "cache_seed": None}  # no disk cache: every turn is a real call
        if base_url:
            entry["base_url"] = base_url
        for key in ("temperature", "top_p"):
            if getattr(e, key) is not None:
                entry[key] = getattr(e, key)
        cap = e.max_tokens if e.max_tokens is not None else b.max_tokens
        if cap is not None:  # OpenAI's reasoning models take only max_completion_tokens
            entry["max_completion_tokens" if not base_url else "max_tokens"] = cap
        return entry

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        wire = self._messages(messages)
        config: dict[str, Any] = {"messages": wire, "cache": None, "agent": self.agent}
        if tools:  # the llm_config tools of this call (AG2 merges them into each entry)
            config["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools]
        client = self._free.pop() if self._free else self._autogen.OpenAIWrapper(
            **self.agent.llm_config)  # one per call in flight: AG2's wrapper is not shared
        try:
            response = await anyio.to_thread.run_sync(
                functools.partial(self._create, client, config), abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            # The thread finishes the request on its own (a socket read cannot be interrupted
            # from here); this client is closed and dropped, so nothing reuses it meanwhile.
            _close(client)
            raise
        except BaseException:
            self._free.append(client)
            raise
        self._free.append(client)
        with reading_reply(self._spec, self._redact):
            return self._read(client, response)

    def _create(self, client: Any, config: dict[str, Any]) -> Any:
        import openai

        io_base = importlib.import_module("autogen.io.base")
        with io_base.IOStream.set_default(_LogStream()), \
                stainless_errors(self._error_spec, openai, openai.OpenAIError):
            try:
                return client.create(**config)
            except TimeoutError:  # AG2's wrapper turns the SDK's timeout into this
                raise timeout_error(self._spec) from None
            except openai.OpenAIError:
                raise  # translated by stainless_errors
            except (RuntimeError, ValueError, TypeError, KeyError) as e:
                raise PermanentBackendError(
                    f"{self._spec.label}: AG2 could not make the call: "
                    f"{self._redact(str(e))[:240]}", provider=self.provider,
                    model=self.model) from None

    def _messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The AG2 agent's system message first, then the run's (one system message)."""
        ours = [m.content for m in messages if m.role == "system" and m.content]
        system = "\n\n".join([self.agent.system_message, *ours])
        return [{"role": "system", "content": system},
                *_wire_messages([m for m in messages if m.role != "system"])]

    def _read(self, client: Any, response: Any) -> Turn:
        extracted = client.extract_text_or_completion_object(response)
        if not extracted:
            raise ValueError("the reply has no choices")
        message = extracted[0]
        if hasattr(message, "model_dump"):
            message = message.model_dump()
        text, calls = (message, []) if isinstance(message, str) or message is None else (
            message.get("content") or "", message.get("tool_calls") or [])
        parsed = []
        for tc in calls:
            function = tc.get("function") if isinstance(tc, dict) else None
            if not function:  # a non-function (custom) tool call: none was offered
                continue
            parsed.append(tool_call(tc.get("id") or new_call_id(), str(function.get("name")),
                                    function.get("arguments")))
        usage = Usage(calls=1)
        reported = getattr(response, "usage", None)
        if reported is not None:
            usage.input_tokens = count(getattr(reported, "prompt_tokens", 0))
            usage.output_tokens = count(getattr(reported, "completion_tokens", 0))
        choices = getattr(response, "choices", None) or []
        stop = getattr(choices[0], "finish_reason", None) if choices else None
        return Turn(text if isinstance(text, str) else "", tuple(parsed), usage, stop)

    def _redact(self, text: str) -> str:
        return redact_text(text, [k for k in self._keys if k != "not-needed"])

    async def aclose(self) -> None:
        for client in self._free:
            _close(client)
        self._free.clear()


def _close(wrapper: Any) -> None:
    """Close the connections of an AG2 `OpenAIWrapper`'s OpenAI clients. Closing is quick
    (sockets only), and a request another thread is making on them fails at once."""
    for c in getattr(wrapper, "_clients", []):
        close = getattr(getattr(c, "_oai_client", None), "close", None)
        if callable(close):
            try:
                close()
            except Exception as e:  # closing is best effort; the call is over either way
                log.debug("closing an AG2 client: %s", type(e).__name__)


def ag2_status_fix() -> str:
    """What `doctor` says about the ag2 type: empty when the extra is installed."""
    return "" if ag2_installed() else f"install the extra: {INSTALL}"
