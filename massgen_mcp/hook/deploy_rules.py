"""Programs whose business is a live environment: a verb not known only to read changes it.

A cluster, IaC, PaaS or config-management CLI (`kubectl`, `helm`, `terraform`, `pulumi`,
`cdk`, `sam`, `fly`, `heroku`, `wrangler`, `argocd`, `ansible-playbook`, ...) is judged by
its verb, failing closed: the verbs that only read or work locally (`get`, `plan`, `diff`,
`logs`, `synth`, `template`, `dev`, ...) pass, and so do dry runs; any other verb
(`apply`, `up`, `rollback`, `scale`, `release`, an unknown one) is a change to a live
environment and is gated. Names alone cannot list every deploying verb, but the reading
ones are few. Standard library only.
"""

from __future__ import annotations

from massgen_mcp.hook.command import SimpleCommand, subcommand, wordset
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.reach_rules import project_tasks
from massgen_mcp.regex import lazy

#: Verbs that read or stay on this machine, whatever the program.
_READS = wordset(
    "get list ls describe show status info logs log tail top history diff plan preview synth "
    "synthesize validate lint fmt template version help whoami doctor completion login logout "
    "auth init config pull local inspect events env print dev serve emulators output "
    "providers graph workspace explain api-resources api-versions cluster-info port-forward "
    "wait kustomize plugin proxy options search repo dependency dep package fetch select "
    "verify about context docs notices acknowledge metadata build link unlink whoami open "
    "offline render diagnose fix schema health console platform use account manifests "
    "can-i types generate exec cp attach debug ps")
#: Groups whose own verb is the next word (`kubectl rollout status`, `terraform state list`).
_GROUPS = wordset("rollout state stack apps app releases secrets machines volumes scale "
                  "pg addons domains kv d1 r2 sites functions hosting invoke")
#: Verbs that read for one program only and change things for the others.
_LOCAL = {"helm": wordset("create"), "pulumi": wordset("new"), "cdk": wordset("bootstrap-show")}
_PROGRAMS = wordset(
    "kubectl oc helm terraform tofu terragrunt pulumi cdk cdktf serverless sls sam fly flyctl "
    "vercel netlify heroku firebase wrangler railway kamal skaffold argocd doctl eb cap "
    "ansible-playbook")
_VALUES = frozenset({"--context", "-n", "--namespace", "--kubeconfig", "--cluster", "--user",
                     "-s", "--server", "--stack", "-a", "--app", "-p", "--profile",
                     "--stage", "--region", "-i", "--inventory", "--project", "-e",
                     "--environment", "--scope"})
#: Contexts that name a cluster on this machine.
_LOCAL_CONTEXT = ("kind-", "minikube", "docker-desktop", "k3d-", "rancher-desktop", "colima")


def _dry(cmd: SimpleCommand) -> bool:
    return any(a in ("--dry-run", "--check", "-C", "--syntax-check", "--list-hosts",
                     "--list-tasks", "--dryrun", "--preview")
               or (a.startswith("--dry-run=") and a != "--dry-run=none")
               for a in cmd.args)


def _local_context(cmd: SimpleCommand) -> bool:
    args = cmd.args
    for i, a in enumerate(args):
        value = args[i + 1] if a in ("--context", "--kube-context") and i + 1 < len(args) else (
            a.split("=", 1)[1] if a.startswith(("--context=", "--kube-context=")) else "")
        if value.startswith(_LOCAL_CONTEXT):
            return True
    return False


#: Words of a project task's name that say it ships (`make deploy`, `npm run release:prod`).
_SHIPS = wordset("deploy deployment release publish ship promote rollout")
_TASK_PARTS = lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def task_ships(cmd: SimpleCommand) -> str | None:
    """The task of a project task runner whose name says it deploys, releases or publishes
    (its recipe is not on the line; the name is all the hook sees), or None. A dry run, or a
    publish to this machine (`gradle publishToMavenLocal`), stays here."""
    tasks = project_tasks(cmd)
    if tasks is None or any(a in ("-n", "--dry-run", "--just-print", "--recon")
                            for a in cmd.args):
        return None
    for task in tasks:
        if "." in task or "/" in task:  # `make release-notes.md`: a file, not a step
            continue
        parts = {p.lower() for p in _TASK_PARTS.findall(task)}
        if parts & _SHIPS and "local" not in parts:
            return task
    return None


def deploy_findings(cmd: SimpleCommand) -> list[Finding]:
    """A live-environment CLI run with a verb that is not known only to read, or a project
    task named for shipping."""
    program = cmd.program
    if task := task_ships(cmd):
        return [Finding("prod_infra", "deploy", f"`{program} {task}` is a project task named "
                        "for shipping (deploy, release, publish): its recipe is not on the line")]
    if program not in _PROGRAMS or _dry(cmd) or _local_context(cmd):
        return []
    if program == "ansible-playbook":  # every run executes the play on its hosts
        return [Finding("prod_infra", "deploy", "ansible-playbook runs a play on its hosts")]
    verb, idx = subcommand(cmd, _VALUES)
    rest = [a for a in cmd.args[idx + 1:] if not a.startswith("-")]
    if program == "cap" and verb and verb not in _READS:  # `cap STAGE TASK`
        verb = rest[0] if rest else ""
    topic, _, action = verb.partition(":")  # heroku/firebase `apps:destroy`
    if action:
        reads = topic in ("emulators",) or action in _READS
    elif verb in _GROUPS:
        reads = not rest or rest[0] in _READS or rest[0].startswith(("list", "get"))
    else:
        reads = verb in _READS or verb in _LOCAL.get(program, frozenset())
    if not verb:  # bare `vercel` deploys the directory; the others print their help
        reads = program != "vercel"
    if reads:
        return []
    return [Finding("prod_infra", "deploy",
                    f"`{program} {verb}` changes a live environment")]
