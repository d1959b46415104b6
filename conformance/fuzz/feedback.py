"""Feedback from the reference: grid cells and branch arcs.

Grid cells are the cells of ``rtwo-vm vectors coverage`` (conformance.corpus.coverage): opcode x
outcome (the result's and its call records') and opcode x boundary column, where a request's
boundary column is read from what it used — usage equal to a sandbox limit is "limit", one
below is "limit-1", and the dimension's *_LIMIT_EXCEEDED outcome is "limit+1". Cells hit by
the committed corpus are known from the start, so a new cell is one the corpus never reaches.

Branch arcs are (file, line, next line) transitions inside ``reference_vm/``, recorded with
``sys.settrace`` (this project runs on Python 3.11, before ``sys.monitoring``). Tracing makes
the reference run roughly 10-30 times slower, so only a fraction of requests is traced
(``ArcTracer.share``, chosen by index so the choice does not depend on the worker count), and
the caches of the reference are emptied before a traced run so that the arcs of a request
never depend on what the same process ran before (the campaign version's rules, its word, its
handler table and the instruction set of each container version it runs, which no request
decides, are kept built and the arcs of building them added: ``ArcTracer.run``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

import reference_vm
from reference_vm.instructions import table as handler_table
from reference_vm.program import load_program
from reference_vm.rules import rules as rules_of
from reference_vm.words import word as word_of
from conformance.corpus.coverage import SANDBOX
from conformance.corpus.vector import outcome_of

EXCEEDED = {"compute": "COMPUTE_LIMIT_EXCEEDED", "memory_pages": "MEMORY_LIMIT_EXCEEDED",
            "storage_units": "STORAGE_LIMIT_EXCEEDED"}


def boundary_column(result: Mapping[str, Any], limits: Mapping[str, int]) -> str | None:
    codes = {result["error"], *(c["error"] for c in result["calls"])}
    for dim in SANDBOX:
        if EXCEEDED[dim] in codes:
            return f"{dim}:limit+1"
    for dim in SANDBOX:
        used, limit = result["usage"][dim], limits[dim]
        if isinstance(limit, int) and limit > 0 and result["status"] not in ("invalid", "rejected", "violation"):
            if used == limit:
                return f"{dim}:limit"
            if used == limit - 1:
                return f"{dim}:limit-1"
    return None


def cells(mnemonics: Iterable[str], result: Mapping[str, Any], limits: Mapping[str, int]) -> set[str]:
    outcomes = {outcome_of(result), *(outcome_of(c) for c in result["calls"])}
    column = boundary_column(result, limits)
    columns = outcomes | ({column} if column else set())
    return {f"{m}|{c}" for m in ("*", *mnemonics) for c in columns}


def corpus_cells(vectors: Iterable[Mapping[str, Any]]) -> set[str]:
    """The cells the committed corpus covers, from its tags (as conformance.corpus.coverage counts)."""
    out: set[str] = set()
    for v in vectors:
        tags = v["tags"]
        columns = {tags["outcome"], *tags["call_outcomes"]}
        if tags["boundary"] is not None:
            columns.add(f"{tags['boundary']['limit']}:{tags['boundary']['at']}")
        out.update(f"*|{c}" for c in columns)
        for m in tags["opcodes"]:
            out.update(f"{m}|{c}" for c in columns)
    return out


_CLEARS: tuple[int, list] = (-1, [])      # (modules loaded when found, the cache_clear functions)


def _reference_cache_clears() -> list:
    """The cache_clear of every functools cache defined in reference_vm/, found once (again
    only when more modules were imported since)."""
    global _CLEARS
    loaded = len(sys.modules)
    if _CLEARS[0] != loaded:
        found = []
        for name, module in list(sys.modules.items()):
            if name != "reference_vm" and not name.startswith("reference_vm."):
                continue
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and getattr(value, "__module__", None) == name:
                    found.append(clear)
        _CLEARS = (loaded, found)
    return _CLEARS[1]


def _clear_reference_caches(keep: tuple = ()) -> None:
    """Empty every functools cache of reference_vm/ (prepared programs, policy refusals, ...)
    but those of the functions in ``keep``, so that the arcs of a traced request depend on the
    request alone, never on what the same worker process happened to run before it (the
    campaign is a function of its seed)."""
    kept = {f.cache_clear for f in keep}
    for clear in _reference_cache_clears():
        if clear not in kept:
            clear()


class ArcTracer:
    """Records line-to-line arcs of reference_vm/ while a function runs."""

    ROOT = str(Path(reference_vm.__file__).resolve().parent)

    def __init__(self, share: int, version: str):
        self.share = share            # one request in ``share`` is traced (0: none)
        self.version = version        # the spec version every traced request runs under
        self._names: dict[str, str] = {}
        self._built: tuple[set[str], set[str]] | None = None

    def _building_arcs(self) -> tuple[set[str], set[str]]:
        """The arcs of building, from empty caches, the version's rules (vector inputs have one
        word width) and then its handler table: what a traced run with every cache emptied takes
        in rules.rules (always, execute starts there) and in instructions.table (when a program
        is prepared, which starts there). Found once per process; the instruction set of every
        container version the rules run is built then too (kept by the rules: no traced run
        builds one)."""
        if self._built is None:
            _clear_reference_caches()
            self._built = (self._traced(rules_of, self.version)[1],
                           self._traced(lambda: handler_table(rules_of(self.version)))[1])
            built = rules_of(self.version)
            for container_version in built.container_versions:
                built.instruction_set(container_version)
        return self._built

    def wanted(self, index: int) -> bool:
        return self.share > 0 and (index * 2654435761 >> 7) % self.share == 0

    def _short(self, filename: str) -> str | None:
        name = self._names.get(filename)
        if name is None:
            name = filename[len(self.ROOT) + 1:] if filename.startswith(self.ROOT) else ""
            self._names[filename] = name
        return name or None

    def run(self, fn, *args):
        """(fn(*args), arcs) with the arcs fn took through reference_vm/ with every reference
        cache emptied first. The word and the handler table, which no request decides, are
        kept (rebuilding the table under the tracer was about a third of a traced run) and
        the arcs of building them added where the run would have built them: the word always,
        the table when the run prepared a program (the emptied program cache holds one)."""
        word_arcs, table_arcs = self._building_arcs()
        _clear_reference_caches(keep=(rules_of, word_of, handler_table))
        handler_table(rules_of(self.version))         # warm, whatever emptied them since
        value, arcs = self._traced(fn, *args)
        arcs |= word_arcs
        if load_program.cache_info().currsize:
            arcs |= table_arcs
        return value, arcs

    def _traced(self, fn, *args):
        raw: set[tuple[str, int, int]] = set()     # (file, line, next line): formatted once, at the end
        add = raw.add
        short = self._short

        def global_trace(frame, event, arg):
            name = short(frame.f_code.co_filename)
            if name is None:
                return None
            prev = frame.f_lineno

            def local(frame, event, arg):
                nonlocal prev
                if event == "line":
                    line = frame.f_lineno
                    add((name, prev, line))
                    prev = line
                # The frame's own trace function, which is this one: returning ``local`` by
                # name would make it a cell of itself, a reference cycle per traced frame
                # left for the garbage collector.
                return frame.f_trace
            return local

        previous = sys.gettrace()
        sys.settrace(global_trace)
        try:
            value = fn(*args)
        finally:
            sys.settrace(previous)
        return value, {f"{n}:{a}>{b}" for n, a, b in raw}
