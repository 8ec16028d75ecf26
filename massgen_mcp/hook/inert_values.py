"""What an inert code-option value looks like, for programs whose code options speak a
language of their own.

A program the hook does not know, given a code option (`-ex`, `--eval`), runs code the hook
cannot see (`capability.opaque`) unless the value reads as harmless. By default that is a
command line of a program the hook knows (the reach rules analyse it like the line itself);
the programs here say instead what a value that only looks is in their language: for gdb a
command that inspects or steps (`bt`, `info registers`, `p var`, a bare `run`), for the
mongo shells a statement that only reads. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import wordset
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: gdb commands that inspect or step the program; `print`/`call` of a function (a `(`) may
#: run anything in it, `shell`/`python`/`source`/`pipe`/`dump`/`set logging` are not here.
_GDB_LOOKS = wordset("bt backtrace where info i print p x list l frame f up down thread "
                     "continue c next n step s stepi si nexti ni finish quit q disassemble "
                     "display break b tbreak watch delete kill")
#: A mongo shell statement that only reads: a query or a status, maybe printed. Arguments
#: hold no brackets, so no call hides in them; `runCommand` only with a read-only command.
_ARGS = r"\((?:[^()]*)\)"
_MONGO_READ = lazy(
    r"(?:printjson|print|console\.log)?\(?\s*(?:db(?:\.getSiblingDB\(\s*['\"][\w-]+['\"]\s*\))?"
    r"(?:\.getCollection\(\s*['\"][\w.-]+['\"]\s*\)|\.[A-Za-z_]\w*)??"
    r"\.(?:find|findOne|countDocuments|count|estimatedDocumentCount|distinct|stats|"
    r"getCollectionNames|getCollectionInfos|getName|version|serverStatus|hostInfo|getIndexes|"
    r"currentOp|hello|isMaster|dataSize|totalSize)" + _ARGS
    + r"(?:\.(?:limit|sort|skip|toArray|pretty|count|explain|itcount|size)" + _ARGS + r")*"
    r"|db\.(?:runCommand|adminCommand)\(\s*\{\s*['\"]?(?:ping|serverStatus|dbStats|collStats|"
    r"buildInfo|hello|isMaster|listCollections|listDatabases)['\"]?\s*:[^()]*\}\s*\)"
    r"|rs\.(?:status|conf|isMaster|hello)\(\)|sh\.status\(\))\s*\)?")


def _gdb_looks(value: str) -> bool:
    words = value.split()
    return bool(words) and "(" not in value and (
        words[0] in _GDB_LOOKS or (words[0] in ("run", "r", "start") and len(words) == 1)
        or (words[0] == "set" and words[1:2] in (["pagination"], ["confirm"], ["print"],
                                                  ["width"], ["height"])))


def _mongo_reads(value: str) -> bool:
    return all(_MONGO_READ.fullmatch(part.strip()) for part in value.split(";")
               if part.strip()) and not re.search(r"\$where|function|=>|`|require", value)


#: Program -> is this value of one of its code options inert?
INERT_VALUE: dict[str, Callable[[str], bool]] = {
    "gdb": _gdb_looks, "mongosh": _mongo_reads, "mongo": _mongo_reads}
