"""MCP Tasks (`io.modelcontextprotocol/tasks`, SEP-2663): long tool calls answered with a task.

When a request declares the extension in its capabilities (the 2026-07-28 envelope's
`_meta["io.modelcontextprotocol/clientCapabilities"].extensions`), `run_consensus`, `plan` and
`checkpoint` answer at once with a `CreateTaskResult` (`resultType: "task"`) as soon as their
run exists; the tool body goes on in the server's background task group and the client
follows it with `tasks/get` (status `working` with the progress text, then `completed` with
the tool's result), stops it with `tasks/cancel` (the run is cancelled; its best answer is
kept) and may send `tasks/update` (acknowledged; these tools never ask for input).

The task store is the run store: a task id is an unguessable capability whose SHA-256 names
a pointer (holding the run id) kept by the run records (`RunRecords.put_task`: a file
`<state>/tasks/<sha256>.json`, or a Redis key, so any replica on the same Redis answers
`tasks/get`); the status always comes from the run itself. So a task outlives the request
that made it and the client that sent it, and after a restart a task whose run was
interrupted reports `failed` with the run's best answer so far. Requests without the
extension, and every request on the 2025-11-25 wire (where the spec forbids a
`CreateTaskResult`), take the synchronous path unchanged, and so does a `checkpoint` call
whose client declares form elicitation (it may ask the person, in the call itself).
`notifications/tasks` are not pushed: the spec makes them optional, and polling is what
every client must do anyway.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolRequestParams, RequestParams
from pydantic import BaseModel, ConfigDict, Field

from massgen_mcp.errors import MassgenError
from massgen_mcp.server.users import asking

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from massgen_mcp.app import App
    from massgen_mcp.coordination.result import RunResult


class TaskHost(Protocol):
    """What the extension needs of the server's `ToolHost`: the App (its run store) and the
    task group that outlives requests."""

    app: App
    background: anyio.abc.TaskGroup | None

log = logging.getLogger("massgen_mcp.server.tasks")

EXTENSION_ID = "io.modelcontextprotocol/tasks"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
#: The tools whose calls may become tasks (the ones that run a team).
TASK_TOOLS = frozenset({"run_consensus", "plan", "checkpoint"})
POLL_INTERVAL_MS = 2000
#: Finished tasks whose exact result stays in memory (older ones come from the run record).
LIVE_TASKS = 256
_TERMINAL_RUN = {"cancelled": "cancelled"}

_current: contextvars.ContextVar[Task | None] = contextvars.ContextVar("massgen_task",
                                                                       default=None)


def current_task() -> Task | None:
    """The task the running tool body belongs to, if it was started as one."""
    return _current.get()


#: SEP-2575: a request that needs a capability the client did not declare.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
#: An HTTP header that disagrees with the body (HTTP 400).
HEADER_MISMATCH = -32020


def _declares(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Does this request's own capabilities (the 2026-07-28 envelope) declare the tasks
    extension?"""
    capabilities = (ctx.meta or {}).get(CAPABILITIES_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and EXTENSION_ID in extensions


def _require_declared(ctx: ServerRequestContext[Any, Any], what: str = "tasks/*") -> None:
    """tasks/* serve only 2026-07-28 requests that declare the extension (SEP-2575: a server
    must not rely on a capability the client did not declare; a 2025-11-25 session cannot
    declare it, so it is refused too)."""
    if not (str(ctx.protocol_version) >= "2026" and _declares(ctx)):
        raise MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                       message=f"{what} needs the {EXTENSION_ID} extension in this "
                               "request's client capabilities (protocol 2026-07-28)",
                       data={"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}})


#: The HTTP header that names a request's target; for tasks/* it is the task id.
_NAME_HEADER = "mcp-name"


def _require_name(ctx: ServerRequestContext[Any, Any], task_id: str) -> None:
    """Over HTTP, a tasks/* request carries its task id in `Mcp-Name` too: missing or
    different is HTTP 400 / -32020 (the SDK checks this header only for its own methods)."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None:  # stdio, in memory: no headers to agree with
        return
    from mcp.shared.inbound import decode_header_value

    given = headers.get(_NAME_HEADER)
    if given is None:
        raise MCPError(code=HEADER_MISMATCH, message=f"{ctx.method} needs the Mcp-Name header "
                                                     "(the task id)")
    if decode_header_value(given) != task_id:
        raise MCPError(code=HEADER_MISMATCH, message="Mcp-Name header does not match the "
                                                     "request body's 'taskId' parameter")


class ListenGuard:
    """Server middleware: `subscriptions/listen` for task ids (`notifications.taskIds`) is
    the tasks extension's, so it needs the extension declared too (-32021)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any],
                       call_next: CallNext) -> HandlerResult:
        if ctx.method == "subscriptions/listen":
            params = ctx.params if isinstance(ctx.params, dict) else {}
            wanted = params.get("notifications")
            if isinstance(wanted, dict) and "taskIds" in wanted:
                _require_declared(ctx, "subscriptions/listen for taskIds")
        return await call_next(ctx)


def _digest(task_id: str) -> str:
    """What names a task's pointer: the id itself (a capability) is never stored."""
    return hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _dump(result: HandlerResult) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dict(result or {})


@dataclass(eq=False)
class Task:
    """A task live in this process: the tool call behind it and what it has said so far."""

    task_id: str
    tool: str
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    run_id: str | None = None
    message: str = "starting the run"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    settled: anyio.Event = field(default_factory=anyio.Event)  # run bound, or call over
    done: anyio.Event = field(default_factory=anyio.Event)
    owner: TasksExtension | None = None

    def bind(self, run_id: str) -> None:
        """The call's run exists: tie the task to it (see `TasksExtension.bind`)."""
        if self.owner is not None:
            self.owner.bind(self, run_id)

    def progress(self, message: str) -> None:
        """The same text as the progress notification the call would carry."""
        self.message = message
        self.updated_at = _now()


class TaskIdParams(RequestParams):
    """`tasks/get` and `tasks/cancel` params."""

    # Validators are built at the first tasks/* request, not at start-up (about 1 ms each).
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)
    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


class TasksExtension(Extension):
    """The tasks extension over the server's `ToolHost` (its App's run store)."""

    identifier = EXTENSION_ID

    def __init__(self, host: TaskHost,
                 render: Callable[[RunResult], CallToolResult]) -> None:
        self.host = host
        #: A run record as the tool result its call would have given (server/tools.py).
        self.render = render
        self.live: dict[str, Task] = {}

    # ------------------------------------------------------------------ tools/call

    async def intercept_tool_call(self, params: CallToolRequestParams,
                                  ctx: ServerRequestContext[Any, Any],
                                  call_next: CallNext) -> HandlerResult:
        if not self._eligible(params, ctx):
            return await call_next(ctx)
        task = Task(task_id="mgt_" + secrets.token_urlsafe(32), tool=params.name, owner=self)
        assert self.host.background is not None
        self.host.background.start_soon(self._work, task, ctx, call_next)
        await task.settled.wait()
        if task.run_id is None:  # over before any run existed (bad arguments): answer now
            if task.error is not None:
                raise MCPError(code=task.error["code"], message=task.error["message"])
            return task.result
        return {"resultType": "task", **self._header(task, "working", task.message)}

    def _eligible(self, params: CallToolRequestParams, ctx: ServerRequestContext[Any, Any]
                  ) -> bool:
        if params.name not in TASK_TOOLS or self.host.background is None:
            return False
        if (params.arguments or {}).get("wait") is False:  # the caller polls get_run itself
            return False
        if not str(ctx.protocol_version) >= "2026":  # SEP-2663: never on earlier revisions
            return False
        from massgen_mcp.server.checkpoint_person import stays_in_the_call

        # A checkpoint that may ask its person answers in the call (input-required).
        return _declares(ctx) and not stays_in_the_call(params.name,
                                                          (ctx.meta or {}).get(CAPABILITIES_KEY))

    async def _work(self, task: Task, ctx: ServerRequestContext[Any, Any],
                    call_next: CallNext) -> None:
        _current.set(task)
        try:
            task.result = _dump(await call_next(ctx))
        except MCPError as e:
            task.error = {"code": e.error.code, "message": e.error.message}
        except Exception as e:
            log.exception("task %s (%s) failed", task.task_id[:12], task.tool)
            task.error = {"code": INTERNAL_ERROR, "message": f"internal error: "
                                                             f"{type(e).__name__}"}
        finally:
            task.updated_at = _now()
            task.done.set()
            task.settled.set()

    def bind(self, task: Task, run_id: str) -> None:
        """Tie `task` to its run (called by the host once the run exists): the pointer file
        is written before the client learns the task id, so `tasks/get` resolves at once."""
        if task.run_id is not None:
            return
        pointer = {"run_id": run_id, "tool": task.tool, "created_at": task.created_at}
        self.host.app.store.put_task(_digest(task.task_id), pointer)
        task.run_id = run_id
        self.live[task.task_id] = task
        task.settled.set()
        # Finished tasks are answered from their run record once they leave this table.
        while len(self.live) > LIVE_TASKS:
            oldest = next((k for k, t in self.live.items() if t.done.is_set()), None)
            if oldest is None:
                break
            del self.live[oldest]

    # ------------------------------------------------------------------ tasks/*

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskIdParams, self._get),
                MethodBinding("tasks/update", TaskUpdateParams, self._update),
                MethodBinding("tasks/cancel", TaskIdParams, self._cancel)]

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
                   ) -> dict[str, Any]:
        _require_declared(ctx)
        _require_name(ctx, params.task_id)
        return self.detailed(params.task_id)

    async def _update(self, ctx: ServerRequestContext[Any, Any], params: TaskUpdateParams
                      ) -> dict[str, Any]:
        _require_declared(ctx)
        _require_name(ctx, params.task_id)
        self._find(params.task_id)  # these tools never ask for input: nothing to apply
        return {}

    async def _cancel(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams
                      ) -> dict[str, Any]:
        _require_declared(ctx)
        _require_name(ctx, params.task_id)
        _, run_id, _ = self._find(params.task_id)
        # Cooperative and acknowledged at once: the run stops soon, keeping its best answer.
        if self.host.background is not None:
            self.host.background.start_soon(self.host.app.cancel_run, run_id)
        return {}

    def _find(self, task_id: str) -> tuple[Task | None, str, dict[str, Any]]:
        """The task, its run and its pointer; another user's task is not found, as an
        unknown id is (its run would be hidden from them: runs/owners.py)."""
        found = self._lookup(task_id)
        try:
            self.host.app.run_owner(found[1], asking())
        except MassgenError:
            raise _not_found() from None
        return found

    def _lookup(self, task_id: str) -> tuple[Task | None, str, dict[str, Any]]:
        task = self.live.get(task_id)
        if task is not None and task.run_id is not None:
            return task, task.run_id, {"tool": task.tool, "created_at": task.created_at}
        pointer = self.host.app.store.task_pointer(_digest(task_id))
        if pointer is None or not isinstance(pointer.get("run_id"), str):
            raise _not_found()
        return None, pointer["run_id"], pointer

    def detailed(self, task_id: str) -> dict[str, Any]:
        """The `DetailedTask` for `task_id`, from the live call or the run record."""
        task, run_id, pointer = self._find(task_id)
        try:
            run = self.host.app.get_run(run_id, asking())
        except MassgenError as e:
            raise MCPError(code=INVALID_PARAMS, message=f"Failed to retrieve task: {e}"
                           ) from None
        head = Task(task_id=task_id, tool=str(pointer.get("tool", "")),
                    created_at=str(pointer.get("created_at") or run.started_at or _now()),
                    run_id=run_id) if task is None else task
        if task is not None and task.done.is_set():
            if task.error is not None:
                return {**self._header(head, "failed", task.error["message"]),
                        "error": task.error}
            status = _TERMINAL_RUN.get(run.status, "completed")
            return {**self._header(head, status, _closing(run)), "result": task.result}
        if task is not None:  # the call is still going (its run may be writing its outcome)
            return self._header(head, "working", task.message)
        if run.status == "running":
            return self._header(head, "working", "running")
        return self._from_record(head, run)

    def _from_record(self, head: Task, run: RunResult) -> dict[str, Any]:
        """A task whose call is not live here (the server restarted): its run record says
        how it ended; an interrupted run is a failed task carrying its best answer. It was
        last updated when its run ended, whoever reads it and whenever."""
        head.updated_at = _ended_at(run) or head.created_at
        result = _dump(self.render(run))
        if run.status == "interrupted":
            message = (f"the run was interrupted ({run.error or 'the server stopped'}); "
                       f"its best answer so far is in error.data.result and get_run")
            return {**self._header(head, "failed", message),
                    "error": {"code": INTERNAL_ERROR, "message": message,
                              "data": {"run_id": run.run_id, "result": result}}}
        status = _TERMINAL_RUN.get(run.status, "completed")
        return {**self._header(head, status, _closing(run)), "result": result}

    def _header(self, task: Task, status: str, message: str) -> dict[str, Any]:
        return {"taskId": task.task_id, "status": status, "statusMessage": message,
                "createdAt": task.created_at, "lastUpdatedAt": task.updated_at,
                "ttlMs": None, "pollIntervalMs": POLL_INTERVAL_MS,
                "_meta": {"massgen/runId": task.run_id}}


def _ended_at(run: RunResult) -> str | None:
    """When a finished run ended (its start plus its length), as the task's timestamps."""
    import calendar

    try:
        start = calendar.timegm(time.strptime(run.started_at, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + run.elapsed_seconds))


def _not_found() -> MCPError:
    return MCPError(code=INVALID_PARAMS, message="Failed to retrieve task: Task not found")


def _closing(run: RunResult) -> str:
    if run.status == "cancelled":
        return (f"cancelled; the best answer so far is kept in run {run.run_id} (get_run)")
    return f"{run.status}: run {run.run_id}"
