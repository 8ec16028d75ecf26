"""Effects are the measure: every dangerous input of the hook corpus, run for real.

Each input runs in its own disposable bubblewrap namespace (`tests/effects_driver.py`: the
real filesystem read-only, tmpfs /tmp and /srv holding a fresh home and project, no network
but a loopback listener), three ways:

- hook only: the real hook process decides; if it does not stop the call, the call runs
  unconfined in the namespace;
- sandbox only: the call runs as Claude Code's sandbox settings written by `setup` confine
  it (Bash under those filesystem rules without network; file tools under the permission
  rules; MCP tools unconfined, as MCP servers are);
- both: the hook decides, and what it lets through runs in the sandbox.

An input counts only for the harm it does unguarded ("none"): an effect the fixture cannot
show (a deploy with no network, a system path on the read-only root) is listed as not
observable instead of counted as prevented. The report (JSON and Markdown, path printed)
gives prevented/total per effect kind, per corpus class and per way, with the inputs
written after the code (`tests/data/hook_heldout.jsonl`, batch >= 2 of the corpus)
separately.

Goals asserted: with both layers every file, secret and guard effect is prevented; effects
the OS cannot see (remote refs, the database) are prevented by the hook.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tiers import require, require_program

pytestmark = pytest.mark.bubblewrap

DATA = Path(__file__).parents[1] / "data"
DRIVER = Path(__file__).parents[1] / "effects_driver.py"
HOME, PROJECT = "/tmp/fx/home", "/tmp/fx/home/project"
KEY, PRIVATE_TMP = f"{HOME}/.config/massgen-mcp/plan.key", "/tmp/fx/tmp"
TIMEOUT_S = 5  # per command: hostile inputs may wait on a socket or a terminal
HOST = re.compile(r"\b(?:[a-z0-9-]+\.)+(?:example|com|org|net|io|sh|dev|site)\b")
OS_BLIND = ("git: remote", "db:")  # harm done through channels the OS sandbox allows


def load() -> list[dict[str, Any]]:
    entries = []
    for name in ("hook_corpus.jsonl", "hook_heldout.jsonl"):
        path = DATA / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line) if line.strip() else None
            if entry and entry.get("expect") == "gate":
                late = name != "hook_corpus.jsonl" or int(entry.get("batch") or 1) >= 2
                entries.append({**entry, "source": name, "late": late})
    return entries


def fill(value: Any) -> Any:
    if isinstance(value, str):
        return (value.replace("{P}", PROJECT).replace("{H}", HOME).replace("{K}", KEY)
                .replace("{T}", PRIVATE_TMP))
    if isinstance(value, list):
        return [fill(v) for v in value]
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    return value


def sandbox_as_written() -> tuple[dict[str, Any], list[str]]:
    """The sandbox block and deny rules `setup --hooks` writes for the fixture's home."""
    from massgen_mcp.cli.setup import sandbox_settings

    saved = {k: os.environ.get(k) for k in ("HOME", "MASSGEN_MCP_KEY_FILE", "XDG_CONFIG_HOME")}
    os.environ.update(HOME=HOME, MASSGEN_MCP_KEY_FILE=KEY)
    os.environ.pop("XDG_CONFIG_HOME", None)
    try:
        return sandbox_settings(Path(PROJECT))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def certificate(where: Path, hosts: list[str]) -> None:
    """A self-signed CA certificate for every host the inputs name (the listener's TLS)."""
    san = ",".join(f"DNS:{h}" for h in hosts)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                    "/CN=fx", "-addext", f"subjectAltName={san}", "-keyout",
                    str(where / "key.pem"), "-out", str(where / "cert.pem")],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bwrap = require_program("sandbox", "bwrap")
    require_program("sandbox", "openssl")
    entries = load()
    hosts = sorted({h for e in entries for h in HOST.findall(json.dumps(e["input"]))}
                   | {"x.example"})
    root = tmp_path_factory.mktemp("effects")
    (root / "certs").mkdir()
    certificate(root / "certs", hosts)
    (root / "hosts").write_text("127.0.0.1 localhost " + " ".join(hosts) + "\n")
    keep = code_under_tmp()
    base = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/",
            "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/srv",
            *[arg for path in keep for arg in ("--ro-bind", path, path)],
            "--setenv", "FX_KEEP_OUT", ":".join(keep),
            "--ro-bind", str(root / "hosts"), "/etc/hosts", "--ro-bind", str(root / "certs"),
            "/tmp/fxcert", "--cap-add", "CAP_NET_BIND_SERVICE"]
    probe = subprocess.run([*base, "true"], capture_output=True, text=True, timeout=30)
    require("sandbox", probe.returncode == 0,
            f"bwrap cannot make the effects namespace here: {probe.stderr.strip()[:300]}")
    # The fixture is built once (git, sqlite) and copied fresh for every run of every input.
    (root / "template").mkdir()
    made = subprocess.run([*base, "--bind", str(root / "template"), "/tmp/fxout", "--",
                           sys.executable, str(DRIVER)], input='{"template": true}',
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    argv = [*base, "--ro-bind", str(root / "template"), "/tmp/fxtemplate", "--",
            sys.executable, str(DRIVER)]
    block, rules = sandbox_as_written()
    return {"argv": argv, "entries": entries, "sandbox": block, "rules": rules,
            "report": root / "report"}


def code_under_tmp() -> list[str]:
    """The checkout and its virtual environment when they live under /tmp or /srv (CI may
    clone there): bound read-only over the namespace's empty tmpfs, so its Python and the
    hook still run there, and left out of the snapshot of what an input changed."""
    paths = {str(DRIVER.parent.parent.resolve()), str(Path(sys.prefix).resolve())}
    return sorted(p for p in paths if p.startswith(("/tmp/", "/srv/")))


def run_one(box: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    spec = {"entry": entry, "input": fill(entry["input"]), "sandbox": box["sandbox"],
            "rules": box["rules"], "timeout": TIMEOUT_S,
            "hook": [sys.executable, "-m", "massgen_mcp.hook.main", "pre-tool-use"],
            # this checkout's hook, not whichever one the interpreter has installed (a
            # worktree shares the main checkout's virtual environment)
            "hook_env": {"PYTHONPATH": str(DRIVER.parent.parent.resolve())}}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "FX_CERT": "/tmp/fxcert/cert.pem", "FX_CERT_KEY": "/tmp/fxcert/key.pem",
           "FX_CA": "/tmp/fxcert/cert.pem"}
    try:
        proc = subprocess.run(box["argv"], input=json.dumps(spec), capture_output=True,
                              text=True, timeout=120, env=env)
        out: dict[str, Any] = json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        return {**entry, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    blocked = out["verdict"] in ("deny", "ask")
    return {**entry, "verdict": out["verdict"], "none": out["none"],
            "hook": [] if blocked else out["none"], "sandbox": out["sandbox"],
            "both": [] if blocked else out["sandbox"]}


def kind(effect: str) -> str:
    return effect.split(":", 1)[0]


def tally(results: list[dict[str, Any]]) -> dict[str, Any]:
    """prevented/total per way, per effect kind and per corpus class."""
    table: dict[str, Any] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for r in results:
        if "error" in r:
            continue
        for way in ("hook", "sandbox", "both"):
            for effect in r["none"]:
                for key in (f"kind {kind(effect)}", f"class {r['class']}", "all"):
                    cell = table[way][key]
                    cell[1] += 1
                    cell[0] += effect not in r[way]
    return {way: dict(rows) for way, rows in table.items()}


def write_report(path: Path, results: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    groups = {"written before the code": [r for r in results if not r["late"]],
              "written after the code": [r for r in results if r["late"]]}
    summary = {name: tally(rs) for name, rs in groups.items()}
    (path / "effects.json").write_text(json.dumps({"summary": summary, "inputs": results},
                                                  indent=1))
    lines = ["# Effects of the hook corpus, three ways", ""]
    for name, table in summary.items():
        lines += [f"## Inputs {name}", "", "| row | hook only | sandbox only | both |",
                  "|---|---|---|---|"]
        rows = sorted({k for way in table.values() for k in way},
                      key=lambda k: (not k.startswith("all"), not k.startswith("kind"), k))
        for row in rows:
            cells = [table.get(w, {}).get(row, [0, 0]) for w in ("hook", "sandbox", "both")]
            lines.append(f"| {row} | " + " | ".join(f"{a}/{b}" for a, b in cells) + " |")
        lines.append("")
    quiet = [r for r in results if "error" not in r and not r["none"]]
    lines += [f"Inputs with no effect the fixture can show (not counted): {len(quiet)}", ""]
    lines += ["## Effects that got through both layers", ""]
    lines += [f"- `{json.dumps(r['input'])[:160]}` ({r['class']}): {r['both']}"
              for r in results if r.get("both")]
    (path / "effects.md").write_text("\n".join(lines) + "\n")
    return path / "effects.md"


@pytest.fixture(scope="module")
def results(box: dict[str, Any]) -> list[dict[str, Any]]:
    workers = max(2, min(6, (os.cpu_count() or 2) * 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(lambda e: run_one(box, e), box["entries"]))
    report = write_report(Path(os.environ.get("MASSGEN_EFFECTS_REPORT", box["report"])), done)
    print(f"\neffects report: {report}")
    print(report.read_text())
    return done


def test_every_input_ran_in_its_namespace(results: list[dict[str, Any]]) -> None:
    failed = [(r["input"], r["error"]) for r in results if "error" in r]
    assert not failed, failed[:5]
    assert len(results) >= 250
    # The fixture shows harm for most of them: the tier measures something.
    assert sum(1 for r in results if r["none"]) >= len(results) // 3


def test_both_layers_prevent_every_file_secret_and_guard_effect(
        results: list[dict[str, Any]]) -> None:
    through = [(r["tool"], r["input"], e) for r in results if "error" not in r
               for e in r["both"] if kind(e) in ("file", "secret", "guard")]
    assert not through, through


def test_the_hook_prevents_what_the_os_cannot_see(results: list[dict[str, Any]]) -> None:
    through = [(r["input"], e) for r in results if "error" not in r
               for e in r["hook"] if e.startswith(OS_BLIND)]
    assert not through, through


def test_the_sandbox_alone_keeps_the_key_and_the_guard_state(
        results: list[dict[str, Any]]) -> None:
    """Whatever Bash does, the key is not read and the guard's files are not changed
    (Claude Code's own file tools and MCP servers are outside the OS sandbox)."""
    through = [(r["input"], e) for r in results if "error" not in r and r["tool"] == "Bash"
               for e in r["sandbox"] if kind(e) == "guard"]
    assert not through, through
