"""``rtwo-vm serve`` measured (issue 26, item 7): calls per second through HTTP against
``Runtime.call`` in process, read latency of the main pages at 100,000 recorded contexts
against a small database, and the server's memory at that size.

    python benchmarks/server_benchmark.py [--calls 400] [--clients 4] [--contexts 100000]
        [--small 1000] [--reads 30] [--db-cache DIR] [--rebuild] [--no-calls]

Needs the [serve] extra. Every server is a real ``rtwo-vm serve`` subprocess (this checkout's
code) on 127.0.0.1 with a token file, over a SQLite file in WAL mode, read with httpx.

  calls       --calls calls of a contract that writes storage and emits an event: in process
              (``Runtime.call`` on a fresh database file), then through HTTP (``POST
              /api/v1/calls`` on a fresh database file) from one client and from --clients
              clients at once (threads, one connection each); calls/s and the ratio to in
              process. Client and server share the machine's cores.
  pages       for a database of --small contexts and one of --contexts contexts: --reads GETs
              of each page (after two warm-up reads, one keep-alive connection), median and
              95th percentile in ms, and the ratio large/small of the medians. The pages read
              one page of records (keyset cursors, LIMIT), so the ratio should stay near 1; a
              page whose figures come from aggregates (counts) grows with the tables. The
              server is left to finish its start-up readiness checks before the reads.
  memory      the server's VmRSS and VmHWM (/proc/<pid>/status) after the reads, at each size.

The databases are built by real calls through ``Runtime.call`` (no row is copied or made up
in SQL), in one process: SQLite has one writer, so parallel processes would only queue on
its lock. The mix, by call number modulo 20: 14 calls of the writer (success: a storage write
and a LOG1 event), 2 of a contract that executes TRAP (fault, a trap violation), 2 of one
that reads TIME under the default policy (refused: a time_access violation), 1 of the writer
with 10 compute units (out of compute: a compute violation), 1 of an address holding no
contract (rejected). A built database is kept under --db-cache (default: a directory in the
system's temporary directory; inside this checkout only under build/, which git ignores)
with a .json note of how it was built, and reused by later runs unless --rebuild.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import httpx  # noqa: E402

from reference_vm import Limits, assemble  # noqa: E402
from rtwo_vm.runtime import CallRequest, Runtime  # noqa: E402
from rtwo_vm.runtime.schema import SCHEMA_VERSION  # noqa: E402
from rtwo_vm.server.api.paging import encode  # noqa: E402
from server_support import AUTH, VERSION, Server, spawn  # noqa: E402

WRITER = assemble("""
    push 0
    sload
    push 1
    add             ; n+1
    push 0
    dup2
    sstore          ; storage[0] = n+1
    push 0
    swap1
    mstore          ; memory[0..8) = n+1
    push 0
    push 8
    push 7
    log1            ; event: topic 7, data n+1
    stop
""", VERSION)
TRAPS = assemble("trap", VERSION)
READS_TIME = assemble("time\npop\nstop", VERSION)     # refused under the default policy (time_access)
WRITER_AT, TRAPS_AT, TIME_AT, NOBODY_AT = 0x100, 0x101, 0x102, 0x1FF


def request_for(n: int) -> CallRequest:
    """The n-th call of a built database (see the module's docstring for the mix)."""
    slot = n % 20
    caller = n & 0xFFFF
    if slot < 14:
        return CallRequest(to=WRITER_AT, caller=caller)
    if slot < 16:
        return CallRequest(to=TRAPS_AT, caller=caller)
    if slot < 18:
        return CallRequest(to=TIME_AT, caller=caller)
    if slot == 18:
        return CallRequest(to=WRITER_AT, caller=caller, limits=Limits(compute=10))
    return CallRequest(to=NOBODY_AT, caller=caller)


# -- databases ---------------------------------------------------------------------------

def cache_dir(given: str | None) -> Path:
    path = Path(given) if given else Path(tempfile.gettempdir()) / "rtwo-vm-server-bench"
    path = path.resolve()
    inside = path == ROOT or ROOT in path.parents
    if inside and not (path == ROOT / "build" or (ROOT / "build") in path.parents):
        raise SystemExit(f"--db-cache {path}: inside the checkout only under build/ (gitignored)")
    path.mkdir(parents=True, exist_ok=True)
    return path


def build(path: Path, contexts: int, rebuild: bool) -> dict:
    """A database of ``contexts`` entry contexts recorded by real calls, cached at ``path``."""
    note_path = path.with_suffix(".json")
    if not rebuild and path.exists() and note_path.exists():
        note = json.loads(note_path.read_text())
        if note.get("contexts") == contexts and note.get("schema") == SCHEMA_VERSION:
            return {**note, "reused": True}
    partial = path.with_suffix(".building")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    start = time.perf_counter()
    with Runtime(partial) as rt:
        rt.deploy(WRITER, WRITER_AT)
        rt.deploy(TRAPS, TRAPS_AT)
        rt.deploy(READS_TIME, TIME_AT)
        report_at = start + 30
        for n in range(contexts):
            rt.call(request_for(n))
            if time.perf_counter() > report_at:
                done = n + 1
                rate = done / (time.perf_counter() - start)
                print(f"  building {path.name}: {done:,}/{contexts:,} calls, {rate:,.0f}/s, "
                      f"about {(contexts - done) / rate:,.0f} s left", flush=True)
                report_at += 30
        seconds = time.perf_counter() - start
        outcomes = {str(r[0]): int(r[1]) for r in rt.store.all(
            "SELECT execution_status, count(*) FROM results GROUP BY execution_status ORDER BY 1")}
        violations = rt.store.single("SELECT count(*) FROM violations")[0]
        events = rt.store.single("SELECT count(*) FROM outbox")[0]
        rt.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.replace(partial, path)
    note = {"contexts": contexts, "schema": SCHEMA_VERSION, "seconds": round(seconds, 1),
            "callsPerSecond": round(contexts / seconds, 1), "outcomes": outcomes,
            "violations": violations, "events": events,
            "builtAt": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "how": "real Runtime.call calls, one process, one transaction each (FULL sync)"}
    note_path.write_text(json.dumps(note, indent=2) + "\n")
    return {**note, "reused": False}


def targets(db: Path) -> dict:
    """Ids the pages are read with: a context in the middle of the table that has a
    violation, its result, and the middle of the contexts and the outbox (deep pages)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (last_seq,) = conn.execute("SELECT max(seq) FROM contexts").fetchone()
        mid = last_seq // 2
        context_id, seq = conn.execute(
            "SELECT c.context_id, c.seq FROM contexts c WHERE c.seq >= ? AND EXISTS (SELECT 1 "
            "FROM violations v WHERE v.context_id = c.context_id) ORDER BY c.seq LIMIT 1",
            (mid,)).fetchone()
        (result_id,) = conn.execute("SELECT result_id FROM results WHERE context_id = ?",
                                    (context_id,)).fetchone()
        (last_event,) = conn.execute("SELECT max(event_id) FROM outbox").fetchone()
    finally:
        conn.close()
    return {"context": context_id, "result": result_id, "mid_seq": mid,
            "mid_event": last_event // 2}


def pages(t: dict) -> list[tuple[str, str]]:
    deep = encode((t["mid_seq"],))
    return [
        ("api contexts, first page", "/api/v1/contexts"),
        ("api contexts, deep page (cursor)", f"/api/v1/contexts?cursor={deep}"),
        ("api contexts/{id}", f"/api/v1/contexts/{t['context']}"),
        ("api violations", "/api/v1/violations"),
        ("api results?executionStatus=fault", "/api/v1/results?executionStatus=fault"),
        ("api events", "/api/v1/events"),
        ("api overview", "/api/v1/overview"),
        ("page /", "/"),
        ("page /contexts", "/contexts"),
        ("page /contexts?before= (deep)", f"/contexts?before={t['mid_seq']}"),
        ("page /contexts/{id}", f"/contexts/{t['context']}"),
        ("page /results/{id}", f"/results/{t['result']}"),
        ("page /accounting/{id}", f"/accounting/{t['context']}"),
        ("page /violations", "/violations"),
        ("page /events", "/events"),
        ("page /instructions", "/instructions"),
    ]


# -- the server --------------------------------------------------------------------------

def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime + stime


def settle(server: Server, timeout: float = 300) -> float:
    """Wait until the server has computed its start-up readiness reports and is idle (no CPU
    used over a second); the seconds the API's report took."""
    deadline = time.monotonic() + timeout
    seconds = float("nan")
    with server.client() as client:
        while time.monotonic() < deadline:
            doc = client.get("/api/v1/readiness").json()
            if doc["state"] == "computed":
                seconds = doc["seconds"]
                break
            time.sleep(0.5)
    while time.monotonic() < deadline:
        before = cpu_ticks(server.proc.pid)
        time.sleep(1.0)
        if cpu_ticks(server.proc.pid) - before <= 1:
            break
    return seconds


def read_pages(server: Server, paths: list[tuple[str, str]], reads: int) -> dict[str, tuple]:
    """name -> (median ms, p95 ms, response bytes)."""
    out = {}
    with server.client() as client:
        for name, path in paths:
            times = []
            size = 0
            for n in range(reads + 2):
                start = time.perf_counter()
                response = client.get(path)
                elapsed = time.perf_counter() - start
                if response.status_code != 200:
                    raise SystemExit(f"{path}: {response.status_code} {response.text[:200]}")
                size = len(response.content)
                if n >= 2:
                    times.append(elapsed * 1000)
            times.sort()
            p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
            out[name] = (statistics.median(times), p95, size)
    return out


def measure_size(db: Path, reads: int, work: Path) -> tuple[dict, dict, float]:
    server = spawn(work, db=db)
    try:
        readiness_seconds = settle(server)
        figures = read_pages(server, pages(targets(db)), reads)
        memory = proc_status(server.proc.pid)
    finally:
        server.kill()
    return figures, memory, readiness_seconds


# -- calls per second --------------------------------------------------------------------

def in_process(calls: int, work: Path) -> float:
    with Runtime(work / "in-process.db") as rt:
        rt.deploy(WRITER, WRITER_AT)
        for n in range(20):
            rt.call(to=WRITER_AT, caller=n)
        start = time.perf_counter()
        for n in range(calls):
            assert rt.call(to=WRITER_AT, caller=n).result.execution_status == "success"
        return calls / (time.perf_counter() - start)


def http_calls(client: httpx.Client, first: int, count: int) -> None:
    for n in range(first, first + count):
        response = client.post("/api/v1/calls", json={"to": "0x100", "caller": n}, headers=AUTH)
        if response.status_code != 201 or response.json()["result"]["executionStatus"] != "success":
            raise SystemExit(f"call {n}: {response.status_code} {response.text[:200]}")


def over_http(calls: int, clients: int, work: Path) -> tuple[float, float]:
    """(calls/s from one client, calls/s from ``clients`` clients at once)."""
    server = spawn(work, db=work / "http.db")
    try:
        settle(server)
        with server.client() as client:
            deployed = client.post("/api/v1/contracts", headers=AUTH,
                                   json={"code": WRITER.hex(), "address": "0x100"})
            assert deployed.status_code == 201, deployed.text
            http_calls(client, 0, 20)
            start = time.perf_counter()
            http_calls(client, 0, calls)
            one = calls / (time.perf_counter() - start)
        share = max(1, calls // clients)
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                with server.client() as c:
                    http_calls(c, k * share, share)
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        many = share * clients / (time.perf_counter() - start)
        if errors:
            raise SystemExit(f"concurrent calls failed: {errors[0]}")
    finally:
        server.kill()
    return one, many


# -- main --------------------------------------------------------------------------------

def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def describe(label: str, note: dict, path: Path) -> str:
    how = "reused from the cache, " if note["reused"] else ""
    size = path.stat().st_size / 2**20
    return (f"  {label}: {note['contexts']:,} contexts ({how}built {note['builtAt']} by "
            f"{note['contexts']:,} real Runtime.call calls in {note['seconds']:,} s, "
            f"{note['callsPerSecond']:,.0f}/s); outcomes {note['outcomes']}, "
            f"{note['violations']:,} violations, {note['events']:,} outbox events; "
            f"{size:,.0f} MiB at {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="calls per throughput run")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients")
    parser.add_argument("--contexts", type=int, default=100_000, help="the large database")
    parser.add_argument("--small", type=int, default=1000, help="the small database")
    parser.add_argument("--reads", type=int, default=30, help="GETs per page and size")
    parser.add_argument("--db-cache", help="directory of the built databases (default: "
                        "<tmp>/rtwo-vm-server-bench; in this checkout only under build/)")
    parser.add_argument("--rebuild", action="store_true", help="build the databases again")
    parser.add_argument("--no-calls", action="store_true", help="skip the calls part (pages "
                        "and memory only)")
    args = parser.parse_args()
    cache = cache_dir(args.db_cache)
    print(f"rtwo-vm serve benchmark; {os.cpu_count()} cores, load average {load()} "
          f"(1/5/15 min) at the start")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.no_calls:
            local = in_process(args.calls, work)
            one, many = over_http(args.calls, args.clients, work)
            print(f"calls ({args.calls} calls of a storage write + LOG1 each, fresh WAL "
                  f"database files, FULL sync):")
            print(f"  in process  Runtime.call          {local:8,.0f} calls/s")
            print(f"  HTTP        1 client              {one:8,.0f} calls/s  "
                  f"({one / local:.2f}x in process)")
            print(f"  HTTP        {args.clients} clients at once     {many:8,.0f} calls/s  "
                  f"({many / local:.2f}x in process)", flush=True)
        print(f"databases (load average {load()}):", flush=True)
        small_db, large_db = cache / f"contexts-{args.small}.db", cache / f"contexts-{args.contexts}.db"
        small_note = build(small_db, args.small, args.rebuild)
        print(describe("small", small_note, small_db), flush=True)
        large_note = build(large_db, args.contexts, args.rebuild)
        print(describe("large", large_note, large_db), flush=True)
        small, small_mem, small_ready = measure_size(small_db, args.reads, work)
        large, large_mem, large_ready = measure_size(large_db, args.reads, work)
    print(f"pages ({args.reads} GETs each after 2 warm-up reads; ms; load average {load()}):")
    print(f"  {'page':<36} {args.small:>8,} median    p95 {args.contexts:>8,} median    p95"
          f"  ratio  KiB")
    for name in small:
        s_med, s_p95, _ = small[name]
        l_med, l_p95, size = large[name]
        print(f"  {name:<36} {s_med:>15.1f} {s_p95:>6.1f} {l_med:>15.1f} {l_p95:>6.1f} "
              f"{l_med / s_med:>6.2f} {size / 1024:>4.0f}")
    print("  ratio: median at the large size / median at the small size (flat: near 1)")
    for label, mem, ready in (("small", small_mem, small_ready), ("large", large_mem, large_ready)):
        print(f"memory ({label}): server VmRSS {mem['VmRSS'] / 1024:,.0f} MiB, VmHWM "
              f"{mem['VmHWM'] / 1024:,.0f} MiB after the reads; its start-up readiness report "
              f"took {ready} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
