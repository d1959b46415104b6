"""The NATS JetStream sink (optional extra ``[nats]``: the ``nats-py`` client).

Each outbox event is published to the subject rendered from the ``subject`` template
(default ``rtwo.vm.events.{context}.{type}``: ``{context}`` is the event's stream, a context
id for the events of an execution; ``{type}`` its event type) with header ``Nats-Msg-Id`` =
the event id, into the stream ``stream`` (default ``RTWO_VM_EVENTS``), which the sink creates
on first use (file storage, subjects ``<template prefix>.>``, a duplicate window of
``dedup_window`` seconds) or checks. An event is acknowledged only by the server's publish
acknowledgement; a republished event (after a crash, a lost connection or a late
acknowledgement) within the duplicate window is dropped by the server, so the stream holds
each event once.

The client is asyncio and the runtime synchronous: each session runs the client on a private
event loop in the calling thread, one connection per delivery pass, closed (and the loop
with its default executor shut down) when the pass ends, so no thread is left behind. The
events of a batch are published in order on that one connection, then their
acknowledgements awaited together: the server stores a connection's messages in order, so a
lost connection or a timeout fails a suffix, and per-stream order holds.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import urllib.parse
from typing import Any, Callable, Sequence, TextIO

from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.arguments.sinks import KIND_OPTIONS
from rtwo_vm.runtime.sinks import (
    NOT_SENT, DeadlineReached, SinkUnavailable, canonical_line, one_line, redact, remaining,
)

DEFAULT_STREAM = "RTWO_VM_EVENTS"
DEFAULT_SUBJECT = "rtwo.vm.events.{context}.{type}"
_DEDUP_DEFAULT = KIND_OPTIONS["nats"]["dedup_window"][0]
PLACEHOLDERS = ("{context}", "{type}")
_STREAM_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_LITERAL_TOKEN = re.compile(r"[A-Za-z0-9_:-]{1,64}\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9_:-]")


def _client():
    try:
        import nats
        import nats.errors
        import nats.js.api
        import nats.js.errors
    except ImportError:
        raise SinkUnavailable("the NATS sink needs the nats-py client: "
                              "pip install 'rtwo-vm[nats]'") from None
    return nats


def check_url(target: str) -> str:
    url = urllib.parse.urlsplit(target)
    if url.scheme not in ("nats", "tls") or not url.hostname or url.path not in ("", "/"):
        raise ValueError(f"NATS URL must look like nats://HOST:PORT, got {redact(target)!r}")
    try:
        url.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise ValueError(f"NATS URL has a bad port: {redact(target)!r}") from None
    return target.rstrip("/")


def check_subject(template: str) -> str:
    """The stream's subject filter for a template: its literal prefix, then ``>``."""
    tokens = template.split(".")
    if "{context}" not in tokens:
        raise ValueError(f"subject template {template!r} must hold {{context}} as a token")
    prefix = []
    for token in tokens:
        if token in PLACEHOLDERS:
            break
        prefix.append(token)
    for token in tokens:
        if token not in PLACEHOLDERS and not _LITERAL_TOKEN.match(token):
            raise ValueError(f"subject template {template!r}: bad token {token!r}")
    if not prefix:
        raise ValueError(f"subject template {template!r} must start with a literal token")
    return ".".join(prefix) + ".>"


def subject_of(template: str, stream: str, type_: str) -> str:
    context = _UNSAFE.sub("_", stream) or "_"
    kind = ".".join(_UNSAFE.sub("_", t) or "_" for t in type_.split("."))
    return template.replace("{context}", context).replace("{type}", kind)


class NatsSink:
    kind = "nats"
    OPTIONS: dict[str, Any] = {"stream": DEFAULT_STREAM, "subject": DEFAULT_SUBJECT,
                               **KIND_OPTIONS["nats"]}

    def __init__(self, target: str, options: dict[str, Any] | None = None):
        self.target = check_url(target)
        self.shown = redact(self.target)  # in messages and the name: no credentials
        self.options = options or {}
        self.stream = self.options.get("stream", DEFAULT_STREAM)
        if not _STREAM_NAME.match(self.stream):
            raise ValueError(f"bad JetStream stream name {self.stream!r}")
        self.subject = self.options.get("subject", DEFAULT_SUBJECT)
        self.filter = check_subject(self.subject)
        self.name = f"nats:{self.shown}/{self.stream}"

    def open(self, deadline: float) -> "_Session":
        _client()
        session = _Session(self, deadline)
        try:
            session.run(session.connect(), deadline)
        except BaseException:
            session.close()
            raise
        return session


class _Session:
    def __init__(self, sink: NatsSink, deadline: float):
        self.sink = sink
        self.timeout = sink.options.get("timeout", 5.0)
        self.loop = asyncio.new_event_loop()
        self.nc: Any = None
        self.js: Any = None
        self.lost = asyncio.Event()  # bound to self.loop when first awaited (Python >= 3.10)
        self.last_error: BaseException | None = None

    def run(self, coroutine, deadline: float):
        """Run on the private loop, never past the pass deadline."""
        try:
            return self.loop.run_until_complete(
                asyncio.wait_for(coroutine, max(0.01, remaining(deadline))))
        except asyncio.TimeoutError:
            raise DeadlineReached() from None
        except SinkUnavailable:
            raise
        except Exception as err:  # noqa: BLE001 - whatever the client raised: one line
            raise SinkUnavailable(f"{self.sink.shown}: {_reason(err)}") from None

    async def connect(self) -> None:
        nats = _client()

        async def on_error(err: BaseException) -> None:
            self.last_error = err

        async def on_lost() -> None:
            self.lost.set()
        try:
            self.nc = await nats.connect(
                servers=[self.sink.target], name="rtwo-vm events", allow_reconnect=False,
                max_reconnect_attempts=1, reconnect_time_wait=0.05,
                connect_timeout=self.timeout,
                error_cb=on_error, disconnected_cb=on_lost, closed_cb=on_lost)
        except Exception as err:  # noqa: BLE001 - every connect failure is one line
            cause = self.last_error or err
            raise SinkUnavailable(f"cannot connect to {self.sink.shown}: "
                                  f"{_reason(cause)}") from None
        self.js = self.nc.jetstream(timeout=self.timeout)
        await self._ensure_stream()

    async def _ensure_stream(self) -> None:
        nats = _client()
        api, errors = nats.js.api, nats.js.errors
        name, wanted = self.sink.stream, self.sink.filter
        for _ in range(2):
            try:
                info = await self.js.stream_info(name)
            except errors.NotFoundError:
                try:
                    await self.js.add_stream(api.StreamConfig(
                        name=name, subjects=[wanted], storage=api.StorageType.FILE,
                        duplicate_window=self.sink.options.get("dedup_window", _DEDUP_DEFAULT)))
                    return
                except errors.BadRequestError:
                    continue  # created meanwhile by another process: check it
            except (nats.errors.NoRespondersError, errors.ServiceUnavailableError):
                raise SinkUnavailable(f"{self.sink.shown} has no JetStream (start "
                                      "nats-server with -js)") from None
            except (asyncio.TimeoutError, nats.errors.TimeoutError):
                raise SinkUnavailable(f"{self.sink.shown}: no JetStream answer in "
                                      f"{self.timeout:g} s") from None
            config = info.config
            if config.storage != api.StorageType.FILE:
                storage = getattr(config.storage, "value", config.storage)
                raise SinkUnavailable(f"stream {name} exists with {storage} "
                                      "storage; the sink needs file storage")
            if wanted not in (config.subjects or []) and ">" not in (config.subjects or []):
                raise SinkUnavailable(f"stream {name} exists without subjects {wanted}")
            return
        raise SinkUnavailable(f"cannot create stream {name}")

    def send(self, events: Sequence[VMEvent], deadline: float) -> list[BaseException | None]:
        try:
            return self.run(self._send(events, deadline), deadline)
        except SinkUnavailable as err:
            return [err] + [NOT_SENT] * (len(events) - 1)

    async def _send(self, events: Sequence[VMEvent], deadline: float) -> list[BaseException | None]:
        nats = _client()
        out: list[BaseException | None] = [NOT_SENT] * len(events)
        futures: dict[int, asyncio.Future] = {}
        refused: set[str] = set()
        limit = self.nc.max_payload
        for index, event in enumerate(events):
            if event.stream in refused:
                continue
            payload = canonical_line(event)
            if len(payload) > limit:
                out[index] = ValueError(f"event of {len(payload)} bytes is larger than the "
                                        f"server's maximum payload {limit}")
                refused.add(event.stream)
                continue
            if self.lost.is_set() or self.nc.is_closed:
                out[index] = SinkUnavailable(self._lost_text())
                return out
            try:
                futures[index] = await self.js.publish_async(
                    subject_of(self.sink.subject, event.stream, event.type), payload,
                    stream=self.sink.stream, headers={"Nats-Msg-Id": str(event.event_id)},
                    wait_stall=self.timeout)
            except Exception as err:  # noqa: BLE001 - a connection that failed while sending
                out[index] = SinkUnavailable(f"{self.sink.shown}: {_reason(err)}")
                break
        cut = remaining(deadline) < self.timeout  # a timeout is then the deadline's
        if futures:
            gathered = asyncio.ensure_future(asyncio.wait(list(futures.values())))
            lost = asyncio.ensure_future(self.lost.wait())
            await asyncio.wait({gathered, lost}, timeout=min(self.timeout, remaining(deadline)),
                               return_when=asyncio.FIRST_COMPLETED)
            for task in (gathered, lost):
                task.cancel()
        unavailable = False
        for index, future in futures.items():
            if unavailable or not future.done() or future.cancelled():
                if not unavailable:
                    if self.lost.is_set():
                        out[index] = SinkUnavailable(self._lost_text())
                    elif cut:
                        out[index] = DeadlineReached()
                    else:
                        out[index] = SinkUnavailable(f"{self.sink.shown}: no acknowledgement "
                                                     f"in {self.timeout:g} s")
                    unavailable = True
                future.cancel()
                continue
            failure = future.exception()
            if failure is None:
                ack = future.result()
                out[index] = None if ack.stream == self.sink.stream else \
                    ValueError(f"acknowledged by stream {ack.stream}, not {self.sink.stream}")
            elif isinstance(failure, nats.js.errors.APIError) and failure.code is not None:
                out[index] = ValueError(f"JetStream refused it: {failure.description or failure}")
            else:
                out[index] = SinkUnavailable(f"{self.sink.shown}: {_reason(failure)}")
                unavailable = True
        return out

    def _lost_text(self) -> str:
        return f"lost the connection to {self.sink.shown}"

    def flush(self) -> None:
        pass

    def close(self) -> None:
        loop = self.loop
        try:
            if self.nc is not None and not self.nc.is_closed:
                try:
                    loop.run_until_complete(asyncio.wait_for(self.nc.close(), self.timeout))
                except Exception:  # noqa: BLE001 - closing a dead connection
                    pass
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _reason(err: BaseException) -> str:
    if isinstance(err, (asyncio.TimeoutError, TimeoutError)):
        return "no answer in time"
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, OSError) and err.strerror:
        return redact(err.strerror.lower())
    return one_line(err)  # redacted


# -- consuming: `rtwo-vm events tail` ---------------------------------------------------------

# How long one pull request waits for a message (seconds); a fetch that runs out of it is
# simply repeated. The CLI's hidden --fetch-wait sets it (the tests make it tiny so that
# both kinds of fetch timeout of the client happen quickly).
FETCH_BATCH = 100
FETCH_WAIT = 1.0
# A lost connection is retried this many times, RECONNECT_WAIT seconds apart (each attempt
# bounded by the answer timeout), then the tail ends with ServerLost.
RECONNECT_ATTEMPTS = 5
RECONNECT_WAIT = 0.5
# The tail's own (ephemeral) consumer outlives this many idle seconds on the server (its
# default, 5 s, deletes it when a loaded machine starves the tail that long: it would then
# wait forever for nothing); the tail deletes it when it ends.
EPHEMERAL_IDLE = 600.0


class ServerLost(SinkUnavailable):
    """The server went away and did not come back within the bounded reconnect attempts."""


def require_client() -> None:
    """SinkUnavailable (one line) unless the nats-py client can be imported."""
    _client()


def tail(url: str, *, stream: str = DEFAULT_STREAM, subject: str = DEFAULT_SUBJECT,
         context: str | None = None, type_: str | None = None, limit: int | None = None,
         follow: bool = True, durable: str | None = None, timeout: float = 5.0,
         out: TextIO, stop: Callable[[], bool] = lambda: False,
         fetch_wait: float = FETCH_WAIT) -> int:
    """Print the stream's events as JSON lines (oldest first), filtered by context and type;
    with ``follow``, keep printing new ones until ``stop()``, ``limit`` or SIGINT (Ctrl-C:
    the connection is closed inside the event loop and the count returned). A fetch that
    times out is repeated; a lost server is retried RECONNECT_ATTEMPTS times, then
    :class:`ServerLost`. Returns the count."""
    check_url(url)
    check_subject(subject)
    if durable is not None and not _STREAM_NAME.match(durable):
        raise ValueError(f"bad durable consumer name {durable!r}")
    _client()
    state = {"printed": 0, "interrupted": False}
    loop = asyncio.new_event_loop()
    main = loop.create_task(_tail(url, stream, subject, context, type_, limit, follow, durable,
                                  timeout, out, stop, fetch_wait, state))

    def interrupt() -> None:
        state["interrupted"] = True
        main.cancel()
    handled = _on_sigint(loop, interrupt)
    try:
        return loop.run_until_complete(main)
    except asyncio.CancelledError:
        if state["interrupted"]:
            return int(state["printed"])
        raise
    except (SinkUnavailable, KeyboardInterrupt):
        raise
    except Exception as err:  # noqa: BLE001 - the server refused something: one line
        raise SinkUnavailable(f"{redact(url)}: {_reason(err)}") from None
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGINT)
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def _on_sigint(loop: asyncio.AbstractEventLoop, handler: Callable[[], None]) -> bool:
    """SIGINT cancels the tail inside the loop (only possible in the main thread)."""
    try:
        loop.add_signal_handler(signal.SIGINT, handler)
    except (ValueError, RuntimeError, NotImplementedError):
        return False
    return True


def _filter(subject: str, context: str | None, type_: str | None) -> str:
    """The server-side filter for a context and a type (the client filters again)."""
    if context is None and type_ is None:
        return check_subject(subject)
    filled = subject.replace("{context}", _UNSAFE.sub("_", context) if context else "*")
    if type_ is not None:
        return filled.replace("{type}", ".".join(_UNSAFE.sub("_", t) for t in type_.split(".")))
    if subject.endswith(".{type}"):  # a type has one or more tokens
        return filled[: -len("{type}")] + ">"
    return check_subject(subject)


def _batch(limit: int | None, printed: int) -> int:
    """Messages one fetch asks for: up to 100, never more than the limit leaves (and never
    fewer than one: a follow without a limit goes on past its first 100 messages)."""
    return FETCH_BATCH if limit is None else max(1, min(FETCH_BATCH, limit - printed))


async def _tail(url, stream, subject, context, type_, limit, follow, durable, timeout, out,
                stop, fetch_wait, state) -> int:
    nats = _client()
    last: list[BaseException] = []

    async def on_error(err: BaseException) -> None:
        last.append(err)
    try:
        nc = await asyncio.wait_for(nats.connect(
            servers=[url], name="rtwo-vm events tail", allow_reconnect=True,
            max_reconnect_attempts=RECONNECT_ATTEMPTS, reconnect_time_wait=RECONNECT_WAIT,
            error_cb=on_error, connect_timeout=timeout), timeout + 1)
    except Exception as err:  # noqa: BLE001
        raise SinkUnavailable(f"cannot connect to {redact(url)}: {_reason(last[-1] if last else err)}") \
            from None
    lost = f"lost the connection to {redact(url)} ({RECONNECT_ATTEMPTS} reconnect attempts failed)"
    ephemeral: list[str] = []  # the name of the tail's own consumer, once made
    js = nc.jetstream(timeout=timeout)
    try:
        try:
            await js.stream_info(stream)
        except nats.js.errors.NotFoundError:
            raise SinkUnavailable(f"no stream {stream} at {redact(url)}") from None
        except (nats.errors.NoRespondersError, nats.js.errors.ServiceUnavailableError):
            raise SinkUnavailable(f"{redact(url)} has no JetStream") from None
        config = nats.js.api.ConsumerConfig(
            deliver_policy=nats.js.api.DeliverPolicy.ALL,
            ack_policy=nats.js.api.AckPolicy.EXPLICIT,
            inactive_threshold=EPHEMERAL_IDLE if durable is None else None)
        sub = await js.pull_subscribe(_filter(subject, context, type_), durable=durable,
                                      stream=stream, config=config)
        if durable is None:
            ephemeral.append((await sub.consumer_info()).name)
        while limit is None or state["printed"] < limit:
            if stop() or state["interrupted"]:  # also if the client swallowed the cancel
                break
            try:
                messages = await sub.fetch(_batch(limit, state["printed"]), timeout=min(timeout, fetch_wait))
            except asyncio.TimeoutError:
                # The client's own TimeoutError (and FetchTimeoutError) and the plain
                # asyncio one of a used-up deadline: nothing came in time, or a reconnect.
                if nc.is_closed:
                    raise ServerLost(lost) from None
                if follow or not nc.is_connected:
                    continue
                info = await sub.consumer_info()
                if info.num_pending == 0 and info.num_ack_pending == 0:
                    break
                continue
            except Exception as err:  # noqa: BLE001 - the server went away: one line
                if nc.is_closed:
                    raise ServerLost(lost) from None
                if nc.is_reconnecting or not nc.is_connected:
                    await asyncio.sleep(min(fetch_wait, RECONNECT_WAIT))
                    continue
                raise SinkUnavailable(f"{redact(url)}: {_reason(err)}") from None
            for msg in messages:
                try:    # anyone may publish to the stream: not every message is an event
                    doc = json.loads(msg.data)
                except (ValueError, RecursionError):
                    doc = None
                if isinstance(doc, dict) and (context is None or doc.get("stream") == context) \
                        and (type_ is None or doc.get("type") == type_):
                    out.write(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n")
                    out.flush()
                    state["printed"] += 1
                await msg.ack()
                if limit is not None and state["printed"] >= limit:
                    break
            if not follow and messages and messages[-1].metadata.num_pending == 0:
                break
        if durable is None:
            await sub.unsubscribe()
    finally:  # also when cancelled by Ctrl-C: awaited here, inside the loop
        if ephemeral and nc.is_connected:
            try:
                await asyncio.wait_for(js.delete_consumer(stream, ephemeral[0]), timeout)
            except Exception:  # noqa: BLE001 - the server deletes it when idle anyway
                pass
        try:
            await asyncio.wait_for(nc.close(), timeout)
        except Exception:  # noqa: BLE001
            pass
    return int(state["printed"])
