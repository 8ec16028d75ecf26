"""The paths inline interpreter code opens, as far as the line shows them (round 6).

`open('.e'+'nv')`, `readFileSync(['.','env'].join(''))`, `File.read(".e"+"nv")`, `open
F,".e"."nv"`: a path put together in the code is the same secret as the literal. Literals
joined by `+`, `.`, `..` or a path join are folded into the path they make and judged
like a literal; the script's own arguments (`sys.argv[1]`) are the words that follow the
code on the command line. Anything else (a variable from a loop, an f-string, a decoded
or reversed string, `chr()` sequences) is a path the hook cannot know, and reading it is
gated. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import secret_kind
from massgen_mcp.regex import lazy

STRING = lazy(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'|"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\''
                    r"|`((?:[^`\\]|\\.)*)`|%x\{([^}]*)\}|qx\{([^}]*)\}|%x\(([^)]*)\)|%x\[([^\]]*)\]"
                    r"|qx\(([^)]*)\)", re.S)
#: Calls that open or read a file (or load code from one) named by their first argument.
_OPENS = lazy(
    r"(?<![\w$])(?:(?:io|codecs|os|File|IO|fs|fsp|promises|Deno|Bun|pathlib)\.)?(?P<f>open|fopen"
    r"|file_get_contents|readfile|read|readlines|binread|foreach|readFileSync|readFile"
    r"|createReadStream|openSync|readTextFile|readTextFileSync|readFileSync|file|lines|dofile"
    r"|loadfile|Path|require|require_once|include|include_once)\s*\(")
#: Only these bare names open a file (`read(` alone is a method of something else).
_BARE = frozenset({"open", "fopen", "file_get_contents", "readfile", "readFileSync",
                   "readFile", "createReadStream", "dofile", "loadfile", "Path", "require",
                   "require_once", "include", "include_once"})
#: Node's fs methods, whatever object holds them (`require('fs').readFileSync(..)`).
_FS_METHODS = frozenset({"readFileSync", "readFile", "createReadStream"})
_PERL_OPEN = lazy(r"\bopen\s*\(?\s*(?:my\s+)?[$\w]+\s*,")
_LITERAL = lazy(r"""(?:[rbuRB]{0,2})(["'])((?:(?!\1)[^\\]|\\.)*)\1|`([^`$]*)`""", re.S)
_ARGV = lazy(r"(sys\.argv|process\.argv|ARGV|\$ARGV|\$argv|\barg)\s*\[\s*(\d+)\s*\]")
_HARMLESS = lazy(r"\d+|__file__|__filename|__dirname|sys\.stdin(\.fileno\(\))?|__DIR__"
                       r"|process\.cwd\(\)|os\.getcwd\(\)|Dir\.pwd|Path\.cwd\(\)"
                       r"|process\.stdin\.fd|\$0|STDIN|\$PROGRAM_NAME|['\"]-['\"]")
_JOIN = lazy(r"(?:os\.path\.join|path\.join|path\.resolve|File\.join|Path|pathlib\.Path"
                   r"|join_paths)\s*\((.*)\)", re.S)


def call_arg(code: str, start: int) -> str:
    """The text of a call's arguments, from just after its `(` to the matching `)`."""
    depth, j = 1, start
    while j < len(code) and depth:
        depth += code[j] == "("
        depth -= code[j] == ")"
        j += 1
    return code[start:j - 1]


def split_args(text: str) -> list[str]:
    """Top-level comma-separated parts (commas inside strings or brackets do not split)."""
    return [part.strip() for part in _split(text, _COMMA)]


_COMMA = lazy(",")


def _split(text: str, seps: re.Pattern[str]) -> list[str]:
    """`text` cut at top-level concatenation operators."""
    parts, depth, last, quote = [], 0, 0, ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and (m := seps.match(text, i)):
            parts.append(text[last:i])
            last = i = m.end()
            continue
        i += 1
    return [*parts, text[last:]]


_CONCAT = lazy(r"\s*(\+|\.\.|(?<=[\s\"'])\.(?=[\s\"'$]))\s*")


def fold(expr: str, code: str, depth: int = 0) -> str | None:
    """The path an expression makes when the line shows all of it (None: it does not).
    `\\0N` stands for the script's argument N."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and call_arg(expr, 1) == expr[1:-1]:
        expr = expr[1:-1].strip()
    if depth > 4 or not expr:
        return None
    if (m := _LITERAL.fullmatch(expr)) and not expr.lower().startswith("f"):
        return m.group(2) if m.group(3) is None else m.group(3)
    if m := _ARGV.fullmatch(expr):
        return f"\0{m.group(2)}"
    if _HARMLESS.fullmatch(expr):
        return ""
    if m := _JOIN.fullmatch(expr):
        parts = [fold(p, code, depth + 1) for p in split_args(m.group(1))]
        return None if None in parts else "/".join(p for p in parts if p is not None)
    if (m := re.fullmatch(r"\[(.*)\]\.join\((.*)\)", expr, re.S)) and (
            sep := fold(m.group(2), code, depth + 1)) is not None:
        parts = [fold(p, code, depth + 1) for p in split_args(m.group(1))]
        return None if None in parts else sep.join(p for p in parts if p is not None)
    pieces = _split(expr, _CONCAT)
    if len(pieces) > 1:
        folded = [fold(p, code, depth + 1) for p in pieces]
        return None if None in folded else "".join(p for p in folded if p is not None)
    if re.fullmatch(r"[$@%]?[A-Za-z_]\w*", expr):  # a name given one literal in the code
        values = re.findall(rf"(?<![\w.]){re.escape(expr)}\s*=(?!=)\s*([^;\n]+)", code)
        if len(values) == 1:
            return fold(values[0].strip().rstrip(";"), code, depth + 1)
        return _globbed(expr, code)
    return None


#: `for f in glob.glob('src/*.py')`, `for p in Path('src').rglob('*.py')`,
#: `Dir["lib/**/*.rb"].each { |f|`: a loop variable drawn from a glob of a literal pattern.
_GLOB_LOOP = (r"for\s+{n}\s+in\s+(?:glob\.i?glob|i?glob|(?:pathlib\.)?Path\("
              r"\s*(['\"])([^'\"]*)\1\s*\)\.r?glob)\(\s*(['\"])([^'\"]+)\3",
              r"Dir(?:\.glob\(|\[)\s*(['\"])()([^'\"]+)\1[^{]*\{\s*\|\s*{n}\s*\|")
#: What such a pattern may match without naming a secret: files by a code, text or data
#: extension, in no hidden directory (json/yaml only below a named directory).
_SAFE_GLOB = lazy(r"(?:[\w-]+/)*(?:\*\*/)*\*?[\w-]*\*?\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|md|"
                        r"rst|txt|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|css|scss|html|csv|tsv|"
                        r"ipynb|sql|sh|toml|xml|svg|vue|svelte|php|swift|lock)")
_DATA_GLOB = lazy(r"(?:\.github/|[\w-]+/)(?:[\w-]+/)*\*\.(?:json|ya?ml)")


def _globbed(name: str, code: str) -> str | None:
    for pattern in _GLOB_LOOP:
        if m := re.search(pattern.replace("{n}", re.escape(name)), code):
            root, glob = m.group(2), m.group(4) if m.lastindex and m.lastindex >= 4 else m.group(3)
            path = f"{root.rstrip('/')}/{glob}" if root and root != "." else glob
            return path if _SAFE_GLOB.fullmatch(path) or (_DATA_GLOB.fullmatch(path) and not (
                re.search(r"(?i)conf|secret|cred|key|auth|priv|cert|token", path))) else None
    return None


def opened_paths(code: str, family: str | None) -> list[str | None]:
    """The path each open/read call of the code names (None: one it computes unseen)."""
    out: list[str | None] = []
    for m in _OPENS.finditer(code):
        bare = "." not in m.group(0).split("(")[0]
        if bare and (m.group("f") not in _BARE or (code[m.start() - 1:m.start()] == "." and (
                m.group("f") not in _FS_METHODS))):
            continue  # `f.read()`, `zf.open(name)`: a method of some other object
        args = split_args(call_arg(code, m.end()))
        if m.group("f") == "open" and family == "perl" and len(args) >= 2:
            continue  # judged below, with perl's own argument order
        if m.group("f") == "Path" and not re.search(r"\.(read_\w+|open|readlines)\(", code):
            continue
        out.append(fold(args[0], code) if args and args[0] else "")
    if family == "perl":
        for m in _PERL_OPEN.finditer(code):
            rest = code[m.end():].split(";", 1)[0].rstrip(") ")
            args = split_args(rest)
            path = args[1] if len(args) >= 2 else args[0]
            folded = fold(path, code)
            out.append(folded.lstrip("<> +") if folded is not None else None)
    return out


def read_findings(name: str, code: str, family: str | None, words: list[str]) -> list[Finding]:
    """Reads of secret or unknown paths by inline code; `words` follow the code (argv)."""
    out: list[Finding] = []
    for path in opened_paths(code, family):
        if path is None:
            return [Finding("secrets", "print-secret", f"{name} code opens a file whose path "
                            "it computes at run time (the hook cannot tell what it reads)")]
        if "\0" in path:  # the script's arguments: whichever it opens
            path = next((w for w in words if secret_kind(w)), "")
        if kind := secret_kind(path):
            out.append(Finding("secrets", "print-secret", f"{name} code reads {path}, {kind}"))
    return out
