"""`validation_lines`: the table, the summary and each environment's notes, once."""

import pytest

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


from types import SimpleNamespace  # noqa: E402

from tasks.swebench.validate import classify, first_error_line, repository_table  # noqa: E402


def _result(*, applied=True, resolved=True, failed=(), status_map=None, log="",
            timed_out=False):
    verdict = SimpleNamespace(applied=applied, resolved=resolved,
                              failed_tests=lambda: list(failed),
                              status_map=status_map or {})
    return SimpleNamespace(verdict=verdict, log=log, timed_out=timed_out)


START = ">>>>> Start Test Output\n"


@pytest.mark.parametrize("gold, empty, expected", [
    (_result(), _result(resolved=False), ""),
    (_result(), _result(), "empty passes"),
    (_result(applied=False, timed_out=True), _result(resolved=False), "timeout"),
    (_result(applied=False, log=">>>>> Patch Apply Failed"), _result(), "patch apply"),
    (_result(resolved=False, failed=["t::a"], status_map={"t::a": "FAILED"}, log=START),
     _result(resolved=False), "gold fails"),
    (_result(resolved=False, failed=["t::a"], log=START + "ERROR collecting t.py"),
     _result(resolved=False), "test collection"),
    (_result(resolved=False, failed=["t::a", "t::b"], log=START + "nothing"),
     _result(resolved=False), "test collection"),
    (_result(resolved=False, failed=["t::a"],
             log="ERROR: No matching distribution found for x\n" + START + "no tests ran"),
     _result(resolved=False), "install"),
])
def test_reason_classes(gold, empty, expected):
    assert classify(gold, empty) == expected


def test_first_error_line_prefers_the_test_output():
    log = ("ERROR: pip said so\n+ pytest -rA\n" + START +
           "collected 0 items\nE   ModuleNotFoundError: No module named 'attr'\nERROR x\n")
    assert first_error_line(log) == "E ModuleNotFoundError: No module named 'attr'"
    assert first_error_line("ERROR: pip said so\nok\n") == "ERROR: pip said so"
    assert first_error_line("all good\n") == ""
    assert first_error_line(START + "ERROR: 'minversion' requires pytest-2.0, actual "
                            "pytest-0.1.dev1") .startswith("ERROR: 'minversion' requires")


def test_repository_table_counts_reason_classes():
    rows = [_row("astropy__astropy-1", "4.3", ()), _row("astropy__astropy-2", "4.3", (),
                                                        gold=False)]
    rows[1] = type(rows[1])(**{**rows[1].__dict__, "reason_class": "gold fails"})
    assert repository_table(rows) == [
        "| repository | attempted | reproduced | gold fails |", "|---|---|---|---|",
        "| astropy/astropy | 2 | 1 | 1 |", "| all | 2 | 1 | 1 |"]


def test_tests_that_reach_for_the_network_are_their_own_class():
    gold = _result(resolved=False, failed=["t::a"], status_map={"t::a": "FAILED"},
                   log=START + "E   socket.gaierror: [Errno -3] Temporary failure in name "
                                "resolution\n")
    assert classify(gold, _result(resolved=False)) == "network"
