"""The plumbing of the benchmarks: the fleet's round-robin balancer and the report's full-size section."""
import http.client
import http.server
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from bench import all as bench_all
from core.servers import ROOT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _backend(name: str) -> tuple[http.server.ThreadingHTTPServer, int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as gunicorn

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            reply = json.dumps({"backend": name, "echo": body.decode()}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def balancer():
    servers = [_backend(name) for name in ("a", "b")]
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench._roundrobin", str(port), *(str(p) for _, p in servers)],
                            cwd=ROOT)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the balancer did not start"
            time.sleep(0.1)
    yield port
    proc.terminate()
    proc.wait(timeout=10)
    for server, _ in servers:
        server.shutdown()


def test_round_robin_spreads_connections_and_relays_both_ways(balancer):
    seen = []
    for i in range(4):
        conn = http.client.HTTPConnection("127.0.0.1", balancer, timeout=10)
        for j in range(2):  # a keep-alive connection stays on its backend
            conn.request("POST", "/", body=f"{i}-{j}", headers={"Content-Type": "text/plain"})
            reply = json.loads(conn.getresponse().read())
            assert reply["echo"] == f"{i}-{j}"
            seen.append((i, reply["backend"]))
        conn.close()
    by_connection = {}
    for i, backend in seen:
        by_connection.setdefault(i, set()).add(backend)
    assert all(len(b) == 1 for b in by_connection.values())
    order = [next(iter(by_connection[i])) for i in range(4)]  # the start-up probe took one turn already
    assert order in (["a", "b", "a", "b"], ["b", "a", "b", "a"])


def test_round_robin_refuses_bad_arguments():
    proc = subprocess.run([sys.executable, "-m", "bench._roundrobin", "not-a-port"], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2 and "LISTEN_PORT" in proc.stderr


def _run(name: str, last: str, full: bool) -> dict:
    return {"name": name, "status": 0, "seconds": 1.0, "last_line": last, "output": [last], "errors": [],
            "figures": {"x": 1}, "date": "2026-12-01 10:00 UTC", "machine": {"CPU": "test"}, "full": full,
            "command": f"python -m bench.{name}"}


def test_report_keeps_the_last_full_size_run(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_all, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(bench_all, "REPORT", tmp_path / "benchmarks.md")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "semantic_scale@full.json").write_text(json.dumps(_run("semantic_scale", "entries=1000000",
                                                                                 True)))
    routine = _run("semantic_scale", "entries=100000", False)
    report = bench_all.render({"CPU": "test"}, [routine])
    assert "## Full-size runs" in report and "entries=1000000" in report and "entries=100000" in report
    bench_all.REPORT.write_text(report)

    # a machine without the full-size run on disk carries the section over from the report it replaces
    (tmp_path / "runs" / "semantic_scale@full.json").unlink()
    again = bench_all.render({"CPU": "test"}, [_run("semantic_scale", "entries=100001", False)])
    assert "entries=1000000" in again and "entries=100001" in again and "entries=100000`" not in again
    assert again.count(bench_all.FULL_BEGIN) == 1 and again.count(bench_all.FULL_END) == 1

    # and nothing is invented when there was none
    bench_all.REPORT.write_text("# Benchmarks\n")
    assert "Full-size runs" not in bench_all.render({"CPU": "test"}, [routine])


def test_report_keeps_sections_of_benchmarks_run_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_all, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(bench_all, "REPORT", tmp_path / "benchmarks.md")
    (tmp_path / "runs").mkdir()
    first = bench_all.render({"CPU": "test"}, [_run("reembed", "chunks=20000", False),
                                               _run("fleet", "web=1,2 rps=90,100", False)])
    bench_all.REPORT.write_text(first)
    carried = bench_all.carried_sections()
    assert set(carried) == {"reembed", "fleet"}
    assert carried["reembed"]["row"].startswith("| `reembed` | ok |")
    assert "chunks=20000" in "\n".join(carried["reembed"]["lines"])
    assert "rps=90,100" not in "\n".join(carried["reembed"]["lines"])  # a section ends where the next begins

    second = bench_all.render({"CPU": "test"}, [{"name": "reembed", "carried": carried["reembed"]},
                                                _run("fleet", "web=1,2 rps=95,120", False)])
    assert "chunks=20000" in second and "rps=95,120" in second and "rps=90,100" not in second
    assert second.count("## `bench.reembed`") == 1
