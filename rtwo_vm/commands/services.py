"""``rtwo-vm deploy|call|contracts|vm|contexts|sandboxes|accounting|results|violations|events|
policy|instructions|readiness``: the runtime services over a SQLite database (chapter 10).

Every command takes ``--db PATH`` (default: $RTWO_VM_DB, else ./rtwo-vm.db). Only ``deploy``,
``vm register``, ``policy create`` and ``events sink-add`` create a database; the others
refuse a missing one. Input is checked before the database is written, and each command
writes in one transaction, so a bad argument, an unknown id (VM, policy, record), an invalid
policy or sandbox, or malformed code gives one line on stderr, exit 2, and leaves the
database as it was. A call that the checks of chapter 7.3.2 refuse (an unknown contract,
code that fails validation, limits out of range) is not bad input: it is recorded as a
context that rolled back (chapter 10.4), like any other outcome, and exits 1. The options, the
database handling and the printing they share are rtwo_vm/arguments/runtime.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rtwo_vm.arguments.inputs import (
    CliError, add_spec_version, spec_version, operation_names, parse_assignment, parse_count, parse_hex, parse_word, read_code,
    read_storage_file,
)
import spec
from rtwo_vm.runtime.catalog import runtime_version
from rtwo_vm.arguments.words import add_call_data, call_data
from rtwo_vm.arguments.recorded import output_words_hex, print_recorded
from rtwo_vm.arguments.evidence import add_data_option
from rtwo_vm.arguments.runtime import (
    add_options, guard, is_damaged, need_id, open_runtime, print_json, print_listing, print_record,
    print_rows, print_table, refuse_unread_options,
)


# -- deploy, call, contracts ----------------------------------------------------------------

def _deploy_version(args) -> str:
    """``--spec-version``, else the newest version a VM of the database runs (vms.py; with no
    database yet, the newest the default VMs would run), found without writing anything."""
    if args.spec_version:
        return args.spec_version
    from pathlib import Path
    if Path(args.db).exists():
        with open_runtime(args) as rt:
            return rt.vms.newest_version()
    from rtwo_vm.runtime.vms import default_pairs
    return default_pairs()[-1][0] if default_pairs() else spec.latest()


@guard
def _cmd_deploy(args) -> int:
    args.spec_version = _deploy_version(args)
    code = read_code(args.file, args.spec_version)
    address = parse_word(args.address, "--address") if args.address else None
    storage = read_storage_file(args.storage_file) if args.storage_file else {}
    for item in args.storage or ():
        key, value = parse_assignment(item, "--storage")
        storage[parse_word(key, "--storage key")] = parse_word(value, "--storage value")
    if not args.unchecked:
        from reference_vm.errors import VMError
        from reference_vm.rules import rules
        from reference_vm.validate import validate
        try:
            validate(code, rules(args.spec_version))
        except VMError as err:
            raise CliError(f"{args.file}: not a valid container: {err.code}") from None
    with open_runtime(args, create=True) as rt:
        deployed = rt.deploy(code, address, storage, validate_code=not args.unchecked,
                             spec_version=args.spec_version)
    if args.json:
        print_json(deployed.to_json())
    else:
        print(f"deployed {deployed.address}: {deployed.code_size} bytes, code {deployed.code_hash[:16]}, "
              f"{deployed.storage_slots} storage slots; state root {deployed.state_root[:16]}; "
              f"spec {deployed.spec_version}")
    return 0


def _limits(args):
    from reference_vm import Limits
    given = {name: parse_count(getattr(args, name), f"--{name.replace('_', '-')}")
             for name in Limits.DIMENSIONS if getattr(args, name) is not None}
    return Limits(**given)


@guard
def _cmd_call(args) -> int:
    from rtwo_vm.runtime import CallRequest
    to = parse_word(args.address, "address")
    seed = parse_hex(args.seed, "--seed") if args.seed else bytes(32)
    if len(seed) != 32:
        raise CliError("--seed must be 32 bytes of hex")
    request = CallRequest(
        to=to, caller=parse_word(args.caller, "--caller"),
        call_data=call_data(args, runtime_version()), block_time=parse_word(args.time, "--time"),
        random_seed=seed, policy_id=args.policy, isolation_level=args.isolation,
        storage_access=args.storage_access, limits=_limits(args),
        transaction_reference=args.tx_ref, vm_id=args.vm, execution_mode=args.mode)
    from rtwo_vm.runtime.records import SandboxManager
    SandboxManager.plan(request.isolation_level, request.storage_access)
    with open_runtime(args) as rt:
        # Runtime references are refused before anything is recorded (10.9); an unknown
        # contract is a check of chapter 7.3.2, recorded as a rejected context (10.4).
        if args.policy:
            rt.policies.for_execution(args.policy)
        if args.vm or args.mode:
            rt.vms.for_execution(args.vm, rt.lifecycle.contract_version(request.to), args.mode)
        recorded = rt.call(request)
        reports = rt.events.deliver() if args.deliver else None
    if args.json:
        doc = recorded.to_json()
        words = output_words_hex(recorded.result.output)
        if words is not None:   # the entry's output (returned or revert data) as words
            doc["outputWords"] = words
        if reports is not None:
            doc["delivery"] = {name: r.to_json() for name, r in reports.items()}
        print_json(doc)
    else:
        print_recorded(recorded)
        if reports is not None:
            for name, report in reports.items():
                print(f"delivery to {name}: {report.summary()}")
            if not reports:
                print("delivery: no sinks registered (events sink-add KIND TARGET)")
    if reports and not all(r.complete for r in reports.values()):
        return 3
    return 0 if recorded.result.execution_status == "success" else 1


@guard
def _cmd_contracts(args) -> int:
    with open_runtime(args) as rt:
        if args.action == "show":
            return print_record(rt.contract(parse_word(need_id(args), "address")))
        docs = rt.contracts()
    if args.json:
        return print_rows(args, docs, [])
    return print_rows(args, [d if is_damaged(d) else {
        **d, "storageSlots": len(d["storage"]), "codeHash": d["codeHash"][:16]} for d in docs],
        ["address", "codeSize", "codeHash", "storageSlots", "deployedAt"])


# -- record listings ------------------------------------------------------------------------

@guard
def _cmd_vm(args) -> int:
    if args.action == "register":
        if not args.id:
            raise CliError("vm register needs a name")
        with open_runtime(args, create=True) as rt:
            vm = rt.vms.register(args.id, args.mode or "reference_interpreter",
                                 spec_version=args.spec_version)
            if args.activate:
                vm, evidence = rt.vms.activate(vm.vm_id)
                print(f"self-check: {evidence}", file=sys.stderr if args.json else sys.stdout)
        print_json(vm.to_json())
        return 0
    with open_runtime(args) as rt:
        if args.action == "list":
            return print_listing(args, rt.vms.list(), [
                "vmId", "vmName", "vmVersion", "runtimeCompatibility", "executionMode", "status",
                "createdAt"])
        vm_id = need_id(args)
        if args.action == "activate":
            vm, evidence = rt.vms.activate(vm_id)
            print(f"self-check: {evidence}", file=sys.stderr if args.json else sys.stdout)
        elif args.action == "retire":
            vm = rt.vms.retire(vm_id)
        else:
            return print_record(rt.vms.get_entry(vm_id).to_json())
    print_json(vm.to_json())
    return 0


@guard
def _cmd_contexts(args) -> int:
    with open_runtime(args) as rt:
        if args.action == "list":
            contract = hex(parse_word(args.contract, "--contract")) if args.contract else None
            records = rt.contexts.list(limit=args.limit, status=args.status,
                                       execution_status=args.result, contract_id=contract,
                                       roots_only=args.entry_only)
            if args.json:
                return print_listing(args, records, [])
            # Every context's status is the final stage: show how each one ended instead.
            ended = rt.contexts.outcomes()
            docs = [c.to_json() for c in records]
            code = print_rows(args, [d if is_damaged(d) else {
                **d, "ended": ended.get(d["contextId"], ("-",))[0],
                "result": _outcome(ended.get(d["contextId"]))}
                for d in docs], ["contextId", "contractId", "depth", "ended", "result",
                                 "parentContextId", "createdAt"])
            results = [ended[d["contextId"]][2] for d in docs if not is_damaged(d)
                       and ended.get(d["contextId"], ("", ""))[1] == "damaged"]
            for line in results:   # the context is whole, its result row is not
                print(line)
            return 1 if results else code
        context_id = need_id(args)
        doc = rt.context_record(context_id)
    return print_record(doc)


def _outcome(found) -> str:
    """The ``result`` column of ``contexts list``: the execution status and error code."""
    if not found:
        return ""
    return "damaged" if found[1] == "damaged" else " ".join(filter(None, found[1:]))


def _simple(service_name: str, columns: list[str], filters=()):
    @guard
    def command(args) -> int:
        with open_runtime(args) as rt:
            service = getattr(rt, service_name)
            if args.action == "list":
                given = {f: getattr(args, f) for f in filters}
                return print_listing(args, service.list(limit=args.limit, **given), columns)
            if service_name == "accounting" and args.action == "totals":
                return print_record(service.totals())
            if service_name == "violations" and args.action == "ack":
                print_json(service.acknowledge(need_id(args)).to_json())
                return 0
            if args.action != "show":
                raise CliError(f"{service_name} has no action {args.action}")
            # by its id, or a context id (the record of that context)
            record = service.get_entry(need_id(args))
        return print_record(record.to_json())
    return command


# -- policy, instructions, readiness -------------------------------------------------------

# Options each policy action reads; given to another action they would be silently ignored.
_POLICY_OPTIONS = {"create": ("allow_time", "allow_randomness", "forbid_calls", "forbid", "allow"),
                   "check": ("file", "isolation", "storage_access")}


_SANDBOX_HINT = (" and call: isolation and storage access belong to the sandbox, not the "
                 "policy")


def _policy_options(args) -> None:
    refuse_unread_options(args, "policy", _POLICY_OPTIONS, shown={"file": "FILE"},
                          hints={"isolation": _SANDBOX_HINT, "storage_access": _SANDBOX_HINT})


@guard
def _cmd_policy(args) -> int:
    _policy_options(args)
    if args.action == "create":
        # Checked before the database is touched, against every version's names (a policy
        # serves contracts of every version; each run checks it under its own version).
        allowed = operation_names(args.allow, "--allow", runtime_version())
        forbidden = operation_names(args.forbid or [], "--forbid", runtime_version()) or ()
        with open_runtime(args, create=True) as rt:
            policy = rt.policies.create(
                time_access="allowed" if args.allow_time else None,
                randomness="seeded" if args.allow_randomness else None,
                external_call="forbidden" if args.forbid_calls else None,
                allowed_operations=allowed, forbidden_operations=forbidden)
        print_json(policy.to_json())
        return 0
    with open_runtime(args) as rt:
        if args.action == "list":
            return print_listing(args, rt.policies.list(limit=args.limit),
                            ["policyId", "timeAccessPolicy", "randomnessPolicy",
                             "externalCallPolicy", "forbiddenOperations", "status"])
        policy_id = need_id(args)
        if args.action == "check":
            if not args.file:
                raise CliError("policy check needs ID and FILE")
            refusals = rt.policies.check_code(policy_id,
                                              read_code(args.file, args.spec_version),
                                              version=args.spec_version,
                                              isolation_level=args.isolation,
                                              storage_access=args.storage_access)
            print_json({"policyId": policy_id, "refusals": refusals,
                         "binds": not refusals})
            return 0 if not refusals else 1
        if args.action != "retire":
            return print_record(rt.policies.get_entry(policy_id).to_json())
        policy = rt.policies.retire(policy_id)
    print_json(policy.to_json())
    return 0


@guard
def _cmd_instructions(args) -> int:
    from rtwo_vm.runtime.registry import RuntimeInstructionRegistry
    registry = RuntimeInstructionRegistry()
    if args.action == "show":
        print_json(registry.get(need_id(args)).to_json())
        return 0
    records = registry.list()
    if args.json:
        print_json([r.to_json() for r in records])
        return 0
    for name, evidence in registry.last_evidence.items():
        print(f"# {name}: {evidence}")
    print_table([{**r.to_json(), "opcode": f"0x{r.opcode:02x}"} for r in records],
           ["opcode", "instructionId", "instructionType", "status", "implemented",
            "smtSemantics", "conformanceVectors"])
    return 0


@guard
def _cmd_readiness(args) -> int:
    from rtwo_vm.runtime.readiness import VMReadinessService
    from rtwo_vm.arguments.evidence import DATA_ENV, data_dir
    from rtwo_vm.runtime.runtime import scratch_runtime, utc_text
    runtime = open_runtime(args) if Path(args.db).exists() else None
    try:
        service = VMReadinessService(
            runtime, utc_text(None), Path(args.examples) if args.examples else None,
            proofs_report=Path(args.proofs_report) if args.proofs_report else None, scratch=scratch_runtime,
            data_dir=data_dir(args))
        try:
            report = service.run(only=args.only, skip=args.skip or ())
        except ValueError as err:
            raise CliError(str(err)) from None
    finally:
        if runtime is not None:
            runtime.close()
    where = service.evidence_from()
    if args.json:
        print_json({**report.to_json(), "evidenceFrom": where})
    else:
        print(f"evidence: data directory {where['dataDir']} (--data-dir, ${DATA_ENV}); "
              f"proofs report {where['proofsReport']}")
        rows = [c.to_json() for c in report.checks]
        print_table(rows, ["name", "status", "seconds", "evidence"])
        print(f"readiness: {report.readiness} (checked {report.checked_at})")
    return 0 if report.readiness != "not_ready" else 1


# -- registration ---------------------------------------------------------------------------


def _modes() -> tuple[str, ...]:
    from rtwo_vm.runtime.catalog import catalog
    return catalog().values("execution_mode")


def register(sub) -> None:
    p = sub.add_parser("deploy", help="deploy a contract into the runtime database")
    p.add_argument("file", help=".rasm assembly, hex text or a binary container")
    p.add_argument("--address",
                   help="address to deploy at (default: the lowest free address from 0x100)")
    p.add_argument("--storage", action="append", metavar="KEY=VALUE", help="initial storage")
    p.add_argument("--storage-file", dest="storage_file", metavar="FILE.json",
                   help='initial storage from a JSON object {"KEY": "VALUE", ...} (for large '
                        'storage; --storage entries are applied after it)')
    p.add_argument("--unchecked", action="store_true",
                   help="deploy even a container that fails validation (calls to it are "
                        "then refused at the validated stage)")
    p.add_argument("--spec-version", dest="spec_version", type=spec_version, metavar="VERSION",
                   help="the spec version the contract is deployed under and its calls run "
                        f"under ({', '.join(spec.names())}; default: the newest a VM of the "
                        "database runs)")
    add_options(p)
    p.set_defaults(func=_cmd_deploy)

    p = sub.add_parser(
        "call", help="invoke a deployed contract through all ten lifecycle stages",
        description="Invoke the contract at ADDRESS through all ten lifecycle stages and record "
                    "the context. Exit status: 0 success; 1 recorded with another status (an "
                    "unknown contract too: rejected CONTRACT_NOT_FOUND); 2 bad input, nothing "
                    "recorded; 3 with --deliver, an event could not be delivered (whatever the "
                    "status; the context is recorded and 'events deliver' retries).")
    p.add_argument("address")
    add_call_data(p)
    p.add_argument("--caller", default="0", help="caller address (default: 0, chapter 7.3.1)")
    p.add_argument("--time", default="0", help="block time (policy time_access must allow it)")
    p.add_argument("--seed", help="32-byte randomness seed as hex")
    p.add_argument("--policy", help="determinism policy id (default: the spec-default policy)")
    p.add_argument("--isolation", help="isolation level (sandbox.toml; default standard)")
    p.add_argument("--storage-access", dest="storage_access",
                   help="none, read_only or read_write (default: the isolation level's widest)")
    p.add_argument("--compute", help="compute limit (default: limits.toml [default])")
    p.add_argument("--memory-pages", dest="memory_pages", help="memory limit in pages")
    p.add_argument("--storage-units", dest="storage_units", help="storage limit in units")
    p.add_argument("--tx-ref", dest="tx_ref", help="transaction reference (default: request hash)")
    p.add_argument("--vm", help="VM id (default: an active VM of the contract's spec version)")
    p.add_argument("--mode", choices=_modes(),
                   help="run on an active VM of this execution mode (default: the first mode "
                        "that has one, in this order)")
    p.add_argument("--deliver", action="store_true",
                   help="then run one delivery pass to the registered sinks and report it per "
                        "sink (exit 3 if an event could not be delivered)")
    add_options(p)
    p.set_defaults(func=_cmd_call)

    p = sub.add_parser("contracts", help="list or show deployed contracts")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("id", nargs="?", metavar="ADDRESS")
    add_options(p)
    p.set_defaults(func=_cmd_contracts)

    p = sub.add_parser("vm", help="Virtual Machine Registry")
    p.add_argument("action", choices=["list", "show", "register", "activate", "retire"])
    p.add_argument("id", nargs="?", metavar="ID|NAME")
    p.add_argument("--mode", choices=_modes(),
                   help="register: the execution mode (default: reference_interpreter)")
    p.add_argument("--spec-version", dest="spec_version", type=spec_version, metavar="VERSION",
                   help=f"register: the spec version it runs ({', '.join(spec.names())}; "
                        f"default: the newest, {spec.latest()})")
    p.add_argument("--activate", action="store_true", help="register and activate")
    add_options(p)
    p.set_defaults(func=_cmd_vm)

    p = sub.add_parser("contexts", help="execution contexts with their stage history")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("id", nargs="?")
    p.add_argument("--status", metavar="STAGE",
                   help="only contexts whose history entered this lifecycle stage: committed or "
                        "rolled_back (how stage 9 went), executing (those that ran); every "
                        "context is recorded at finalized")
    p.add_argument("--result", metavar="STATUS",
                   help="only contexts whose result has this execution status (success, "
                        "reverted, fault, exhausted, violation, invalid, rejected, internal)")
    p.add_argument("--contract", help="only contexts of this contract (hex address)")
    p.add_argument("--entry-only", dest="entry_only", action="store_true", help="no callees")
    add_options(p, listing=True)
    p.set_defaults(func=_cmd_contexts)

    for name, columns, actions, filters in (
        ("sandboxes", ["sandboxId", "contextId", "isolationLevel", "computeLimitReference",
                       "memoryLimitReference", "storageLimitReference", "storageAccessPolicy",
                       "status"], ["list", "show"], ()),
        ("accounting", ["accountingId", "contextId", "computeUnits", "memoryUnits",
                        "storageUnits", "fee", "status"], ["list", "show", "totals"], ()),
        ("results", ["resultId", "contextId", "executionStatus", "error", "errorPc", "output"],
         ["list", "show"], ()),
        ("violations", ["violationId", "contextId", "violationType", "severity", "actionTaken",
                        "code", "errorPc", "instruction", "status"], ["list", "show", "ack"], ("violation_type", "context_id")),
    ):
        p = sub.add_parser(name, help=f"{name} records (show takes its id or a context id)")
        p.add_argument("action", choices=actions)
        p.add_argument("id", nargs="?")
        if name == "violations":
            p.add_argument("--type", dest="violation_type", help="only this violation type")
            p.add_argument("--context", dest="context_id", help="only this context's")
        add_options(p, listing=True)
        p.set_defaults(func=_simple(name, columns, filters))

    p = sub.add_parser("policy", help="Determinism Policy Service")
    p.add_argument("action", choices=["create", "list", "show", "retire", "check"])
    p.add_argument("id", nargs="?")
    p.add_argument("file", nargs="?", help="check: code to bind the policy to")
    p.add_argument("--allow-time", action="store_true", help="time_access = allowed")
    p.add_argument("--allow-randomness", action="store_true", help="randomness = seeded")
    p.add_argument("--forbid-calls", action="store_true", help="external_call = forbidden")
    p.add_argument("--forbid", action="append", metavar="OP", help="forbid a mnemonic or type")
    p.add_argument("--allow", action="append", metavar="OP", help="allow only these")
    p.add_argument("--isolation", help="check: under this isolation level")
    p.add_argument("--storage-access", dest="storage_access", help="check: with this access")
    add_spec_version(p, "check: the spec version FILE is read and bound under")
    add_options(p, listing=True)
    p.set_defaults(func=_cmd_policy)

    p = sub.add_parser("instructions", help="Runtime Instruction Registry (statuses computed)")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("id", nargs="?", metavar="MNEMONIC|OPCODE")
    add_options(p)  # --db is accepted like everywhere; the registry reads no records
    p.set_defaults(func=_cmd_instructions)

    p = sub.add_parser("readiness", help="run the readiness checks and show their evidence")
    p.add_argument("--only", action="append", metavar="CHECK", help="run only this check (repeatable)")
    p.add_argument("--skip", action="append", metavar="CHECK", help="skip this check (repeatable)")
    p.add_argument("--examples", help="example scenarios directory")
    p.add_argument("--proofs-report", dest="proofs_report", metavar="PATH",
                   help="the proof report to check (default: proofs-report.json in the data "
                        "directory, as rtwo-vm prove writes it)")
    add_data_option(p, "the evidence is read from")
    add_options(p)
    p.set_defaults(func=_cmd_readiness)
