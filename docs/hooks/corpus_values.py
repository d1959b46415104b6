"""MkDocs hook: values of the committed corpus filled into the guides at build time, so that a
page never shows a stale digest or count. A page writes ``{{ corpus.digest }}`` (or
``digest12``, ``digest16``, ``vectors``, ``spec_release``); rtwo_vm.site.values gives the values."""

from __future__ import annotations

from rtwo_vm.site import values as docvalues


def on_page_markdown(markdown: str, page, config, files) -> str:
    return docvalues.fill(markdown)
