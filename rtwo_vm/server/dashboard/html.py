"""The dashboard's HTML: the page layout and small helpers, every value escaped.

Nothing here reads records: pages pass values in, and every value that reaches the markup
goes through :func:`esc` (records may hold hostile strings: a VM name, a transaction
reference, a sink's error). Markup the pages build themselves is a :class:`Markup` string,
which :func:`esc` passes through unchanged; anything else is escaped.
"""

from __future__ import annotations

import html
import re
from typing import Any, Callable, Iterable, Sequence

from fastapi.responses import HTMLResponse

NAV = (("/", "Overview"), ("/contexts", "Contexts"), ("/violations", "Violations"),
       ("/instructions", "Instructions"), ("/events", "Events"), ("/reports", "Reports"))


class Markup(str):
    """HTML built by the dashboard itself (its parts already escaped)."""


def esc(value: Any) -> Markup:
    """``value`` as HTML text: Markup unchanged, None as an em dash, anything else escaped."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("&mdash;")
    return Markup(html.escape(str(value), quote=True))


def join(parts: Iterable[Any], sep: str = "") -> Markup:
    return Markup(sep.join(esc(p) for p in parts))


def tag(element: str, content: Any = "", /, **attrs: Any) -> Markup:
    """``<name attrs>content</name>``; attribute names ending in ``_`` lose it (``class_``)."""
    text = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items()
                   if v is not None)
    return Markup(f"<{element}{text}>{esc(content)}</{element}>")


def link(href: str, content: Any, **attrs: Any) -> Markup:
    return tag("a", content, href=href, **attrs)


_LITERAL = re.compile(r"``(.+?)``", re.S)


def prose(text: str, literal: Callable[[str], str] = str) -> Markup:
    """Docstring text as HTML: each double-backquoted literal becomes ``<code>`` (its text
    passed through ``literal`` first), the rest is escaped, line breaks become spaces."""
    parts = _LITERAL.split(" ".join(text.split()))
    return join(tag("code", literal(part)) if i % 2 else part for i, part in enumerate(parts))


def number(value: int | None) -> str:
    """An integer with thousands separators (None: a dash)."""
    return "\u2014" if value is None else f"{value:,}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def ago(seconds: float) -> str:
    """An age as the pages say it: "just now", "40 s ago", "3 min ago", "2 h ago" (the
    dashboard's script keeps it current on an open page: dashboard.js, ``data-age``)."""
    if seconds < 5:
        return "just now"
    if seconds < 60:
        return f"{int(seconds)} s ago"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    return f"{int(seconds // 3600)} h ago"


def age(seconds: float, at: str | None) -> Markup:
    """"computed 3 min ago" as a ``<time>`` of when (``at``, UTC), with its age in seconds
    for the script to count on from."""
    return tag("time", f"computed {ago(seconds)}", datetime=at, data_age=f"{seconds:.0f}",
               class_="age", title=at)


def counted(count: int, exact: bool, noun: str, nouns: str | None = None) -> str:
    """A count that may have stopped at a bound: "3 contexts", "more than 10,000 contexts"."""
    if exact:
        return plural(count, noun, nouns)
    return f"more than {count:,} {nouns or noun + 's'}"


def table(headers: Sequence[Any], rows: Iterable[Sequence[Any]], **attrs: Any) -> Markup:
    head = join(tag("th", h) for h in headers)
    body = join(tag("tr", join(tag("td", c) for c in row)) for row in rows)
    return tag("table", Markup(f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody>"), **attrs)


def definition(items: Iterable[tuple[Any, Any]]) -> Markup:
    return tag("dl", join(Markup(f"{tag('dt', k)}{tag('dd', v)}") for k, v in items))


def page(title: str, body: Any, *, status_code: int = 200, script: bool = False) -> HTMLResponse:
    nav = join(link(href, label) for href, label in NAV)
    js = Markup('<script src="/static/dashboard.js" defer></script>') if script else ""
    text = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{esc(title)} \u2014 RTWO VM</title>'
            f'<link rel="stylesheet" href="/static/dashboard.css">'
            f'<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">{js}</head>'
            f'<body><header><span class="brand">RTWO VM</span><nav>{nav}</nav></header>'
            f'<main><h1>{esc(title)}</h1>{esc(body)}</main></body></html>')
    return HTMLResponse(text, status_code=status_code,
                        headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                                 "Cache-Control": "no-store"})


# Only the dashboard's own assets: no inline script, nothing from another origin.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def not_found(what: str) -> HTMLResponse:
    """The 404 page: which record was asked for (escaped), and nothing else."""
    return page("Not found", tag("p", what, class_="missing"), status_code=404)


def damaged(entry: Any) -> Markup:
    """A row that does not decode (rtwo_vm/runtime/damaged.py), shown in its record's place:
    the word ``damaged``, the row's table and id, and the reason, all escaped."""
    return tag("span", Markup(tag("span", "damaged", class_="state state-damaged") + " "
                              + esc(f"{entry.table} {entry.id}: {entry.reason}")),
               class_="damaged", data_damaged=entry.table)


def is_damaged(value: Any) -> bool:
    return getattr(value, "damaged", False) is True
