#!/usr/bin/env python3
"""The daemon as an operator installs it: unit file, readiness, man page.

Usage: check_packaging.py NUMAVM_BINARY BUILD_DIR

Checks:
- configs/numavm.service: 'systemd-analyze security --offline' rates its
  exposure at most 3.0 (it said 9.6 UNSAFE before hardening), and
  'systemd-analyze verify' finds nothing wrong with it;
- the daemon is Type=notify: with $NOTIFY_SOCKET it sends READY=1 once it
  serves and STOPPING=1 when it stops;
- docs/numavm.1 renders without warnings and names every command;
- the daemon's /metrics passes 'promtool check metrics' (Prometheus' own
  linter, scripts/fetch-promtool.sh; the per-domain series are linted by
  the libvirt integration test);
- 'cmake --install' puts the binary, the payloads, the unit, the example
  config and the man page in place, and the installed binary finds its
  payloads.
Prints one line per failed check and exits 1 if any failed.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
UNIT = os.path.join(SOURCE, "configs", "numavm.service")
MAN = os.path.join(SOURCE, "docs", "numavm.1")

failures = []


def fail(what):
    failures.append(what)
    print("FAIL: " + what)


def check_unit(numavm, work):
    if shutil.which("systemd-analyze") is None:
        print("note: no systemd-analyze here: the unit is not checked")
        return
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", UNIT],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for numavm.service: ([0-9.]+)", r.stdout + r.stderr)
    if not m:
        fail(f"systemd-analyze security gave no exposure level: {r.stderr.strip()}")
    elif float(m.group(1)) > 3.0:
        fail(f"numavm.service exposure {m.group(1)}, want at most 3.0")
    # verify checks that the command exists: point it at the built binary.
    unit = os.path.join(work, "numavm.service")
    with open(UNIT) as f, open(unit, "w") as out:
        out.write(f.read().replace("/usr/local/bin/numavm", numavm))
    v = subprocess.run(["systemd-analyze", "verify", "--man=no", unit],
                       capture_output=True, text=True)
    if v.returncode != 0 or v.stdout.strip() or v.stderr.strip():
        fail(f"systemd-analyze verify: {(v.stdout + v.stderr).strip()}")
    text = open(UNIT).read()
    if "Type=notify" not in text or "Wants=libvirtd" in text:
        fail("the unit must be Type=notify and must not pull in libvirtd")


def check_notify(numavm, work):
    path = os.path.join(work, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(30)
    runtime = os.path.join(work, "run")
    os.mkdir(runtime, 0o700)
    env = dict(os.environ, NOTIFY_SOCKET=path, NUMAVM_RUNTIME_DIR=runtime)
    p = subprocess.Popen([numavm, "daemon", "--connect", "test:///default", "--duration", "2s",
                          "--metrics-port", "0"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    got = []
    try:
        while len(got) < 2:
            got.append(s.recv(4096).decode())
    except socket.timeout:
        pass
    _, err = p.communicate(timeout=60)
    s.close()
    if p.returncode != 0:
        fail(f"daemon under NOTIFY_SOCKET: exit {p.returncode}: {err.strip()}")
    if len(got) < 2 or not got[0].startswith("READY=1") or not got[1].startswith("STOPPING=1"):
        fail(f"daemon notifications: {got!r}, want READY=1 then STOPPING=1")


def check_man(numavm):
    r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", MAN], capture_output=True,
                       text=True, env=dict(os.environ, MANWIDTH="80"))
    if r.returncode != 0 or r.stderr.strip():
        fail(f"docs/numavm.1 does not render cleanly: {r.stderr.strip()}")
    top = subprocess.run([numavm, "--help"], capture_output=True, text=True).stdout
    commands = re.findall(r"^  (\w+)\s{2,}", top.split("Subcommands:")[-1], re.M)
    for c in commands:
        if c != "help" and not re.search(rf"^\.(TP\n)?\.BI? \"?{c}\b", open(MAN).read(), re.M):
            fail(f"docs/numavm.1 does not describe '{c}'")
    if len(commands) < 8:
        fail(f"numavm --help lists {len(commands)} commands: {commands}")


def check_metrics(numavm, build, work):
    import urllib.request
    tool = subprocess.run([os.path.join(SOURCE, "scripts", "fetch-promtool.sh")],
                          capture_output=True, text=True, env=dict(os.environ, BUILD_DIR=build))
    if tool.returncode != 0:
        fail(f"no promtool: {tool.stderr.strip()}")
        return
    runtime = os.path.join(work, "run-metrics")
    os.mkdir(runtime, 0o700)
    port = 19500 + os.getpid() % 400
    p = subprocess.Popen([numavm, "daemon", "--connect", "test:///default", "--duration", "5s",
                          "--metrics-port", str(port)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, NUMAVM_RUNTIME_DIR=runtime))
    body = None
    import time
    for _ in range(40):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
            break
        except OSError:
            time.sleep(0.1)
    p.communicate(timeout=60)
    if body is None:
        fail("the daemon's /metrics did not answer")
        return
    lint = subprocess.run([tool.stdout.strip(), "check", "metrics"], input=body,
                          capture_output=True)
    if lint.returncode != 0 or lint.stdout.strip() or lint.stderr.strip():
        fail(f"promtool check metrics: {(lint.stdout + lint.stderr).decode().strip()}")
    for name in (b"numavm_up 1", b"numavm_build_info{", b"numavm_domains_skipped 1",
                 b'numavm_domain_skipped_info{domain="test",reason="domain \'test\': no QEMU',
                 b"numavm_rounds_total ", b"numavm_round_errors_total 0"):
        if name not in body:
            fail(f"/metrics has no {name.decode()!r}")


def check_install(build, work):
    prefix = os.path.join(work, "prefix")
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True,
                       text=True)
    if r.returncode != 0:
        fail(f"cmake --install: {r.stderr.strip()}")
        return
    for f in ("bin/numavm", "lib/numavm/guest-tools/numa02.elf", "lib/systemd/system/numavm.service",
              "share/man/man1/numavm.1", "share/doc/numavm/examples/numavm-daemon.toml"):
        if not os.path.exists(os.path.join(prefix, f)):
            fail(f"cmake --install did not install {f}")
    if os.path.exists(os.path.join(prefix, "lib/numavm/guest-tools/CMakeFiles")):
        fail("cmake --install copied the build's CMakeFiles among the payloads")
    h = subprocess.run([os.path.join(prefix, "bin", "numavm"), "run", "--help"],
                       capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "NUMAVM_PAYLOAD_DIR"})
    if "numa02" not in h.stdout.split("Payloads:")[-1].split("\n")[0]:
        fail("the installed numavm does not find its payloads")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    numavm, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    with tempfile.TemporaryDirectory() as work:
        check_unit(numavm, work)
        check_notify(numavm, work)
        check_man(numavm)
        check_metrics(numavm, build, work)
        check_install(build, work)
    print(f"{len(failures)} failed checks" if failures else "all packaging checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
