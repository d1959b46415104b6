"""``rtwo-vm events``: the VM Event Publisher's outbox, sinks, delivery passes, dead events
and a NATS JetStream tail (chapter 10.8). The database options and error handling are those
of the other runtime commands (:mod:`rtwo_vm.arguments.runtime`)."""

from __future__ import annotations

import argparse
import sys

from rtwo_vm.arguments.runtime import (
    add_options, guard, is_damaged, need_id, open_runtime, print_json, print_record, print_rows,
    refuse_unread_options,
)
from rtwo_vm.arguments.inputs import CliError, parse_count
from rtwo_vm.arguments.sinks import COMMON_OPTIONS, KIND_OPTIONS


def register(sub) -> None:
    _register_events(sub)


# Sink options given on the command line (sink-add), by kind.
_SINK_OPTIONS = {"jsonl": (), "webhook": ("hmac_secret_env",),
                 "nats": ("stream", "subject", "dedup_window")}
_DELIVERY_OPTIONS = ("timeout", "max_attempts", "backoff", "backoff_cap")
_EVENT_ID_LIMIT = 1 << 63  # SQLite integers


def _seconds(text: str, what: str, *, low: float = 0.0, high: float = 86400.0) -> float:
    import math
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"{what} must be a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise CliError(f"{what} must be from {low:g} to {high:g} seconds, got {text}")
    return value


def _event_id(text: str) -> int:
    value = parse_count(text, "event id")
    if value >= _EVENT_ID_LIMIT:
        raise CliError(f"no event {text}")
    return value


def _sink_options(args, kind: str) -> dict:
    options = {}
    for name in _SINK_OPTIONS.get(kind, ()) + _DELIVERY_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            options[name] = value
    for kind_, names in _SINK_OPTIONS.items():
        for name in names:
            if kind_ != kind and name not in _SINK_OPTIONS.get(kind, ()) \
                    and getattr(args, name, None) is not None:
                raise CliError(f"--{name.replace('_', '-')} is an option of {kind_} sinks")
    return options


# The options each action reads; given to another action they would be silently ignored.
_ACTION_OPTIONS = {
    "list": ("context", "type", "undelivered"),
    "deliver": ("jsonl", "webhook", "deadline"),
    "sink-add": ("from_now", "timeout", "max_attempts", "backoff", "backoff_cap",
                 "hmac_secret_env", "stream", "subject", "dedup_window"),
    "dead": ("sink",),
    "requeue": ("sink", "all"),
    "tail": ("nats", "context", "type", "stream", "subject", "no_follow", "durable", "timeout",
             "fetch_wait"),
}


def _check_options(args) -> None:
    refuse_unread_options(args, "events", _ACTION_OPTIONS)


@guard
def _cmd_events(args) -> int:
    from rtwo_vm.runtime.sinks.kinds import make_sink
    _check_options(args)
    if args.action == "tail":
        return _events_tail(args)
    if args.action == "sink-add":
        kind, target = _sink_args(args)
        options = _sink_options(args, kind)
        if kind == "nats":  # refused now, not at the next deliver; before the database opens
            from rtwo_vm.runtime.sinks import SinkUnavailable
            from rtwo_vm.runtime.sinks import nats as nats_sink
            try:
                nats_sink.require_client()
            except SinkUnavailable as err:
                raise CliError(str(err)) from None
        with open_runtime(args, create=True) as rt:
            print_json(rt.events.add_sink(kind, target, replay=not args.from_now,
                                           options=options))
        return 0
    extra = []
    if args.action == "deliver":
        try:
            extra = ([make_sink("jsonl", p) for p in args.jsonl or ()]
                     + [make_sink("webhook", u) for u in args.webhook or ()])
        except ValueError as err:
            raise CliError(str(err)) from None
    with open_runtime(args) as rt:
        if args.action == "list":
            events = [e.to_json() for e in rt.events.list(
                stream=args.context, type=args.type, limit=args.limit,
                undelivered_to=args.undelivered)]
            if args.json:
                return print_rows(args, events, [])
            return print_rows(args, [e if is_damaged(e) else {
                "eventId": e["eventId"], "stream": e["stream"], "type": e["type"],
                "summary": _summary(e), "createdAt": e["createdAt"]} for e in events],
                ["eventId", "stream", "type", "summary", "createdAt"])
        if args.action == "show":
            return print_record(rt.events.get(_event_id(need_id(args))).to_json())
        if args.action == "sinks":
            doc = {"sinks": rt.events.sinks(), "undelivered": rt.events.undelivered_counts(),
                   "failures": rt.events.failures()}
            _confirm_hints(doc["sinks"])
            return print_record(doc)
        if args.action == "sink-confirm":
            doc = rt.events.confirm_sink(need_id(args))
            print_json({**doc, "name": _shown(doc["name"])})
            print(f"confirmed sink {_shown(doc['name'])} on this machine: events go to the "
                  f"{doc['kind']} target {doc['target']}", file=sys.stderr)
            return 0
        if args.action == "sink-remove":
            rt.events.remove_sink(need_id(args))
            print(f"removed sink {args.id}")
            return 0
        if args.action == "dead":
            return print_rows(args, rt.events.dead(args.sink),
                              ["sink", "eventId", "stream", "type", "attempts", "heldBack",
                               "deadAt", "reason"])
        if args.action == "requeue":
            if (args.id is None) == (not args.all):
                raise CliError("events requeue needs an event ID or --all")
            ids = None if args.all else [_event_id(args.id)]
            count = rt.events.requeue(ids, args.sink)
            if ids is not None and count == 0:
                raise CliError(f"event {args.id} is not dead" +
                               (f" for sink {args.sink}" if args.sink else ""))
            print(f"requeued {count} dead event{'s' if count != 1 else ''}")
            return 0
        reports = rt.events.deliver(extra, deadline=args.deadline)
    for name, report in reports.items():
        print(f"{name}: {report.summary()}")
    if not reports:
        print("no sinks registered (events sink-add KIND TARGET, or deliver --jsonl/--webhook)")
    return 0 if all(r.complete for r in reports.values()) else 1


def _events_tail(args) -> int:
    from rtwo_vm.runtime.catalog import catalog
    from rtwo_vm.runtime.sinks import SinkUnavailable, redact
    from rtwo_vm.runtime.sinks import nats as nats_sink
    if not args.nats:
        raise CliError("events tail needs --nats URL")
    if args.type is not None and args.type not in catalog().values("event_type"):
        raise CliError(f"unknown event type {args.type!r}; use one of "
                       f"{', '.join(catalog().values('event_type'))}")
    try:
        nats_sink.tail(args.nats, stream=args.stream or nats_sink.DEFAULT_STREAM,
                       subject=args.subject or nats_sink.DEFAULT_SUBJECT, context=args.context,
                       type_=args.type, limit=args.limit, follow=not args.no_follow,
                       durable=args.durable,
                       timeout=args.timeout or COMMON_OPTIONS["timeout"][0], out=sys.stdout,
                       fetch_wait=args.fetch_wait or nats_sink.FETCH_WAIT)
    except nats_sink.ServerLost as err:  # the server is gone: exit 3, like a failed delivery
        print(f"rtwo-vm: error: {redact((str(err).splitlines() or [''])[0])}", file=sys.stderr)
        return 3
    except (ValueError, SinkUnavailable) as err:
        raise CliError(redact((str(err).splitlines() or [""])[0])) from None
    except KeyboardInterrupt:
        pass
    return 0


def _shown(name: str) -> str:
    from rtwo_vm.runtime.sinks import redact
    return redact(name)


def _confirm_hints(sinks: list) -> None:
    """One line on stderr per sink this machine has not confirmed, saying how to."""
    from rtwo_vm.runtime.publisher import confirm_hint
    for sink in sinks:
        if not is_damaged(sink) and not sink.get("confirmed"):
            print(f"sink {sink['name']} is not confirmed on this machine, so nothing is "
                  f"delivered to it: check its target ({sink['target']}), then "
                  f"{confirm_hint(sink['name'])}", file=sys.stderr)


def _sink_args(args) -> tuple[str, str]:
    if not args.id or not args.target:
        raise CliError("events sink-add needs KIND (jsonl, webhook or nats) and TARGET")
    return args.id, args.target


def _summary(event: dict) -> str:
    p, kind = event["payload"], event["type"]
    if kind == "lifecycle.transition":
        return f"{p.get('from') or '-'} -> {p.get('stage')}"
    if kind == "result.recorded":
        return f"{p.get('executionStatus')} {p.get('error') or ''}".strip()
    if kind == "violation.recorded":
        return f"{p.get('violationType')} ({p.get('severity')})"
    return ""


def _register_events(sub) -> None:
    p = sub.add_parser(
        "events", help="VM events: outbox, sinks, delivery, dead events, NATS tail",
        description="The outbox and its delivery (chapter 10.8). list/show read the outbox; "
                    "sink-add KIND TARGET registers a sink (jsonl FILE, webhook URL, nats URL), "
                    "confirmed on this machine; sink-confirm NAME confirms a sink another "
                    "database brought (only confirmed sinks are delivered to); "
                    "deliver runs one bounded pass to every confirmed sink; dead lists the "
                    "events parked "
                    "after --max-attempts failures and requeue puts them back; tail --nats URL "
                    "prints the stream's events as JSON lines.")
    p.add_argument("action", choices=["list", "show", "deliver", "sinks", "sink-add",
                                      "sink-confirm", "sink-remove", "dead", "requeue", "tail"])
    p.add_argument("id", nargs="?", metavar="ID|KIND|NAME",
                   help="show/requeue: an event id; sink-add: the kind; sink-confirm, "
                        "sink-remove: the sink's name")
    p.add_argument("target", nargs="?",
                   help="sink-add: file path (jsonl) or URL (webhook http://..., nats://...)")
    p.add_argument("--context", help="list, tail: only this context's (stream's) events")
    p.add_argument("--type", help="list, tail: only events of this type")
    p.add_argument("--undelivered", metavar="SINK", help="list: only those SINK has not received")
    p.add_argument("--jsonl", action="append", help="deliver: also to this JSON-lines file")
    p.add_argument("--webhook", action="append", help="deliver: also POST to this URL")
    p.add_argument("--deadline", type=lambda t: _seconds(t, "--deadline", low=0.01),
                   metavar="SECONDS", help="deliver: end each sink's pass after this long "
                                           "(default 10)")
    p.add_argument("--from-now", dest="from_now", action="store_true",
                   help="sink-add: only events recorded from now on")
    p.add_argument("--timeout", type=_option_type("timeout"), metavar="SECONDS",
                   help="sink-add, tail: wait at most this long for one answer or "
                        f"acknowledgement{_option_help('timeout')}")
    p.add_argument("--max-attempts", dest="max_attempts", metavar="N",
                   type=_option_type("max_attempts"),
                   help="sink-add: failed attempts before an event is parked as dead"
                        f"{_option_help('max_attempts')}")
    p.add_argument("--backoff", type=_option_type("backoff"), metavar="SECONDS",
                   help="sink-add: wait after the first failure, doubled after each"
                        f"{_option_help('backoff')}")
    p.add_argument("--backoff-cap", dest="backoff_cap", metavar="SECONDS",
                   type=_option_type("backoff_cap"),
                   help=f"sink-add: longest wait between attempts{_option_help('backoff_cap')}")
    p.add_argument("--hmac-secret-env", dest="hmac_secret_env", metavar="VAR",
                   help="sink-add webhook: sign each body with HMAC-SHA256 keyed by the value "
                        "of environment variable VAR (header X-RTWO-Signature: sha256=HEX)")
    p.add_argument("--stream", help="sink-add nats, tail: JetStream stream (default "
                                    "RTWO_VM_EVENTS)")
    p.add_argument("--subject", metavar="TEMPLATE",
                   help="sink-add nats, tail: subject template (default "
                        "rtwo.vm.events.{context}.{type})")
    p.add_argument("--dedup-window", dest="dedup_window", metavar="SECONDS",
                   type=_option_type("dedup_window", "nats"),
                   help="sink-add nats: the stream's duplicate window when the sink creates it"
                        f"{_option_help('dedup_window', 'nats')}")
    p.add_argument("--sink", help="dead, requeue: only this sink's")
    p.add_argument("--all", action="store_true", help="requeue: every dead event")
    p.add_argument("--nats", metavar="URL", help="tail: the NATS server (nats://HOST:PORT)")
    p.add_argument("--no-follow", dest="no_follow", action="store_true",
                   help="tail: stop at the end of the stream instead of waiting for more")
    p.add_argument("--durable", metavar="NAME",
                   help="tail: a durable consumer that remembers what it printed")
    # Hidden (tests): how long one pull request of tail waits before it is repeated.
    p.add_argument("--fetch-wait", dest="fetch_wait", metavar="SECONDS", help=argparse.SUPPRESS,
                   type=lambda t: _seconds(t, "--fetch-wait", low=0.0001, high=60.0))
    add_options(p, listing=True)
    p.set_defaults(func=_cmd_events)


def _option_range(name: str, kind: str | None = None) -> tuple[float, float, float]:
    return (KIND_OPTIONS.get(kind or "", {}).get(name) or COMMON_OPTIONS[name])


def _option_type(name: str, kind: str | None = None):
    """The argparse type of a numeric sink option, with its range from rtwo_vm.arguments.sinks."""
    default, low, high = _option_range(name, kind)
    flag = "--" + name.replace("_", "-")
    if isinstance(default, int):
        return lambda text: _bounded(text, flag, int(low), int(high))
    return lambda text: _seconds(text, flag, low=low, high=high)


def _option_help(name: str, kind: str | None = None) -> str:
    default, low, high = _option_range(name, kind)
    return f" (default {default:g}; from {low:g} to {high:g})"


def _bounded(text: str, what: str, low: int, high: int) -> int:
    value = parse_count(text, what)
    if not low <= value <= high:
        raise CliError(f"{what} must be from {low} to {high}, got {text}")
    return value
