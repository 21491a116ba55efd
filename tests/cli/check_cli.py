#!/usr/bin/env python3
"""One CLI vocabulary: every subcommand's help and a representative call.

Usage: check_cli.py NUMAVM_BINARY

Checks, as a user would see them:
- every subcommand has --help, and 'numavm help COMMAND' prints the same;
- the shared options exist on every subcommand that has the concept, with
  the same spelling and value type in --help (--report table|json, --json,
  --balance off|advise|on, --duration DURATION, --migrate-rate SIZE, ...);
- they mean the same: the same bad value gets the same one-line error and
  exit status 2 from every subcommand;
- a representative call of each subcommand succeeds, and every JSON it
  prints carries schema_version and validates against
  docs/report-schema.json (tests/cli/validate_report.py); --json and
  --report json print the same report;
- 'numavm run' prints labelled progress on a terminal by default (stderr
  a pseudo-terminal) and none when stderr is not one; so does each 'numavm
  run' example of the README's tour, which must succeed (its time is
  printed, not asserted: the README states it for this machine);
- --plot on run, replay and simulate, and 'numavm plot' of a saved report,
  write an SVG that a real renderer (rsvg-convert) turns into a PNG with
  visible axes (black) and series (the first series' blue) in every panel;
- scripts/lab.sh refuses an unknown mode with one line and exit 2, before
  it boots anything.
Prints one line per failed check and exits 1 if any failed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import validate_report  # noqa: E402

COMMANDS = ["run", "replay", "simulate", "attach", "detach", "daemon", "report", "plot"]
# option -> (type shown in --help, the subcommands that must have it)
SHARED = {
    "--report": ("table|json", ["run", "replay", "simulate", "attach", "report"]),
    "--json": ("", ["run", "replay", "simulate", "attach", "report"]),
    "--balance": ("off|advise|on", ["run", "replay", "simulate", "attach", "daemon"]),
    "--duration": ("DURATION", ["run", "simulate", "attach", "daemon"]),
    "--migrate-rate": ("SIZE", ["run", "replay", "simulate", "attach", "daemon"]),
    "--migrate-threads": ("N", ["run", "simulate"]),
    "--connect": ("URI", ["attach", "detach", "daemon", "report"]),
    "--override-pinning": ("", ["attach", "daemon"]),
    "--interval": ("DURATION", ["attach", "daemon"]),
    "--all": ("", ["attach", "detach"]),
    "--plot": ("FILE.svg", ["run", "replay", "simulate"]),
}
TOPOLOGY = os.path.join(SOURCE, "configs", "topology-2node.toml")
TRACE = os.path.join(SOURCE, "tests", "data", "numa02.trace")
# Enough to get past argument checks to the shared option under test.
PREFIX = {
    "run": ["run"],
    "replay": ["replay", TRACE, "--topology", TOPOLOGY],
    "simulate": ["simulate", "--topology", TOPOLOGY],
    "attach": ["attach", "--all"],
    "daemon": ["daemon"],
    "report": ["report", "--no-libvirt"],
}

failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def run(numavm, args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([numavm] + args, capture_output=True, text=True, timeout=300, env=e)


def help_options(text):
    """--name -> the type shown after it (aliases included as names)."""
    found = {}
    for line in text.splitlines():
        m = re.match(r"^\s+((?:-\w,)?--[\w-]+(?:,--[\w-]+)*)(?:\s+(\S+))?", line)
        if not m:
            continue
        kind = m.group(2) or ""
        # A type is upper case (SIZE, DURATION) or a list of choices; what
        # follows a flag without a value is its help text.
        if not (kind[:1].isupper() or "|" in kind):
            kind = ""
        for name in m.group(1).split(","):
            if name.startswith("--"):
                found[name] = kind
    return found


def check_help(numavm):
    helps = {}
    for c in COMMANDS:
        r = run(numavm, [c, "--help"])
        if r.returncode != 0 or "Options:" not in r.stdout:
            fail(f"{c} --help: exit {r.returncode}")
            continue
        if "Exit status" not in r.stdout:
            fail(f"{c} --help does not state its exit statuses")
        h = run(numavm, ["help", c])
        if h.stdout != r.stdout:
            fail(f"'numavm help {c}' differs from '{c} --help'")
        helps[c] = help_options(r.stdout)
    top = run(numavm, ["--help"])
    for c in COMMANDS:
        if c not in top.stdout:
            fail(f"numavm --help does not list {c}")
    v = run(numavm, ["--version"])
    if v.returncode != 0 or not re.match(r"^numavm \d+\.\d+\.\d+", v.stdout):
        fail(f"numavm --version: {v.stdout!r}")
    for option, (kind, commands) in SHARED.items():
        for c in commands:
            got = helps.get(c, {})
            if option not in got:
                fail(f"{c} has no {option}")
            elif got[option] != kind:
                fail(f"{c} {option} shows '{got[option]}', the others '{kind}'")


def expect_bad(numavm, args, needle):
    r = run(numavm, args)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 2 or len(lines) != 1 or needle not in r.stderr or r.stdout:
        fail(f"{' '.join(args[:1] + args[-2:])}: want exit 2 and one line with {needle!r}; "
             f"got exit {r.returncode}: {r.stderr.strip()!r}")


def check_meaning(numavm):
    for c in SHARED["--balance"][1]:
        expect_bad(numavm, PREFIX[c] + ["--balance", "sideways"],
                   "--balance: 'sideways': want off, advise or on")
    for c in SHARED["--report"][1]:
        expect_bad(numavm, PREFIX[c] + ["--report", "xml"], "--report: 'xml': want table or json")
    for c in SHARED["--duration"][1]:
        expect_bad(numavm, PREFIX[c] + ["--duration", "forever"],
                   "--duration: 'forever' is not a duration")
    for c in SHARED["--migrate-rate"][1]:
        expect_bad(numavm, PREFIX[c] + ["--migrate-rate", "lots"],
                   "--migrate-rate: 'lots' is not a positive size per second")
    for c in SHARED["--migrate-threads"][1]:
        expect_bad(numavm, PREFIX[c] + ["--migrate-threads", "0"], "--migrate-threads 0: want 1 to 64")


def check_lab_script(work):
    """scripts/lab.sh refuses a mode its guest lacks before it boots anything."""
    r = subprocess.run([os.path.join(SOURCE, "scripts", "lab.sh"), "--modes", "numavm,anon",
                        "--out", os.path.join(work, "lab")],
                       capture_output=True, text=True, timeout=60)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith(
            "lab: unknown mode anon (modes: ") or " numavm-anon " not in lines[0]:
        fail(f"lab.sh --modes numavm,anon: want exit 2 and one line naming the modes; "
             f"got exit {r.returncode}: {r.stderr.strip()!r}")
    if os.path.exists(os.path.join(work, "lab")):
        fail("lab.sh --modes numavm,anon: made its output directory before refusing")


def validated(name, text):
    try:
        report = json.loads(text)
    except ValueError as e:
        fail(f"{name}: not JSON: {e}")
        return None
    if report.get("schema_version") != 1:
        fail(f"{name}: schema_version {report.get('schema_version')!r}")
    with open(validate_report.SCHEMA) as f:
        schema = json.load(f)
    validator = validate_report.jsonschema.Draft202012Validator(schema)
    for p in validate_report.problems(report, validator):
        fail(f"{name}: {p}")
    return report


def with_options(args, options):
    """`options` before the payload arguments (after '--'), if any."""
    if "--" in args:
        i = args.index("--")
        return args[:i] + options + args[i:]
    return args + options


def without_cpu_times(text):
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if not k.endswith("cpu_seconds")}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    try:
        return strip(json.loads(text))
    except ValueError:
        return text


def check_calls(numavm, kvm):
    fixed = {"SOURCE_DATE_EPOCH": "1764547200"}
    calls = {
        "simulate": ["simulate", "--topology", TOPOLOGY, "--vcpus", "2", "--memory", "256M",
                     "--duration", "20"],
        "replay": ["replay", TRACE, "--topology", TOPOLOGY],
        "report": ["report", "--no-libvirt"],
    }
    if kvm:
        calls["run"] = ["run", "--payload", "numa02", "--vcpus", "2", "--memory", "64M",
                        "--quiet-console", "--balance", "on", "--name", "cli-check", "--",
                        "seconds=2"]
    for c, args in calls.items():
        a = run(numavm, with_options(args, ["--json"]), fixed)
        b = run(numavm, with_options(args, ["--report", "json"]), fixed)
        if a.returncode != 0 or b.returncode != 0:
            fail(f"{c}: exit {a.returncode}/{b.returncode}: {a.stderr.strip()[-300:]}")
            continue
        report = validated(c, a.stdout)
        if report is not None and report.get("command") != c:
            fail(f"{c}: command {report.get('command')!r}")
        # run measures a real VM, and every command its own CPU time: those
        # differ run to run.
        if c != "run" and without_cpu_times(a.stdout) != without_cpu_times(b.stdout):
            fail(f"{c}: --json and --report json print different reports")
        t = run(numavm, args)
        if t.returncode != 0 or t.stdout.lstrip().startswith("{"):
            fail(f"{c}: the default report is not a table (exit {t.returncode})")
    d = run(numavm, ["detach", "--all"])
    if d.returncode != 0:
        fail(f"detach --all with nothing attached: exit {d.returncode}: {d.stderr.strip()}")
    # A libvirt domain without a QEMU process (libvirt's test driver): the
    # daemon says why it skips it and stops at --duration.
    dm = run(numavm, ["daemon", "--connect", "test:///default", "--duration", "1s",
                      "--metrics-port", "0", "--balance", "advise"])
    if dm.returncode != 0 or "not balancing 'test'" not in dm.stderr:
        fail(f"daemon --duration 1s on test:///default: exit {dm.returncode}: {dm.stderr.strip()}")
    at = run(numavm, ["attach", "--all", "--connect", "test:///default", "--duration", "1s"])
    if at.returncode != 2 or "no QEMU process runs the domain" not in at.stderr:
        fail(f"attach of a domain without QEMU: exit {at.returncode}: {at.stderr.strip()}")


def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG."""
    import struct
    import zlib
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"PNG depth {depth} color type {color}")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def check_png(name, svg):
    """Renders `svg` with rsvg-convert; each 420-pixel panel must show axes and a series."""
    png = svg[:-4] + ".png"
    r = subprocess.run(["rsvg-convert", svg, "-o", png], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{name}: rsvg-convert could not render the plot: {r.stderr.strip()}")
        return
    width, height, rows = png_pixels(png)
    if width != 720 or height < 420 or height % 420:
        fail(f"{name}: plot is {width}x{height}, want 720 wide and 420 per panel")
        return
    for panel in range(height // 420):
        part = rows[panel * 420:(panel + 1) * 420]
        black = sum(1 for row in part for px in row if max(px) < 60)
        blue = sum(1 for row in part for px in row
                   if abs(px[0] - 0x1f) < 40 and abs(px[1] - 0x77) < 40 and abs(px[2] - 0xb4) < 40)
        # The two axes alone are over 800 black pixels; a series drawn
        # across the plot is hundreds of blue ones besides its legend's 25.
        if black < 800:
            fail(f"{name}: panel {panel + 1} has no visible axes ({black} dark pixels)")
        if blue < 150:
            fail(f"{name}: panel {panel + 1} shows no series ({blue} pixels of its colour)")


def check_plots(numavm, kvm, work):
    fixed = {"SOURCE_DATE_EPOCH": "1764547200"}
    calls = {
        "simulate": ["simulate", "--topology", TOPOLOGY, "--vcpus", "2", "--memory", "256M",
                     "--duration", "30"],
        "replay": ["replay", TRACE, "--topology", TOPOLOGY],
    }
    if kvm:  # the issue's own example, with a shorter guest run
        calls["run"] = ["run", "--payload", "numa02", "--vcpus", "2", "--memory", "256M",
                        "--balance", "on", "--quiet-console", "--", "seconds=4"]
    for c, args in calls.items():
        svg = os.path.join(work, c + ".svg")
        r = run(numavm, with_options(args, ["--plot", svg, "--json"]), fixed)
        if r.returncode != 0 or not os.path.exists(svg):
            fail(f"{c} --plot: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        check_png(c + " --plot", svg)
        saved = os.path.join(work, c + ".json")
        with open(saved, "w") as f:
            f.write(r.stdout)
        again = os.path.join(work, c + "-again.svg")
        p = run(numavm, ["plot", saved, again])
        if p.returncode != 0 or open(again).read() != open(svg).read():
            fail(f"numavm plot of a saved {c} report: exit {p.returncode}, "
                 f"{'different from' if p.returncode == 0 else 'not'} its --plot")
    report = os.path.join(work, "report.json")
    with open(report, "w") as f:
        f.write(run(numavm, ["report", "--no-libvirt", "--json"]).stdout)
    expect_bad(numavm, ["plot", report, os.path.join(work, "r.svg")], "has no series over time")
    expect_bad(numavm, ["plot", TOPOLOGY, os.path.join(work, "t.svg")], "not JSON")
    expect_bad(numavm, ["simulate", "--topology", TOPOLOGY, "--plot", "/nonexistent/x.svg"],
               "--plot '/nonexistent/x.svg': cannot write it")
    p = run(numavm, ["plot", os.path.join(work, "simulate.json"), "/nonexistent/x.svg"])
    if p.returncode != 5:
        fail(f"numavm plot to a directory that does not exist: exit {p.returncode}, want 5")


def run_on_terminal(numavm, args):
    """Runs numavm with stderr on a pseudo-terminal; (exit status, what it printed there)."""
    import pty
    import select
    master, slave = pty.openpty()
    p = subprocess.Popen([numavm] + args, stdout=subprocess.PIPE, stderr=slave,
                         stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    p.stdout.read()
    os.close(master)
    return p.wait(), seen.decode(errors="replace")


def check_progress(numavm):
    args = ["run", "--payload", "numa02", "--vcpus", "2", "--memory", "64M", "--quiet-console",
            "--balance", "on", "--", "seconds=7"]
    code, terminal = run_on_terminal(numavm, args)
    # The first line comes about 5 s in (the VM's clock, whatever the load).
    lines = [l for l in terminal.splitlines() if re.match(r"^numavm: \d+\.\d s \| guest work ", l)]
    if code != 0 or not lines:
        fail(f"run on a terminal: exit {code}, want progress lines, got {terminal!r}")
    else:
        for label in ("(vCPU 0: ", "| samples ", "| access locality ", "| migrated ",
                      "| vCPU moves ", "| scan period "):
            if label not in lines[0]:
                fail(f"progress line has no '{label}': {lines[0]!r}")
    piped = run(numavm, args)
    if piped.returncode != 0 or "guest work" in piped.stderr:
        fail(f"run with stderr not a terminal printed progress: {piped.stderr!r}")
    code, terminal = run_on_terminal(numavm, args[:-2] + ["--stats-interval", "0", "--",
                                                          "seconds=6"])
    if code != 0 or "guest work" in terminal:
        fail(f"--stats-interval 0 on a terminal printed progress: {terminal!r}")


def readme_run_examples():
    """The indented 'numavm run ...' lines of the README's tour of the CLI."""
    text = open(os.path.join(SOURCE, "README.md")).read()
    tour = text.split("## A tour of the CLI", 1)[-1].split("\n## ", 1)[0]
    return [l.strip() for l in tour.splitlines()
            if l.startswith("    numavm run ") and "--help" not in l]


def check_readme_examples(numavm):
    import shlex
    import time
    examples = readme_run_examples()
    if len(examples) < 4:
        fail(f"the README's tour has {len(examples)} 'numavm run' examples: {examples}")
    for example in examples:
        args = shlex.split(example)[1:]
        payload = args[args.index("--payload") + 1] if "--payload" in args else ""
        if payload.startswith("./"):
            continue  # the user's own payload
        cwd = os.getcwd()
        os.chdir(SOURCE)  # the examples name configs/ relative to the checkout
        try:
            start = time.monotonic()
            code, terminal = run_on_terminal(numavm, with_options(args, ["--quiet-console"]))
            took = time.monotonic() - start
        finally:
            os.chdir(cwd)
        progress = [l for l in terminal.splitlines() if " s | guest work " in l]
        print(f"README example ({took:.1f} s, {len(progress)} progress lines): {example}")
        if code != 0 or not progress:
            fail(f"README example '{example}': exit {code}, {len(progress)} progress lines: "
                 f"{terminal[-300:]!r}")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    numavm = os.path.abspath(argv[1])
    kvm = os.access("/dev/kvm", os.R_OK | os.W_OK)
    with tempfile.TemporaryDirectory() as runtime:
        os.chmod(runtime, 0o700)
        os.environ["NUMAVM_RUNTIME_DIR"] = runtime
        check_help(numavm)
        check_meaning(numavm)
        check_calls(numavm, kvm)
        if kvm:
            check_progress(numavm)
            check_readme_examples(numavm)
        with tempfile.TemporaryDirectory() as work:
            check_plots(numavm, kvm, work)
            check_lab_script(work)
    if not kvm:
        print("note: no /dev/kvm here: 'numavm run' was checked by its help and errors only")
    print(f"{len(failures)} failed checks" if failures else "all CLI checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
