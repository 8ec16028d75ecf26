"""The Redis store (`--store redis://...`) against a real redis-server (tests/redis_server.py).

A run recorded through one engine is read back by another process's store on the same
Redis; bad URLs and an unreachable Redis stop the command at start with the password
masked; a run whose holder stopped renewing its lease reads `interrupted`, once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agents import answer_then_vote
from helpers import make_team
from redis_server import RedisServer, free_port
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.errors import ConfigError, RunNotFoundError
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store import RUN_FINISHED, RunStore
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.runs.store_url import check_store_url, masked_url

ROOT = Path(__file__).resolve().parent.parent


def _store(url: str, state: Path, **options: float) -> object:
    return open_store(url, state, **options)


async def test_a_run_recorded_in_redis_is_read_back_by_another_store(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    from massgen_mcp.runs.redis_store import RedisStore

    provider.script("redis-a", answer_then_vote("42"))
    team = make_team(provider, [("a", "openai_chat", "redis-a")])
    store = open_store(redis_url, tmp_path / "one")
    assert isinstance(store, RedisStore)
    engine = Engine(tmp_path / "one", Environment({}), store=store)
    result = await engine.run(team, "What is six times seven?")
    assert result.status == "completed"

    other = open_store(redis_url, tmp_path / "two")  # another process's view
    [run_id] = other.ids()
    assert run_id == result.run_id
    back = other.load(run_id)
    assert (back.status, back.final_answer) == ("completed", result.final_answer)
    kinds = [e["kind"] for e in other.events(run_id)]
    assert {"answer", "vote"} <= set(kinds) and kinds[-1] == RUN_FINISHED
    seqs = [e["seq"] for e in other.events(run_id)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert not (tmp_path / "one" / "runs" / run_id / "events.jsonl").exists()  # not files
    assert [r.run_id for r in Engine(tmp_path / "two", Environment({}), store=other).list()] \
        == [run_id]


def test_no_store_url_is_the_file_store(tmp_path: Path) -> None:
    assert isinstance(open_store(None, tmp_path), RunStore)
    assert isinstance(open_store("", tmp_path), RunStore)


def test_the_file_store_never_imports_redis(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from massgen_mcp.runs.store_open import "
            "open_store; open_store(None, Path('.')); import massgen_mcp.server.transports; "
            "print('redis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("url", "problem"), [
    ("   ", "empty"),
    ("postgres://db/0", "not a store"),
    ("redis://:hunter2secret@/0", "host is missing"),
    ("redis://:hunter2secret@127.0.0.1:99999/0", "out of range"),
    ("redis://127.0.0.1:6379/zero", "not a number"),
    ("unix://?db=0", "socket's path"),
    ("redis://127.0.0.1:notaport/0", "not a URL"),
])
def test_a_bad_store_url_says_what_is_wrong_and_hides_the_password(
        url: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        open_store(url, tmp_path)
    assert problem in str(e.value)
    assert "hunter2secret" not in str(e.value)
    assert "redis://127.0.0.1:6379/0" in str(e.value)  # the fix: what a URL looks like


def test_the_password_is_masked_in_every_url_form() -> None:
    assert masked_url("redis://:pw@h:1/0") == "redis://:***@h:1/0"
    assert masked_url("rediss://user:p%40ss@h/2") == "rediss://user:***@h/2"
    assert masked_url("redis://h:6379/0") == "redis://h:6379/0"
    assert check_store_url("unix:///run/redis.sock?db=3") == "unix:///run/redis.sock?db=3"


def test_an_unreachable_redis_stops_the_store_at_start(tmp_path: Path) -> None:
    url = f"redis://:sekret-pass-123@127.0.0.1:{free_port()}/0"
    with pytest.raises(ConfigError) as e:
        open_store(url, tmp_path, connect_timeout=1.0)
    text = str(e.value)
    assert "does not answer" in text and "start redis-server" in text
    assert "sekret-pass-123" not in text and ":***@127.0.0.1" in text


def test_a_wrong_password_is_refused_at_start_without_echoing_it(tmp_path: Path) -> None:
    with RedisServer(extra=["--requirepass", "the-right-one-42"]) as server:
        good = f"redis://:the-right-one-42@127.0.0.1:{server.port}/0"
        open_store(good, tmp_path)  # answers
        bad = f"redis://:wrong-pass-99@127.0.0.1:{server.port}/0"
        with pytest.raises(ConfigError) as e:
            open_store(bad, tmp_path)
        assert "wrong-pass-99" not in str(e.value) and "***" in str(e.value)


def test_the_server_command_refuses_a_store_it_cannot_reach(tmp_path: Path) -> None:
    url = f"redis://:sekret-pass-123@127.0.0.1:{free_port()}/0"
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "--store", url,
                          "--state-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert out.returncode == 2
    assert "does not answer" in out.stderr and ":***@" in out.stderr
    assert "sekret-pass-123" not in out.stderr + out.stdout


def test_an_unknown_run_is_not_found(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path)
    with pytest.raises(RunNotFoundError):
        store.load("run_20261130T183300Z_a1b2c3")
    with pytest.raises(RunNotFoundError):
        store.events("run_20261130T183300Z_a1b2c3")
    assert store.ids() == []
