"""The corpora a ``vectors`` or ``conformance`` command works on: the ``--dir``, ``--project`` and
``--spec-version`` options, the project checkout they name, and each version's corpus read from
there (refused in one line when malformed). Shared by the ``vectors`` and ``conformance``
commands (rtwo_vm/commands/vectors/, rtwo_vm/commands/conformance/).

Each spec version has its corpus, ``<root>/<version>/`` (chapter 11.3), the root being
``conformance/vectors`` of the checkout (or of the installed package). ``--dir DIR`` names
either one corpus (a folder holding a manifest.json, whose ``spec_version`` says its version)
or a root of version folders; ``--spec-version`` picks one version.
"""

from __future__ import annotations

from pathlib import Path

from rtwo_vm.arguments.inputs import CliError, spec_version


def add_options(parser, versions: str = "every version with a corpus") -> None:
    """--dir, --project and --spec-version, the options of every command that reads a corpus;
    ``versions`` says what the command works on without --spec-version."""
    parser.add_argument("--dir", default=None, metavar="DIR",
                        help="a corpus folder, or a folder of one corpus per spec version "
                             "(default: conformance/vectors of the project)")
    parser.add_argument("--project", default=None, metavar="DIR",
                        help="the project checkout to work on (default: the one holding the "
                             "working directory, else the installed package, read only)")
    parser.add_argument("--spec-version", dest="spec_version", type=spec_version, default=None,
                        metavar="VERSION", help=f"only this spec version's corpus (default: {versions})")


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


def root(args) -> Path:
    """The folder of the corpora: --dir, else the checkout's conformance/vectors, else the installed one."""
    from conformance.constants import VECTORS_DIR
    if args.dir:
        return Path(args.dir)
    checkout = project(args)
    return checkout / "conformance" / "vectors" if checkout is not None else VECTORS_DIR


def _single_version(folder: Path) -> str:
    """The version of the one corpus in ``folder`` (its manifest's), refused in one line when
    the manifest cannot be read or names no version of spec/versions.toml."""
    from conformance.corpus import store
    from conformance.corpus.schema import version_problem
    try:
        manifest = store.read_manifest(folder)
    except (OSError, ValueError) as err:
        raise CliError(f"cannot read the corpus in {folder}: {str(err).splitlines()[0][:160]}") from None
    version = manifest.get("spec_version")
    problem = version_problem(version, "manifest.json: spec_version")
    if problem or not isinstance(version, str):
        raise CliError(f"cannot read the corpus in {folder}: {problem}")
    return version


def corpora(args, default: str = "all") -> list[tuple[str, Path]]:
    """(version, folder) of each corpus the command works on, oldest first: the one --spec-version
    names, else every version with a corpus (``default`` "all") or the newest (``default``
    "latest"). A one-line refusal when there is none."""
    from conformance.constants import MANIFEST_NAME, corpus_dir
    from conformance.corpus.vector import VERSIONS
    base = root(args)
    wanted = getattr(args, "spec_version", None)
    if (base / MANIFEST_NAME).exists() or (base / MANIFEST_NAME).is_symlink():
        version = _single_version(base)
        if wanted is not None and wanted != version:
            raise CliError(f"{base} holds the corpus of spec {version}, not of {wanted}")
        return [(version, base)]
    present = [v for v in VERSIONS if (corpus_dir(v, base) / MANIFEST_NAME).exists()
               or (corpus_dir(v, base) / MANIFEST_NAME).is_symlink()]
    if wanted is not None:
        if wanted not in present:
            raise CliError(f"no corpus of spec {wanted} in {base} (run: rtwo-vm vectors fill)")
        return [(wanted, corpus_dir(wanted, base))]
    if not present:
        raise CliError(f"no corpus in {base} (run: rtwo-vm vectors fill)")
    chosen = present if default == "all" else present[-1:]
    return [(v, corpus_dir(v, base)) for v in chosen]


def directory(args, default: str = "latest") -> Path:
    """The folder of the one corpus a command works on (corpora, with ``default`` "latest")."""
    return corpora(args, default)[-1][1]


def load(args, default: str = "latest"):
    """(manifest, vectors) of the one corpus a command works on."""
    version, folder = corpora(args, default)[-1]
    return load_corpus(folder, version)


def load_corpus(folder: Path, version: str):
    """(manifest, vectors) of the corpus of ``version`` in ``folder``, refused in one line
    (CliError) when it is malformed or of another version."""
    from conformance.corpus import store
    try:
        manifest = store.read_manifest(folder)
        _check_manifest(manifest, version)
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
    other = next((v for v in vectors if not isinstance(v.get("_meta"), dict)
                  or v["_meta"].get("spec_version") != version), None)
    if other is not None:
        shown = other.get("_meta", {}).get("spec_version") if isinstance(other.get("_meta"), dict) else None
        raise CliError(f"cannot read the corpus in {folder}: vector {other['id'][:80]} is of spec "
                       f"{str(shown)[:40]}, in the corpus of spec {version}")
    return manifest, vectors


def _check_manifest(manifest, version: str) -> None:
    """The manifest's schema, its version, and file names that stay inside the corpus."""
    from conformance.corpus.schema import schema_problems, version_problem
    found = schema_problems("vector-manifest", manifest)
    if found:
        raise ValueError(f"manifest.json: {found[0]}")
    problem = version_problem(manifest.get("spec_version"), "manifest.json: spec_version")
    if problem:
        raise ValueError(problem)
    if manifest["spec_version"] != version:
        raise ValueError(f"manifest.json: spec_version {manifest['spec_version']}, in the folder of spec {version}")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list) or not isinstance(manifest.get("digest"), str):
        raise ValueError("manifest.json needs \"files\" (a list) and \"digest\"")
    for entry in files:
        name = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise ValueError(f"manifest.json: bad file entry {str(entry)[:60]}")
