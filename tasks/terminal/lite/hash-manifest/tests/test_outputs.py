import subprocess
PRISTINE = [("e3b98a4da31a127d4bde6e43033f66ba274cab0eb7eb1c70ec41402bf6273dd8", "bin/tool"),
            ("a1d9890884c1b4b960c279cfe7554a900d169422d6cec980beef67761487d3b9", "lib/a.so"),
            ("454349e422f05297191ead13e21d3db520e5abef52055e4964b82fb213f593a1", "readme")]
"""The files of /app/release as the task gave them: the expected hashes never come from files
the agent can change."""


def test_manifest():
    r = subprocess.run("cd /app/release && sha256sum -c ../SHA256SUMS", shell=True, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    lines = [tuple(l.split("  ", 1)) for l in open("/app/SHA256SUMS").read().splitlines()]
    assert lines == PRISTINE
