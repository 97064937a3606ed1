import pytest

from signals.families.baselines import frozenlake_progress, grid_lines, sokoban_progress


def test_frozenlake_progress_by_hand(observations):
    obs = observations["frozenlake"]  # P___ / _O_O / ___O / O__G
    # Down to (1,0), then (2,0) (2,1) (3,1) (3,2) G: 5 moves
    assert frozenlake_progress(obs, "Down") == -5.0
    assert frozenlake_progress(obs, "Right") == -5.0  # (0,1), then (0,2) (1,2) (2,2) (3,2) G
    assert frozenlake_progress(obs, "Left") == -6.0  # stays at (0,0)
    assert frozenlake_progress("Invalid action: 'x'.\n" + obs, "Up") == -6.0
    assert frozenlake_progress("P_\nOG\nActions: ...", "Down") == -8.0  # into the hole
    assert frozenlake_progress(obs, "jump") == 0.0


def test_sokoban_progress_by_hand(observations):
    obs = observations["sokoban"]  # player (1,2), box (2,2), target (3,3)
    assert grid_lines(obs, "#_OX\u221aPS")[0] == "######"
    # Down pushes the box to (3,2): distance 1 to the target, player next to the box
    assert sokoban_progress(obs, "Down") == pytest.approx(-(1 + 0.01 * 1))
    # Right moves the player only: box still 2 away, player distance 2 to the box
    assert sokoban_progress(obs, "Right") == pytest.approx(-(2 + 0.01 * 2))
    corner = "#####\n#P__#\n#X__#\n#__O#\n#####"
    # Left pushes nothing (wall); the box stays, Down pushes it into a dead corner (3,1)
    assert sokoban_progress(corner, "Down") < -100
    assert sokoban_progress(corner, "No-op") > -10
