"""The job queue between front ends and workers (`--store redis://...`): what a job says,
and the queue it travels on.

A job carries the *call* (SCALE.md decision 3): the mode, its caller-level arguments as the
front end validated and screened them, and the team *reference* (`models` or a team name,
limits, stances), never a resolved team with its keys. It is JSON, validated on read
(pydantic, unknown fields refused): whoever can write to Redis can at worst queue a call the
worker checks like any other, never make it run code.

The queue is saq (https://github.com/tobymao/saq), chosen over arq, taskiq and pydocket:
- JSON is its default serializer (pydocket pickles arguments with cloudpickle: anyone who
  can write to Redis could run code in a worker; arq pickles by default);
- asyncio-native with a small footprint: it needs croniter only (taskiq pulls aiohttp and
  a dependency-injection package; pydocket opentelemetry, prometheus, rich, typer, ...);
- it works with redis-py 8 (arq pins redis < 6, so it cannot share the store's client);
- it has what a run needs from a queue: a per-job key (one job per run id), abort of a job
  that is still queued (a run cancelled before any worker took it), a heartbeat and a sweep
  that clear the queue's own entry of a job whose worker died, `retries=1` (no redelivery),
  and a worker with a concurrency limit and a graceful stop;
- maintained (releases through 2026).
What happens to a *run* whose worker dies is not the queue's business: the run's lease in the
store ends it `interrupted` with its best answer (see runs/scale/worker.py for why no other worker
takes it over). The queue only hands each job to one worker, once.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from massgen_mcp.errors import InputError, MassgenError
from massgen_mcp.inputs import MAX_CONTEXT_CHARS, MAX_TASK_CHARS
from massgen_mcp.runs.store import check_run_id

if TYPE_CHECKING:
    from saq.queue.redis import RedisQueue

log = logging.getLogger(__name__)

#: The saq queue's name (its keys are `saq:massgen-runs:*`).
QUEUE_NAME = "massgen-runs"
#: The one function a worker runs.
RUN_FUNCTION = "run"
#: The queue's heartbeat for a job: a worker touches its jobs this often...
JOB_TOUCH_SECONDS = 10
#: ... and the sweep (any worker, every minute) clears the queue entry of a job not touched
#: for this long (its worker died; the run itself was ended by its lease long before).
JOB_HEARTBEAT_SECONDS = 60
#: How long a finished job's entry stays readable in the queue (the run's record is what
#: lasts; this is only saq's bookkeeping).
JOB_TTL_SECONDS = 600


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TeamChoice(_Strict):
    """Which team a call runs on, as the caller said it: the worker resolves it again with its
    own configuration and checks the agents against the run's record."""

    models: str | list[Annotated[str, Field(max_length=500)]] | None = Field(
        default=None, max_length=64)
    team: str | None = Field(default=None, max_length=4096)
    max_answers_per_agent: int | None = Field(default=None, ge=1, le=1000)
    timeout_s: float | None = Field(default=None, gt=0, le=7 * 86400)
    max_total_tokens: int | None = Field(default=None, gt=0)
    #: The front end's per-run caps (runs/quota.py), so the worker keeps them.
    max_provider_calls: int | None = Field(default=None, ge=1)
    max_cost_usd: float | None = Field(default=None, gt=0)
    min_agreement: Annotated[float, Field(gt=0, le=1)] | dict[
        str, Annotated[float, Field(gt=0, le=1)]] | None = None
    stances: list[Annotated[str, Field(max_length=1100)]] | None = Field(default=None,
                                                                          max_length=64)

    @field_validator("models")
    @classmethod
    def _bounded(cls, v: Any) -> Any:
        if isinstance(v, str) and len(v) > 4096:
            raise ValueError("models is longer than 4096 characters")
        return v


class ConsensusCall(_Strict):
    mode: Literal["consensus"] = "consensus"
    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    context: str | None = Field(default=None, max_length=MAX_CONTEXT_CHARS)
    follow_up_of: str | None = Field(default=None, max_length=200)


class PlanCall(_Strict):
    mode: Literal["plan"] = "plan"
    goal: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    depth: str = Field(default="dynamic", max_length=32)
    constraints: list[Annotated[str, Field(max_length=10_000)]] | str | None = Field(
        default=None)
    context: str | None = Field(default=None, max_length=MAX_CONTEXT_CHARS)


class RunJob(_Strict):
    """One run handed to a worker. `run_id` names the record the front end opened."""

    version: Literal[1] = 1
    run_id: str
    call: ConsensusCall | PlanCall = Field(discriminator="mode")
    team: TeamChoice = Field(default_factory=TeamChoice)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str) -> str:
        try:
            return check_run_id(v)
        except InputError as e:
            raise ValueError(str(e)) from None


class MalformedJob(ValueError):
    """A job in the queue that is not a `RunJob` (written to Redis by something else)."""


def read_job(kwargs: dict[str, Any] | None) -> RunJob:
    """The job a queue entry carries, validated; `MalformedJob` says what is wrong."""
    body = (kwargs or {}).get("job")
    try:
        return RunJob.model_validate(body)
    except (ValidationError, ValueError, TypeError, MassgenError) as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'job'}: {err['msg']}"
                             for err in e.errors()[:5]) if isinstance(e, ValidationError) \
            else str(e)
        raise MalformedJob(f"not a massgen-mcp run job ({problems[:500]})") from None


def _load(payload: str | bytes) -> dict[str, Any]:
    data = json.loads(payload)
    if not isinstance(data, dict):
        raise ValueError("a job entry must be a JSON object")
    return data


def queue_on(url: str) -> RedisQueue:
    """The run queue on the Redis at `url` (the store's): its own asyncio client, with bytes
    replies (saq decodes its own) and a bounded connect, so an unreachable Redis fails a
    call instead of blocking it. (No read timeout: saq's pub/sub listener blocks on reads.)"""
    import redis.asyncio

    return run_queue(redis.asyncio.Redis.from_url(url, socket_connect_timeout=3.0))


def run_queue(client: Any) -> RedisQueue:
    """The saq queue on `client` (a `redis.asyncio.Redis`), with JSON (never pickle) and an
    entry that is not a saq job dropped with a log line instead of breaking the worker's
    sweep."""
    from saq.queue.redis import RedisQueue

    class _Queue(RedisQueue):
        away = False

        async def dequeue(self, timeout: float = 0.0, poll_interval: float = 0.0) -> Any:
            """saq's take, except that a Redis that is away (restarting) is waited for, a
            second between tries, instead of every worker slot retrying in a tight loop."""
            import anyio
            import redis

            try:
                job = await super().dequeue(timeout, poll_interval)
            except (redis.RedisError, OSError) as e:
                if not self.away:
                    log.warning("the job queue's Redis does not answer (%s); trying again "
                                "every second", type(e).__name__)
                self.away = True
                await anyio.sleep(1.0)
                return None
            if self.away:
                log.warning("the job queue's Redis answers again")
                self.away = False
            return job

        def deserialize(self, payload: Any, status: Any = None) -> Any:
            try:
                return super().deserialize(payload, status)
            except Exception as e:  # JSON or saq's own fields: the entry is not ours
                log.error("the job queue holds an entry that is not a job (%s: %s); it is "
                          "dropped (something other than massgen-mcp wrote to this Redis)",
                          type(e).__name__, str(e)[:200])
                return None  # saq's sweep then removes it as a missing job

    return _Queue(client, name=QUEUE_NAME, dump=json.dumps, load=_load,
                  swept_error_message="the worker running this job stopped")


async def enqueue(queue: RedisQueue, job: RunJob) -> bool:
    """Queue `job` (keyed by its run id: a run is queued once); False when it already is."""
    queued = await queue.enqueue(
        RUN_FUNCTION, key=job.run_id, timeout=0,  # the run's own limits stop it, not saq
        heartbeat=JOB_HEARTBEAT_SECONDS, retries=1,  # once: a run is never started twice
        ttl=JOB_TTL_SECONDS, job=job.model_dump(mode="json"))
    return queued is not None


async def withdraw(queue: RedisQueue, run_id: str, reason: str) -> bool:
    """Take a job out of the queue if no worker has taken it yet (atomic with the workers'
    take: saq removes it from the queued list in one transaction); True when it was still
    queued, so this caller now decides how the run ends."""
    from saq.job import Status

    job = await queue.job(run_id)
    if job is None or job.status not in (Status.QUEUED, Status.NEW):
        return False
    removed = await queue.redis.lrem(queue.namespace("queued"), 0, job.id)
    if not removed:
        return False  # a worker took it in between: it will see the cancel or the record
    await queue.finish(job, Status.ABORTED, error=reason)
    return True
