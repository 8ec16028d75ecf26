"""The run viewer's Markdown renderer and answer diff: model output stays text."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from massgen_mcp.runs.view.markdown import render_markdown

MARKDOWN_TAGS = {"p", "br", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code", "em",
                 "strong", "del", "a", "blockquote", "hr", "div", "table", "thead", "tbody",
                 "tr", "th", "td"}


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "[x](javascript:alert(1))",
    "[x](https://a.example/\" onmouseover=\"alert(1))", "```\n</code><script>x</script>\n```",
    "`<b>`", "**<i>bold</i>**", "<a href='javascript:alert(1)'>x</a>", "# <svg/onload=alert(1)>",
    "| <script> | b |\n|---|---|\n| c | <iframe> |", "- <style>*{}</style>\n  - nested",
    "> <script>quote</script>", "![img](https://a.example/x.png)", "&lt;script&gt;",
])
def test_markdown_keeps_model_output_as_text(hostile: str) -> None:
    """Only the renderer's own tags and attributes come out, and links are http(s) only."""
    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Tags().feed(render_markdown(hostile))
    for tag, attrs in found:
        assert tag in MARKDOWN_TAGS, (hostile, tag)
        for name, value in attrs:
            assert name in ("href", "rel", "class", "start"), (hostile, name)
            if name == "href":
                assert (value or "").startswith(("https://", "http://")), (hostile, value)
                assert '"' not in (value or ""), (hostile, value)


def test_markdown_renders_the_common_subset() -> None:
    html = render_markdown("## Plan\n\n1. first *step*\n2. `code` and ~~old~~\n   - nested\n\n"
                           "```python\nprint('<hi>')\n```\n\n> quoted\n\n---\nplain https://x.example/a")
    html = html.replace("\n", "")
    assert "<h4>Plan</h4>" in html
    assert "<ol><li>first <em>step</em></li><li><code>code</code> and <del>old</del>" in html
    assert "<ul><li>nested</li></ul>" in html
    assert '<pre><code class="lang-python">print(\'&lt;hi&gt;\')</code></pre>' in html
    assert "<blockquote><p>quoted</p></blockquote>" in html and "<hr>" in html
    assert '<a href="https://x.example/a" rel="noopener noreferrer nofollow">' in html


def test_markdown_renders_what_models_write_as_a_reader_expects() -> None:
    """The forms the hand-written renderer got wrong: code inside a numbered list, setext
    headings, indented code, links whose URL holds parentheses; table alignment is a class
    (the viewer's CSP forbids inline style)."""
    html = render_markdown("Title\n=====\n\n1. step\n\n   ```sh\n   ls -l\n   ```\n2. next\n\n"
                           "para\n\n    indented <code>\n\n"
                           "[w](https://en.wikipedia.org/wiki/Foo_(bar))\n\n"
                           "| a | b |\n|:-:|--:|\n| 1 | 2 |").replace("\n", "")
    assert "<h3>Title</h3>" in html
    assert '<li><p>step</p><pre><code class="lang-sh">ls -l</code></pre></li><li>' in html
    assert "<pre><code>indented &lt;code&gt;</code></pre>" in html
    assert 'href="https://en.wikipedia.org/wiki/Foo_(bar)"' in html
    assert '<th class="center">a</th><th class="right">b</th>' in html and "style" not in html


def test_diff_marks_the_changed_words_and_escapes_them() -> None:
    from massgen_mcp.runs.view.diff import diff_html

    d = diff_html("Use Kafka.\nKeep the rest.\n", "Use <Redis>.\nKeep the rest.\n")
    assert "<del>Kafka.\n</del><ins>&lt;Redis&gt;.\n</ins>" in d.html
    assert (d.added, d.removed) == (1, 1) and d.summary == "+1 / \u22121 words"
    long_old = "\n".join(f"line {i}" for i in range(50))
    long_new = long_old.replace("line 25", "line twenty-five")
    shortened = diff_html(long_old, long_new)
    assert shortened.html.count("\u2026") == 2 and "line 10" not in shortened.html
