"""Run every benchmark in ``bench/`` and rewrite ``docs/benchmarks.md``.

    .venv/bin/python -m bench.all [--only NAME,...] [--skip NAME,...] [--timeout-min 60] [--full]

Each ``bench/NAME.py`` (all but ``common``, ``all``, ``__init__`` and ``_*``) runs as its own process,
``python -m bench.NAME``, one after the other (they measure latency: they must not share the
machine with each other). Its last output line is its summary; its full output and the figures it
stored with ``bench_result`` (``var/bench/NAME.json``) go into the report, with the machine it ran on.

A benchmark too long for a routine run (``ROUTINE_ARGS``) runs smaller; ``--full`` runs the chosen
ones at their own default size instead, and the report keeps the latest full-size run of each in a
section of its own (carried over from the previous report when this run made none).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "bench"
REPORT = ROOT / "docs" / "benchmarks.md"
RESULTS_DIR = ROOT / "var" / "bench"
RUNS_DIR = RESULTS_DIR / "runs"  # the last run of each benchmark, so a partial run keeps the others' results
NOT_BENCHMARKS = {"__init__", "common", "all"}
OUTPUT_LINES = 80  # the tail of a benchmark's output kept in the report
# Routine sizes of benchmarks whose own default takes too long for ``make bench`` (``--full`` lifts them).
ROUTINE_ARGS = {"semantic_scale": ["--entries", "100000", "--tenants", "200"],
                "stream_load": ["--ramp", "16,32,100,300,1000"]}
FULL_BEGIN, FULL_END = "<!-- full-size runs -->", "<!-- end of full-size runs -->"


def discover() -> list[str]:
    return sorted(p.stem for p in BENCH_DIR.glob("*.py") if p.stem not in NOT_BENCHMARKS and not p.stem.startswith("_"))


def summary_of(name: str) -> str:
    """The first paragraph of a benchmark's module docstring (read without importing it)."""
    try:
        doc = ast.get_docstring(ast.parse((BENCH_DIR / f"{name}.py").read_text())) or ""
    except (OSError, SyntaxError):
        return ""
    return doc.split("\n\n")[0].replace("\n", " ").strip()


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    try:
        load = " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        load = "unknown"
    return {"CPU": cpu, "cores": str(os.cpu_count()), "RAM": ram, "Python": platform.python_version(),
            "OS": f"{platform.system()} {platform.release()}", "date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "load average at start (1/5/15 min)": load}


def run(name: str, timeout_s: float, full: bool = False) -> dict:
    extra = [] if full else ROUTINE_ARGS.get(name, [])
    print(f"== bench.{name} {' '.join(extra)}".rstrip(), flush=True)
    started = time.monotonic()
    stored = RESULTS_DIR / f"{name}.json"
    before = stored.stat().st_mtime if stored.exists() else None
    try:
        proc = subprocess.run([sys.executable, "-m", f"bench.{name}", *extra], cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout_s)
        status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        status, stdout, stderr = "timeout", _text(exc.stdout), _text(exc.stderr)
    lines = [line for line in stdout.splitlines() if line.strip()]
    last = lines[-1].strip() if lines and status == 0 else ""
    figures = None
    if stored.exists() and stored.stat().st_mtime != before:  # written by this run
        try:
            figures = json.loads(stored.read_text()).get("figures")
        except ValueError:
            figures = None
    result = {"name": name, "status": status, "seconds": time.monotonic() - started, "last_line": last,
              "output": lines[-OUTPUT_LINES:], "errors": stderr.strip().splitlines()[-15:], "figures": figures,
              "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": machine(),
              "command": " ".join(["python -m", f"bench.{name}", *extra]), "full": full}
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    (RUNS_DIR / f"{name}{'@full' if full else ''}.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"   {'ok' if status == 0 else f'FAILED ({status})'} in {result['seconds']:.0f} s: {last}", flush=True)
    return result


def previous(name: str) -> dict | None:
    try:
        return json.loads((RUNS_DIR / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def full_runs() -> list[dict]:
    out = []
    for path in sorted(RUNS_DIR.glob("*@full.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            pass
    return out


def carried_sections() -> dict[str, dict]:
    """The summary row and section of each benchmark in the report being replaced, by name: a benchmark
    with no stored run on this machine keeps them (another machine ran it)."""
    try:
        lines = REPORT.read_text().splitlines()
    except OSError:
        return {}
    out: dict[str, dict] = {}
    current = None
    for line in lines:
        row = re.match(r"^\| `(\w+)` \|", line)
        if row:
            out.setdefault(row.group(1), {"row": line, "lines": []})["row"] = line
            continue
        head = re.match(r"^## `bench\.(\w+)`", line)
        if head:
            current = out.setdefault(head.group(1), {"row": "", "lines": []})
            current["lines"] = [line]
        elif line.startswith("## ") or line == FULL_BEGIN:
            current = None
        elif current is not None:
            current["lines"].append(line)
    for section in out.values():
        while section["lines"] and not section["lines"][-1].strip():
            section["lines"].pop()
    return {name: s for name, s in out.items() if s["row"] and s["lines"]}


def carried_full_section() -> list[str]:
    """The full-size section of the report being replaced (no full-size run is stored on this machine)."""
    try:
        text = REPORT.read_text()
    except OSError:
        return []
    if FULL_BEGIN not in text or FULL_END not in text:
        return []
    return text[text.index(FULL_BEGIN):text.index(FULL_END) + len(FULL_END)].splitlines()


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _flatten(figures, prefix="") -> list[tuple[str, str]]:
    rows = []
    for key, value in (figures or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            rows += _flatten(value, name + ".")
        elif isinstance(value, float):
            rows.append((name, f"{value:.4g}"))
        elif isinstance(value, list):
            rows.append((name, "; ".join(map(str, value))[:300]))
        else:
            rows.append((name, str(value)))
    return rows


def section(r: dict, level: str) -> list[str]:
    out = ["", f"{level} `bench.{r['name']}`{' (full size)' if r.get('full') else ''}", ""]
    if r.get("earlier"):
        out += [f"*Not run this time: the result of the run on {r.get('date', '?')}"
                f" (CPU {r.get('machine', {}).get('CPU', '?')}).*", ""]
    summary = summary_of(r["name"])
    if summary:
        out += [summary, ""]
    if r.get("command") and (r.get("full") or r["name"] in ROUTINE_ARGS):
        out += [f"Command: `{r['command']}` ({r.get('date', '?')}, load average at start "
                f"{r.get('machine', {}).get('load average at start (1/5/15 min)', '?')}).", ""]
    if r["last_line"]:
        out += ["Last line:", "", "```", r["last_line"], "```", ""]
    out += ["Output:", "", "```", *(r["output"] or ["(no output)"]), "```"]
    if r["status"] != 0 and r["errors"]:
        out += ["", "Errors (tail):", "", "```", *r["errors"], "```"]
    rows = _flatten(r["figures"])
    if rows:
        out += ["", "<details><summary>All figures</summary>", "", "| figure | value |", "| --- | --- |"]
        out += [f"| {k} | {v.replace('|', '/')} |" for k, v in rows]
        out += ["", "</details>"]
    return out


def render(info: dict[str, str], results: list[dict]) -> str:
    out = ["# Benchmarks", "",
           "Written by `python -m bench.all` (`make bench`); every section is the output of one "
           "`python -m bench.NAME` run on the machine below. Do not edit by hand.", "",
           "## Machine", "", "| | |", "| --- | --- |"]
    out += [f"| {k} | {v} |" for k, v in info.items()]
    out += ["", "## Summary", "", "| benchmark | status | run | seconds | last line |", "| --- | --- | --- | --- | --- |"]
    for r in results:
        if r.get("carried"):
            out.append(r["carried"]["row"])
            continue
        status = "ok" if r["status"] == 0 else f"failed ({r['status']})"
        out.append(f"| `{r['name']}` | {status} | {r.get('date', '?')} | {r['seconds']:.0f} | `{r['last_line'] or '-'}` |")
    for r in results:
        out += ["", *r["carried"]["lines"]] if r.get("carried") else section(r, "##")
    full = full_runs()
    if full:
        out += ["", FULL_BEGIN, "", "## Full-size runs", "",
                "Benchmarks that `make bench` runs smaller (`bench/all.py`: `ROUTINE_ARGS`), as last run at their "
                "own size with `python -m bench.all --only NAME --full`.", ""]
        for r in full:
            out += section(r, "###")
        out += ["", FULL_END]
    elif carried := carried_full_section():
        out += ["", *carried]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--skip", default="", help="comma-separated benchmark names")
    parser.add_argument("--timeout-min", type=float, default=60.0, help="per benchmark")
    parser.add_argument("--full", action="store_true",
                        help=f"run {', '.join(ROUTINE_ARGS)} at full size (a section of its own in the report)")
    args = parser.parse_args(argv)
    names = discover()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - set(names)
        if unknown:
            parser.error(f"no such benchmark: {', '.join(sorted(unknown))} (have {', '.join(names)})")
        names = [n for n in names if n in wanted]
    names = [n for n in names if n not in set(args.skip.split(","))]
    info = machine()
    if args.full:
        names = [n for n in names if n in ROUTINE_ARGS]
        if not names:
            parser.error(f"--full applies to {', '.join(ROUTINE_ARGS)}")
    fresh = {name: run(name, args.timeout_min * 60, args.full) for name in names}
    results = []
    carried = carried_sections()
    for name in discover():  # every benchmark in the report: this run's result, else its last one
        if name in fresh and not args.full:
            results.append(fresh[name])
        elif (earlier := previous(name)) is not None:
            results.append({**earlier, "earlier": True})
        elif name in carried:  # run on another machine: its section stays as it was
            results.append({"name": name, "carried": carried[name]})
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(render(info, results))
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0 if all(r["status"] == 0 for r in fresh.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
