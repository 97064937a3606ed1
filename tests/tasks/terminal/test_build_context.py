"""Build-context confinement: COPY/ADD sources and task files stay inside their context.

Hand cases for `resolve_source` and for the Dockerfile forms that reach it, a property over
generated ``..`` paths, then whole task folders loaded as a user would (``TERMINAL_BENCH_TASKS``)
and, where the sandbox runs, built: a host secret written beside the task folders never
reaches a reason, a task field or a built layer."""

from __future__ import annotations

import itertools
import os
import posixpath
import shutil
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.terminal.build_context import (ContextEscape, ContextSource, SourceMissing,
                                          resolve_source)
from tasks.terminal.taskdir import BuildStep, Unsupported, load_task, translate_dockerfile

LEAVES = "source leaves the build context"


@pytest.fixture
def context(tmp_path):
    """``tmp_path/ctx`` with ``data.txt``, ``notes.txt``, ``files/a.txt``; a host file
    ``tmp_path/secret.txt`` beside it."""
    (tmp_path / "secret.txt").write_text("host secret\n")
    ctx = tmp_path / "ctx"
    (ctx / "files").mkdir(parents=True)
    (ctx / "data.txt").write_text("data\n")
    (ctx / "notes.txt").write_text("notes\n")
    (ctx / "files" / "a.txt").write_text("a\n")
    return ctx


# ---- resolve_source: hand cases -------------------------------------------------------------
@pytest.mark.parametrize("source, detail", [
    ("../secret.txt", "('../secret.txt')"),
    ("..", "('..')"),
    ("files/../../secret.txt", "('files/../../secret.txt')"),
    ("/etc/passwd", "(absolute path '/etc/passwd')"),
    ("../*.txt", "('../*.txt')"),
])
def test_lexical_escapes_are_refused(context, source, detail):
    with pytest.raises(ContextEscape) as caught:
        resolve_source(context, source)
    assert str(caught.value) == f"{LEAVES} {detail}"
    assert not isinstance(caught.value, SourceMissing)


def test_dot_dot_that_stays_inside_is_accepted(context):
    assert resolve_source(context, "files/../data.txt") == (
        ContextSource("data.txt", context / "data.txt"),)


def test_a_symlink_to_a_host_file_is_refused_at_the_top_and_inside_a_tree(context, tmp_path):
    os.symlink(tmp_path / "secret.txt", context / "leak.txt")
    with pytest.raises(ContextEscape, match=r"\('leak.txt' -> '.*secret.txt'\)"):
        resolve_source(context, "leak.txt")
    with pytest.raises(ContextEscape, match=LEAVES):
        resolve_source(context, ".")  # COPY . /app: the tree holds the link
    (context / "leak.txt").unlink()
    os.symlink("../../secret.txt", context / "files" / "deep")  # relative, leaves
    with pytest.raises(ContextEscape, match=r"\('files/deep' -> '../../secret.txt'\)"):
        resolve_source(context, "files")


def test_a_linked_folder_on_the_path_is_refused(context):
    os.symlink("/etc", context / "etc")
    with pytest.raises(ContextEscape, match=r"\('etc/passwd' -> '/etc/passwd'\)"):
        resolve_source(context, "etc/passwd")
    with pytest.raises(ContextEscape, match=LEAVES):
        resolve_source(context, "e*/passwd")  # a glob through the link


def test_links_that_stay_inside_are_accepted(context):
    os.symlink("data.txt", context / "alias.txt")
    os.symlink(context / "files", context / "more")  # absolute, but inside
    os.symlink("../notes.txt", context / "files" / "notes-link")
    os.symlink("gone.txt", context / "files" / "dangling")  # dangles inside: harmless
    assert resolve_source(context, "alias.txt") == (
        ContextSource("alias.txt", context / "data.txt"),)  # read through, named as written
    assert resolve_source(context, "more") == (ContextSource("more", context / "files"),)
    assert [s.name for s in resolve_source(context, ".")] == ["."]


def test_a_glob_expands_inside_and_sorted(context):
    assert resolve_source(context, "*.txt") == (
        ContextSource("data.txt", context / "data.txt"),
        ContextSource("notes.txt", context / "notes.txt"))
    with pytest.raises(SourceMissing, match="source '\\*.csv' is missing"):
        resolve_source(context, "*.csv")


def test_missing_loops_and_special_files(context):
    with pytest.raises(SourceMissing, match="'nothing' is missing"):
        resolve_source(context, "nothing")
    os.symlink("nowhere", context / "dangling")
    with pytest.raises(SourceMissing, match="dangling link"):
        resolve_source(context, "dangling")
    os.symlink("loop-b", context / "files" / "loop-a")
    os.symlink("loop-a", context / "files" / "loop-b")
    with pytest.raises(ContextEscape, match="symlink loop"):
        resolve_source(context, "files")
    (context / "files" / "loop-a").unlink()
    (context / "files" / "loop-b").unlink()
    os.mkfifo(context / "files" / "pipe")
    with pytest.raises(ContextEscape, match="not a regular file"):
        resolve_source(context, "files")


# ---- resolve_source: property -----------------------------------------------------------------
@pytest.fixture(scope="module")
def deep_tree(tmp_path_factory):
    """Every path of up to 8 ``a``/``b`` folders under a base; the context is ``base/a/b``, so
    paths that leave it still exist on the host."""
    base = tmp_path_factory.mktemp("tree")
    for depth in range(1, 9):
        for names in itertools.product("ab", repeat=depth):
            (base.joinpath(*names)).mkdir(exist_ok=True)
    return base / "a" / "b"


@given(st.lists(st.sampled_from(["a", "b", "..", "."]), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_a_relative_path_is_accepted_iff_its_normal_form_stays_inside(deep_tree, segments):
    source = "/".join(segments)
    normal = posixpath.normpath(source)
    inside = normal != ".." and not normal.startswith("../")
    if inside:
        assert resolve_source(deep_tree, source) == (
            ContextSource(normal, deep_tree / normal if normal != "." else deep_tree),)
    else:
        with pytest.raises(ContextEscape, match=LEAVES):
            resolve_source(deep_tree, source)


# ---- the Dockerfile forms ---------------------------------------------------------------------
def _translate(dockerfile: str, context: Path) -> list[BuildStep]:
    return translate_dockerfile(f"FROM debian\nWORKDIR /app\n{dockerfile}\n", context)[1][2:]


@pytest.mark.parametrize("line", [
    "COPY ../secret.txt /app/x",
    "COPY ../../../../../../../../etc/passwd /app/x",
    "COPY /etc/passwd /app/x",
    "COPY files/../../secret.txt /app/x",
    "COPY --chown=1000:1000 ../secret.txt /app/x",
    "COPY --chown=root:root --chmod=644 data.txt ../secret.txt /app/",
    "ADD ../secret.txt /app/x",
    "ADD --chown=0:0 /etc/passwd x",
    'COPY ["../secret.txt", "/app/x"]',
    'ADD --chown=0:0 ["data.txt", "/etc/shadow", "/app/"]',
    "COPY ../*.txt /app/",
])
def test_a_step_whose_source_leaves_is_refused_with_the_step_named(context, line):
    with pytest.raises(Unsupported) as caught:
        _translate(line, context)
    assert str(caught.value).startswith(f"{line}: {LEAVES} (")


@pytest.mark.parametrize("line, steps", [
    ("COPY data.txt /app/d.txt", [("data.txt", "/app/d.txt")]),
    ("COPY --chown=1000:1000 --chmod=644 data.txt sub", [("data.txt", "/app/sub")]),
    ("ADD --chown=root data.txt /opt/", [("data.txt", "/opt/")]),
    ('COPY ["data.txt", "/app/d.txt"]', [("data.txt", "/app/d.txt")]),
    ('COPY --chown=0:0 ["data.txt", "notes.txt", "/srv"]',
     [("data.txt", "/srv/"), ("notes.txt", "/srv/")]),
    ("COPY *.txt /srv", [("data.txt", "/srv/"), ("notes.txt", "/srv/")]),
    ("COPY files/ /app/", [("files/", "/app/")]),
    ("COPY . .", [(".", "/app/.")]),
])
def test_sources_inside_become_copy_steps(context, line, steps):
    assert _translate(line, context) == [BuildStep("copy", step) for step in steps]


@pytest.mark.parametrize("line, reason", [
    ("ADD https://example.org/f.tgz /opt/", "ADD from a URL"),
    ("ADD git@github.com:org/repo.git /src", "ADD from a URL"),
    ("COPY --from=builder /usr/bin/tool /usr/bin/", "COPY options"),
    ('COPY ["data.txt"]', "unreadable COPY"),
    ('COPY ["data.txt", 3]', "unreadable COPY"),
    ("COPY missing.txt /app/", "source 'missing.txt' is missing"),
])
def test_other_copy_forms_keep_their_reasons(context, line, reason):
    with pytest.raises(Unsupported, match=reason):
        _translate(line, context)


# ---- task folders, loaded and built -------------------------------------------------------------
def _tb2(root: Path, name: str, dockerfile: str) -> Path:
    task = root / name
    for folder in ("environment", "tests", "solution"):
        (task / folder).mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n[metadata]\ncategory = "files"\n')
    (task / "instruction.md").write_text("Read /app/x.\n")
    (task / "environment" / "Dockerfile").write_text(f"FROM debian\nWORKDIR /app\n{dockerfile}\n")
    (task / "environment" / "data.txt").write_text("data\n")
    (task / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    (task / "solution" / "solve.sh").write_text("cat /app/x\n")
    return task


def _tasks_beside_a_secret(tmp_path: Path) -> tuple[Path, bytes]:
    """Task folders under ``tmp_path/tasks``, each trying one way to the host file
    ``tmp_path/secret.txt``, and two that must load (one with a link inside)."""
    secret = tmp_path / "secret.txt"
    token = f"HOST-SECRET-{uuid.uuid4().hex}".encode()
    secret.write_bytes(token + b"\n")
    root = tmp_path / "tasks"
    up = "../" * len((root / "copy-dotdot" / "environment").resolve().parts)
    _tb2(root, "copy-dotdot", f"COPY {up}{str(secret.resolve()).lstrip('/')} /app/x")
    _tb2(root, "copy-absolute", f"COPY {secret} /app/x")
    os.symlink(secret, _tb2(root, "copy-link", "COPY . /app/") / "environment" / "x")
    os.symlink(secret, _tb2(root, "copy-link-file", "COPY x /app/x") / "environment" / "x")
    os.symlink(secret, _tb2(root, "tests-link", "COPY data.txt /app/x") / "tests" / "x")
    os.symlink(secret, _tb2(root, "solution-link", "COPY data.txt /app/x") / "solution" / "y")
    dockerfile = _tb2(root, "dockerfile-link", "") / "environment" / "Dockerfile"
    dockerfile.unlink()
    os.symlink(secret, dockerfile)
    os.symlink("data.txt", _tb2(root, "link-inside", "COPY . /app/") / "environment" / "alias")
    return root, token


def test_escaping_task_folders_are_unsupported_at_load_with_the_step(tmp_path, monkeypatch):
    from tasks.terminal import TerminalBenchSuite

    root, token = _tasks_beside_a_secret(tmp_path)
    monkeypatch.setenv("TERMINAL_BENCH_TASKS", str(root))
    suite = TerminalBenchSuite()
    assert [s.id for s in suite.tasks()] == ["link-inside"]
    reasons = suite.unsupported
    up = "../" * len((root / "copy-dotdot" / "environment").resolve().parts)
    assert reasons["copy-dotdot"].startswith(f"COPY {up}")
    assert reasons["copy-dotdot"].endswith(f"/app/x: {LEAVES} ('{up}"
                                           f"{str((tmp_path / 'secret.txt').resolve())[1:]}')")
    assert reasons["copy-absolute"] == (f"COPY {tmp_path / 'secret.txt'} /app/x: {LEAVES} "
                                        f"(absolute path '{tmp_path / 'secret.txt'}')")
    assert reasons["copy-link"].startswith(f"COPY . /app/: {LEAVES} ('x' -> ")
    assert reasons["copy-link-file"].startswith(f"COPY x /app/x: {LEAVES} ('x' -> ")
    assert reasons["tests-link"].startswith(f"task file tests: {LEAVES} ('tests/x' -> ")
    assert reasons["solution-link"].startswith(f"task file solution: {LEAVES} ('solution/y'")
    assert reasons["dockerfile-link"].startswith(f"task file environment/Dockerfile: {LEAVES}")
    assert not any(token.decode() in reason for reason in reasons.values())


def test_a_tb1_task_file_that_links_out_is_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("echo HOST-SECRET\n")
    task = tmp_path / "tb1"
    (task / "tests").mkdir(parents=True)
    (task / "task.yaml").write_text("instruction: read it\n")
    (task / "Dockerfile").write_text("FROM debian\n")
    os.symlink(secret, task / "solution.sh")
    loaded = load_task(task)
    assert loaded.solution == () and loaded.unsupported.startswith(
        f"task file solution.sh: {LEAVES} ('solution.sh' -> ")


def test_no_host_file_reaches_a_built_layer(tmp_path, lite_suite):
    """The supported task builds (a fresh layer: its data is new each run) with its inside
    link kept a link; the refused ones do not build; a link swapped in after loading is
    refused by the build itself; the secret is in no file of any layer these tasks have."""
    from tasks.sandbox import rootfs_cache_dir
    from tasks.terminal import TerminalBenchSuite
    from tasks.terminal.environment import build_environment

    root, token = _tasks_beside_a_secret(tmp_path)
    nonce = f"fresh {uuid.uuid4().hex}\n"
    (root / "link-inside" / "environment" / "data.txt").write_text(nonce)
    swapped = _tb2(root, "swapped-after-load", "COPY . /app/")
    suite = TerminalBenchSuite(root)
    layer = build_environment(suite.terminal_task("link-inside")).layer
    try:
        assert os.readlink(layer / "app" / "alias") == "data.txt"
        assert (layer / "app" / "data.txt").read_text() == nonce
        for task_id in suite.unsupported:
            with pytest.raises(Unsupported, match=LEAVES):
                build_environment(load_task(root / task_id))
        os.symlink(tmp_path / "secret.txt", swapped / "environment" / "late")
        with pytest.raises(Unsupported, match=r"COPY \. /app/: source leaves .*'late' -> "):
            build_environment(suite.terminal_task("swapped-after-load"))
        built = [d for d in (rootfs_cache_dir() / "layers").iterdir()
                 if d.name.rsplit("-", 1)[0] in {p.name for p in root.iterdir()}]
        assert built == [layer]
        for folder, _, files in os.walk(layer):
            for name in files:
                path = Path(folder, name)
                if not path.is_symlink():
                    assert token not in path.read_bytes(), path
    finally:
        shutil.rmtree(layer, ignore_errors=True)
        (layer.parent / f".{layer.name}.lock").unlink(missing_ok=True)
