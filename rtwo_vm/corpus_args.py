"""The corpus a ``vectors`` or ``conformance`` command works on: the ``--dir`` and ``--project``
options, the project checkout they name, and the corpus read from there (refused in one line
when malformed). Shared by rtwo_vm/commands/conformance.py, rtwo_vm/vectors_cli.py and
rtwo_vm/strength_cli.py, none of which imports another for it."""

from __future__ import annotations

from pathlib import Path

from rtwo_vm.inputs import CliError


def add_options(parser) -> None:
    """--dir and --project, the options of every command that reads the corpus."""
    parser.add_argument("--dir", default=None, metavar="DIR",
                        help="corpus directory (default: conformance/vectors of the project)")
    parser.add_argument("--project", default=None, metavar="DIR",
                        help="the project checkout to work on (default: the one holding the "
                             "working directory, else the installed package, read only)")


def project(args) -> Path | None:
    """The project checkout the command works on: --project, else the one holding the working
    directory; None outside any checkout."""
    from conformance.constants import project_root
    if getattr(args, "project", None):
        found = project_root(Path(args.project))
        if found is None:
            raise CliError(f"--project {args.project}: not an RTWO VM checkout "
                           "(no pyproject.toml naming rtwo-vm with conformance/corpus/definitions)")
        return found
    return project_root()


def directory(args) -> Path:
    """The corpus directory: --dir, else the checkout's conformance/vectors, else the installed one."""
    from conformance.constants import VECTORS_DIR
    if args.dir:
        return Path(args.dir)
    checkout = project(args)
    return checkout / "conformance" / "vectors" if checkout is not None else VECTORS_DIR


def load(args):
    """(manifest, vectors) of the corpus, refused in one line (CliError) when it is malformed."""
    from conformance.corpus import store
    folder = directory(args)
    try:
        manifest = store.read_manifest(folder)
        _check_manifest(manifest)
        vectors = store.load(folder)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        # A malformed corpus (--dir): not UTF-8, not JSON, wrong shapes, a directory...
        detail = str(err).splitlines()[0][:160] if str(err) else type(err).__name__
        raise CliError(f"cannot read the corpus in {folder}: {detail}") from None
    bad = next((v for v in vectors if not (
        isinstance(v, dict) and isinstance(v.get("id"), str) and isinstance(v.get("tags"), dict)
        and all(isinstance(v["tags"].get(k), str) for k in ("source", "outcome")))), None)
    if bad is not None:
        raise CliError(f"cannot read the corpus in {folder}: a vector without id and tags: "
                       f"{str(bad)[:60]}")
    return manifest, vectors


def _check_manifest(manifest) -> None:
    """The manifest's schema, and file names that stay inside the corpus."""
    from conformance.corpus.schema import schema_problems
    found = schema_problems("vector-manifest", manifest)
    if found:
        raise ValueError(f"manifest.json: {found[0]}")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list) or not isinstance(manifest.get("digest"), str):
        raise ValueError("manifest.json needs \"files\" (a list) and \"digest\"")
    for entry in files:
        name = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"manifest.json: bad file entry {str(entry)[:60]}")
