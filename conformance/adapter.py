"""The reference interpreter's adapter: ``python -m conformance.adapter``.

It speaks protocol version 1 (conformance.protocol, spec chapter 11.5) on stdin/stdout and is
both what ``rtwo-vm conformance run`` validates by default and the example an implementer in
another language copies: read a line, decode the vector input, execute, write the canonical
result as one line, flush.

``Adapter.handle`` maps one request to one response; ``serve`` is the loop around it.
Wrappers (the seeded-fault adapters of the tests) subclass Adapter and override ``execute``.

It implements every version of spec/versions.toml (``spec_versions``) and runs each session
under the version of the runner's hello (``spec_version``, chapter 11.5.3): one process, one
version.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import sys
from typing import Any, BinaryIO, Mapping

import spec
from conformance.constants import PROTOCOL
from conformance.protocol import EXIT_OK, EXIT_UNSUPPORTED, PROTOCOL_MAJOR, encode, loads_bounded
from conformance.corpus.schema import execute_problems, hello_request_problems
from conformance.corpus.vector import error_stage, request_of
from conformance.scenario.carry import run_steps
from conformance.scenario.schema import request_problems as scenario_request_problems
from reference_vm import execute
from reference_vm.trace import tracer_for

NAME = "rtwo-reference"
VERSION = "1.0.0"
# The longest request line read whole: far above any vector input (code and call data are
# at most 64 KiB each, chapter 2); a longer line is skipped to its end and answered with
# BAD_MESSAGE, never held in memory.
MAX_REQUEST = 16 << 20


class Adapter:
    name = NAME
    version = VERSION
    capabilities: tuple[str, ...] = ("trace", "trace_eip3155", "scenario")
    spec_versions: tuple[str, ...] = spec.names()   # the versions implemented (every one)
    trace_format = "native"          # of the request being answered (11.5.5), set by handle
    engine = staticmethod(execute)   # the execute function: the reference, or compiled_vm's

    def __init__(self, log: Any = sys.stderr, verbose: bool = False):
        self.log = log
        self.verbose = verbose
        self.greeted = False  # an execute before the hello is answered BAD_MESSAGE (11.5.3)
        self.spec_version: str | None = None   # the session's version, from the runner's hello

    def hello(self, request: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """The hello reply, and whether to go on (False: the adapter must exit)."""
        protocol = request.get("protocol")
        # 11.5.4: another major version first (its hello may have other members), then the
        # hello's form, then the spec version; each refusal ends the session.
        if isinstance(protocol, str) and protocol.rsplit("/", 1)[-1] != str(PROTOCOL_MAJOR):
            return self.error(None, "UNSUPPORTED_PROTOCOL", f"this adapter speaks {PROTOCOL}"), False
        problems = hello_request_problems(request)
        if problems:
            return self.error(None, "BAD_MESSAGE", f"not a hello: {problems[0][:200]}"), False
        version = request.get("spec_version")
        if version not in self.spec_versions:
            shown = version if isinstance(version, str) and len(version) <= 40 else repr(version)[:40]
            reply = self.error(None, "UNSUPPORTED_SPEC_VERSION",
                               f"this adapter implements spec {', '.join(self.spec_versions)}, not {shown}")
            reply["spec_versions"] = list(self.spec_versions)
            return reply, False
        self.spec_version = version
        return {"type": "hello", "protocol": PROTOCOL,
                "implementation": {"name": self.name, "version": self.version},
                "spec_versions": list(self.spec_versions), "capabilities": list(self.capabilities)}, True

    @staticmethod
    def error(request_id: Any, code: str, message: str) -> dict[str, Any]:
        return {"type": "error", "id": request_id if isinstance(request_id, str) else None,
                "code": code, "message": message}

    def execute(self, vector_id: str, vector_input: Mapping[str, Any], trace: bool) -> dict[str, Any]:
        """Run one vector input on the reference interpreter under the session's version; the
        result response."""
        version = self.spec_version
        assert version is not None          # handle answers an execute before the hello itself
        request = request_of(vector_input, version)
        out = io.StringIO()
        tracer = tracer_for(self.trace_format, out) if trace else None
        result = self.engine(request.state, request.message, request.context, request.policy,
                             request.limits, version=version, tracer=tracer)
        reply: dict[str, Any] = {"type": "result", "id": vector_id, "result": result.to_json(),
                                 "stage": error_stage(result.error, version)}
        if tracer is not None:
            reply["trace"] = [json.loads(line) for line in out.getvalue().splitlines()]
        return reply

    @staticmethod
    def request_problem(request: Mapping[str, Any]) -> str | None:
        """Why an execute request does not have the execute form of runner-message.schema.json
        (None when it does)."""
        problems = execute_problems(request)
        return problems[0] if problems else None

    def unsupported(self, request: Mapping[str, Any]) -> str | None:
        """Why this adapter cannot answer a well-formed execute request (UNSUPPORTED_INPUT): an
        EIP-3155 trace asked of an adapter without the capability trace_eip3155 (11.5.5)."""
        if request.get("trace") is True and self.trace_format == "eip3155" and "trace_eip3155" not in self.capabilities:
            return "this adapter has no capability trace_eip3155"
        return None

    def scenario(self, scenario_id: str, scenario_input: Mapping[str, Any]) -> dict[str, Any]:
        """Run every step of a scenario input on the engine, each under its own version, the state
        carried from step to step (chapter 11.9.2); the scenario_result response (11.9.4)."""
        run = run_steps(scenario_input, self.engine)
        return {"type": "scenario_result", "id": scenario_id,
                "steps": [{"result": r, "stage": s} for r, s in zip(run.results, run.stages)],
                "post_state": run.post_state}

    def handle_scenario(self, request: Mapping[str, Any], request_id: Any) -> dict[str, Any]:
        """The response to a scenario request (11.9.4): BAD_MESSAGE for one that is not well
        formed, UNSUPPORTED_INPUT for a step of a version this adapter does not implement."""
        if not self.greeted:
            return self.error(request_id, "BAD_MESSAGE", "scenario before hello")
        if "scenario" not in self.capabilities:
            return self.error(request_id, "UNSUPPORTED_INPUT", "this adapter has no capability scenario")
        problems = scenario_request_problems(request)
        if problems:
            return self.error(request_id, "BAD_MESSAGE", f"not a scenario request: {problems[0][:200]}")
        missing = sorted({s["spec_version"] for s in request["input"]["steps"]} - set(self.spec_versions))
        if missing:
            return self.error(request_id, "UNSUPPORTED_INPUT",
                              f"a step runs spec {missing[0]}, which this adapter does not implement")
        try:
            return self.scenario(request_id, request["input"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            return self.error(request_id, "BAD_MESSAGE", f"malformed input: {err!r}")
        except Exception as err:  # noqa: BLE001 - report, never die on one request
            return self.error(request_id, "ADAPTER_FAILURE", repr(err)[:500])

    def handle(self, line: bytes) -> tuple[dict[str, Any] | None, bool]:
        """The response to one request line (None: no response), and whether to go on."""
        try:
            request = loads_bounded(line)
        except (ValueError, UnicodeDecodeError) as err:
            return self.error(None, "BAD_MESSAGE", f"not JSON: {str(err)[:200]}"), True
        if not isinstance(request, dict):
            return self.error(None, "BAD_MESSAGE", "a request must be a JSON object"), True
        kind = request.get("type")
        request_id: Any = request.get("id")     # any JSON value; a string once request_problem passes
        if not isinstance(kind, str):
            return self.error(request_id, "BAD_MESSAGE", "a request needs a string type (11.5.4)"), True
        if kind == "execute":
            if not self.greeted:
                return self.error(request_id, "BAD_MESSAGE", "execute before hello"), True
            # 11.5.4: a request that does not have the execute form of runner-message.schema.json
            # (its input a vector input, trace a boolean, trace_format one of its values, no other
            # member) is answered BAD_MESSAGE, whatever the rest of it says (spec 1.0.2, D4, D7, D8).
            problem = self.request_problem(request)
            if problem:
                return self.error(request_id, "BAD_MESSAGE", f"not an execute request: {problem[:200]}"), True
            self.trace_format = request.get("trace_format", "native")
            unsupported = self.unsupported(request)
            if unsupported:
                return self.error(request_id, "UNSUPPORTED_INPUT", unsupported), True
            try:
                return self.execute(request_id, request["input"], request["trace"]), True
            except (KeyError, TypeError, ValueError, AttributeError) as err:
                return self.error(request_id, "BAD_MESSAGE", f"malformed input: {err!r}"), True
            except Exception as err:  # noqa: BLE001 - report, never die on one request
                return self.error(request_id, "ADAPTER_FAILURE", repr(err)[:500]), True
        if kind == "scenario":
            return self.handle_scenario(request, request_id), True
        if kind == "hello":
            reply, go_on = self.hello(request)
            self.greeted = self.greeted or reply.get("type") == "hello"
            return reply, go_on
        if kind == "shutdown":
            if set(request) != {"type"}:   # 11.5.4: no member besides type; go on reading
                return self.error(None, "BAD_MESSAGE", "a shutdown has no member besides type"), True
            return {"type": "bye"}, False
        return self.error(request_id, "UNKNOWN_TYPE", f"unknown message type {kind!r}"), True

    def serve(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        tune_gc()
        if self.verbose:
            print(f"{self.name} {self.version}: ready", file=self.log, flush=True)
        status = EXIT_OK
        response: dict[str, Any] | None
        for line in requests(stdin):
            if line is None:
                response, go_on = self.error(None, "BAD_MESSAGE", f"request longer than {MAX_REQUEST} bytes"), True
            elif not line.strip():
                continue
            else:
                response, go_on = self.handle(line)
            if response is not None:
                stdout.write(encode(response))
                stdout.flush()
            if not go_on:
                if response is not None and response.get("type") == "error":
                    status = EXIT_UNSUPPORTED
                break
        if self.verbose:
            print(f"{self.name}: exiting with status {status}", file=self.log, flush=True)
        # Only the exit is left: what is alive (the program cache above all) is moved out of
        # the collector's sight, or the interpreter's exit walks it (about 1 CPU s after
        # 10,000 fresh programs, as a fuzzing campaign sends).
        gc.freeze()
        return status


def tune_gc() -> None:
    """Fewer garbage collections for a long-running process that allocates many short-lived,
    acyclic objects: what is loaded at start (spec tables, handlers) is moved out of the
    collector's sight, and the youngest generation is collected less often. Results do not
    depend on it; throughput does (about 1.4 times)."""
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def requests(stdin: BinaryIO, limit: int = MAX_REQUEST):
    """The request lines of ``stdin``; None for a line longer than ``limit`` (skipped to its
    end without holding it)."""
    while True:
        line = stdin.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):      # skip the rest of the long line
            line = stdin.readline(1 << 20)
        yield None


def main(argv: list[str] | None = None, adapter: Adapter | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.adapter", description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    parser.add_argument("--engine", choices=("reference", "compiled", "native"), default="reference",
                        help="run requests on the reference interpreter (default), on compiled_vm "
                             "or on native_vm (needs the native extra: llvmlite)")
    parser.add_argument("--compile-threshold", type=int, default=None, metavar="N",
                        help="with --engine compiled or native: compile a region after N segment "
                             "starts, profiling from the first segment (1: compile everything at "
                             "once, native: every region it can take to machine code at once; for "
                             "differential fuzzing of the compiled code itself)")
    args = parser.parse_args(argv)
    if args.compile_threshold is not None and (args.engine == "reference" or args.compile_threshold < 1):
        parser.error("--compile-threshold needs --engine compiled or native and a count of at least 1")
    if args.engine == "native":
        import native_vm
        if native_vm.missing():
            print(f"python -m conformance.adapter: error: {native_vm.missing()}", file=sys.stderr)
            return 2
    adapter = adapter or Adapter(verbose=args.verbose)
    if args.engine == "compiled":
        import compiled_vm
        adapter.engine = (compiled_vm.execute if args.compile_threshold is None else
                          compiled_vm.Engine(threshold=args.compile_threshold, cold_segments=0).execute)
        adapter.name = "rtwo-compiled"
    elif args.engine == "native":
        adapter.engine = (native_vm.execute if args.compile_threshold is None else
                          native_vm.Engine(threshold=args.compile_threshold, cold_segments=0,
                                           native_work=0, min_block=1, per_handler=0).execute)
        adapter.name = "rtwo-native"
    return adapter.serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
