"""The Redis store (`--store redis://...`) against a real redis-server (tests/redis_server.py):
its URLs and start-up, and its commands.

A run recorded through one engine is read back by another store on the same Redis; bad URLs,
an unreachable, password-protected, TLS or unix-socket Redis; the password never in an error
or a log; `report`, `view` and `export` read from Redis. The behaviour both stores share is
in test_store_contract.py; many processes in test_redis_replicas.py; faults in
test_redis_faults.py.
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
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import ConfigError, MassgenError, RunNotFoundError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store import RUN_FINISHED, RunStore
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.runs.store_url import check_store_url, masked_url


async def test_a_run_recorded_in_redis_is_read_back_by_another_store(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    from massgen_mcp.runs.scale.redis_store import RedisStore

    provider.script("redis-a", answer_then_vote("42"))
    team = make_team(provider, [("a", "openai_chat", "redis-a")])
    store = open_store(redis_url, tmp_path / "one")
    assert isinstance(store, RedisStore)
    engine = Engine(tmp_path / "one", Environment({}), store=store)
    result = await engine.prepare(team, "What is six times seven?").start()
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


@pytest.mark.redis
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


@pytest.mark.parametrize("command", [[], ["worker"], ["export", "latest"]])
def test_the_store_url_may_come_from_the_environment_and_never_from_a_project_env(
        tmp_path: Path, command: list[str]) -> None:
    """$MASSGEN_MCP_STORE keeps a password out of `ps`; a hostile repository's `.env` must
    not point the records (tasks, answers) at a Redis of its choosing."""
    import os

    url = f"redis://:sekret-pass-123@127.0.0.1:{free_port()}/0"
    env = {k: v for k, v in os.environ.items() if k != "MASSGEN_MCP_STORE"}
    argv = [sys.executable, "-m", "massgen_mcp.cli", *command, "--state-dir", str(tmp_path)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, cwd=tmp_path,
                         env={**env, "MASSGEN_MCP_STORE": url})
    assert out.returncode != 0, out.stderr
    assert "does not answer" in out.stderr and ":***@" in out.stderr
    assert "sekret-pass-123" not in out.stderr + out.stdout

    (tmp_path / ".env").write_text(f"MASSGEN_MCP_STORE={url}\n")
    if command == ["worker"]:  # a worker has no file store to fall back to
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)
        assert out.returncode == 2 and "--store" in out.stderr
        assert "sekret-pass-123" not in out.stderr + out.stdout
    elif command:  # export: reads the files, finds no run there
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, cwd=tmp_path, env=env)
        assert "does not answer" not in out.stderr and "no runs" in out.stderr, out.stderr


def test_an_unknown_run_is_not_found(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path)
    with pytest.raises(RunNotFoundError):
        store.load("run_20261130T183300Z_a1b2c3")
    with pytest.raises(RunNotFoundError):
        store.events("run_20261130T183300Z_a1b2c3")
    assert store.ids() == []


def test_export_from_redis_through_the_command(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path / "src")
    run_id = "run_20261201T000000Z_0e0e0e"
    writer = store.open(run_id, Redactor(), {"task": "Exported?", "mode": "consensus"})
    writer.event("run_started", {})
    writer.finish(RunResult(run_id=run_id, status="completed", task="Exported?", team="t",
                            final_answer="Yes"))
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "export", "latest",
                          "--store", redis_url, "--to", str(tmp_path / "dst")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    files = RunStore(tmp_path / "dst")
    assert files.load(run_id).final_answer == "Yes"
    assert [e["kind"] for e in files.events(run_id)] == ["run_started", RUN_FINISHED]
    bad = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "export",
                          "run_20261201T000000Z_ffffff", "--store", redis_url],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert bad.returncode == 1 and "no run 'run_20261201T000000Z_ffffff'" in bad.stderr


def test_report_and_view_read_a_run_from_redis_and_refuse_a_bad_store(
        redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path / "src")
    run_id = "run_20261201T000000Z_0d0d0d"
    writer = store.open(run_id, Redactor(), {"task": "Reported from Redis?"})
    writer.event("run_started", {})
    writer.finish(RunResult(run_id=run_id, status="completed", task="Reported from Redis?",
                            team="t", final_answer="Yes, from Redis"))
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "report", "latest",
                          "--store", redis_url, "-o", "-"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Reported from Redis?" in out.stdout and "Yes, from Redis" in out.stdout
    url = f"redis://:view-secret-77@127.0.0.1:{free_port()}/0"
    bad = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "view", "--no-open",
                          "--store", url], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert bad.returncode == 1 and "does not answer" in bad.stderr
    assert "view-secret-77" not in bad.stderr + bad.stdout


@pytest.mark.redis
def test_the_password_never_reaches_a_log_when_redis_goes_away(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with RedisServer(extra=["--requirepass", "log-secret-pass-31"]) as server:
        url = f"redis://:log-secret-pass-31@127.0.0.1:{server.port}/0"
        store = open_store(url, tmp_path)
        run_id = "run_20261201T000000Z_0c0c0c"
        writer = store.open(run_id, Redactor(), {"task": "Logged?"})
        server.stop()
        with caplog.at_level("DEBUG"):
            writer.event("answer", {"agent": "a"})
            writer.status(RunResult(run_id=run_id, status="running", task="Logged?",
                                    team="t"))
            with pytest.raises(MassgenError) as e:
                store.load(run_id)
        server.restart()
        writer.finish(RunResult(run_id=run_id, status="completed", task="Logged?", team="t"))
        assert store.load(run_id).status == "completed"  # caught up
    assert "did not take its events" in caplog.text and "redis://:***@127.0.0.1" in caplog.text
    assert "log-secret-pass-31" not in caplog.text + str(e.value)


@pytest.mark.redis
def test_tls_and_unix_socket_urls_reach_their_redis(tmp_path: Path) -> None:
    with RedisServer(tls=True) as server:
        assert server.url.startswith("rediss://")
        store = open_store(server.url, tmp_path)  # verified against the server's own CA
        run_id = "run_20261201T000000Z_09f9f9"
        store.open(run_id, Redactor(), {"task": "Over TLS?"}).finish(
            RunResult(run_id=run_id, status="completed", task="Over TLS?", team="t"))
        assert store.load(run_id).status == "completed"
        plain = server.url.replace("rediss://", "redis://").split("?")[0]
        with pytest.raises(ConfigError, match="does not answer"):
            open_store(plain, tmp_path, connect_timeout=2.0, timeout=2.0)
    sock = tmp_path / "redis.sock"
    with RedisServer(extra=["--unixsocket", str(sock), "--unixsocketperm", "700"]) as server:
        store = open_store(f"unix://{sock}?db=3", tmp_path)
        assert store.ids() == []
        with pytest.raises(ConfigError, match="option the Redis client does not know"):
            open_store(f"unix://{sock}?db=3&no_such_option=1", tmp_path)
