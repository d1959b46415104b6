"""The reference adapter with one seeded fault, to prove the runner catches each kind of bug.

    python tests/conformance_fixtures/faulty_adapter.py --fault KIND [--target GLOB] [--op MNEMONIC]

Faults (applied to vectors whose id matches --target, default every vector; requests carry
opaque ids and blinded inputs, so the fixture recognises the targeted vectors by their input
with recognise.Recogniser, as an implementation written to pass would):
  wrong-result      the output bytes are wrong
  miscount-compute  the instruction --op costs one compute unit more (usage, fee and trace)
  nondeterministic  usage.compute depends on the time zone (correct only in UTC)
  crash             the process exits (status 3) on the vector
  exit-70           on the vector: closes stdout, logs a traceback to stderr, exits with status 70
                    a moment later (the runner must wait for the exit status)
  killed            on the vector: closes stdout, then dies of SIGTERM a moment later
  hang              the process sleeps forever on the vector; with --once FILE only while
                    FILE does not exist (it creates it: a one-off stall, as under a load spike),
                    with --perturbed-only only outside UTC (in the runner's determinism passes),
                    with --traced-only only when a trace is asked for
  garbage           a non-protocol line is printed before the response
  extra-line        the response is written twice
  wrong-id          the response carries another id
  exceed-limit      memory usage is reported one page above the limit
  bad-stage         the lifecycle stage is reported wrongly
  bad-hello         the handshake names another protocol version
  noisy             logs every request to stderr (must not matter)
  nested            answers with one line of 5,000 nested arrays (short enough to be parsed)
  nested-hello      the hello is 200,000 nested arrays
  huge-line         answers with a 100 MB line
  endless-line      writes without a newline, forever
  blank-flood       writes empty lines, forever
  stderr-flood      writes 8 MB to stderr before each response (and answers correctly)
  setsid-crash      starts a grandchild in a new session that holds stdout, then exits 70
                    (--pidfile FILE receives the grandchild's pid)
  lookup            answers by looking the input up in the published corpus; any other input
                    gets an error UNSUPPORTED_INPUT (an implementation written to pass)
  lose-jumps        correct results, but traces without the steps of jump instructions
  partial           a half-finished VM: UNSUPPORTED_INPUT for any opcode outside a few, and
                    a wrong output on the vectors of --target
  impostor          calls itself rtwo-reference, with a wrong output on --target
  hello-pid         writes its pid to --pidfile after the hello and hangs on every request
  only-1.0          implements spec 1.0 alone: a hello of 1.1 is refused with UNSUPPORTED_SPEC_VERSION
                    listing spec_versions ["1.0"] (an adapter written for 1.0, chapter 11.5.3)
  only-1.0-silent   the same, but the error lists no spec_versions (the runner tries 1.0 next)
  hello-lists-unknown   the hello lists spec version 9.9 besides 1.0 and 1.1

The faults that break one adapter rule of 11.5 each are conformance.run.selftest_mutants (the
selftest's strength); these are the misbehaviours of whole implementations.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import spec  # noqa: E402
from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.adapter import Adapter  # noqa: E402
from conformance.protocol import EXIT_UNSUPPORTED, encode  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from recognise import Recogniser  # noqa: E402

FAULTS = ("wrong-result", "miscount-compute", "nondeterministic", "crash", "exit-70", "killed", "hang",
          "garbage", "extra-line", "wrong-id", "exceed-limit", "bad-stage", "bad-hello", "noisy", "nested",
          "nested-hello", "huge-line", "endless-line", "blank-flood", "stderr-flood", "setsid-crash",
          "lookup", "lose-jumps", "partial", "impostor", "hello-pid", "only-1.0", "only-1.0-silent",
          "hello-lists-unknown")
PARTIAL = {"PUSH8", "PUSH1", "ADD", "SUB", "MUL", "STOP", "RETURN", "REVERT", "POP", "DUP1", "SWAP1", "MSTORE",
           "MLOAD", "TRAP", "JUMP"}
NESTED = b"[" * 200_000 + b"\n"
NESTED_RESULT = b"[" * 5_000 + b"\n"


def _key(vector_input) -> str:
    return json.dumps(vector_input, sort_keys=True, separators=(",", ":"))


def _opcodes(vector_input):
    """The mnemonics of every contract's code, or None when a container does not decode."""
    from recognise import decoded
    used = set()
    try:
        for body in vector_input["pre_state"]["contracts"].values():
            _, instructions = decoded(bytes.fromhex(body["code"][2:]))
            used |= {d.instruction.mnemonic for d in instructions}
    except Exception:  # noqa: BLE001 - invalid code: not supported either
        return None
    return used


class FaultyAdapter(Adapter):
    name = "faulty-reference"

    def __init__(self, fault: str, target: str, op: str, pidfile: str | None = None,
                 request_id: str | None = None):
        super().__init__()
        self.fault, self.target, self.op, self.pidfile = fault, target, op, pidfile
        self.request_id = request_id    # a glob over the wire id (a fuzzer's ids are its own)
        if fault == "impostor":
            self.name = "rtwo-reference"
        if fault == "lookup":
            self.capabilities = ()          # it has no VM to trace
        if fault == "no-eip3155":
            self.capabilities = ("trace",)
        if fault in ("only-1.0", "only-1.0-silent"):
            self.spec_versions = ("1.0",)
        self.greeted = fault == "execute-before-hello"
        if self.greeted:
            self.spec_version = "1.0"       # as the 1.0 reference did, before any hello
        # Every version's corpus: the session's version is known only at the hello.
        vectors = [v for version in spec.names() for v in store.load(corpus_dir(version))] \
            if target != "*" or fault == "lookup" else []
        self.targets = None if target == "*" else {v["id"] for v in vectors if fnmatch.fnmatchcase(v["id"], target)}
        # Built before the hello, so that recognising a request costs no time of its own.
        self.recogniser = None if self.targets is None else Recogniser(vectors)
        self.answers = {(v["_meta"]["spec_version"], _key(v["input"])): v["expected"]
                        for v in vectors} if fault == "lookup" else {}
        self.current = False

    def hit(self, vector_id: str) -> bool:
        return self.current

    def targeted(self, vector_input) -> bool:
        """Whether the request was made from a targeted vector (blinded or not)."""
        if self.targets is None or self.recogniser is None:
            return True
        return any(v["id"] in self.targets for v in self.recogniser.candidates(vector_input))

    def handle(self, line):
        try:
            request = json.loads(line)
            self.current = (request.get("type") == "execute"
                            and self.targeted(request.get("input"))
                            and (self.request_id is None
                                 or fnmatch.fnmatchcase(str(request.get("id")), self.request_id)))
        except (ValueError, AttributeError, RecursionError):
            self.current = False
        return super().handle(line)

    def hello(self, request):
        reply, go_on = super().hello(request)
        if self.fault == "bad-hello":
            reply["protocol"] = "rtwo-conformance/0"
        if self.fault == "only-1.0-silent":
            reply.pop("spec_versions", None) if reply.get("type") == "error" else None
        if self.fault == "hello-lists-unknown" and reply.get("type") == "hello":
            reply["spec_versions"] = [*reply["spec_versions"], "9.9"]
        if self.fault == "hello-pid" and self.pidfile:
            Path(self.pidfile).write_text(str(os.getpid()))
        return reply, go_on

    def execute(self, vector_id, vector_input, trace):
        if self.fault == "noisy":
            print(f"executing {vector_id}", file=sys.stderr, flush=True)
        if self.fault == "stderr-flood":
            for _ in range(8):
                sys.stderr.write("x" * (1 << 20))
            sys.stderr.write("\nlast words of the flood\n")
            sys.stderr.flush()
        if self.fault == "hello-pid":
            time.sleep(3600)
        if self.fault == "lookup":
            expected = self.answers.get((self.spec_version, _key(vector_input)))
            if expected is None:
                return self.error(vector_id, "UNSUPPORTED_INPUT", "not in the published corpus")
            return {"type": "result", "id": vector_id, "result": expected["result"], "stage": expected["error_stage"]}
        if self.fault == "lose-jumps":
            reply = super().execute(vector_id, vector_input, trace)
            if trace:
                reply["trace"] = [s for s in reply["trace"] if s.get("opName") not in ("JUMP", "JUMPI")]
            return reply
        if self.fault == "partial":
            used = _opcodes(vector_input)
            if used is None or not used <= PARTIAL:
                return self.error(vector_id, "UNSUPPORTED_INPUT", "opcode not implemented yet")
        if not self.hit(vector_id):
            return super().execute(vector_id, vector_input, trace)
        if self.fault == "crash":
            os._exit(3)
        if self.fault == "setsid-crash":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                                     start_new_session=True, stdout=sys.stdout, stderr=subprocess.DEVNULL)
            if self.pidfile:
                Path(self.pidfile).write_text(str(child.pid))
            os._exit(70)
        if self.fault in ("exit-70", "killed"):
            # stdout closes first; the process ends a moment later, as when a runtime flushes
            # its streams and then writes a long crash report.
            os.close(1)
            print(f"Traceback: internal error on {vector_id}", file=sys.stderr, flush=True)
            time.sleep(0.3)
            if self.fault == "killed":
                os.kill(os.getpid(), signal.SIGTERM)
            os._exit(70)
        if self.fault == "hang" and (trace or not self.traced_only) and self._stalls():
            time.sleep(3600)
        if self.fault == "miscount-compute":
            return self._miscount(vector_id, vector_input, trace)
        reply = super().execute(vector_id, vector_input, trace)
        result = reply["result"]
        if self.fault in ("wrong-result", "partial", "impostor"):
            result["output"] = "0x00" if result["output"] != "0x00" else "0x01"
        elif self.fault == "nondeterministic":
            result["usage"]["compute"] += abs(time.timezone) // 3600
        elif self.fault == "exceed-limit":
            result["usage"]["memory_pages"] = vector_input["sandbox"]["limits"]["memory_pages"] + 1
        elif self.fault == "bad-stage":
            reply["stage"] = "executing" if reply["stage"] != "executing" else "validated"
        return reply

    once: str | None = None
    perturbed_only = False
    traced_only = False

    def _stalls(self) -> bool:
        if self.perturbed_only and time.timezone == 0:
            return False
        if self.once is None:
            return True
        try:
            os.close(os.open(self.once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return False
        return True

    def _miscount(self, vector_id, vector_input, trace):
        # Run traced, then charge one more unit after every executed --op, as a VM with a
        # wrong cost table would.
        reply = super().execute(vector_id, vector_input, True)
        extra, steps = 0, reply["trace"]
        for step in steps:
            if "pc" not in step:
                step["computeUsed"] += extra
                continue
            step["computeUsed"] += extra
            if step["opName"] == self.op:
                extra += 1
        reply["result"]["usage"]["compute"] += extra
        reply["result"]["fee"] += extra
        if not trace:
            del reply["trace"]
        return reply

    def serve(self, stdin, stdout) -> int:
        for line in stdin:
            if not line.strip():
                continue
            if self.fault == "nested-hello":
                stdout.write(NESTED)
                stdout.flush()
                continue
            response, go_on = self.handle(line)
            hit = response is not None and self.current
            if hit and response.get("type") == "result" and self.fault in ("nested", "huge-line", "endless-line",
                                                                             "blank-flood"):
                if self.fault == "nested":
                    stdout.write(NESTED_RESULT)
                elif self.fault == "huge-line":
                    stdout.write(b'{"type":"result","id":"' + response["id"].encode() + b'","result":{"output":"0x')
                    for _ in range(100):
                        stdout.write(b"ab" * (1 << 19))
                    stdout.write(b'"}}\n')
                else:
                    filler = b"x" * (1 << 16) if self.fault == "endless-line" else b"\n" * (1 << 16)
                    while True:
                        stdout.write(filler)
                stdout.flush()
                continue
            if hit and self.fault == "garbage":
                stdout.write(b"panic: unexpected state, dumping registers\n")
            if hit and self.fault == "wrong-id":
                response["id"] = "not/" + str(response["id"])
            if response is not None:
                stdout.write(encode(response))
                if hit and self.fault == "extra-line":
                    stdout.write(encode(response))
                stdout.flush()
            if not go_on:
                refused = response is not None and response.get("type") == "error"
                return EXIT_UNSUPPORTED if refused else 0
        return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=FAULTS, required=True)
    parser.add_argument("--target", default="*")
    parser.add_argument("--op", default="ADD")
    parser.add_argument("--pidfile", default=None)
    parser.add_argument("--request-id", default=None,
                        help="also require the request's wire id to match this glob")
    parser.add_argument("--once", default=None, help="hang: only while this file does not exist")
    parser.add_argument("--perturbed-only", action="store_true", help="hang: only outside UTC")
    parser.add_argument("--traced-only", action="store_true", help="hang: only when tracing")
    args = parser.parse_args()
    adapter = FaultyAdapter(args.fault, args.target, args.op, args.pidfile, args.request_id)
    adapter.once, adapter.perturbed_only = args.once, args.perturbed_only
    adapter.traced_only = args.traced_only
    return adapter.serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
