"""Read side of the record services: contexts, sandboxes, accounting, results, violations.

Each service turns rows into domain models and lists them with simple filters. The write
side is the execution lifecycle (execution.py), which records a context with all of these in
one transaction; only violation acknowledgement changes a record afterwards.

What only shows records (``list``, ``page``, ``entry``, ``history_entries``, ``totals``) puts
a :class:`~rtwo_vm.runtime.damaged.DamagedEntry` in place of a row that does not decode;
what uses one (``get`` and ``for_context``, and ``list(strict=True)``) raises DamagedRecord.
"""

from __future__ import annotations

import builtins
import sqlite3
from typing import Any, Callable

from reference_vm.result import STATUSES
from reference_vm.rules import rules as rules_of
from rtwo_vm.runtime.catalog import catalog, runtime_spec
from rtwo_vm.runtime.damaged import DamagedEntry, decoded, entry_of, missing
from rtwo_vm.runtime.events import RecordWriter
from rtwo_vm.runtime.lifecycle import StageEntry
from rtwo_vm.runtime import stored
from rtwo_vm.runtime.models import (
    ModelError, RTWOExecutionContext, RTWOExecutionResult, RTWOExecutionSandbox,
    RTWOResourceAccounting, RTWOSandboxViolation, field_names,
)
from rtwo_vm.runtime.schema import columns
from rtwo_vm.runtime.paging import (
    InvalidInput, Page, breakdown, count_at_most, keyset, page_key,
)
from rtwo_vm.runtime.store import DamagedRecord, Store

__all__ = ["DamagedEntry", "InvalidInput", "Page", "UnknownRecord", "breakdown", "count_at_most",
           "keyset"]


class UnknownRecord(LookupError):
    """No record with the id asked for."""


def _model(model, row: sqlite3.Row, table: str, json_fields: tuple[str, ...] = ()):
    """The domain model of a row read back: every column checked for its declared type, the
    JSON ones parsed with a nesting cap, then the model's own validation (enumerations,
    timestamps, cross-field rules); a row that fails any of it is a DamagedRecord naming the
    table and the row's key."""
    stored.check_row(table, row)
    key = stored.row_key(table, row)
    values: dict[str, Any] = {}
    for name in field_names(model):
        value = row[name]
        if name in json_fields and value is not None:
            value = stored.json_value(value, table, key, name)
            if isinstance(value, list):
                value = tuple(value)
        values[name] = value
    try:
        return model(**values)
    except (ModelError, TypeError, ValueError, KeyError) as err:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DamagedRecord(f"{table} {key}: {text} (the database was changed outside the "
                            "runtime)") from None


def _stage(row: sqlite3.Row) -> StageEntry:
    """A stage history row, checked (the stages of lifecycle.toml)."""
    stages = catalog().stages
    key = stored.row_key("stage_history", stored.check_row("stage_history", row))
    stored.one_of(row["stage"], stages, "stage_history", key, "stage")
    stored.one_of(row["from_stage"], stages, "stage_history", key, "from_stage", nullable=True)
    return StageEntry(row["seq"], row["stage"], row["from_stage"], row["at"])


class _RecordService:
    MODEL: Any = None
    TABLE = ""
    KEY = ""
    JSON_FIELDS: tuple[str, ...] = ()
    ORDER = "rowid"
    NOUN = "record"
    # The stable order of ``page``: key expressions over the record (t) and, for the records
    # of a context, that context (c, joined); the first is indexed, the last unique.
    PAGE_KEY: tuple[str, ...] = ()
    JOIN_CONTEXT = False
    CREATED = "t.created_at"   # what the created_from / created_to range compares

    def __init__(self, store: Store):
        self.store = store

    def _from(self, row: sqlite3.Row):
        return _model(self.MODEL, row, self.TABLE, self.JSON_FIELDS)

    def entry(self, row: sqlite3.Row):
        """The model of a row, or its damaged entry (to show, never to use)."""
        return decoded(self.TABLE, row, self._from)

    def _row(self, record_id: str) -> sqlite3.Row:
        row = self.store.one(f"SELECT * FROM {self.TABLE} WHERE {self.KEY} = ?", (record_id,))
        if row is None:
            raise UnknownRecord(f"no {self.NOUN} {record_id!r}")
        return row

    def _context_row(self, context_id: str) -> sqlite3.Row:
        row = self.store.one(f"SELECT * FROM {self.TABLE} WHERE context_id = ?", (context_id,))
        if row is None:
            raise UnknownRecord(f"no {self.NOUN} for context {context_id!r}")
        return row

    def get(self, record_id: str):
        return self._from(self._row(record_id))

    def for_context(self, context_id: str):
        return self._from(self._context_row(context_id))

    def get_entry(self, record_id: str):
        """The record (or its damaged entry) with this id, or else of this context id (as
        ``results show`` takes either); UnknownRecord when there is none."""
        try:
            return self.entry(self._row(record_id))
        except UnknownRecord:
            found = None if self.TABLE == "contexts" or "context_id" not in columns(
                self.TABLE) else self.context_entry(record_id, required=False)
            if found is None:
                raise
            return found

    def context_entry(self, context_id: str, *, required: bool = True):
        """The record of a context (or its damaged entry); when the context has none, a
        damaged entry saying so (``required``) or None."""
        row = self.store.one(f"SELECT * FROM {self.TABLE} WHERE context_id = ? LIMIT 1",
                             (context_id,))
        if row is None:
            return missing(self.TABLE, context_id, f"the {self.NOUN} of context {context_id}") \
                if required else None
        return self.entry(row)

    def list(self, *, limit: int | None = None, _where: tuple[tuple[str, tuple], ...] = (),
             strict: bool = False, **filters: Any) -> list:
        """Records in creation order, filtered by column values (None: any); a damaged row is
        its DamagedEntry, or with ``strict`` raises DamagedRecord."""
        where = [clause for clause, _ in _where]
        args = [arg for _, clause_args in _where for arg in clause_args]
        for column, value in filters.items():
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT * FROM {self.TABLE}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {self.ORDER}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        make = self._from if strict else self.entry
        return [make(r) for r in self.store.all(sql, tuple(args))]

    def count(self) -> int:
        return self.store.single(f"SELECT count(*) FROM {self.TABLE}")[0]

    def count_at_most(self, bound: int) -> tuple[int, bool]:
        """(count, exact): the records, counted up to ``bound`` (see count_at_most)."""
        return count_at_most(self.store, self.TABLE, (), bound)

    def last_at(self) -> str | None:
        """When the latest record was made (None: there is none), by the page order."""
        source = self._source()
        row = self.store.one(f"SELECT {self.CREATED} FROM {source} ORDER BY "
                             + ", ".join(f"{k} DESC" for k in self.PAGE_KEY) + " LIMIT 1")
        return None if row is None or type(row[0]) is not str else row[0]

    def _source(self) -> str:
        if self.JOIN_CONTEXT:
            return f"{self.TABLE} t JOIN contexts c ON c.context_id = t.context_id"
        return f"{self.TABLE} t"

    def page(self, *, limit: int, after: tuple | None = None, contract_id: str | None = None,
             created_from: str | None = None, created_to: str | None = None,
             count_bound: int | None = None,
             _where: tuple[tuple[str, tuple], ...] = (), **equal: Any) -> Page:
        """At most ``limit`` records after the order key ``after``, in the stable order
        (PAGE_KEY), filtered by column values (None: any), the contract and a range of
        creation times (ISO 8601 text in UTC as the runtime writes it, both ends included).
        A page reads its own rows and a count, never a whole table into memory; with a
        ``count_bound`` the count reads at most that many rows and the total past it is
        "more than count_bound" (``Page.exact`` False)."""
        if type(limit) is not int or limit < 1:
            raise InvalidInput("limit must be a positive integer")
        where = [clause for clause, _ in _where]
        args: list[Any] = [arg for _, clause_args in _where for arg in clause_args]
        for column, value in equal.items():
            if value is not None:
                # A value shared by a share of the table (a status, a type) is read in page
                # order, "+" keeping the planner off the column's index (walking it would mean
                # sorting every match); a context's records are few, read by their index.
                where.append(f"{'' if column == 'context_id' else '+'}t.{column} = ?")
                args.append(value)
        on_context = False   # a filter on the joined context
        if contract_id is not None:
            where.append(("c" if self.JOIN_CONTEXT else "t") + ".contract_id = ?")
            args.append(contract_id)
            on_context = self.JOIN_CONTEXT
        for bound, op in ((created_from, ">="), (created_to, "<=")):
            if bound is not None:
                where.append(f"{self.CREATED} {op} ?")
                args.append(bound)
                on_context = on_context or self.CREATED.startswith("c.")
        source = self._source()
        filtered = " WHERE " + " AND ".join(where) if where else ""
        # Every record of a context has its context (a foreign key the store enforces), so
        # the join only matters to the count when a filter reads the context.
        counted = source if on_context else f"{self.TABLE} t"
        total, exact = count_at_most(self.store, counted + filtered, tuple(args), count_bound)
        after_sql, after_args = keyset(self.PAGE_KEY, after)
        if after_sql:
            where.append(after_sql)
        sql = (f"SELECT t.*, " + ", ".join(f"{k} AS page_key_{i}" for i, k in enumerate(self.PAGE_KEY))
               + f" FROM {source}" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY " + ", ".join(self.PAGE_KEY) + " LIMIT ?")
        rows = self.store.all(sql, tuple(args) + after_args + (limit + 1,))
        items = [self.entry(r) for r in rows[:limit]]
        last = rows[limit - 1] if len(rows) > limit else None
        following = None if last is None else page_key(tuple(
            last[f"page_key_{i}"] for i in range(len(self.PAGE_KEY))))
        return Page(items, following, total, exact)


class ExecutionContextManager(_RecordService):
    """Contexts: one per invocation, entry or callee, with its lifecycle stage history."""

    MODEL, TABLE, KEY, ORDER = RTWOExecutionContext, "contexts", "context_id", "seq"
    NOUN = "context"
    PAGE_KEY = ("t.seq",)

    def entry_count(self) -> int:
        """Entry contexts: one per invocation run through the lifecycle (callees excluded)."""
        return self.store.single("SELECT count(*) FROM contexts WHERE parent_context_id IS NULL")[0]

    def entry_count_at_most(self, bound: int) -> tuple[int, bool]:
        """(count, exact) of the entry contexts, counted up to ``bound`` (an index range)."""
        return count_at_most(self.store, "contexts WHERE parent_context_id IS NULL", (), bound)

    def history(self, context_id: str) -> list[StageEntry]:
        self.get(context_id)
        return [_stage(r) for r in self._history_rows(context_id)]

    def history_entries(self, context_id: str) -> builtins.list[StageEntry | DamagedEntry]:
        """The stage history of a context, whatever its record holds, to show: a damaged
        stage row is its DamagedEntry."""
        return [decoded("stage_history", r, _stage) for r in self._history_rows(context_id)]

    def _history_rows(self, context_id: str) -> builtins.list[sqlite3.Row]:
        return self.store.all("SELECT * FROM stage_history WHERE context_id = ? ORDER BY seq",
                              (context_id,))

    def children(self, context_id: str) -> list[RTWOExecutionContext]:
        return [self._from(r) for r in self.store.all(
            "SELECT * FROM contexts WHERE parent_context_id = ? ORDER BY call_index",
            (context_id,))]

    def children_ids(self, context_id: str) -> builtins.list[str]:
        """The ids of a context's callees (as text, whatever their rows hold)."""
        return [r[0] if isinstance(r[0], str) else stored.shown(r[0]) for r in self.store.all(
            "SELECT context_id FROM contexts WHERE parent_context_id = ? ORDER BY call_index",
            (context_id,))]

    def list(self, *, limit: int | None = None, status: str | None = None,  # type: ignore[override]  # no _where
             execution_status: str | None = None, contract_id: str | None = None,
             roots_only: bool = False) -> list:
        """Contexts in commit order. Every context is recorded whole at the final stage, so
        its ``status`` is always that stage; what tells contexts apart is the path they took:
        ``status`` keeps those whose stage history entered that lifecycle stage (``committed``
        or ``rolled_back``: how stage 9 went; ``executing``: those that ran), and
        ``execution_status`` those whose result has that status (chapter 7.1)."""
        where = self.filters(status, execution_status, roots_only, "contexts")
        return super().list(limit=limit, _where=where, contract_id=contract_id)

    @staticmethod
    def filters(status: str | None, execution_status: str | None, roots_only: bool,
                table: str) -> tuple[tuple[str, tuple], ...]:
        """The (SQL clause, arguments) pairs of the context filters over ``table``'s alias
        (``list``, ``page`` and the dashboard's newest-first page use them); InvalidInput
        for an unknown stage or execution status."""
        cat = catalog()
        where: list[tuple[str, tuple]] = []
        if roots_only:
            where.append((f"{table}.parent_context_id IS NULL", ()))
        if status is not None:
            if status not in cat.stages:
                raise InvalidInput(f"unknown lifecycle stage {status!r}; use one of "
                                   f"{', '.join(cat.stages)}")
            where.append(("EXISTS (SELECT 1 FROM stage_history h WHERE h.context_id = "
                          f"{table}.context_id AND h.stage = ?)", (status,)))
        if execution_status is not None:
            if execution_status not in STATUSES:
                raise InvalidInput(f"unknown execution status {execution_status!r}; use one of "
                                   f"{', '.join(STATUSES)}")
            where.append(("EXISTS (SELECT 1 FROM results r WHERE r.context_id = "
                          f"{table}.context_id AND r.execution_status = ?)", (execution_status,)))
        return tuple(where)

    def page(self, *, limit: int, after: tuple | None = None,  # type: ignore[override]
             status: str | None = None, execution_status: str | None = None,
             contract_id: str | None = None, created_from: str | None = None,
             created_to: str | None = None, roots_only: bool = False,
             count_bound: int | None = None) -> Page:
        """A page of contexts in commit order (``seq``), filtered as ``list`` does and by a
        range of creation times."""
        return super().page(limit=limit, after=after, contract_id=contract_id,
                            created_from=created_from, created_to=created_to,
                            count_bound=count_bound,
                            _where=self.filters(status, execution_status, roots_only, "t"))

    def outcomes(self) -> dict[str, tuple[str | None, str, str | None]]:
        """For each context id: (the stage-9 stage it went through, its execution status, its
        error code), the facts ``list`` filters on, in one query; for a result row that does
        not decode: (None, ``damaged``, the line of its damaged entry)."""
        roles = catalog().roles
        rows = self.store.all(
            "SELECT r.context_id, h.stage, r.execution_status, r.error, r.result_id FROM results r "
            "LEFT JOIN stage_history h ON h.context_id = r.context_id AND h.stage IN (?, ?)",
            (roles["commit"], roles["rollback"]))
        out: dict[str, tuple[str | None, str, str | None]] = {}
        for r in rows:
            try:
                key = stored.row_key("results", stored.check_row("results", r))
                stored.one_of(r["execution_status"], STATUSES, "results", key, "execution_status")
                stored.one_of(r["error"], runtime_spec().errors, "results", key, "error",
                              nullable=True)
                stage = stored.one_of(r[1], catalog().stages, "stage_history", key, "stage",
                                      nullable=True)
            except DamagedRecord as err:
                if isinstance(r[0], str):
                    out[r[0]] = (None, "damaged", entry_of("results", r, err).line())
                continue
            out[r[0]] = (stage, r[2], r[3])
        return out

    def incomplete(self) -> builtins.list[str]:
        """Context ids missing any part of their record (never expected: one transaction)."""
        final = catalog().roles["final"]
        rows = self.store.all(
            "SELECT c.context_id FROM contexts c "
            "LEFT JOIN sandboxes s ON s.context_id = c.context_id "
            "LEFT JOIN accounting a ON a.context_id = c.context_id "
            "LEFT JOIN results r ON r.context_id = c.context_id "
            "WHERE s.sandbox_id IS NULL OR a.accounting_id IS NULL OR r.result_id IS NULL "
            "OR c.status != ? OR (SELECT stage FROM stage_history h WHERE h.context_id = "
            "c.context_id ORDER BY seq DESC LIMIT 1) IS NOT ? "
            "OR NOT EXISTS (SELECT 1 FROM outbox o WHERE o.stream = c.context_id "
            "AND o.type = 'result.recorded')", (final, final))
        return [r[0] for r in rows]


class SandboxManager(_RecordService):
    """Sandboxes: isolation level, limits and storage access; plans the interpreter policy."""

    MODEL, TABLE, KEY = RTWOExecutionSandbox, "sandboxes", "sandbox_id"
    NOUN = "sandbox"
    PAGE_KEY, JOIN_CONTEXT, CREATED = ("c.seq",), True, "c.created_at"   # one per context

    @staticmethod
    def plan(isolation_level: str | None, storage_access: str | None) -> tuple[str, str, bool]:
        """(isolation level, storage access, calls allowed by isolation) for a request, with
        the defaults of sandbox.toml; refuses unknown levels and access wider than allowed."""
        cat = catalog()
        level_name = cat.default_isolation if isolation_level is None else isolation_level
        level = cat.isolation.get(level_name)
        if level is None:
            raise InvalidInput(f"unknown isolation level {level_name!r}; use one of "
                               f"{', '.join(cat.isolation)}")
        access = level.max_storage_access if storage_access is None else storage_access
        if access not in cat.storage_access_order:
            raise InvalidInput(f"unknown storage access {access!r}; use one of "
                               f"{', '.join(cat.storage_access_order)}")
        if not cat.storage_access_at_most(access, level.max_storage_access):
            raise InvalidInput(f"storage access {access} exceeds isolation {level_name} "
                               f"(at most {level.max_storage_access})")
        return level_name, access, level.external_call != "forbidden"


class ResourceAccountingService(_RecordService):
    """Usage in three dimensions and the fee, computed by the formula of chapter 5.5."""

    MODEL, TABLE, KEY = RTWOResourceAccounting, "accounting", "accounting_id"
    NOUN = "accounting record"
    PAGE_KEY, JOIN_CONTEXT, CREATED = ("c.seq",), True, "c.created_at"   # one per context

    @staticmethod
    def fee(compute: int, memory_pages: int, storage_units: int, version: str) -> int:
        """schedule.toml [fee] prices of spec version ``version`` applied to the usage, in
        exact integers (chapter 5.5)."""
        return rules_of(version).fee(compute, memory_pages, storage_units)

    SUMMED = ("compute_units", "memory_units", "storage_units", "fee")
    DAMAGED_SHOWN = 20   # the most damaged entries ``totals`` lists

    def totals(self) -> dict[str, Any]:
        """The charged contexts and their sums. A charged record whose sums are not counts
        (a damaged row) is left out of the sums and listed under ``damaged`` (at most
        DAMAGED_SHOWN entries); sums past SQLite's integers are added in Python."""
        valid = " AND ".join(f"typeof({c}) = 'integer' AND {c} >= 0" for c in self.SUMMED)
        bad = self.store.all(f"SELECT * FROM accounting WHERE status = 'charged' AND NOT "
                             f"({valid}) LIMIT ?", (self.DAMAGED_SHOWN,))
        sums = ", ".join(f"coalesce(sum({c}), 0)" for c in self.SUMMED)
        where = f"FROM accounting WHERE status = 'charged' AND {valid}"
        try:
            row = tuple(self.store.single(f"SELECT count(*), {sums} {where}"))
        except sqlite3.OperationalError as err:   # integer overflow: huge (damaged) counts
            if "overflow" not in str(err):
                raise
            row = (0,) + (0,) * len(self.SUMMED)
            for r in self.store.all(f"SELECT {', '.join(self.SUMMED)} {where}"):
                row = (row[0] + 1,) + tuple(a + b for a, b in zip(row[1:], tuple(r)))
        doc: dict[str, Any] = {"contexts": row[0], "computeUnits": row[1],
                               "memoryUnits": row[2], "storageUnits": row[3], "fee": row[4]}
        if bad:
            doc["damaged"] = [self._bad_sum(r).to_json() for r in bad]
        return doc

    def _bad_sum(self, row: sqlite3.Row) -> DamagedEntry:
        entry = self.entry(row)
        if isinstance(entry, DamagedEntry):
            return entry
        return entry_of("accounting", row, DamagedRecord("a charged record without its sums"))


class ExecutionResultService(_RecordService):
    """Results; ``compared`` is the canonical result, ``digest`` its SHA-256."""

    MODEL, TABLE, KEY = RTWOExecutionResult, "results", "result_id"
    NOUN = "result"
    PAGE_KEY, JOIN_CONTEXT = ("c.seq",), True   # one per context
    JSON_FIELDS = ("state_changes", "emitted_events", "compared")

    def by_digest(self, digest: str) -> list[RTWOExecutionResult]:
        return [self._from(r) for r in self.store.all(
            "SELECT * FROM results WHERE digest = ? ORDER BY rowid", (digest,))]


class SandboxViolationService(_RecordService):
    """Violations (classified from spec codes by Catalog.violation); acknowledgement is the only
    change a violation record ever sees."""

    MODEL, TABLE, KEY = RTWOSandboxViolation, "violations", "violation_id"
    NOUN = "violation"
    # Their own order: creation time, then id (index violations_by_time), so that a page is
    # an index range of the violations table; the join serves the contract filter.
    PAGE_KEY, JOIN_CONTEXT = ("t.created_at", "t.violation_id"), True

    def __init__(self, store: Store, clock: Callable[[], str], writer: RecordWriter):
        super().__init__(store)
        self._clock, self._writer = clock, writer

    def for_context(self, context_id: str) -> list[RTWOSandboxViolation]:
        return self.list(context_id=context_id)

    def list(self, *, limit: int | None = None, violation_type: str | None = None,
             **filters: Any) -> list[RTWOSandboxViolation]:
        if violation_type is not None and violation_type not in catalog().violation_types:
            raise InvalidInput(f"unknown violation type {violation_type!r}; use one of "
                               f"{', '.join(catalog().violation_types)}")
        return super().list(limit=limit, violation_type=violation_type, **filters)

    def page(self, *, limit: int, after: tuple | None = None, violation_type: str | None = None,
             **filters: Any) -> Page:
        if violation_type is not None and violation_type not in catalog().violation_types:
            raise InvalidInput(f"unknown violation type {violation_type!r}; use one of "
                               f"{', '.join(catalog().violation_types)}")
        return super().page(limit=limit, after=after, violation_type=violation_type, **filters)

    def acknowledge(self, violation_id: str) -> RTWOSandboxViolation:
        current = self.get(violation_id)
        if current.status == "acknowledged":
            return current
        at = self._clock()
        with self._writer.transaction() as tx:
            tx.execute("UPDATE violations SET status = 'acknowledged' WHERE violation_id = ?",
                       (violation_id,))
            self._writer.event(tx, current.context_id, "violation.acknowledged",
                               {"violationId": violation_id, "contextId": current.context_id}, at)
        return self.get(violation_id)
