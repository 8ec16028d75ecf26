"""Inline code of interpreters: `python3 -c`, `perl -e`, `node -e`, `ruby -e`, `php -r`, ...

The hook cannot run or fully parse another language, so it reads the code the way a
reviewer skims it, and what it cannot see into is gated:

- code that runs a shell (`os.system`, `subprocess`, `system`, backquotes, `exec`,
  `child_process`, ...): each string literal, and all of them joined (for the list form
  `["rm", "-rf", "/"]`), is analysed as a command line;
- code that deletes, moves or truncates files (`rmtree`, `rm_rf`, `rmSync`, `unlink`, ...):
  allowed only when every such call names a literal path that would be fine to delete
  recursively; a computed path (`Dir.home`, `expanduser(...)` of a variable) is gated;
- code that opens a file for writing: literal paths are checked like a Write;
- a literal naming a secret file (`.env`, `~/.ssh/...`) gates the call (it reads it);
- decoding and executing (`b64decode` with `exec`/`eval`) is gated outright.

The same applies to code fed on stdin by a heredoc or here-string. Standard library only.
"""

from __future__ import annotations

import base64
import re

from massgen_mcp.hook.code_paths import STRING as _STRING
from massgen_mcp.hook.code_paths import call_arg as _call_arg
from massgen_mcp.hook.code_paths import read_findings
from massgen_mcp.hook.command import PYTHON, SimpleCommand
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import Scope, secret_kind
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

# program -> the options whose next argument (or attached value) is code
_CODE_FLAGS: dict[str, tuple[str, ...]] = {
    "python": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "--eval", "-p",
                                                                       "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"), "php": ("-r",),
    "ts-node": ("-e", "--eval", "-p", "--print"), "tsx": ("-e", "--eval", "-p", "--print"),
    "bun": ("-e", "--eval"),
    "deno": ("eval",), "lua": ("-e",), "Rscript": ("-e",), "julia": ("-e",),
    "osascript": ("-e",), "pwsh": ("-c", "-Command"), "powershell": ("-c", "-Command"),
    "awk": (), "gawk": (), "mawk": (), "jshell": (),
}
_RUNS_SHELL = lazy(
    r"\b(os\.system|os\.popen|subprocess|Popen|check_output|check_call|spawn\w*|execSync"
    r"|execFile\w*|child_process|system|exec[lv]?p?e?|popen|shell_exec|passthru|proc_open"
    r"|IO\.popen|Open3|pty\.spawn|Deno\.run|Deno\.Command|Bun\.spawn|\$\.run|os\.execute"
    r"|io\.popen|do shell script|system2|pipe|pcntl_exec|ProcessBuilder|Runtime\.getRuntime)\b|`"
    r"|%x[{(\[<|!]|qx[{(]|\bopen\b[^;]*[\"'](\|-|-\||\s*\|[^\"']|[^\"']*\|\s*[\"'])")
_DELETES = lazy(
    r"(?:\b(?:os|shutil|fs|fsp|promises|File|FileUtils|Dir|Files|FileSystem)\.(?:remove\w*"
    r"|unlink\w*|rmdir\w*|rmtree|rm\w*|rename\w*|move\w*|delete\w*|truncate\w*|emptyDir\w*)"
    r"|\b(?:rmtree|rm_rf|rimraf|remove_tree)|\bunlink\b|\.(?:unlink|rmdir|rm|rmSync|rmdirSync|unlinkSync|rmtree)\b)\s*\(?")
#: Any object's delete call, and bare `rm(` (Julia): `Deno.removeSync(`, `fs::remove_dir_all(`;
#: judged only when its argument names a path (`items.remove(2)` is a list).
_ANY_DELETE = lazy(
    r"(?:\.|::)(?:remove|removeSync|remove_file|remove_dir|remove_dir_all|removeAll|unlink\w*"
    r"|rmdir\w*|delete(?:Sync|Recursively|IfExists)?|rm_r|rm_rf)\s*\(|(?<![\w.$])rm\s*\(")
_PATHISH = lazy(r"[/~]|home|HOME|[pP]ath|[dD]ir|[fF]ile|glob|env|cwd|argv|ARGV")
_PATH_RECEIVER = lazy(r"""\bPath\(\s*(["'])([^"']+)\1\s*\)$""")
_LITERAL_ARG = lazy(r"""\(?\s*(?:r|b|f)?(["'])((?:(?!\1).)*)\1""")
_WRITES = lazy(r"""\b(?:open|File\.open|fopen)\s*\(\s*(["'])([^"']+)\1\s*,\s*["'][wax+]"""
                     r"""|\b(?:writeFileSync|appendFileSync|writeFile|appendFile|write_text"""
                     r"""|write_bytes|file_put_contents|File\.write)\s*\(\s*(["'])([^"']+)\3""")
#: Perl's open with the mode in the path (`open F, ">/etc/hosts"`) or apart from it
#: (`open F, ">", "/etc/hosts"`), parentheses optional.
_PERL_OPEN = lazy(r"""\bopen\s*\(?\s*(?:my\s+)?[$\w]+\s*,\s*"""
                        r"""(?:(["'])\+?(?:>>?|\+<)\1\s*,\s*)?(["'])(?(1)|\+?(?:>>?|\+<)\s*)(?P<path>[^"'|]+)\2""")
_DECODES = lazy(r"b64decode|base64|atob|Buffer\.from|decode\(|unpack|pack\(", re.I)
_EVALS = lazy(r"\b(exec|eval|compile|Function|instance_eval|class_eval)\s*\(")
_URL = lazy(r"(?i)\b(https?|ftp)://")
#: Evaluation spelt without a call's parentheses (`.then(eval)`, `eval URI.open(..)`,
#: R's `source("https://..")`, PowerShell's `iex`).
_RUNS_FETCHED = lazy(r"\(\s*eval\s*\)|\beval\s+\w|\b(source|sys\.source|require|"
                           r"load|import)\s*\(\s*[\"']?(https?|ftp)://|\b(iex|Invoke-Expression)\b",
                           re.I)


def interpreter(program: str) -> str | None:
    """The interpreter family of a program name (`python3.12` -> "python"), or None."""
    if PYTHON.match(program):
        return "python"
    return program if program in _CODE_FLAGS else None


def inline_code(cmd: SimpleCommand) -> str | None:
    """The program text an interpreter command runs inline (flag, awk program or stdin)."""
    family = interpreter(cmd.program)
    if family is None:
        return None
    if cmd.script_code is not None:
        return cmd.script_code  # a script file the same line wrote, then runs
    if family in ("awk", "gawk", "mawk"):
        pos = [a for a in cmd.args if not a.startswith("-")]
        return pos[0] if pos else None
    flags = _CODE_FLAGS[family]
    if family in ("pwsh", "powershell") and (encoded := _encoded_command(cmd.args)) is not None:
        return encoded
    for i, arg in enumerate(cmd.args):
        if arg in flags:
            rest = cmd.args[i + 1:]
            if family == "deno":  # `deno eval --unstable 'code'`: options come first
                rest = [a for a in rest if not a.startswith("-")]
            return rest[0] if rest else ""
        if arg.startswith("--") and arg.split("=", 1)[0] in flags and "=" in arg:
            return arg.split("=", 1)[1]  # `node --eval=code`
        # python -Ic / -uc 'code': a cluster of flags that ends with -c
        if family == "python" and re.fullmatch(r"-[a-zA-Z]+c", arg):
            return cmd.args[i + 1] if i + 1 < len(cmd.args) else ""
        # perl -pe / -lane '...': the cluster ends with the code flag
        if family in ("perl", "ruby") and re.fullmatch(r"-[a-zA-Z]*[eE]", arg):
            return cmd.args[i + 1] if i + 1 < len(cmd.args) else ""
        if arg.startswith(flags) and len(arg) > 2 and not arg.startswith("--") and (
                family == "python"):
            return arg[2:]  # python -c'code'
    if cmd.stdin_code is not None and not [a for a in cmd.args if not a.startswith("-")
                                           and a not in ("/dev/stdin", "/dev/fd/0")]:
        return cmd.stdin_code
    return None


def _encoded_command(args: list[str]) -> str | None:
    """PowerShell's `-EncodedCommand` (any prefix, `-ec`): base64 of UTF-16LE code, decoded
    so the rules read it like `-Command` (undecodable: marked as unknown code)."""
    for i, arg in enumerate(args[:-1]):
        flag = arg.lower()
        if flag == "-ec" or (len(flag) >= 2 and "-encodedcommand".startswith(flag)):
            try:
                return base64.b64decode(args[i + 1], validate=True).decode("utf-16-le")
            except (ValueError, UnicodeDecodeError):
                return UNKNOWN
    return None


_PS_CMDLETS = ((lazy(r"\b(Remove-Item|ri|del|erase|rd|rmdir)\b(?=[^;|]*-Recurse)", re.I),
                "rm -rf"), (lazy(r"\b(Remove-Item|ri|del|erase)\b", re.I), "rm -f"),
               (lazy(r"\b(Copy-Item|cpi)\b", re.I), "cp -r"),
               (lazy(r"\b(Move-Item|mi)\b", re.I), "mv"),
               (lazy(r"\b(Set-Content|Add-Content|Out-File)\b", re.I), "tee -a"),
               (lazy(r"\b(Invoke-Expression|iex|Start-Process|saps)\b", re.I), "eval"),
               (lazy(r"\b(Invoke-WebRequest|iwr|Invoke-RestMethod|irm)\b", re.I), "curl"))


def _as_shell(code: str) -> str:
    """PowerShell as the POSIX commands its cmdlets amount to (options dropped), so the
    shell rules judge `Remove-Item -Recurse -Force ~/x` as `rm -rf ~/x`."""
    for pattern, posix in _PS_CMDLETS:
        code = pattern.sub(posix, code)
    return re.sub(r"\s-(Recurse|Force|Path|LiteralPath|Destination|Value|Confirm:\$false)\b",
                  " ", code, flags=re.I)


def reads_code_from_stdin(cmd: SimpleCommand) -> bool:
    """Does this interpreter run whatever arrives on stdin (a pipe feeds it the program)?"""
    family = interpreter(cmd.program)
    if family is None or family in ("awk", "gawk", "mawk", "osascript"):
        return False
    if "-" in cmd.args:
        return True
    if inline_code(cmd) is not None:
        return False
    return not any(a in ("-m",) or not a.startswith("-") for a in cmd.args)


def code_findings(cmd: SimpleCommand, scope: Scope,
                  check_line: Callable[[str, Scope], list[Finding]]) -> list[Finding]:
    """Findings for the inline code of an interpreter command (see the module docstring)."""
    code = inline_code(cmd)
    if not code:
        return []
    name, family = cmd.program, interpreter(cmd.program)
    if UNKNOWN in code:
        return [Finding("supply_chain", "inline-code",
                        f"{name} runs code computed at run time; the hook cannot see it")]
    literals = [next(g for g in m.groups() if g is not None) for m in _STRING.finditer(code)]
    out: list[Finding] = []
    if _RUNS_SHELL.search(code):
        for line in [*literals, " ".join(literals)]:
            out.extend(check_line(line, scope))
        if not literals:
            out.append(Finding("supply_chain", "inline-code",
                               f"{name} code runs a command the hook cannot see"))
    for m in _DELETES.finditer(code):
        arg = _LITERAL_ARG.match(code, m.end())
        target = arg.group(2) if arg else None
        if m.group(0).startswith(".") and (receiver := _PATH_RECEIVER.search(code, 0, m.start())):
            target = receiver.group(2)  # `Path('tmp.txt').unlink()`: the path is the receiver
        finding = (scope.delete_finding(target) if target else Finding(
            "destruction", "inline-delete",
            f"{name} code calls {m.group(0).strip('( ')} on a path the hook cannot see"))
        if finding:
            out.append(finding)
    if not _DELETES.search(code):
        out.extend(Finding("destruction", "inline-delete",
                           f"{name} code calls {m.group(0).strip('(. :')} on a path it computes")
                   for m in _ANY_DELETE.finditer(code) if _PATHISH.search(_call_arg(code, m.end())))
    from massgen_mcp.hook.writers import awk_commands, code_targets

    if family in ("awk", "gawk", "mawk"):
        for line in awk_commands(code):
            out.extend(check_line(line, scope) if UNKNOWN not in line else [Finding(
                "supply_chain", "inline-code", f"{name} runs a command built at run time")])
            if re.fullmatch(r"\s*((ba|z|da|k)?sh|python3?|perl|ruby|node)(\s+-s?)?\s*", line):
                out.append(Finding("supply_chain", "pipe-to-shell",
                                   f"{name} pipes what it prints into {line.split()[0]}"))
    if family in ("pwsh", "powershell"):
        out.extend(check_line(_as_shell(code), scope))
    else:
        out.extend(f for t in code_targets(code)
                   if (f := scope.write_finding(t, verb=f"{name} code writes")))
    for path in [m.group(2) or m.group(4) for m in _WRITES.finditer(code)] + [
            m.group("path").strip() for m in _PERL_OPEN.finditer(code) if family == "perl"]:
        if finding := scope.write_finding(path, verb=f"{name} code writes"):
            out.append(finding)
    for literal in literals:
        kind = secret_kind(literal) if "\n" not in literal else None
        if kind:
            out.append(Finding("secrets", "print-secret",
                               f"{name} code reads {literal}, {kind}"))
        elif _READS.search(code) and (held := _tree_with_secrets(literal, scope)):
            out.append(Finding("secrets", "print-secret",
                               f"{name} code reads files under {literal}, which holds {held}"))
    if re.search(r"\bsocket\b|\bnet\.(connect|Socket|createConnection)|TCPSocket|fsockopen", code) \
            and re.search(r"dup2|pty\.spawn|/bin/(ba)?sh|\bsh\b.*-i|spawn\(|exec\(", code):
        out.append(Finding("exfiltration", "reverse-shell",
                           f"{name} code connects a shell to the network"))
    if _URL.search(code) and (_EVALS.search(code) or _RUNS_FETCHED.search(code)):
        out.append(Finding("supply_chain", "inline-code",
                           f"{name} code fetches code from the network and runs it"))
    if _DECODES.search(code) and _EVALS.search(code):
        out.append(Finding("supply_chain", "inline-code",
                           f"{name} code decodes and runs hidden code"))
    out.extend(computed_findings(name, code))
    words = [a for a in cmd.args if a != code and not a.startswith("-")]
    return out + read_findings(name, code, family, words)


_READS = lazy(r"\b(open|read\w*|readFileSync|File\.read|slurp|file_get_contents"
                    r"|read_text|cat)\s*\(")


def _tree_with_secrets(literal: str, scope: Scope) -> str | None:
    """The secrets (or the guard's key) a literal directory, or a glob's fixed part, holds."""
    import os

    from massgen_mcp.hook.active import key_path
    from massgen_mcp.hook.scope import holds_secrets

    head = re.split(r"[*?\[]", literal, maxsplit=1)[0]
    if head != literal:  # `~/.config/m*/p*`: the directory the glob searches
        head = head[:head.rfind("/") + 1]
    if "\n" in literal or not head.startswith(("~", "/", "$")):
        return None
    where = scope.resolve(head.rstrip("/") or "/")
    if not where or where in ("/", scope.home):
        return None  # reading under / or home is judged by what it names, not by this
    return holds_secrets(where, scope.home) or (
        "the guard's key" if os.path.realpath(key_path()).startswith(where + "/") else None)


_DISPATCH = lazy(r"\bgetattr\s*\(\s*(?:[^,()]|\([^()]*\))+,\s*(?![\"'][\w]+[\"']\s*[,)])"
                       r"|\b(importlib\.import_module|__getattribute__|globals\(\)\s*\[|"
                       r"vars\(\w*\)\s*\[|\.send\s*\(|\.public_send\s*\(|&\$\w+\s*\()")
#: php's `$f(...)`: the function is named by a variable (perl's `for $x (...)` is a loop)
_PHP_DISPATCH = lazy(r"(?<![\w>$:])\$\w+\s*\(")
_SHELL_CALL = lazy(r"\b(os\.system|os\.popen|subprocess\.\w+|Popen|check_output|"
                         r"check_call|execSync|exec|spawnSync|spawn|execFileSync|system|"
                         r"shell_exec|passthru|popen|IO\.popen|Open3\.\w+|Deno\.Command|Deno\.run"
                         r"|Bun\.spawn\w*|pcntl_exec)\s*\(")
_PURE_ARG = lazy(r"""(?:\s|,|\[|\]|\{|\}|:|\w+\s*=\s*(?:True|False|None|true|false|\d+)"""
                       r"""|(?:shell|check|text|capture_output|cwd|timeout|stdio|encoding)"""
                       r"""\s*[:=]\s*(?:[\w.]+|""))*""")
_OPENS = lazy(r"\b(open|File\.open|fopen|writeFileSync|appendFileSync|writeFile"
                    r"|appendFile|file_put_contents|File\.write)\s*\(")
_ENV_OBJECT = lazy(r"(?<![*\w])(?<!env=)(?<!env\s=\s)(process\.env|os\.environ|%ENV|Bun\.env)"
                         r"(?![\w.\[])|\bENV\.(to_h|to_a|each|inspect|keys|values)\b"
                         r"|\bgetenv\(\s*\)|os\.environ\.(items|values|copy)\(\)"
                         r"|(?<![\w$.{])ENV(?![\w\[.{(])|\$_(ENV|SERVER)\b(?!\s*\[)"
                         r"|\bdotenv_values\b|\bDeno\.env\.toObject\b")

#: `{**os.environ}` copies the whole environment: handed to a child it is ordinary, printed
#: it is a dump of every key.
_ENV_SPREAD = lazy(r"\*\*\s*os\.environ\b")
_SECRET_VAR = lazy(r"(environ(\.get)?\s*[\[(]\s*|getenv\(\s*|ENV\[\s*|ENV\.fetch\(\s*"
                         r"|process\.env\.|process\.env\[\s*|\$ENV\{)[\"']?\w*(KEY|TOKEN|SECRET"
                         r"|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_PRINTS = lazy(r"\b(print|console\.log|puts|echo|say|printf|write|p)\b")
_EVAL_COMPUTED = lazy(r"(?<![.\w$])(eval|exec|instance_eval|class_eval|module_eval"
                            r"|create_function|Function|loadstring)\s*\(\s*(?![\"'`)\s])")


def _computed_write(func: str, arg: str) -> bool:
    """Does this open/write call write a path that is not a literal?"""
    literals: list[str] = []

    def keep(m: re.Match[str]) -> str:
        literals.append(next((g for g in m.groups() if g is not None), ""))
        return f"\0{len(literals) - 1}\0"

    text = _STRING.sub(keep, arg)
    parts, depth, cur = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += c in "([{"
        depth -= c in ")]}"
        cur += c
    parts.append(cur.strip())
    first = parts[0]
    if re.fullmatch(r"\0\d+\0", first):
        return False
    if func in ("open", "File.open", "fopen"):
        mode = parts[1] if len(parts) > 1 else ""
        m = re.fullmatch(r"(?:mode\s*=\s*)?\0(\d+)\0", mode)
        return bool(m and re.search(r"[wax+]", literals[int(m.group(1))]))
    return True


def computed_findings(name: str, code: str) -> list[Finding]:
    """What the code decides at run time: the function it calls, the command it runs, the
    file it writes; and a dump of the whole environment."""
    out: list[Finding] = []
    if _DISPATCH.search(code) or (name.startswith("php") and _PHP_DISPATCH.search(code)):
        out.append(Finding("supply_chain", "inline-code",
                           f"{name} code calls a function chosen at run time"))
    for m in _SHELL_CALL.finditer(code):
        arg = _STRING.sub("", _call_arg(code, m.end()))
        if not _PURE_ARG.fullmatch(arg):
            out.append(Finding("supply_chain", "inline-code",
                               f"{name} code runs a command built at run time "
                               f"({m.group(1)}); the hook cannot see it"))
            break
    if any(_computed_write(m.group(1), _call_arg(code, m.end())) for m in _OPENS.finditer(code)):
        out.append(Finding("exfiltration", "inline-write",
                           f"{name} code writes a file whose path is computed at run time"))
    if ev := _EVAL_COMPUTED.search(code):
        out.append(Finding("supply_chain", "inline-code",
                           f"{name} code evaluates code built at run time ({ev.group(1)})"))
    if _SECRET_VAR.search(code) and _PRINTS.search(code):
        out.append(Finding("secrets", "print-secret",
                           f"{name} code prints a secret environment variable"))
    if _ENV_OBJECT.search(code) or (_ENV_SPREAD.search(code) and _PRINTS.search(code)):
        out.append(Finding("secrets", "env-dump",
                           f"{name} code reads the whole environment (every key in it)"))
    return out
