"""The shared build cache (`./ember cache serve`, tools/build_cache.sh): Debian's nginx speaking Bazel's HTTP
remote-cache protocol.

The end-to-end test clones HEAD twice into different directories, each with its own Bazel output base and no
disk cache. The first checkout builds //:runner for cortex_m55 and fills a fresh server; the second builds the same
and must execute nothing: Bazel's execution log shows every action as a remote cache hit.
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT

TOOL = os.path.join(ROOT, "tools", "build_cache.sh")
NGINX = "/usr/sbin/nginx"
pytestmark = pytest.mark.skipif(not os.path.exists(NGINX), reason="nginx missing: run ./setup.sh")

# //:runner for the Cortex-M55: its actions cover every kind a host build has (C++ compiles and links, here through
# a cross toolchain) and one more, Python run at build time (the zoo's MLP is exported in the build), so the cache
# must serve actions that run the venv's interpreter too. The host runner compiles every kernel: it would double
# the test's time and check nothing new.
TARGETS = [("cortex_m55", ["--config=cortex_m55"])]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cache_tool(*args, check=True):
    r = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, f"build_cache.sh {' '.join(args)} failed:\n{r.stdout}{r.stderr}"
    return r


class Server:
    def __init__(self, directory, *extra):
        self.dir = str(directory)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cache_tool("serve", "--port", str(self.port), "--dir", self.dir, "--bind", "127.0.0.1", *extra)

    def stop(self):
        cache_tool("stop", "--dir", self.dir)

    def request(self, method, path, data=None):
        """(status, body) of one request."""
        req = urllib.request.Request(self.url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, b""


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path / "cache")
    yield s
    s.stop()


def test_server_speaks_bazels_http_cache_protocol(server):
    blob = os.urandom(3 << 20)  # above nginx's default 1 MiB body limit, which the generated config lifts
    assert server.request("GET", "/cas/" + "0" * 64)[0] == 404  # a miss is a plain 404
    assert server.request("PUT", "/cas/" + "1" * 64, blob)[0] in (201, 204)
    assert server.request("GET", "/cas/" + "1" * 64) == (200, blob)
    assert server.request("PUT", "/ac/" + "2" * 64, b"result")[0] in (201, 204)
    # Overwriting an entry is allowed (two clients may upload the same action result).
    assert server.request("PUT", "/ac/" + "2" * 64, b"result")[0] in (201, 204)
    # A URL prefix makes its own namespace (directories created on the first PUT).
    assert server.request("PUT", "/team-a/cas/" + "3" * 64, b"x")[0] in (201, 204)
    assert server.request("DELETE", "/cas/" + "1" * 64)[0] in (403, 405)
    assert server.request("GET", "/cas/" + "1" * 64) == (200, blob)

    status = cache_tool("status", "--dir", server.dir).stdout
    assert "running" in status and "3 entries" in status, status
    cache_tool("clear", "--dir", server.dir)
    assert server.request("GET", "/cas/" + "1" * 64)[0] == 404


def test_second_server_on_same_directory_is_refused(server):
    r = cache_tool("serve", "--port", str(free_port()), "--dir", server.dir, check=False)
    assert r.returncode != 0 and "already runs" in r.stderr, r.stderr


def test_stop_ends_the_server(tmp_path):
    s = Server(tmp_path / "cache")
    pid = int(open(os.path.join(s.dir, "nginx.pid")).read())
    s.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    r = cache_tool("status", "--dir", s.dir, check=False)
    assert r.returncode == 3 and "not running" in r.stdout


def test_writers_limits_uploads_to_named_addresses(tmp_path):
    s = Server(tmp_path / "cache", "--writers", "192.0.2.1")  # TEST-NET-1: never this machine
    try:
        assert s.request("PUT", "/cas/" + "4" * 64, b"x")[0] == 403
        assert s.request("GET", "/cas/" + "4" * 64)[0] == 404
    finally:
        s.stop()


# --- end to end: two clean checkouts ---------------------------------------------------------------------------


def checkout(dest):
    """A clean clone of HEAD at dest with a venv of its own: this worktree's installed packages linked in, but not
    its ember.pth, so the build's Python actions can import the project's packages only from their declared inputs
    (an undeclared import fails the build instead of reading some checkout's files behind the cache key's back)."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", ROOT, str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", "--detach", head], cwd=dest, check=True)
    base = os.path.join(ROOT, ".venv")
    venv = dest / ".venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(os.path.join(base, "pyvenv.cfg"), venv / "pyvenv.cfg")
    os.symlink(os.path.realpath(os.path.join(base, "bin", "python3")), venv / "bin" / "python3")
    (site,) = glob.glob(os.path.join(base, "lib", "python3*", "site-packages"))
    clone_site = venv / os.path.relpath(site, base)
    clone_site.mkdir(parents=True)
    for name in os.listdir(site):
        if name != "ember.pth":
            os.symlink(os.path.join(site, name), clone_site / name)
    assert not (dest / "user.bazelrc").exists()  # so no disk cache: the remote cache is the only one
    return dest


def parse_spawns(path):
    """The spawns of Bazel's --execution_log_json_file: one JSON object after another."""
    text, spawns, pos = open(path).read(), [], 0
    decoder = json.JSONDecoder()
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return spawns
        obj, pos = decoder.raw_decode(text, pos)
        spawns.append(obj)


def build(work, output_base, url, name, flags):
    """bazel build //:runner in `work`, against the cache at `url`: seconds, process counts by kind, spawns."""
    log = f"{output_base}.{name}.json"
    # No ~/.bazelrc, and no disk cache whatever an rc file says (the clone has no user.bazelrc, but the system
    # rc stays: Debian's Bazel finds its install base there): the server is the only cache.
    cmd = [
        "bazel",
        "--nohome_rc",
        f"--output_base={output_base}",
        "build",
        "--disk_cache=",
        f"--remote_cache={url}",
        f"--execution_log_json_file={log}",
        *flags,
        "//:runner",
    ]
    env = {k: v for k, v in os.environ.items() if k != "EMBER_PYTHON"}  # the checkout's own .venv
    start = time.monotonic()
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.monotonic() - start
    assert r.returncode == 0, f"{' '.join(cmd)} failed in {work}:\n{r.stderr[-4000:]}"
    m = re.search(r"INFO: \d+ process(?:es)?: (.*)\.$", r.stderr, re.M)
    assert m, f"no process summary in Bazel's output:\n{r.stderr[-2000:]}"
    kinds = {}
    for part in m.group(1).split(", "):
        count, kind = part.split(" ", 1)
        kinds[kind] = int(count)
    return seconds, kinds, parse_spawns(log)


def shutdown(work, output_base):
    """Stops the checkout's Bazel server and deletes its output base (about a gigabyte; Bazel leaves its outputs
    read-only)."""
    subprocess.run(
        ["bazel", "--nohome_rc", f"--output_base={output_base}", "shutdown"], cwd=work, capture_output=True, timeout=300
    )
    subprocess.run(["chmod", "-R", "u+w", output_base], capture_output=True)
    shutil.rmtree(output_base, ignore_errors=True)


def test_second_checkout_builds_runner_from_the_cache(tmp_path):
    server = Server(tmp_path / "cache")
    results = {}
    try:
        for clone in ("first", "second"):
            work = checkout(tmp_path / clone)
            output_base = str(tmp_path / f"{clone}_output_base")
            try:
                for name, flags in TARGETS:
                    results[clone, name] = build(work, output_base, server.url, name, flags)
            finally:
                shutdown(work, output_base)
    finally:
        server.stop()

    for (clone, name), (seconds, kinds, spawns) in results.items():
        print(
            f"\nbuild cache: {clone} checkout, //:runner {name}: {seconds:.0f} s, {len(spawns)} spawned actions, "
            f"{kinds}"
        )

    _, first_kinds, first_spawns = results["first", TARGETS[0][0]]
    assert first_spawns and "remote cache hit" not in first_kinds, f"the first build found a full cache: {first_kinds}"
    for name, _ in TARGETS:
        _, kinds, spawns = results["second", name]
        executed = [s for s in spawns if not s.get("remoteCacheHit")]
        assert spawns and not executed, (
            f"//:runner {name}: {len(executed)} of {len(spawns)} actions of the second checkout were executed, "
            f"not served by the cache: " + ", ".join(s.get("progressMessage", "?") for s in executed[:20])
        )
        # Bazel's own summary agrees: hits, and its internal bookkeeping actions, nothing else.
        assert kinds.get("remote cache hit") == len(spawns), kinds
        assert set(kinds) <= {"remote cache hit", "internal"}, kinds
