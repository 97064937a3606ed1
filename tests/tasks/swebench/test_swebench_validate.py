"""`validation_lines`: the table, the summary and each environment's notes, once."""

from tasks.swebench.validate import ValidationRow, validation_lines


def _row(instance_id: str, version: str, notes: tuple[str, ...], *, gold: bool = True):
    return ValidationRow(instance_id, "astropy/astropy", version, gold, True, 12.0, False,
                         3.25, 1.5, "" if gold else "gold: 1 tests not passing", notes)


def test_lines_list_each_environments_notes_once():
    rows = [_row("astropy__astropy-1", "4.3", ("pre_install steps (apt/conda) not run",
                                               "packages resolved as of 2024-06-01 (official era)")),
            _row("astropy__astropy-2", "4.3", ("pre_install steps (apt/conda) not run",
                                               "packages resolved as of 2024-06-01 (official era)")),
            _row("astropy__astropy-3", "5.0", (), gold=False)]
    lines = validation_lines(rows)
    assert lines[2] == ("| astropy__astropy-1 | 4.3 | yes | yes | 12 | 3.2 | 1.5 |  |")
    assert lines[4].endswith("| NO | yes | 12 | 3.2 | 1.5 | gold: 1 tests not passing |")
    assert lines[5] == ("\n2 of 3 instances reproduced here (gold resolves and the empty "
                        "patch fails); 1 not")
    assert lines[6:] == [
        "\nEnvironment notes (where an environment departs from the official image):",
        "- astropy/astropy 4.3: pre_install steps (apt/conda) not run",
        "- astropy/astropy 4.3: packages resolved as of 2024-06-01 (official era)"]


def test_no_notes_section_without_notes():
    lines = validation_lines([_row("astropy__astropy-3", "5.0", ())])
    assert not any("Environment notes" in line for line in lines)
