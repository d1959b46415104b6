"""``rtwo-vm conformance init --lang python|javascript DIR``: an adapter skeleton to start from
(issue 39). DIR gets the adapter (``adapter.py`` or ``adapter.js``, from
rtwo_vm/commands/conformance/skeleton/), ``schemas/`` (the protocol and vector schemas of
spec/schemas, which it validates requests with) and ``rtwo-spec.json`` (the spec version it
implements, the request limits of limits.toml, the isolation levels of sandbox.toml, the
seed size of schedule.toml, the word size and the policy fields' values of policy.toml). The skeleton passes ``conformance selftest``
as written and answers UNSUPPORTED_INPUT for every input but a single STOP; an implementer
fills in ``run_vm``. Nothing is overwritten: a DIR that holds any of these files is refused."""

from __future__ import annotations

import json
from pathlib import Path

from rtwo_vm.arguments.inputs import CliError

LANGS = {"python": ("adapter.py", "python3 adapter.py"), "javascript": ("adapter.js", "node adapter.js")}
SCHEMAS = ("runner-message", "vector")


def register(cs) -> None:
    import spec
    p = cs.add_parser("init", help="write an adapter skeleton that passes the selftest (python or javascript)",
                      description="Write an adapter skeleton into DIR: it speaks the protocol, passes "
                                  "rtwo-vm conformance selftest and answers UNSUPPORTED_INPUT for what "
                                  "your VM does not run yet (its run_vm function).")
    p.add_argument("directory", metavar="DIR", help="where to write it (created; existing files are not overwritten)")
    p.add_argument("--lang", required=True, choices=tuple(LANGS), help="the skeleton's language")
    p.add_argument("--spec-version", choices=spec.names(), default=spec.names()[-1],
                   help="the spec version the skeleton implements (default: the newest)")
    p.add_argument("--name", default="my-vm", help="the implementation name of its hello (default my-vm)")
    p.set_defaults(func=run)


def files(lang: str, version: str, name: str) -> dict[str, str]:
    """The skeleton's files: relative path -> text."""
    import spec
    adapter, _ = LANGS[lang]
    limits = spec.load(version).limits
    out = {adapter: (Path(__file__).parent / "skeleton" / adapter).read_text(),
           "rtwo-spec.json": json.dumps({"spec_version": version, "name": name,
                                         "minimum": dict(limits["minimum"]), "maximum": dict(limits["maximum"]),
                                         "isolation_levels": sorted(spec.raw("sandbox", version)["isolation"]),
                                         "seed_size": spec.raw("schedule", version)["randomness"]["seed_size"],
                                         "word_bits": limits["machine"]["word_bits"],
                                         "policy_values": {k: list(f["values"]) for k, f in
                                                           spec.raw("policy", version)["fields"].items()}},
                                        indent=1, sort_keys=True) + "\n"}
    for schema in SCHEMAS:
        out[f"schemas/{schema}.schema.json"] = json.dumps(spec.schema(schema), indent=1) + "\n"
    return out


def run(args) -> int:
    if not args.name or len(args.name) > 100 or not args.name.isprintable():
        raise CliError("--name: a printable name of 1 to 100 characters")
    folder = Path(args.directory)
    wanted = files(args.lang, args.spec_version, args.name)
    taken = [p for p in wanted if (folder / p).exists() or (folder / p).is_symlink()]
    if taken:
        raise CliError(f"{folder}: already holds {', '.join(taken[:3])}: nothing written (choose an empty directory)")
    if folder.exists() and not folder.is_dir():
        raise CliError(f"{folder}: not a directory")
    try:
        for path, text in wanted.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(text)
    except OSError as err:
        raise CliError(f"{folder}: cannot write the skeleton: {err.strerror or err}") from None
    adapter, command = LANGS[args.lang]
    print(f"wrote an adapter skeleton of spec {args.spec_version} to {folder}: {adapter}, rtwo-spec.json, schemas/")
    print(f"next: cd {folder} && rtwo-vm conformance selftest --impl \"{command}\"; then implement run_vm "
          "in " + adapter + " and run the corpus: rtwo-vm conformance run --impl \"" + command + "\"")
    return 0
