"""Event delivery to NATS JetStream: throughput from the outbox to acknowledged stream
messages, and latency from a call's commit to the acknowledgement of its last event.

    python benchmarks/events_benchmark.py [--events 20000] [--rounds 3] [--calls 100]

Starts its own nats-server (scripts/install-nats.sh; JetStream, file storage, a temporary
store directory on 127.0.0.1) and needs the [nats] extra. Prints, best of the rounds:
  throughput  events/s of one `events deliver` pass over N outbox events (20 per context,
              payloads of a real call's events) into a fresh stream, each published with
              Nats-Msg-Id and counted only when its publish acknowledgement arrived and the
              delivery was recorded in SQLite; target >= 5,000 events/s
  latency     per call: from `call` returning (its transaction committed) to the recorded
              acknowledgement of its last event by one delivery pass (connect included),
              median and 95th percentile over --calls calls
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from nats_support import NatsServer  # noqa: E402
import spec  # noqa: E402
from reference_vm import assemble  # noqa: E402
from rtwo_vm.runtime import Runtime  # noqa: E402

VERSION = spec.latest()   # the version the runtime deploys under when none is given

TARGET = 5000


def fill_outbox(rt: Runtime, count: int, template: list) -> None:
    """``count`` events in the outbox, 20 per context, with a real call's payloads."""
    with rt.writer.transaction() as tx:
        for n in range(count):
            model = template[n % len(template)]
            rt.writer.event(tx, f"ctx_bench{n // 20:08d}", model.type, model.payload,
                            model.created_at)
    rt.writer.outbox.pending.clear()  # the bus is not what is measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    counter = assemble((ROOT / "examples" / "counter.rasm").read_text(), VERSION)
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "js") as server:
        rates = []
        for round_ in range(args.rounds):
            with Runtime(str(Path(tmp) / f"through{round_}.db")) as rt:
                rt.deploy(counter, 0x100)
                template = rt.call(to=0x100).events
                fill_outbox(rt, args.events, template)
                subject = f"bench{round_}.{{context}}.{{type}}"
                rt.events.add_sink("nats", server.url,
                                   options={"stream": f"BENCH{round_}", "subject": subject})
                total = len(rt.events.list())
                start = time.perf_counter()
                (report,) = rt.events.deliver(deadline=600).values()
                seconds = time.perf_counter() - start
                if not report.complete or report.delivered != total:
                    print(f"round {round_}: incomplete: {report.summary()}")
                    return 1
                rates.append(total / seconds)
        with Runtime(str(Path(tmp) / "latency.db")) as rt:
            rt.deploy(counter, 0x100)
            rt.events.add_sink("nats", server.url)
            rt.events.deliver()
            latencies = []
            for _ in range(args.calls):
                rt.call(to=0x100)
                committed = time.perf_counter()
                (report,) = rt.events.deliver().values()
                latencies.append(time.perf_counter() - committed)
                if not report.complete:
                    print(f"latency: incomplete: {report.summary()}")
                    return 1
    best = max(rates)
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))]
    print(f"events: {args.events} per round, 20 per context; nats-server on 127.0.0.1, "
          f"file storage; best of {args.rounds}")
    print(f"  throughput  {best:,.0f} events/s outbox -> acknowledged (target {TARGET:,}; "
          f"{best / TARGET:.2f}x)")
    print(f"  latency     commit -> ack of a call's last event: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms "
          f"({args.calls} calls, one pass each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
