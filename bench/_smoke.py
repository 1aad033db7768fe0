"""Run several benchmarks at their smoke sizes in one process: one Python, Django and embedding-model start
for all of them instead of one each (``tests/test_bench_smoke.py``).

    .venv/bin/python -m bench._smoke NAME [ARG ...] [-- NAME [ARG ...]] ...

Each runs as ``python -m bench.NAME ARG ...`` would (its ``main`` with those arguments in ``sys.argv``), one
after the other; a failing one does not stop the next. Its output is printed between the lines
``==== bench.NAME`` and ``==== bench.NAME rc=N seconds=S``.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import sys
import time
import traceback

MARK = "===="


def run_one(name: str, args: list[str]) -> tuple[int, str]:
    """(exit code, output) of one benchmark run in this process."""
    out = io.StringIO()
    saved = sys.argv
    sys.argv = [f"bench.{name}", *args]
    try:
        with contextlib.redirect_stdout(out):
            rc = importlib.import_module(f"bench.{name}").main()
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=out)
    except Exception:  # noqa: BLE001 - reported as this benchmark's failure; the next one still runs
        traceback.print_exc(file=out)
        rc = 1
    finally:
        sys.argv = saved
    return int(rc or 0), out.getvalue()


def split_runs(argv: list[str]) -> list[tuple[str, list[str]]]:
    runs, current = [], []
    for token in [*argv, "--"]:
        if token == "--":
            if current:
                runs.append((current[0], current[1:]))
            current = []
        else:
            current.append(token)
    return runs


def parse(output: str) -> dict[str, tuple[int, str]]:
    """``{name: (exit code, output)}`` from this runner's output."""
    found, name, lines = {}, None, []
    for line in output.splitlines():
        if line.startswith(f"{MARK} bench."):
            head = line[len(MARK) + 1:].split()
            if len(head) == 1:
                name, lines = head[0].removeprefix("bench."), []
            elif name is not None:
                found[name] = (int(head[1].removeprefix("rc=")), "\n".join(lines))
                name = None
        elif name is not None:
            lines.append(line)
    return found


def main(argv: list[str] | None = None) -> int:
    runs = split_runs(sys.argv[1:] if argv is None else argv)
    if not runs:
        print(__doc__, file=sys.stderr)
        return 2
    from bench.common import setup

    setup(private_redis=True)  # one Redis of the run's own for all of them, as each would start alone
    failed = 0
    for name, args in runs:
        print(f"{MARK} bench.{name}", flush=True)
        started = time.perf_counter()
        rc, output = run_one(name, args)
        print(output.rstrip("\n"))
        print(f"{MARK} bench.{name} rc={rc} seconds={time.perf_counter() - started:.1f}", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
