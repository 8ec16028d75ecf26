"""An MCP Tasks client written from the specification (SEP-2663, `io.modelcontextprotocol/tasks`,
2026-07-28 revision) over the official SDK's client: it declares the extension, claims the
`resultType: "task"` shape of `tools/call`, and drives `tasks/get` / `tasks/update` /
`tasks/cancel` itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal

import anyio
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import TypeAdapter

EXTENSION_ID = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}
ANY = TypeAdapter(dict[str, Any])


class CreateTaskResult(Result):
    """`CreateTaskResult = Result & Task` with `resultType: "task"`."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskParams(RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any]


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"  # Streamable HTTP: Mcp-Name is the task id


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


async def _send(session: ClientSession, request: Request[Any, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await session.send_request(request, ANY)  # type: ignore[type-var]
    return result


async def get_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    return await _send(session, GetTask(params=TaskParams(task_id=task_id)))


async def cancel_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    return await _send(session, CancelTask(params=TaskParams(task_id=task_id)))


async def update_task(session: ClientSession, task_id: str,
                      responses: dict[str, Any]) -> dict[str, Any]:
    return await _send(session, UpdateTask(params=UpdateParams(task_id=task_id,
                                                               input_responses=responses)))


OnPoll = Callable[[ClientSession, CreateTaskResult, dict[str, Any]], Awaitable[None]]


class TasksClient(ClientExtension):
    """Declares the extension and resolves a task result by polling `tasks/get` until the
    task is terminal (honouring `pollIntervalMs`, capped by `max_poll_s` for tests).
    `created` and `polls` record what the server said; `on_poll` sees every poll."""

    identifier = EXTENSION_ID

    def __init__(self, on_poll: OnPoll | None = None, max_poll_s: float = 0.05,
                 timeout: float = 60) -> None:
        self.on_poll = on_poll
        self.max_poll_s = max_poll_s
        self.timeout = timeout
        self.created: list[CreateTaskResult] = []
        self.polls: list[dict[str, Any]] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created)
        with anyio.fail_after(self.timeout):
            while True:
                task = await get_task(ctx.session, created.task_id)
                self.polls.append(task)
                if self.on_poll is not None:
                    await self.on_poll(ctx.session, created, task)
                if task["status"] in TERMINAL:
                    break
                interval = (task.get("pollIntervalMs") or 1000) / 1000
                await anyio.sleep(min(interval, self.max_poll_s))  # the protocol is polling
        if task["status"] == "failed":
            raise RuntimeError(f"task failed: {task.get('error')}")
        return CallToolResult.model_validate(task.get("result") or {"content": []})
