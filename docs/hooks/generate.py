"""MkDocs hook: pages generated from spec/ at build time, so the site never drifts from it.

The normative chapters are served from spec/chapters unchanged; the instruction reference,
outcome code table and container picture are rendered by rtwo_vm.docgen from the spec data.
"""

from __future__ import annotations

from mkdocs.structure.files import File, Files

from rtwo_vm import docgen


def on_files(files: Files, config) -> Files:
    for path, content in docgen.pages().items():
        files.append(File.generated(config, path, content=content))
    return files
