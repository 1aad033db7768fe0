"""A small TCP round-robin balancer for ``bench.fleet``: each new client connection goes to the next
backend, and its bytes are relayed both ways until either side closes.

    python -m bench._roundrobin LISTEN_PORT BACKEND_PORT [BACKEND_PORT ...]

Connection-level (layer 4), as a cloud load balancer in TCP mode: keep-alive clients spread evenly
as long as there are several connections per backend. Loopback only. It runs in its own process so
that ``bench.fleet`` can account for its CPU apart from the web processes."""
from __future__ import annotations

import asyncio
import itertools
import signal
import sys

HOST = "127.0.0.1"
CHUNK = 64 * 1024


async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        if not writer.is_closing():
            writer.close()


async def serve(listen_port: int, backends: list[int]) -> None:
    ring = itertools.cycle(backends)

    async def handle(client_reader, client_writer):
        try:
            backend_reader, backend_writer = await asyncio.open_connection(HOST, next(ring))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_relay(client_reader, backend_writer), _relay(backend_reader, client_writer))

    server = await asyncio.start_server(handle, HOST, listen_port, backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not all(a.isdigit() for a in argv):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    asyncio.run(serve(int(argv[0]), [int(p) for p in argv[1:]]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
