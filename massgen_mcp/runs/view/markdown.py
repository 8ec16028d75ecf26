"""Model answers as safe HTML, rendered by markdown-it-py.

Answers are written by models, and a model may have read a hostile repository, so nothing in
them may become markup of its own. The renderer is configured so that this holds by
construction: raw HTML is off (every `<` is escaped), images are off, links are kept only for
http(s) URLs (`validateLink`), and the few attributes the viewer needs are set by our own
render rules (`rel` on links, alignment as a CSS class, because the viewer's CSP allows no
inline style). CommonMark does the parsing, so nested code blocks, setext headings, indented
code and links with parentheses come out as a reader expects.

markdown-it-py is imported when the first answer is rendered, never on the server's start path.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

_HEADING_SHIFT = 2  # an answer's "# Title" sits below the page's own headings
_ALIGN = {"text-align:left": "left", "text-align:right": "right", "text-align:center": "center"}


def render_markdown(text: str) -> str:
    """HTML for `text`; safe to insert into a page whatever `text` contains."""
    return _renderer().render(text.replace("\x00", "\ufffd"))


@cache
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": True, "typographer": False,
                                   "xhtmlOut": False, "langPrefix": "lang-"})
    md.enable(["table", "strikethrough", "linkify"]).disable(["image", "html_block",
                                                              "html_inline"])
    md.validateLink = _http_only  # type: ignore[method-assign]
    rules = md.add_render_rule
    rules("heading_open", _heading)
    rules("heading_close", _heading)
    rules("link_open", _link_open)
    rules("th_open", _cell)
    rules("td_open", _cell)
    rules("table_open", lambda *a: '<div class="table"><table>\n')
    rules("table_close", lambda *a: "</table></div>\n")
    rules("s_open", lambda *a: "<del>")  # the viewer's CSS styles <del>, as the diff uses it
    rules("s_close", lambda *a: "</del>")
    return md


def _http_only(url: str) -> bool:
    return url.strip().lower().startswith(("https://", "http://"))


def _heading(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict,
             env: EnvType) -> str:
    token = tokens[idx]
    level = min(6, int(token.tag[1]) + _HEADING_SHIFT)
    return f"<h{level}>" if token.nesting == 1 else f"</h{level}>\n"


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict,
               env: EnvType) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return str(self.renderToken(tokens, idx, options, env))


def _cell(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict,
          env: EnvType) -> str:
    token = tokens[idx]
    style = str(token.attrs.pop("style", "") or "")
    if style in _ALIGN:
        token.attrSet("class", _ALIGN[style])
    return str(self.renderToken(tokens, idx, options, env))
