"""Writing a conformance run's files into its output folder (``--out``): the replay bundles,
``report.json``, ``junit.xml`` and ``report.html``.

Everything is rendered in memory first, then each file is written atomically
(:func:`spec.files.atomic_write`: a temporary file beside it, synced, renamed), bundles first
and ``report.json`` last (``--last-failed`` reads it), and only then are the bundles of an
earlier run removed. A full disk or a kill therefore leaves every earlier file whole and no
temporary file behind. No output path follows a symbolic link: a link where the folder, the
bundle folder or a report file should be is refused, before the run starts
(:func:`check_outputs`) and again when writing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.report.bundles import MAX_BUNDLES, bundle_texts, remove_stale_bundles
from conformance.report.document import encode_report, to_json
from conformance.report.html import render
from conformance.report.junit import junit_xml
from conformance.run.suite import SuiteResult
from spec.files import FileRefused, atomic_write, output_dir, refuse_link

REPORT_FILES = ("report.json", "junit.xml", "report.html")
BUNDLE_DIR = "bundles"


def check_outputs(out: Path) -> None:
    """Refuse (FileRefused, one line) an output folder that is a link or not a folder, and a
    bundle folder or report file that is a link (nothing is created)."""
    refuse_link(out, "output folder")
    if out.exists() and not out.is_dir():
        raise FileRefused(f"{out}: exists and is not a folder")
    bundles = refuse_link(out / BUNDLE_DIR, "bundle folder")
    if bundles.exists() and not bundles.is_dir():
        raise FileRefused(f"{bundles}: exists and is not a folder")
    for name in REPORT_FILES:
        target = refuse_link(out / name, name)
        if target.exists() and not target.is_file():
            raise FileRefused(f"{target}: exists and is not a regular file")


def _write(path: Path, text: str) -> None:
    try:
        atomic_write(path, text.encode("utf-8", "replace"))   # a lone surrogate from an adapter
    except OSError as err:
        raise FileRefused(f"cannot write {path}: {err.strerror or err} (the previous file is kept whole)") from None


def write_reports(out: Path, result: SuiteResult, manifest: Mapping[str, Any], filters: Sequence[str],
                  run_info: Mapping[str, Any], properties: Mapping[str, Any],
                  max_bundles: int = MAX_BUNDLES) -> dict[tuple[str, str], Path]:
    """Write the run's files into ``out``; the bundles written, (command, vector id) -> path.
    FileRefused (one line) when a file cannot be written: the files not yet replaced keep
    their earlier content whole."""
    output_dir(out, "output folder")
    check_outputs(out)
    folder = output_dir(out / BUNDLE_DIR, "bundle folder")
    texts = bundle_texts(result, folder, max_bundles)
    bundles = {key: path for key, (path, _) in texts.items()}
    documents = [
        ("junit.xml", junit_xml(result, bundles, properties)),
        ("report.html", render(result, manifest, bundles, run_info)),
        ("report.json", encode_report(to_json(result, manifest, bundles, list(filters), run_info))),
    ]
    for path, text in texts.values():
        _write(path, text)
    for name, text in documents:
        _write(out / name, text)
    try:
        remove_stale_bundles(folder, set(bundles.values()))
    except OSError as err:
        raise FileRefused(f"cannot clear the earlier bundles in {folder}: {err.strerror or err}") from None
    return bundles
