"""Dangerous infrastructure, cloud, container, GitHub, package and system commands.

Gated: IaC destroys (`terraform destroy`, `apply -destroy`, `pulumi destroy`, `state rm`)
and `apply -auto-approve`; `kubectl delete|drain`; `helm uninstall`; cloud deletes (`aws
... delete-*|terminate-*`, `aws s3 rm|sync --recursive|--delete`, `aws s3 rb`, `gcloud|az
... delete`, `gsutil rm -r`); deploy commands (`fly deploy`, `vercel --prod`, ...); docker
volume deletion, privileged containers and image pushes; `gh pr merge`, `gh repo|release
delete`, `gh release create`; `chmod -R 777`-like modes and `chmod|chown -R` outside the
workspace; installs from URLs, git refs or extra indexes; registry switches (judged in
`registry_rules.py`); crontab and `systemctl enable`; `mkfs` and `dd of=/dev/...`. Standard
library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand, subcommand
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.registry_rules import config_switch
from massgen_mcp.hook.scope import Scope
from massgen_mcp.regex import lazy

_KUBECTL_VALUES = frozenset({"--context", "-n", "--namespace", "--kubeconfig", "--cluster",
                             "--user", "-s", "--server"})
_SYMBOLIC = lazy(r"^([ugoa]*)([-+=])([rwxXst]*|[ugo])$")


def world_writable(mode: str) -> bool:
    """Does a chmod mode give everyone write access (`777`, `2777`, `o+w`, `a=rwx`, ...)?"""
    if re.fullmatch(r"0*[0-7]{1,4}", mode):
        return int(mode[-1]) & 2 == 2
    for clause in mode.split(","):
        m = _SYMBOLIC.match(clause)
        if m and m.group(2) in "+=" and "w" in m.group(3) and (
                "a" in m.group(1) or "o" in m.group(1)):  # bare `+w` obeys the umask
            return True
    return False


def cli_findings(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    """Dangerous infrastructure, cloud, container, GitHub and package-tool commands."""
    program, args = cmd.program, cmd.args
    pos = cmd.positionals()
    sub = pos[0] if pos else ""

    def hit(group: str, rule: str, detail: str) -> list[Finding]:
        return [Finding(group, rule, detail)]

    if program in ("terraform", "tofu", "terragrunt"):
        if sub == "destroy" or (sub == "apply" and "-destroy" in args):
            return hit("prod_infra", "iac-destroy", f"{program} destroys infrastructure")
        if sub == "apply" and any(a.startswith(("-auto-approve", "--auto-approve")) for a in args):
            return hit("access_control", "auto-approve",
                       f"{program} apply -auto-approve skips the plan review")
        if pos[:2] == ["state", "rm"]:
            return hit("prod_infra", "iac-state-rm", f"{program} state rm drops managed state")
    elif program == "pulumi" and sub == "destroy":
        return hit("prod_infra", "iac-destroy", "pulumi destroy removes a stack's resources")
    elif program in ("kubectl", "oc"):
        ksub, _ = subcommand(cmd, _KUBECTL_VALUES)
        if ksub in ("delete", "drain"):
            return hit("prod_infra", "kubectl-delete", f"{program} {ksub} removes cluster objects")
    elif program == "helm" and sub in ("uninstall", "delete", "del"):
        return hit("prod_infra", "helm-uninstall", "helm uninstall removes a release")
    elif program == "aws":
        if any(re.match(r"^(delete|terminate|remove|purge|deregister)-", p) for p in pos):
            return hit("prod_infra", "cloud-delete", "aws call that deletes or terminates")
        if any(re.match(r"^(update|modify|put|publish|deploy|invoke|reboot|stop)-", p)
               for p in pos[1:2]):
            return hit("prod_infra", "deploy", f"aws {pos[1]} changes a live resource")
        s3 = pos[pos.index("s3") + 1:][:1] if "s3" in pos else []
        if s3 == ["rb"] or (s3 in (["rm"], ["sync"]) and (
                "--recursive" in args or "--delete" in args)):
            return hit("prod_infra", "cloud-mass-delete", f"aws s3 {s3[0]} deletes objects in bulk")
        if s3 in (["cp"], ["sync"], ["mv"]) and pos[-1].startswith("s3://") and not pos[
                -2].startswith("s3://"):  # an upload replaces what a bucket serves
            return hit("prod_infra", "deploy", f"aws s3 {s3[0]} uploads to {pos[-1]}")
    elif program in ("gcloud", "az") and "delete" in pos:
        return hit("prod_infra", "cloud-delete", f"{program} ... delete removes cloud resources")
    elif program == "gsutil" and (sub == "rb" or (sub == "rm" and (
            cmd.has_short_flag("r") or cmd.has_short_flag("R") or cmd.has_short_flag("a")))):
        return hit("prod_infra", "cloud-mass-delete", "gsutil deletes objects in bulk")
    elif program in ("docker", "docker-compose", "podman"):
        return _docker(cmd, pos) or _mounts(cmd, pos, scope)
    elif program == "setfacl" and (cmd.has_short_flag("R") or cmd.has_long("--recursive")):
        specs = [a for a in pos if re.match(r"^(d:|default:)?(o|other|m|mask|u|user|g|group)"
                                            r"(:[^:]*)?:[rwxX-]*w", a)]
        if specs:
            return hit("access_control", "chmod-world",
                       f"setfacl -R {specs[0]} widens who can write the files")
    elif program in ("chmod", "chown") and (cmd.has_short_flag("R")
                                            or cmd.has_long("--recursive")):
        if program == "chmod" and pos and world_writable(pos[0]):
            return hit("access_control", "chmod-world",
                       f"chmod -R {pos[0]} makes files writable by everyone")
        targets = pos[1:]
        outside = [t for t in targets if scope.write_finding(t) is not None]
        if outside:
            return hit("access_control", "chown-outside",
                       f"{program} -R on {outside[0]}, outside the workspace")
    elif _deploys(program, sub, pos, args):
        return hit("prod_infra", "deploy", f"{program} deploys to a live environment")
    elif program in ("gh", "glab"):
        return _gh(pos, args)
    elif program in ("pip", "pip3", "uv") and "install" in pos and (  # and `python -m pip`
            risky := [a for a in args if a.startswith(("git+", "http://", "https://"))
                      or a.split("=", 1)[0] in ("--index-url", "-i", "--extra-index-url",
                                                "--trusted-host")]):
        # a bare `install` word (`pip config set x install`) goes on to the config switch
        return hit("supply_chain", "pip-untrusted", f"installs from {risky[0]}")
    elif program in ("npm", "yarn", "pnpm", "bun", "gem", "composer") and sub in (
            "install", "i", "add", "require") and (risky := [
                p for p in pos[1:] if re.match(r"^(git\+|https?://|git://|github:|gitlab:"
                                              r"|bitbucket:|[\w.-]+@[\w.-]+:)", p)]):
        return hit("supply_chain", "pip-untrusted", f"{program} installs from {risky[0]}")
    elif switch := config_switch(program, pos):
        return hit("supply_chain", "registry-switch", switch)
    elif program == "go" and sub in ("run", "install") and any(
            "@" in p or re.match(r"^[\w-]+\.[\w.-]+/", p) for p in pos[1:]):
        return hit("supply_chain", "remote-module",
                   f"go {sub} fetches a remote module and runs or installs it")
    elif program == "cargo" and sub == "install" and any(
            a.split("=", 1)[0] in ("--git", "--index", "--registry") for a in args):
        return hit("supply_chain", "pip-untrusted", "cargo install builds a crate from a "
                   "git repository or another registry")
    elif program in ("crontab", "incrontab", "fcrontab") and not cmd.has_short_flag("l"):
        return hit("supply_chain", "persistence", "installs a crontab")
    elif program == "systemctl" and sub == "enable":
        return hit("supply_chain", "persistence", "enables a system service at boot")
    elif (program == "dd" and any(a.startswith("of=/dev/") for a in args)) or (
            program == "mkfs" or program.startswith("mkfs.")):
        return hit("destruction", "disk-overwrite", f"{program} overwrites a device")
    return []


def _deploys(program: str, sub: str, pos: list[str], args: list[str]) -> bool:
    if program in ("fly", "flyctl", "cdk", "serverless", "sls", "eb", "firebase"):
        return sub == "deploy"
    if program in ("vercel", "netlify"):
        return "--prod" in args
    return program in ("gcloud", "az") and "deploy" in pos


def _docker(cmd: SimpleCommand, pos: list[str]) -> list[Finding]:
    args = cmd.args
    if cmd.program == "docker-compose":
        pos = ["compose", *pos]
    head = pos[:2]
    if head == ["system", "prune"] or (head[:1] == ["volume"] and pos[1:2] in (["rm"], ["prune"])):
        return [Finding("destruction", "docker-volumes", "deletes docker volumes and data")]
    if head == ["compose", "down"] and (cmd.has_short_flag("v") or "--volumes" in args):
        return [Finding("destruction", "docker-volumes", "compose down -v deletes volumes")]
    if head[:1] == ["push"]:
        return [Finding("external_comms", "publish", "pushes an image to a registry")]
    if head[:1] == ["run"] and ("--privileged" in args or any(
            a.startswith(("/:", "-v/:")) for a in args)):
        return [Finding("supply_chain", "privileged-container",
                        "runs a privileged container or mounts the host root")]
    return []


def _mounts(cmd: SimpleCommand, pos: list[str], scope: Scope) -> list[Finding]:
    """`docker run -v ~/:/h img rm -rf /h/x`: a writable mount of a host directory outside
    the workspace hands it to whatever the container runs (the hook cannot see inside)."""
    if pos[:1] not in (["run"], ["create"]) and pos[:2] != ["container", "run"]:
        return []
    mounts: list[tuple[str, bool]] = []  # (host path, read-only)
    for i, arg in enumerate(cmd.args):
        spec = cmd.args[i + 1] if arg in ("-v", "--volume") and i + 1 < len(cmd.args) else (
            arg.split("=", 1)[1] if arg.startswith("--volume=") else None)
        if spec is not None:
            host, _, rest = spec.partition(":")
            mounts.append((host, "ro" in rest.rsplit(":", 1)[-1].split(",")))
        elif arg.startswith("--mount") and (m := re.search(r"(?:src|source)=([^,]+)", arg := (
                arg if "=" in arg or i + 1 >= len(cmd.args) else cmd.args[i + 1]))):
            mounts.append((m.group(1), "readonly" in arg or "ro=true" in arg))
    for host, readonly in mounts:
        if readonly or not host.startswith(("/", "~", ".", "$")) or "$(" in host:
            continue  # a named volume, mounted read-only, or computed (judged elsewhere)
        if scope.write_finding(host) is not None:
            return [Finding("exfiltration", "container-mount",
                            f"mounts {host} into a container, writable: what it runs there "
                            "the hook cannot see")]
    return []


def _gh(pos: list[str], args: list[str]) -> list[Finding]:
    head = pos[:2]
    if head in (["pr", "merge"], ["mr", "merge"]):
        group = "access_control" if "--admin" in args else "source_control"
        return [Finding(group, "gh-merge", "merges a pull request into a shared branch")]
    if head in (["repo", "delete"], ["release", "delete"]):
        return [Finding("destruction", "gh-delete", f"gh {' '.join(head)} deletes it for good")]
    if head == ["workflow", "run"]:  # a workflow runs with the repository's secrets
        return [Finding("prod_infra", "deploy", "gh workflow run starts a remote workflow")]
    if head == ["release", "create"]:
        return [Finding("external_comms", "publish", "publishes a GitHub release")]
    if head[:1] == ["api"] and any(a.upper() == "DELETE" for a in args):
        return [Finding("destruction", "gh-delete", "gh api DELETE request")]
    return []
