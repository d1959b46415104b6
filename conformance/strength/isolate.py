"""Loading reference_vm with one mutant applied, without touching the checkout.

``install`` makes the next import of the mutant's module run the mutated source instead of
the file (a meta path finder placed first), after removing reference_vm and every module that
imported it from sys.modules, so that everything imported afterwards binds the mutant. It is
only ever called in a process of its own: a forked child of the strength run, or a fresh
interpreter (the mutant adapter, a Ray task); that process exits when the mutant is done.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

from conformance.strength.mutants import PACKAGE, Mutant

KEEP = ("conformance.strength", "conformance.constants")


class _Loader(importlib.abc.Loader):
    def __init__(self, source: str, filename: str):
        self.source, self.filename = source, filename

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        module.__file__ = self.filename
        exec(compile(self.source, self.filename, "exec"), module.__dict__)  # noqa: S102 - the mutant


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, name: str, source: str, filename: str):
        self.name, self.source, self.filename = name, source, filename

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, _Loader(self.source, self.filename),
                                               origin=self.filename)


def install(mutant: Mutant) -> None:
    for name in list(sys.modules):
        if name == "reference_vm" or name.startswith("reference_vm.") or (
                name.startswith("conformance.") and not name.startswith(KEEP)):
            del sys.modules[name]
    sys.meta_path.insert(0, _Finder(mutant.module_name, mutant.source,
                                    f"<mutant {mutant.id} of {PACKAGE / mutant.module}>"))
    importlib.invalidate_caches()


def run_reference():
    """conformance.corpus.vector.run_reference as imported now (after install: the mutant's)."""
    return importlib.import_module("conformance.corpus.vector").run_reference
