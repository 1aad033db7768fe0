"""Run benchmarks and rewrite their sections of ``docs/benchmarks.md`` in place.

    .venv/bin/python -m bench.all [--only NAME,...] [--skip NAME,...] [--timeout-min 60] [--full]

Each ``bench/NAME.py`` (all but ``common``, ``all``, ``__init__`` and ``_*``) runs as its own process,
``python -m bench.NAME``, one after the other (they measure latency: they must not share the
machine with each other). Its last output line is its summary.

The report has one current section per benchmark: the command, the date, the kind of machine, the
last line and the tail of the output. A run replaces its benchmark's section and summary row; every
other section stays as it was (run earlier, or on another machine). No history: git keeps it. Paths
of the machine are written relative to the checkout, or as their last two parts.

A benchmark too long for a routine run (``ROUTINE_ARGS``) runs smaller; ``--full`` runs the chosen
ones at their own default size instead, in a section of their own ("full size").
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
NOT_RUN = "not run"  # the status of a benchmark with no run yet: its section says so
OUTPUT_LINES = 80  # the tail of a benchmark's output kept in the report
# Routine sizes of benchmarks whose own default takes too long for ``make bench`` (``--full`` lifts them).
ROUTINE_ARGS = {"semantic_scale": ["--entries", "100000", "--tenants", "200"],
                "stream_load": ["--ramp", "16,32,100,300,1000"]}


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


def commit() -> str:
    """The commit the run measured, short, with "+changes" when the checkout differs from it (tracked files
    only): what a reader needs to know that a section comes from the current main."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{head}+changes" if dirty else head


def run(name: str, timeout_s: float, full: bool = False) -> dict:
    extra = [] if full else ROUTINE_ARGS.get(name, [])
    print(f"== bench.{name} {' '.join(extra)}".rstrip(), flush=True)
    started, measured, info = time.monotonic(), commit(), machine()  # the load before the run, not its own
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
              "date": time.strftime("%Y-%m-%d %H:%M %Z"), "machine": info,
              "command": " ".join(["python -m", f"bench.{name}", *extra]), "full": full, "commit": measured}
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    (RUNS_DIR / f"{name}{'@full' if full else ''}.json").write_text(json.dumps(result, indent=2, default=str))
    print(f"   {'ok' if status == 0 else f'FAILED ({status})'} in {result['seconds']:.0f} s: {last}", flush=True)
    return result


def previous(key: str) -> dict | None:
    """The run of a benchmark stored on this machine (``var/bench/runs``), for a report without its section."""
    try:
        return json.loads((RUNS_DIR / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def _key(name: str, full: bool) -> str:
    return f"{name}@full" if full else name


_HEADING = re.compile(r"^## `bench\.(\w+)`( \(full size\))?\s*$")
_ROW = re.compile(r"^\| `(\w+)`( \(full size\))? \|")


def carried_sections() -> dict[str, dict]:
    """The summary row and section of each benchmark in the report being replaced, by key (``NAME``,
    ``NAME@full``): a benchmark this run does not run keeps them as they are."""
    try:
        lines = REPORT.read_text().splitlines()
    except OSError:
        return {}
    out: dict[str, dict] = {}
    current = None
    for line in lines:
        row = _ROW.match(line)
        if row:
            out.setdefault(_key(row.group(1), bool(row.group(2))), {"row": "", "lines": []})["row"] = line
            continue
        head = _HEADING.match(line)
        if head:
            current = out.setdefault(_key(head.group(1), bool(head.group(2))), {"row": "", "lines": []})
            current["lines"] = [line]
        elif line.startswith("## ") or line.startswith("# "):
            current = None
        elif current is not None:
            current["lines"].append(line)
    for section in out.values():
        while section["lines"] and not section["lines"][-1].strip():
            section["lines"].pop()
    return {key: s for key, s in out.items() if s["row"] and s["lines"]}


_PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.@+-]+/)+[\w.@+-]*")


def scrub(text: str) -> str:
    """No paths of the machine: the checkout's own relative, any other as its last two parts."""
    text = text.replace(str(ROOT) + "/", "").replace(str(ROOT), ".")

    def short(match: re.Match) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        return "…/" + "/".join(parts[-2:]) + ("/" if match.group(0).endswith("/") else "")

    return _PATH.sub(short, text)


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def machine_kind(info: dict) -> str:
    """"AMD EPYC, 2 cores, 23.5 GiB RAM": what a reader needs to compare runs, no host name."""
    parts = [info.get("CPU", "unknown CPU")]
    if info.get("cores"):
        parts.append(f"{info['cores']} cores")
    if info.get("RAM"):
        parts.append(f"{info['RAM']} RAM")
    return ", ".join(parts)


def _status(r: dict) -> str:
    return "ok" if r["status"] == 0 else NOT_RUN if r["status"] == NOT_RUN else f"failed ({r['status']})"


def row(r: dict) -> str:
    status = _status(r)
    title = f"`{r['name']}`{' (full size)' if r.get('full') else ''}"
    seconds = f"{r['seconds']:.0f}" if r.get("seconds") else "-"
    at = f" at `{r['commit']}`" if r.get("commit") else ""
    return f"| {title} | {status} | {r.get('date', '?')}{at} | {seconds} | `{scrub(r['last_line'] or '-')}` |"


def section(r: dict) -> list[str]:
    out = [f"## `bench.{r['name']}`{' (full size)' if r.get('full') else ''}", ""]
    summary = summary_of(r["name"])
    if summary:
        out += [summary, ""]
    if r["status"] == NOT_RUN:
        return out + [f"Not run yet: `python -m bench.all --only {r['name']}` (or `make bench`) writes this section."]
    info = r.get("machine", {})
    load = info.get("load average at start (1/5/15 min)")
    at = f" at commit `{r['commit']}`" if r.get("commit") else ""
    out += [f"Command: `{r.get('command') or 'python -m bench.' + r['name']}`, run {r.get('date', '?')}{at} on "
            f"{machine_kind(info)}{f' (load average at start {load})' if load else ''}.", ""]
    if r["status"] != 0:
        out += [f"Status: failed ({r['status']}).", ""]
    if r["last_line"]:
        out += ["Last line:", "", "```", scrub(r["last_line"]), "```", ""]
    out += ["<details><summary>Output (tail)</summary>", "", "```", *[scrub(line) for line in r["output"] or ["(no output)"]],
            "```", "", "</details>"]
    if r["status"] != 0 and r["errors"]:
        out += ["", "Errors (tail):", "", "```", *[scrub(line) for line in r["errors"]], "```"]
    return out


def render(results: list[dict]) -> str:
    """The report from one entry per benchmark: a run (``run``'s result) or a carried section."""
    out = ["# Benchmarks", "",
           "Written by `python -m bench.all` (`make bench`): one section per benchmark, its latest run, replaced "
           "in place by the next. Each says its command, date and kind of machine. Do not edit by hand. The benchmarks "
           "that read the public data sets or the evaluation pairs find them in the shared data folder: "
           "`ASK_SHARED_DIR`, by default a folder `shared` beside the checkout.", "",
           "## Summary", "", "| benchmark | status | run (date, commit) | seconds | last line |", "| --- | --- | --- | --- | --- |"]
    out += [r["carried"]["row"] if r.get("carried") else row(r) for r in results]
    for r in results:
        out += ["", *(r["carried"]["lines"] if r.get("carried") else section(r))]
    return "\n".join(out) + "\n"


def report_entries(fresh: dict[str, dict]) -> list[dict]:
    """Every benchmark that exists, in order, each at its full size too when it has one: this run's
    result, else its section in the current report, else its last run stored on this machine."""
    carried = carried_sections()
    entries = []
    for name in discover():
        for key in (name, _key(name, True)):
            if key in fresh:
                entries.append(fresh[key])
            elif key in carried:
                entries.append({"name": name, "carried": carried[key]})
            elif (stored := previous(key)) is not None:
                entries.append(stored)
            elif key == name:  # every benchmark has a section, if only to say it has not run
                entries.append({"name": name, "status": NOT_RUN, "last_line": "", "output": [], "errors": [],
                                "date": "-", "full": False})
    return entries


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
    if args.full:
        names = [n for n in names if n in ROUTINE_ARGS]
        if not names:
            parser.error(f"--full applies to {', '.join(ROUTINE_ARGS)}")
    fresh = {_key(name, args.full): run(name, args.timeout_min * 60, args.full) for name in names}
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(render(report_entries(fresh)))
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0 if all(r["status"] == 0 for r in fresh.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
