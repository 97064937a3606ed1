"""`tasks.sandbox_mirror`: which outside sources a command fetches, and where a mirror folder
keeps each (repositories in the layouts SWEBENCH_REPOS accepts, files by URL path)."""

from __future__ import annotations

import subprocess

import pytest

from tasks.sandbox_mirror import find_in_mirror, mirror_file, mirror_holds, source_urls


@pytest.mark.parametrize("command, expected", [
    ("git clone https://github.com/o/r.git /app/r", [("git", "https://github.com/o/r.git")]),
    ("git clone --depth 1 https://gitlab.com/g/sub/r", [("git", "https://gitlab.com/g/sub/r")]),
    ("wget -q https://h.org/a/b.iso -O /app/x", [("file", "https://h.org/a/b.iso")]),
    ("curl -fsSL https://h.org/v.bpe > v.bpe && cd x", [("file", "https://h.org/v.bpe")]),
    ("/usr/bin/curl https://a/1 https://a/2", [("file", "https://a/1"), ("file", "https://a/2")]),
    ("git status && echo https://not-fetched/x", []),
    ("pip install six", []),
    ("echo 'unbalanced", []),
])
def test_source_urls(command, expected):
    assert source_urls(command) == expected


def test_layouts_and_files(tmp_path):
    for folder in ("o__bare", "o+plain/repo", "o/nested"):
        subprocess.run(["git", "init", "-q", "--bare" if "bare" in folder else "-q",
                        str(tmp_path / folder)], check=True)
    assert find_in_mirror(tmp_path, "o/bare") == tmp_path / "o__bare"
    assert find_in_mirror(tmp_path, "o/plain") == tmp_path / "o+plain" / "repo" / ".git"
    assert find_in_mirror(tmp_path, "o/nested") == tmp_path / "o" / "nested" / ".git"
    assert find_in_mirror(tmp_path, "o/missing") is None
    assert mirror_holds(tmp_path, "git", "https://github.com/o/bare.git")
    assert not mirror_holds(tmp_path, "git", "https://github.com/o/missing")
    url = "https://cdn.example.org/pub/linux-6.9.tar.xz?download=true"
    assert mirror_file(tmp_path, url) == tmp_path / "files/cdn.example.org/pub/linux-6.9.tar.xz"
    assert not mirror_holds(tmp_path, "file", url)
    mirror_file(tmp_path, url).parent.mkdir(parents=True)
    mirror_file(tmp_path, url).write_text("kernel")
    assert mirror_holds(tmp_path, "file", url)
