"""A stand-in model server for load tests and the serving tests: OpenAI chat completions streamed
over SSE at a fixed rate, no model behind it.

vLLM streams 2-10 s answers; the CPU model here cannot stream a thousand at once. This server can:
one asyncio loop, a word every ``interval_s`` for ``tokens`` words, the wire protocol of
``/v1/chat/completions`` with ``stream: true`` (deltas, a last chunk with the finish reason, a
usage chunk, ``[DONE]``). Like vLLM it stops generating for a client that closed its connection,
and it keeps, per stream, when each token was generated and when the client went away, so a test
can count the tokens generated after a disconnect.

    python -m modelserver.standin --port 8790 --interval-ms 100 --tokens 100

``GET /health``; ``GET /stats`` (JSON: streams open, started, tokens generated); ``POST /config``
with ``{"tokens": N}``: the answers of the streams started from now on (a load test's next step).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from dataclasses import dataclass, field

ANSWER_WORDS = ("Returns are free within 30 days of delivery for unused items [1]. " * 40).split(" ")
# Words no help-centre passage shares: no citation is inferred from them, so the answer is never admitted.
UNCITED_WORDS = ("This stand-in answer streams one word at a time and cites nothing, so no cache keeps it. "
                 * 40).split(" ")


@dataclass
class Stream:
    started: float
    token_times: list[float] = field(default_factory=list)
    client_gone: float | None = None  # monotonic time the client closed its connection
    ended: float | None = None


async def _stopped(watcher: asyncio.Task) -> bytes:
    """Stop the watcher (the reader is free again); what it read, if it read anything."""
    if not watcher.done():
        watcher.cancel()
    try:
        return await watcher or b""
    except (asyncio.CancelledError, ConnectionError):
        return b""


class StandInModel:
    def __init__(self, *, interval_s: float = 0.1, tokens: int = 100, model: str = "standin-model",
                 token_bytes: int = 0, cite: bool = True):
        self.interval_s, self.tokens, self.model = interval_s, tokens, model
        self.words = ANSWER_WORDS if cite else UNCITED_WORDS  # uncited: the answer is never admitted to a cache
        self.token_bytes = token_bytes  # > 0: every token is this many letters (to fill a slow reader's buffers)
        self.streams: list[Stream] = []
        self.open = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: asyncio.base_events.Server | None = None
        self.port = 0
        self._connections: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ figures

    def stats(self) -> dict:
        return {"open": self.open, "started": len(self.streams),
                "tokens": sum(len(s.token_times) for s in self.streams)}

    def tokens_after_disconnect(self, slack_s: float = 0.0) -> int:
        """Tokens generated more than ``slack_s`` after their client went away, over every stream."""
        return sum(sum(1 for t in s.token_times if t > s.client_gone + slack_s)
                   for s in self.streams if s.client_gone is not None)

    # ------------------------------------------------------------------ the server

    async def serve(self, host: str, port: int) -> None:
        self.loop = asyncio.get_running_loop()
        self.server = await asyncio.start_server(self._connection, host, port, backlog=4096)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        leftover = b""  # a byte of the next request the last stream's watcher read
        task = asyncio.current_task()
        self._connections.add(task)  # asyncio keeps only a weak reference once the connection is lost
        try:
            while True:
                head = leftover + await reader.readuntil(b"\r\n\r\n")
                leftover = b""
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                if method == "GET":
                    payload = json.dumps(self.stats() if path == "/stats" else {"status": "ok"}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                    await writer.drain()
                    continue
                request = json.loads(body or b"{}")
                if path == "/config":  # a load test's next streams: {"tokens": N}
                    self.tokens = max(1, int(request.get("tokens", self.tokens)))
                    writer.write(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                if not request.get("stream"):
                    payload = json.dumps({"error": {"message": "the stand-in only streams"}}).encode()
                    writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                    await writer.drain()
                    continue
                alive, leftover = await self._stream(reader, writer, request)
                if not alive:
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()
            self._connections.discard(task)

    async def _stream(self, reader, writer, request: dict) -> tuple[bool, bytes]:
        """Stream one answer: (False when the client went away, what the watcher read of the next request)."""
        stream = Stream(started=time.monotonic())
        self.streams.append(stream)
        self.open += 1
        gone = asyncio.Event()

        async def watch() -> bytes:  # the client sends nothing more while it reads a stream: EOF means it left
            data = await reader.read(1)
            if data == b"":
                stream.client_gone = time.monotonic()
                gone.set()
                writer.transport.abort()  # wakes a write waiting on a full buffer: the stream is over
            return data

        watcher = asyncio.create_task(watch())
        max_tokens = min(self.tokens, int(request.get("max_tokens") or self.tokens))
        try:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")

            def event(data: dict | str) -> bytes:
                text = data if isinstance(data, str) else json.dumps(data)
                raw = f"data: {text}\n\n".encode()
                return f"{len(raw):x}\r\n".encode() + raw + b"\r\n"

            base = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": self.model}
            events: dict[str, bytes] = {}  # a word's event, made once a stream: the stand-in must stay cheap
            for i in range(max_tokens):
                await asyncio.sleep(self.interval_s)  # a sleep, not a wait_for(gone): a thousand streams stay cheap
                if gone.is_set() or writer.transport.is_closing():  # closed before the watcher ran
                    stream.client_gone = stream.client_gone or time.monotonic()
                    return False, b""  # the client left: no more tokens (vLLM aborts the request)
                stream.token_times.append(time.monotonic())
                word = "x" * self.token_bytes if self.token_bytes else self.words[i % len(self.words)] + " "
                raw = events.get(word)
                if raw is None:
                    raw = events[word] = event({**base, "choices": [{"index": 0, "delta": {"content": word},
                                                                     "finish_reason": None}]})
                writer.write(raw)
                await writer.drain()
            writer.write(event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"
                                                     if max_tokens < self.tokens else "stop"}]}))
            writer.write(event({**base, "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": max_tokens,
                                                                 "prompt_tokens_details": {"cached_tokens": 0}}}))
            writer.write(event("[DONE]") + b"0\r\n\r\n")
            await writer.drain()
            return True, await _stopped(watcher)
        except ConnectionError:
            stream.client_gone = stream.client_gone or time.monotonic()
            return False, b""
        finally:
            stream.ended = time.monotonic()
            self.open -= 1
            await _stopped(watcher)

    # ------------------------------------------------------------------ in a thread (tests)

    def start_in_thread(self, host: str = "127.0.0.1", port: int = 0) -> int:
        ready = threading.Event()

        def run():
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            loop.run_until_complete(self.serve(host, port))
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, name="standin-model", daemon=True).start()
        ready.wait(10)
        return self.port

    def stop(self) -> None:
        if self.loop is None or self.server is None:
            return

        async def shut():
            self.server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(shut(), self.loop)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--interval-ms", type=float, default=100.0, help="time between two tokens")
    parser.add_argument("--tokens", type=int, default=100, help="tokens an answer has")
    parser.add_argument("--no-cite", action="store_true", help="answers cite no passage (never cached)")
    args = parser.parse_args(argv)
    model = StandInModel(interval_s=args.interval_ms / 1000, tokens=args.tokens, cite=not args.no_cite)

    async def run():
        await model.serve(args.host, args.port)
        print(f"stand-in model server on {args.host}:{model.port}", flush=True)
        await asyncio.Event().wait()

    try:
        try:
            import uvloop  # the web server's loop too: the stand-in must not be what a load test measures
        except ImportError:
            asyncio.run(run())
        else:
            uvloop.run(run())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
