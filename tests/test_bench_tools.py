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


def test_a_run_replaces_its_section_in_place(tmp_path, monkeypatch):
    """One current section per benchmark: a run replaces its own section and summary row, full-size runs
    have their own, and every other section stays as it was (run earlier or on another machine)."""
    monkeypatch.setattr(bench_all, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(bench_all, "REPORT", tmp_path / "benchmarks.md")
    bench_all.REPORT.write_text(bench_all.render(bench_all.report_entries({
        "reembed": _run("reembed", "chunks=20000", False), "fleet": _run("fleet", "web=1,2 rps=90,100", False),
        "semantic_scale@full": _run("semantic_scale", "entries=1000000", True)})))
    carried = bench_all.carried_sections()
    assert set(carried) == {"semantic_scale@full", *bench_all.discover()}  # the others: a "not run" placeholder
    assert all(carried[n]["row"].startswith(f"| `{n}` | not run |") for n in set(bench_all.discover()) - {"reembed", "fleet"})
    assert carried["reembed"]["row"].startswith("| `reembed` | ok |")
    assert "rps=90,100" not in "\n".join(carried["reembed"]["lines"])  # a section ends where the next begins

    second = bench_all.render(bench_all.report_entries({"fleet": _run("fleet", "web=1,2 rps=95,120", False),
                                                        "semantic_scale": _run("semantic_scale", "entries=100000", False)}))
    assert "chunks=20000" in second and "rps=95,120" in second and "rps=90,100" not in second
    assert "entries=1000000" in second and "entries=100000`" in second  # the full-size section kept beside it
    for heading in ("## `bench.reembed`", "## `bench.fleet`", "## `bench.semantic_scale`",
                    "## `bench.semantic_scale` (full size)"):
        assert second.count(heading + "\n") == 1, heading
    assert second.index("## `bench.fleet`") < second.index("## `bench.reembed`")  # in the benchmarks' order


def test_a_section_says_command_date_and_machine_and_no_paths(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_all, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(bench_all, "REPORT", tmp_path / "benchmarks.md")
    run = {**_run("reembed", "chunks=20000", False),
           "machine": {"CPU": "AMD EPYC", "cores": "2", "RAM": "23.5 GiB", "load average at start (1/5/15 min)": "1 / 1 / 1"},
           "output": [f"read {bench_all.ROOT}/kb/questions.jsonl and /srv/someone/shared/data, see https://example.org/a/b"]}
    text = bench_all.render([run, {**run, "commit": "1d1bff0+changes"}])
    assert "Command: `python -m bench.reembed`, run 2026-12-01 10:00 UTC on AMD EPYC, 2 cores, 23.5 GiB RAM" in text
    assert "run 2026-12-01 10:00 UTC at commit `1d1bff0+changes` on AMD EPYC" in text  # the code it measured
    assert "| `reembed` | ok | 2026-12-01 10:00 UTC at `1d1bff0+changes` |" in text
    assert "read kb/questions.jsonl and …/shared/data, see https://example.org/a/b" in text
    assert str(bench_all.ROOT) not in text and "/srv/someone" not in text


def test_a_run_records_the_commit_it_measured():
    measured = bench_all.commit()
    head = bench_all.subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=bench_all.ROOT,
                                    capture_output=True, text=True, check=True).stdout.strip()
    assert measured.split("+")[0] == head and measured in (head, head + "+changes")


def test_every_benchmark_has_a_section_even_before_its_first_run(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_all, "RUNS_DIR", tmp_path / "runs")
    monkeypatch.setattr(bench_all, "REPORT", tmp_path / "benchmarks.md")
    text = bench_all.render(bench_all.report_entries({"reembed": _run("reembed", "chunks=20000", False)}))
    for name in bench_all.discover():
        assert text.count(f"## `bench.{name}`\n") == 1, name
    assert "| `fleet` | not run |" in text and "Not run yet: `python -m bench.all --only fleet`" in text
    assert "| `reembed` | ok |" in text
    bench_all.REPORT.write_text(text)  # a placeholder is carried until a run replaces it
    again = bench_all.render(bench_all.report_entries({"fleet": _run("fleet", "web=1 rps=90", False)}))
    assert "| `fleet` | ok |" in again and "rps=90" in again and "| `reembed` | ok |" in again
