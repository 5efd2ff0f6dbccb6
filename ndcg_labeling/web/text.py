"""How stored text becomes what a person sees: a guideline's Markdown as HTML (raw HTML in it stays
text), a document body as plain text or as a sandboxed frame, the query's terms highlighted in both.

Everything returned as :class:`markupsafe.Markup` was escaped here; nothing from the database reaches
a page unescaped, except inside the ``srcdoc`` of an ``<iframe sandbox>`` (no script, no network:
the frame carries its own Content-Security-Policy ``default-src 'none'``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser

from markupsafe import Markup, escape

#: Tags that make a body "HTML" (rendered in a sandboxed frame) rather than plain text.
_HTML_TAG = re.compile(r"<(?:!doctype|html|head|body|p|div|br|span|a|table|tr|td|ul|ol|li|h[1-6]|b|i|em|strong|"
                       r"img|script|style|section|article|pre|code|blockquote)\b[^>]*>", re.IGNORECASE)
#: The frame's own policy: no script, no request of any kind (images, fonts, links); inline styles only.
FRAME_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_FRAME_STYLE = ("body{font:15px/1.45 system-ui,sans-serif;color:#1d232a;margin:8px;overflow-wrap:anywhere}"
                "mark{background:#fff0a8;color:inherit}img{max-width:100%}")
#: Tags left out of a framed body: what could navigate or load something (the frame blocks the rest).
_DROPPED = frozenset({"meta", "base", "link", "iframe", "frame", "frameset", "object", "embed", "portal"})
_WORD = re.compile(r"\w+", re.UNICODE)
_MIN_TERM = 2


@lru_cache(maxsize=1)
def _markdown():  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt

    # raw HTML off: "<script>" in a guideline is shown as text (an image from elsewhere is blocked by the CSP)
    return MarkdownIt("commonmark", {"html": False})


def markdown_html(text: str | None) -> Markup:
    """``text`` (CommonMark) as HTML; raw HTML in it is escaped, links other than http(s)/mailto are
    dropped by markdown-it's link check."""
    return Markup(_markdown().render(text or ""))  # noqa: S704 - markdown-it escaped every text and attribute


def query_terms(query: str | None) -> list[str]:
    """The query's words (two characters or more), lower-cased, each once, longest first."""
    words = {w.lower() for w in _WORD.findall(query or "") if len(w) >= _MIN_TERM}
    return sorted(words, key=lambda w: (-len(w), w))


def _term_pattern(terms: list[str]) -> re.Pattern[str] | None:
    if not terms:
        return None
    return re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE | re.UNICODE)


def _highlight(text: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is None:
        return str(escape(text))
    out, last = [], 0
    for match in pattern.finditer(text):
        out.append(str(escape(text[last:match.start()])))
        out.append(f"<mark>{escape(match.group(0))}</mark>")
        last = match.end()
    out.append(str(escape(text[last:])))
    return "".join(out)


def highlight(text: str | None, query: str | None) -> Markup:
    """``text`` escaped, with the words of ``query`` in ``<mark>``."""
    return Markup(_highlight(text or "", _term_pattern(query_terms(query))))  # noqa: S704 - escaped above


def looks_like_html(body: str | None) -> bool:
    """Whether a document body holds HTML markup (a known tag), so that it is rendered, in a sandbox."""
    return bool(body) and _HTML_TAG.search(body or "") is not None


class _Highlighter(HTMLParser):
    """Re-emit an HTML document with the query terms marked in its text (not in script or style)."""

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        super().__init__(convert_charrefs=False)
        self.pattern = pattern
        self.out: list[str] = []
        self.raw = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            return
        self.out.append(self.get_starttag_text() or "")
        if tag in ("script", "style"):
            self.raw += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROPPED:
            return
        self.out.append(self.get_starttag_text() or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROPPED:
            return
        self.out.append(f"</{tag}>")
        if tag in ("script", "style") and self.raw:
            self.raw -= 1

    def handle_data(self, data: str) -> None:
        self.out.append(data if self.raw else _highlight_html_text(data, self.pattern))

    def handle_entityref(self, name: str) -> None:
        self.out.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.out.append(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        pass  # the frame has a doctype of its own

    def unknown_decl(self, data: str) -> None:
        pass


def _highlight_html_text(data: str, pattern: re.Pattern[str] | None) -> str:
    """A text node of HTML (already HTML: "&lt;" stays) with the terms marked."""
    if pattern is None:
        return data
    return pattern.sub(lambda mt: f"<mark>{mt.group(0)}</mark>", data)


def sandboxed_srcdoc(body: str, query: str | None) -> str:
    """The ``srcdoc`` of the frame showing an HTML ``body``: its own CSP (no script, no network), a
    plain style, and the body with the query's terms marked. Jinja escapes it into the attribute."""
    parser = _Highlighter(_term_pattern(query_terms(query)))
    parser.feed(body)
    parser.close()
    return (f'<!doctype html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{FRAME_CSP}">'
            f"<style>{_FRAME_STYLE}</style></head><body>{''.join(parser.out)}</body></html>")
