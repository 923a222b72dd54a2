"""xref as a user installs it: builds the Debian package from this build
tree with cpack, installs it with apt-get, and then, in a directory outside
the checkout with nothing of the build tree on PATH and an empty HOME (no
~/.gdbinit, no ~/.lldbinit), runs what a user would:

  - `xref doctor`, one trace and one probe from PATH, on trace_target copied
    out of the build tree, each compared with the target's own record;
  - gdb and lldb-19 with the xref front ends loaded from their installed
    places by the debuggers themselves (Debian's gdb sources
    /etc/gdb/gdbinit.d, LLDB loads /usr/lib/lldb/plugins), finding the
    installed helper without configuration; a probe in each, compared with
    the record;
  - `man xref`, `man xref-trace`, and bash's Tab completion from the
    installed completion script.

Then removes the package and checks nothing of it is left. The package is
installed for the length of this one test only: other tests load the front
ends from the checkout. `python3 package_test.py install`."""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import require, run_named  # noqa: E402
from trace_target_record import recorded  # noqa: E402

BUILD = os.environ.get("XREF_BUILD_DIR", "")
VERSION = os.environ.get("XREF_VERSION", "")
TRACE_TARGET = os.environ.get("XREF_TRACE_TARGET", "")
LLDB = os.environ.get("XREF_LLDB_PROGRAM", "")
BUILD_PLUGIN = os.environ.get("XREF_LLDB_PLUGIN", "")
GDB = "/usr/bin/gdb"
INSTALLED = {
    "helper": "/usr/bin/xref",
    "lldb plugin (LLDB loads it at start)": "/usr/lib/lldb/plugins/libxref_lldb.so",
    "gdb loader (gdb sources it at start)": "/etc/gdb/gdbinit.d/xref.gdb",
    "man page": "/usr/share/man/man1/xref.1",
    "trace's man page": "/usr/share/man/man1/xref-trace.1",
    "bash completion": "/usr/share/bash-completion/completions/xref",
}
USER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def check(condition, message, output=""):
    if not condition:
        raise AssertionError(message + ("\n--- output ---\n" + output if output else ""))


def run(argv, env=None, cwd=None, timeout=300, input_text=None):
    """(exit status, stdout+stderr) of a command, printed as it ran."""
    print("$ " + " ".join(argv), flush=True)
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout, input=input_text.encode() if input_text else None)
    return done.returncode, done.stdout.decode("utf-8", "replace")


def package_installed():
    status, output = run(["dpkg-query", "-W", "-f", "${Status}", "xref"])
    return status == 0 and "install ok installed" in output


def remove_package():
    status, output = run(["apt-get", "remove", "-y", "--purge", "xref"],
                         env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    check(status == 0, "apt-get remove xref failed", output)


def user_env(home):
    """A user's shell: system PATH only, a HOME without debugger init files, no XREF_* settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("XREF_")}
    env.update(PATH=USER_PATH, HOME=home, TERM="dumb", LANG="C.UTF-8")
    env.pop("PYTHONPATH", None)
    return env


class Target:
    """trace_target copied out of the build tree, waiting for its go file; its record is the truth."""

    def __init__(self, directory, name, requests=6):
        self.go = os.path.join(directory, name + ".go")
        self.record = os.path.join(directory, name + ".record")
        self.argv = [os.path.join(directory, "trace_target"), "--threads", "1", "--requests", str(requests),
                     "--interval-us", "2000", "--go-file", self.go, "--record", self.record]

    def validated(self):
        return recorded(self.record, ">", "validate")


def build_package(work):
    """cpack in this build tree: the .deb's name, dependencies and files."""
    status, output = run(["cpack", "-G", "DEB", "-B", work, "--config", os.path.join(BUILD, "CPackConfig.cmake")],
                         timeout=1200)
    check(status == 0, "cpack failed", output)
    debs = glob.glob(os.path.join(work, "*.deb"))
    check([os.path.basename(deb) for deb in debs] == ["xref_%s_amd64.deb" % VERSION],
          "cpack wrote %s, not xref_%s_amd64.deb" % (debs, VERSION), output)
    deb = debs[0]
    _, depends = run(["dpkg-deb", "-f", deb, "Depends"])
    print("Depends: " + depends.strip())
    # Declared by dpkg-shlibdeps from what the binaries link: the helper's
    # libraries and the plugin's liblldb.
    for library in ("libbpf1", "libelf1", "libdw1", "libcapstone4", "libzydis4", "libre2", "liblldb-19", "libc6"):
        check(library in depends, "the package does not depend on " + library, depends)
    _, listing = run(["dpkg-deb", "-c", deb])
    for what, path in INSTALLED.items():
        check(re.search(r" \.%s( |$)" % re.escape(path), listing, re.M) is not None,
              "the package lacks the %s %s" % (what, path), listing)
    return deb


def check_shell(run_dir, env):
    status, where = run(["sh", "-c", "command -v xref"], env=env, cwd=run_dir)
    check(status == 0 and where.strip() == "/usr/bin/xref", "xref is not /usr/bin/xref on PATH", where)
    status, output = run(["xref", "doctor"], env=env, cwd=run_dir)
    print(output)
    check("uprobe" in output, "doctor said nothing of uprobes", output)
    check(status in (0, 1), "xref doctor exited %d" % status, output)

    # One trace: the window is a request the target recorded, call by call.
    target = Target(run_dir, "trace")
    status, text = cli_on_target(target, ["trace", "--start", "svc::handle_request", "--functions",
                                          "svc::validate,svc::compute_price", "--max-windows", "1"], env, run_dir)
    check(status == 0, "xref trace from PATH exited %d" % status, text)
    check(re.search(r"^window 1 .* complete ", text, re.M) is not None, "no complete window", text)
    traced = {"handle_request", "validate", "compute_price"}
    seen = [(kind, name.split("::")[-1]) for kind, name in re.findall(r"^ +1:\d+ .*?([<>]) (svc::\w+)", text, re.M)]
    requests = {}
    for line in open(target.record):
        fields = line.split()
        if len(fields) >= 4 and fields[3] in traced:
            requests.setdefault((fields[0], fields[1]), []).append((fields[2], fields[3]))
    check(seen and seen in requests.values(),
          "the window's calls %s are none of the recorded requests' %s" % (seen, list(requests.values())[:2]), text)

    # One probe: every call of svc::validate the target recorded, counted.
    target = Target(run_dir, "probe")
    _, text = cli_on_target(target, ["probe", "svc::validate", "--duration-ms", "0"], env, run_dir)
    hits = re.search(r"svc::validate\S*\s.*?hits (\d+)", text)
    check(hits is not None, "the probe printed no hits of svc::validate", text)
    check(int(hits.group(1)) == target.validated() > 0,
          "the probe counted %s hits, the target recorded %d" % (hits.group(1), target.validated()), text)


def cli_on_target(target, words, env, run_dir):
    """`xref COMMAND --pid P WORDS` from PATH on a new target, which starts once the probes are in:
    (exit status, what it printed)."""
    process = subprocess.Popen(target.argv, stdout=subprocess.DEVNULL, cwd=run_dir, env=env)
    try:
        helper = subprocess.Popen(["xref", words[0], "--pid", str(process.pid), "--no-status"] + words[1:],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=run_dir)
        for line in helper.stderr:
            if b"xref: tracing PID" in line or b"xref: probing PID" in line:
                break
        open(target.go, "w").close()
        output, errors = helper.communicate(timeout=120)
    finally:
        process.wait(timeout=60)
    text = output.decode("utf-8", "replace") + errors.decode("utf-8", "replace")
    print(text)
    return helper.returncode, text


def debugger_probe(argv, target, env, run_dir, name):
    """A probe started at main in a debugger that loaded xref by itself, counted at the exit."""
    _, output = run(argv, env=env, cwd=run_dir, timeout=300)
    print(output)
    check("xref: unknown" not in output and "is not a valid command" not in output and
          'Undefined command: "xref"' not in output, name + " did not load xref by itself", output)
    helper = re.search(r"helper command: /usr/bin/xref serve \(default\)", output)
    check(helper is not None, name + "'s front end did not name the installed helper /usr/bin/xref", output)
    hits = re.findall(r"svc::validate[^\n]*?hits (\d+)", output)
    check(hits and int(hits[-1]) == target.validated() > 0,
          "%s's probe counted %s, the target recorded %d" % (name, hits, target.validated()), output)


def check_gdb(run_dir, env):
    target = Target(run_dir, "gdb")
    # No -nx and no `source`: gdb loads /etc/gdb/gdbinit.d/xref.gdb itself.
    argv = [GDB, "-batch", "-ex", "xref helper", "-ex", "break main", "-ex", "run", "-ex", "xref probe svc::validate",
            "-ex", "python open(%r, 'w').close()" % target.go, "-ex", "continue", "-ex", "xref show --all",
            "--args"] + target.argv
    debugger_probe(argv, target, env, run_dir, "gdb")


def check_lldb(run_dir, env):
    require(bool(LLDB) and os.access(LLDB, os.X_OK), "lldb-19 (Debian package lldb-19)")
    target = Target(run_dir, "lldb")
    # No `plugin load`: LLDB loads /usr/lib/lldb/plugins/libxref_lldb.so itself.
    argv = [LLDB, "-b", "-o", "xref helper", "-o", "breakpoint set -n main", "-o", "run", "-o",
            "xref probe svc::validate", "-o", "script open(%r, 'w').close()" % target.go, "-o", "continue", "-o",
            "xref show --all", "--"] + target.argv
    debugger_probe(argv, target, env, run_dir, "lldb")
    # A second copy (the build tree's) is refused: every hook would run twice.
    status, output = run([LLDB, "-b", "-o", "xref helper", "-o", "plugin load " + BUILD_PLUGIN], env=env, cwd=run_dir)
    print(output)
    check("xref: the xref plugin /usr/lib/x86_64-linux-gnu/xref/lldb/libxref_lldb.so is loaded in this LLDB already"
          in output and "helper command: /usr/bin/xref serve (default)" in output,
          "lldb loaded the build tree's plugin beside the installed one", output)


def check_manual(run_dir, env):
    status, where = run(["man", "-w", "xref"], env=env, cwd=run_dir)
    check(status == 0 and where.strip().startswith("/usr/share/man/man1/xref.1"), "man -w xref", where)
    status, page = run(["man", "-P", "cat", "xref-trace"], env=dict(env, MANWIDTH="100"), cwd=run_dir)
    check(status == 0 and "--functions" in page.replace("\u2010", "-"), "man xref-trace lacks --functions", page)
    # Tab after `xref tr` and after `xref trace --fun`, as bash completes them.
    script = r"""
source /usr/share/bash-completion/completions/xref
function=$(complete -p xref | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
complete_line() {
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
  read -r -a COMP_WORDS <<<"$COMP_LINE"
  [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
  "$function" xref "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
  echo "$1 => ${COMPREPLY[*]}"
}
complete_line "xref tr"
complete_line "xref trace --fun"
"""
    status, output = run(["bash", "-c", script], env=env, cwd=run_dir)
    print(output)
    check(re.search(r"^xref tr => trace$", output, re.M) is not None, "Tab after `xref tr`", output)
    check(re.search(r"^xref trace --fun => --functions$", output, re.M) is not None, "Tab after `xref trace --fun`",
          output)


def install():
    require(os.geteuid() == 0, "root (apt-get install)")
    for program in ("cpack", "dpkg-deb", "apt-get", "man", GDB):
        require(shutil.which(program) is not None, program)
    check(bool(BUILD) and bool(VERSION) and os.path.isfile(TRACE_TARGET), "run me from ctest (tests/package)")
    if package_installed():
        print("an xref package was installed before this test: removing it first")
        remove_package()
    work = tempfile.mkdtemp(prefix="xref-package-")
    try:
        deb = build_package(os.path.join(work, "cpack"))
        status, output = run(["apt-get", "install", "-y", "--no-install-recommends", deb],
                             env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), timeout=600)
        check(status == 0, "apt-get install %s failed" % deb, output)
        try:
            home = os.path.join(work, "home")
            run_dir = os.path.join(work, "run")
            os.makedirs(home)
            os.makedirs(run_dir)
            shutil.copy2(TRACE_TARGET, run_dir)
            env = user_env(home)
            check_shell(run_dir, env)
            check_gdb(run_dir, env)
            check_lldb(run_dir, env)
            check_manual(run_dir, env)
        finally:
            remove_package()
        for what, path in INSTALLED.items():
            check(not os.path.lexists(path), "after removal the %s %s is left" % (what, path))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_named({"install": install}, sys.argv))
