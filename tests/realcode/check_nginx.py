#!/usr/bin/env python3
"""xref trace on Debian's nginx-light, against bpftrace on the same process
(issue 23, item 4).

  check_nginx.py --xref XREF [--nginx PATH] [--requests N]

ngx_palloc jumps to its large-allocation helper (`jmp ngx_palloc_large`),
which returns; ngx_alloc_chain_link reaches ngx_palloc by a jump too. nginx
(one process: `master_process off`) serves `/` on a free loopback port from
a private prefix, config and document root in a scratch directory, for N
requests from a python client, while

  - bpftrace counts ngx_palloc, ngx_pnalloc and ngx_pcalloc per
    ngx_http_core_run_phases call (one per request), each entry with its
    return address, and
  - xref traces `--start ngx_http_core_run_phases --functions` the same three.

No traced function jumps to another traced one, so a window has no `[tail]`
entry at all unless a tail exit hands it a frame. Every window must be
complete, count what bpftrace counted in the same call, name the same
return addresses, and be no deeper than the deepest nesting bpftrace
measured (uretprobes on the three, in a run of its own with the same
requests).

Exit status 0 equal, 1 not, 77 (skip) when nginx, bpftrace, xref or BPF is
missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import die_with_parent, free_port  # noqa: E402
from realcode.facility import missing_status  # noqa: E402
from realcode import peer  # noqa: E402

START = "ngx_http_core_run_phases"
COUNTED = ["ngx_palloc", "ngx_pnalloc", "ngx_pcalloc"]
PAGE = b"<html><body>" + b"xref " * 400 + b"</body></html>\n"

CONFIG = """daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/html;
        location / {{ index index.html; }}
    }}
}}
"""


class Nginx:
    """nginx serving `/` from a private prefix on a free loopback port."""

    def __init__(self, nginx: str, prefix: str):
        self.port = free_port()
        os.makedirs(os.path.join(prefix, "html"))
        with open(os.path.join(prefix, "html", "index.html"), "wb") as page:
            page.write(PAGE)
        config = os.path.join(prefix, "nginx.conf")
        with open(config, "w") as output:
            output.write(CONFIG.format(prefix=prefix, port=self.port))
        self.process = subprocess.Popen([nginx, "-p", prefix, "-c", config, "-e", os.path.join(prefix, "error.log")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        preexec_fn=die_with_parent)
        while not self.get():  # readiness is an answer; the pause only paces the asking
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with status {self.process.returncode}")
            time.sleep(0.05)

    def get(self) -> bool:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            connection.request("GET", "/")
            response = connection.getresponse()
            body = response.read()
            connection.close()
        except OSError:
            return False
        if response.status != 200 or body != PAGE:
            raise RuntimeError(f"GET / answered {response.status} with {len(body)} bytes")
        return True

    def requests(self, count: int) -> None:
        for _ in range(count):
            if not self.get():
                raise RuntimeError("nginx stopped answering")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def run(xref: str, nginx_path: str, requests: int) -> int:
    work = tempfile.mkdtemp(prefix="xref-realcode-nginx-")
    nginx = None
    try:
        # The nesting, from uretprobes, in a run of its own (peer.py).
        nginx = Nginx(nginx_path, os.path.join(work, "nesting"))
        binary = os.path.realpath(f"/proc/{nginx.process.pid}/exe")
        nesting = peer.measured_nesting(binary, nginx.process.pid, START, COUNTED, lambda: nginx.requests(1),
                                        lambda: nginx.requests(requests))
        nginx.close()

        nginx = Nginx(nginx_path, os.path.join(work, "traced"))
        pid = nginx.process.pid
        trace_args = ["--start", START, "--functions", ",".join(COUNTED)]
        run = peer.traced_run(xref, binary, pid, START, COUNTED, trace_args, lambda: nginx.requests(1),
                              lambda: nginx.requests(requests), nesting, work)
        print(peer.summary(run, f"nginx ({binary}), {requests} requests", START, nesting))
        problems = run.problems
        if len(run.calls) < requests:
            problems.append(f"{len(run.calls)} {START} calls for {requests} requests")
        return peer.verdict(problems)
    finally:
        if nginx is not None:
            nginx.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--nginx", default="/usr/sbin/nginx")
    parser.add_argument("--requests", type=int, default=30)
    options = parser.parse_args()
    if not os.access(options.nginx, os.X_OK):
        return missing_status(f"{options.nginx} (Debian package nginx-light)")
    if shutil.which("bpftrace") is None:
        return missing_status("bpftrace (Debian package bpftrace)")
    if not os.access(options.xref, os.X_OK):
        return missing_status(f"the xref helper ({options.xref})")
    if os.geteuid() != 0:
        return missing_status("BPF (run as root)")
    return run(options.xref, options.nginx, options.requests)


if __name__ == "__main__":
    sys.exit(main())
