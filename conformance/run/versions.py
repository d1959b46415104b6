"""Which spec versions an adapter implements, learnt the way chapter 11.5.3 says.

The runner checks an implementation on each version separately, one session per version. It
learns the versions from the ``spec_versions`` of the first hello the adapter accepts, or of an
``UNSUPPORTED_SPEC_VERSION`` error that lists them; an adapter that refuses a version without
listing its own is tried on the next older one. :func:`discover` does exactly that, newest of
the wanted versions first, and says for every wanted version whether it is checked, and why
not when it is not (not announced, refused).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import spec
from conformance.protocol import announced_versions, hello_problems
from conformance.run.process import AdapterProcess, Settings, StartError


@dataclass
class Discovery:
    """What an adapter said about versions."""

    command: str
    announced: list[str] = field(default_factory=list)      # the versions it implements (all known)
    hello: dict[str, Any] | None = None                     # the first hello it accepted
    not_checked: dict[str, str] = field(default_factory=dict)   # wanted version -> why it is not checked
    start_error: str = ""                                   # why nothing could be learnt at all

    def checks(self, version: str) -> bool:
        return version in self.announced and version not in self.not_checked


def _ask(argv: list[str], settings: Settings, version: str) -> dict[str, Any]:
    """The adapter's answer to a hello of ``version`` (the process is shut down or killed)."""
    proc = AdapterProcess(argv, replace(settings, spec_version=version), settings.log_dir, 0)
    try:
        reply = proc.hello_reply()
        if reply.get("type") == "hello":
            proc.shutdown(timeout=min(5.0, settings.timeout))
        return reply
    finally:
        proc.kill()


def _unknown(versions: Sequence[str]) -> str | None:
    return next((v for v in versions if v not in spec.names()), None)


def _hello_of(found: Discovery, argv: list[str], settings: Settings) -> None:
    """The hello of the newest version an UNSUPPORTED_SPEC_VERSION error listed (its name and
    capabilities, for the report); the versions stay those the error listed when it is refused."""
    newest = max(found.announced, key=lambda v: spec.version(v).number)
    try:
        reply = _ask(argv, settings, newest)
    except StartError:
        return
    if reply.get("type") == "hello" and not hello_problems(reply, newest):
        found.hello = reply


def discover(command: str, argv: list[str], settings: Settings, wanted: Sequence[str]) -> Discovery:
    """Ask the adapter (``argv``) which of the ``wanted`` versions it implements."""
    from conformance.run.suite import slug
    found = Discovery(command)
    # its kept log is named as the probe's: after the command's file names
    settings = replace(settings, log_label=f"{slug(' '.join(Path(a).name for a in argv)[:40])}__versions")
    order = sorted(wanted, key=lambda v: spec.version(v).number, reverse=True)
    refused: list[str] = []            # refused without saying which versions it implements
    for version in order:
        try:
            reply = _ask(argv, settings, version)
        except StartError as err:
            found.start_error = str(err)
            return found
        kind = reply.get("type")
        listed = announced_versions(reply)
        if kind == "hello":
            problems = hello_problems(reply, version)
            if problems:
                found.start_error = "bad hello: " + "; ".join(problems)[:500]
                return found
            found.hello, found.announced = reply, list(listed or ())
            break
        if kind == "error" and reply.get("code") == "UNSUPPORTED_SPEC_VERSION":
            if listed is not None:
                unknown = _unknown(listed)
                if unknown is not None:
                    found.start_error = (f"the adapter's UNSUPPORTED_SPEC_VERSION error lists {unknown[:40]!r}, "
                                         f"not a version of spec/versions.toml ({', '.join(spec.names())})")
                    return found
                found.announced = [v for v in listed if v != version]
                _hello_of(found, argv, settings)
                break
            refused.append(version)
            continue
        found.start_error = (f"the adapter answered the hello of spec {version} with "
                             f"{str(kind)[:20]} {str(reply.get('code', ''))[:40]}: "
                             f"{str(reply.get('message', ''))[:200]}")
        return found
    for version in wanted:
        if version in refused:
            found.not_checked[version] = (f"refused: the adapter answered the hello of spec {version} "
                                          "with UNSUPPORTED_SPEC_VERSION, listing no version")
        elif version not in found.announced:
            said = ", ".join(found.announced) or "none of them"
            found.not_checked[version] = f"not announced: the adapter implements {said}"
    if not found.announced and not found.start_error:
        found.start_error = (f"the adapter implements none of the versions asked for "
                             f"({', '.join(wanted)}): " + "; ".join(found.not_checked.values()))
    return found
