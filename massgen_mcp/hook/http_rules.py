"""HTTP requests that delete data or send a secret, judged by shape, not by product.

Data stores answer HTTP (Elasticsearch/OpenSearch, CouchDB, Solr, Consul KV, etcd's
gateway, ClickHouse's HTTP port), so `curl`, `wget` and httpie are their admin CLIs too:

- any DELETE (`curl -X DELETE`, `curl -XDELETE`, `http DELETE :5984/db`, `wget
  --method=DELETE`) deletes what the URL names, whatever the host; one numbered item on a
  local dev server (`localhost:8000/api/todos/3`) is the app under test and passes;
- a request that writes (POST/PUT/PATCH, or a body: `-d`, httpie `key=value` items) to a
  path whose words say it deletes (`_delete_by_query`, `v3/kv/deleterange`, `/drop`,
  `/truncate`, `/purge`, `/flushall`) is gated whatever the host: a "public" name may be a
  tunnel to the same store, and somebody else's data is data too;
- a body or URL query that is destructive SQL (`?query=DROP%20TABLE%20t`) or a
  delete-by-query document (Solr `<delete><query>`, `{"delete": {"query": ...}}`) is judged
  like SQL given to a database shell;
- a secret variable in a URL or a body sends it.

Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.options import option_values
from massgen_mcp.hook.policy import Finding
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_DATA_OPTIONS = frozenset({"-d", "--data", "--data-raw", "--data-binary", "--data-urlencode",
                           "-F", "--form", "--form-string", "--json", "--post-data", "--body-data",
                           "--raw"})
#: One numbered item on a local dev server (`localhost:8000/api/todos/3`): a test of the
#: app being written; a collection, an index or `_all` is data.
_LOCAL_ITEM = lazy(r"^(https?://)?(localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0)?(:\d+)?"
                         r"/[\w/.-]*/([0-9]+|[0-9a-f]{8}-[0-9a-f-]{27,})/?$", re.I)
_HTTP = wordset("curl wget http https xh xhs httpie curlie")
_HTTPIE = wordset("http https xh xhs httpie curlie")
_METHODS = wordset("GET HEAD OPTIONS POST PUT PATCH DELETE")
_SECRET_VAR = lazy(r"\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)\w*\}?", re.I)
#: Words of a URL path that name a deletion (`_delete_by_query`, `deleteRange`, `/drop`).
_DELETING = wordset("delete deleterange deleteall drop dropdb truncate purge wipe destroy "
                    "flushall flushdb nuke erase")
_PATH_WORDS = lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_DELETE_DOC = lazy(r"(?i)<delete>\s*<(query|id)>|[\"']delete[\"']\s*:\s*\{")


def http_findings(cmd: SimpleCommand,
                  sql: Callable[[str], Finding | None]) -> list[Finding]:
    """What an HTTP client's request deletes or sends (`sql` judges a SQL text)."""
    if cmd.program not in _HTTP:
        return []
    args, out = cmd.args, []
    methods = option_values(args, ("-X", "--request", "--method"))
    for i, a in enumerate(args):  # `-sX DELETE`, `-sSXPOST`: -X closing a cluster
        if re.fullmatch(r"-[a-zA-Z]+X\w*", a) and not a.startswith("-X"):
            methods.append(a[a.index("X") + 1:] or (args[i + 1:i + 2] or [""])[0])
    pos = cmd.positionals()
    items: list[str] = []
    if cmd.program in _HTTPIE:
        if pos and pos[0].upper() in _METHODS:
            methods.append(pos[0])
            pos = pos[1:]
        # request items after the URL: `k=v` and `k:=json` are the body, `k==v` the query
        items = [p for p in pos[1:] if re.match(r"^[\w.\[\]-]+(:=|=)(?!=)", p)]
    data = option_values(args, tuple(_DATA_OPTIONS)) + items
    headers = option_values(args, ("-H", "--header"))
    urls = [a for a in pos if ("/" in a or ":" in a) and a not in data and a not in headers]
    urls += option_values(args, ("--url",))
    verbs = {m.upper() for m in methods} or ({"POST"} if data else {"GET"})
    one_local_item = bool(urls) and all(_LOCAL_ITEM.match(u) for u in urls)
    if "DELETE" in verbs and not one_local_item:
        out.append(Finding("destruction", "http-delete",
                           f"{cmd.program} sends an HTTP DELETE (it deletes what the URL names)"))
    elif verbs & {"POST", "PUT", "PATCH"} and (hit := next((
            u for u in urls if _DELETING & _path_words(u)), None)):
        out.append(Finding("destruction", "http-delete",
                           f"{cmd.program} sends {hit}, a request whose path says it deletes"))
    sent = [*data, *(u.split("?", 1)[1] for u in urls if "?" in u)]
    if sent:  # imported only for a request with a body or a query
        from urllib.parse import unquote_plus

        sent = [unquote_plus(t) for t in sent]
    for text in sent:
        if finding := sql(text):
            out.append(finding)
            break
        if _DELETE_DOC.search(text):
            out.append(Finding("destruction", "http-delete",
                               f"{cmd.program} sends a delete-by-query document"))
            break
    for text in [*cmd.args, *data]:
        if (("://" in text or "?" in text) and _SECRET_VAR.search(text.split("?", 1)[-1])) or (
                text in data and _SECRET_VAR.search(text)):
            out.append(Finding("exfiltration", "secret-upload",
                               f"{cmd.program} puts a secret variable into the URL it sends"))
            break
    return out


def _path_words(url: str) -> set[str]:
    path = re.sub(r"^(\w+://)?[^/]*", "", url).split("?", 1)[0]
    return {w.lower() for w in _PATH_WORDS.findall(path)}
