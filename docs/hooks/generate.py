"""MkDocs hook: pages generated from spec/ at build time, so the site never drifts from it.

The normative chapters of every version are served from spec/ (the base's chapters and each
later version's replaced sections); the instruction reference (an index and a page per
instruction, rtwo_vm.site.instructions), outcome code table, container picture and "What
changed" pages are rendered by rtwo_vm.site.pages from the spec data. The newest
version's pages are the site's own; the navigation entries of the other versions are added here
(rtwo_vm.site.pages.version_nav), so that a new version needs no edit of mkdocs.yml.
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files

import spec
from rtwo_vm.site import pages as docgen, versions as docversions


def on_config(config):
    nav = config.get("nav")
    if nav is not None:
        for n, entry in enumerate(nav):     # the newest version's chapters say which it is
            if isinstance(entry, dict) and "Specification" in entry:
                nav[n] = {f"Specification {spec.latest()}": entry["Specification"]}
        at = next((i for i, entry in enumerate(nav) if isinstance(entry, dict) and "Reference" in entry),
                  len(nav) - 1)
        nav[at + 1:at + 1] = [{"Versions": docversions.version_nav()}]
    return config


def on_files(files: Files, config) -> Files:
    for path, content in docgen.pages().items():
        files.append(File.generated(config, path, content=content))
    return files
