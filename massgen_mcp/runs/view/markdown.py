"""A small, safe Markdown-to-HTML renderer for model output.

Answers are written by models, and a model may have read a hostile repository, so nothing in
them may become markup of its own: every character of the input is HTML-escaped *first*, and
only then are a few patterns turned into fixed tags (headings, lists, quotes, tables, code,
emphasis, links). Links are kept only for http(s) URLs; everything else stays text. What is
not understood is shown as written, never dropped.

Why not a library: the subset models use is small, and escape-first makes the safety
property structural (no tag or attribute can come from the input) instead of depending on a
sanitizer's configuration; it also keeps the package free of another dependency.
"""

from __future__ import annotations

import re
from html import escape

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^ {0,3}([-*_])(\s*\1){2,}\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"\[([^\]\n\x00]{1,500})\]\((https?://[^\s()<>\"'\x00]{1,2000})\)")
_BARE_URL = re.compile(r"(?<![\w/=])(https?://[^\s<>\"'\x00]{0,2000}[^\s<>\"'.,;:!?)\]\x00])")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_EM = re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?!\*)"
                 r"|(?<!\w)_(?=\S)(.+?)(?<=\S)_(?!\w)")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING_SHIFT = 2  # an answer's "# Title" sits below the page's own headings


def render_markdown(text: str) -> str:
    """HTML for `text`; safe to insert into a page whatever `text` contains."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")
    return "".join(_blocks(text.split("\n")))


def _blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append(f"<p>{'<br>'.join(_inline(p) for p in _soft_breaks(para))}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            flush()
            i = _code_block(lines, i, fence, out)
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = min(6, len(heading.group(1)) + _HEADING_SHIFT)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted = []
            while i < len(lines) and (m := _QUOTE.match(lines[i])):
                quoted.append(m.group(1))
                i += 1
            out.append(f"<blockquote>{''.join(_blocks(quoted))}</blockquote>")
            continue
        item = _ITEM.match(line)
        if item and not (para and item.group(1)):  # an indented "- x" continues a paragraph
            flush()
            i = _list(lines, i, out)
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            flush()
            i = _table(lines, i, out)
            continue
        para.append(line)
        i += 1
    flush()
    return out


def _soft_breaks(para: list[str]) -> list[str]:
    """Lines of a paragraph joined by spaces, except after a hard break (two spaces or \\)."""
    joined: list[str] = [""]
    for line in para:
        hard = line.endswith("  ") or line.endswith("\\")
        part = line.rstrip().rstrip("\\").strip()
        joined[-1] = f"{joined[-1]} {part}".strip()
        if hard:
            joined.append("")
    return [j for j in joined if j]


def _code_block(lines: list[str], i: int, fence: re.Match[str], out: list[str]) -> int:
    marker, lang = fence.group(1), fence.group(2)
    body = []
    i += 1
    while i < len(lines) and not lines[i].strip().startswith(marker):
        body.append(lines[i])
        i += 1
    cls = f' class="lang-{escape(lang)}"' if lang else ""
    out.append(f"<pre><code{cls}>{escape(chr(10).join(body))}</code></pre>")
    return i + 1


def _list(lines: list[str], i: int, out: list[str]) -> int:
    """A list and the lists nested in it (by indentation)."""
    first = _ITEM.match(lines[i])
    assert first is not None
    indent = len(first.group(1).expandtabs(4))
    ordered = first.group(2)[0].isdigit()
    items: list[list[str]] = []
    start = first.group(2)[:-1] if ordered else ""
    while i < len(lines):
        line = lines[i]
        m = _ITEM.match(line)
        depth = len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())
        if m and depth == indent and m.group(2)[0].isdigit() == ordered:
            items.append([m.group(3)])
        elif m and depth > indent and items:
            items[-1].append(line[indent + 2:] if line[:indent + 2].isspace() else line.lstrip())
        elif line.strip() and depth > indent and items:
            if len(items[-1]) == 1:  # a wrapped line of the item's own text
                items[-1][0] += " " + line.strip()
            else:
                items[-1].append(line.strip())
        elif not line.strip() and i + 1 < len(lines) and items and (
                (n := _ITEM.match(lines[i + 1])) and len(n.group(1).expandtabs(4)) >= indent):
            pass  # a blank line between items of a loose list
        else:
            break
        i += 1
    tag = "ol" if ordered else "ul"
    attr = f' start="{int(start)}"' if ordered and start and int(start) != 1 else ""
    rendered = []
    for item in items:
        head, rest = item[0], item[1:]
        check = ""
        if head[:4] in ("[ ] ", "[x] ", "[X] "):
            check = "&#9745; " if head[1] in "xX" else "&#9744; "
            head = head[4:]
        body = _inline(head)
        if rest:
            nested = _blocks(rest)
            body += "".join(nested)
        rendered.append(f"<li>{check}{body}</li>")
    out.append(f"<{tag}{attr}>{''.join(rendered)}</{tag}>")
    return i


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)]


def _table(lines: list[str], i: int, out: list[str]) -> int:
    head = _cells(lines[i])
    aligns = []
    for spec in _cells(lines[i + 1]):
        left, right = spec.startswith(":"), spec.endswith(":")
        aligns.append("center" if left and right else "right" if right else "")
    i += 2
    rows = []
    while i < len(lines) and "|" in lines[i] and lines[i].strip():
        rows.append(_cells(lines[i]))
        i += 1

    def cell(tag: str, text: str, n: int) -> str:
        align = aligns[n] if n < len(aligns) else ""
        cls = f' class="{align}"' if align else ""
        return f"<{tag}{cls}>{_inline(text)}</{tag}>"

    thead = "".join(cell("th", c, n) for n, c in enumerate(head))
    body = "".join("<tr>" + "".join(cell("td", c, n) for n, c in enumerate(r[:len(head)]))
                   + "</tr>" for r in rows)
    out.append(f'<div class="table"><table><thead><tr>{thead}</tr></thead>'
               f"<tbody>{body}</tbody></table></div>")
    return i


def _inline(text: str) -> str:
    """Escape, then code spans, links, emphasis. Code spans are kept out of the rest."""
    parts: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        parts.append(_styled(text[last:m.start()]))
        parts.append(f"<code>{escape(m.group(2).strip() or m.group(2))}</code>")
        last = m.end()
    parts.append(_styled(text[last:]))
    return "".join(parts)


def _styled(raw: str) -> str:
    """Links are found in the raw text (so a URL never holds a quote or an entity), set
    aside, and put back after the rest is escaped and emphasised."""
    links: list[str] = []

    def keep(href: str, label_html: str) -> str:
        links.append(f'<a href="{escape(href)}" rel="noopener noreferrer nofollow">'
                     f"{label_html}</a>")
        return f"\x00{len(links) - 1}\x00"

    raw = _LINK.sub(lambda m: keep(m.group(2), _emphasis(escape(m.group(1)))), raw)
    raw = _BARE_URL.sub(lambda m: keep(m.group(1), escape(m.group(1))), raw)
    text = _emphasis(escape(raw.replace("\\|", "|")))
    return re.sub(r"\x00(\d+)\x00", lambda m: links[int(m.group(1))], text)


def _emphasis(text: str) -> str:
    text = _STRONG.sub(lambda m: f"<strong>{m.group(1) or m.group(2)}</strong>", text)
    text = _EM.sub(lambda m: f"<em>{m.group(1) or m.group(2)}</em>", text)
    return _STRIKE.sub(r"<del>\1</del>", text)
