from verkit import Spec, satisfies


def test_range_inside():
    assert satisfies("1.5.0", ">=1.2.0, <2.0.0")


def test_range_outside():
    assert not satisfies("2.0.0", ">=1.2.0, <2.0.0")


def test_exact_default():
    assert satisfies("1.0.0", "1.0.0")


def test_select_highest():
    assert str(Spec(">=1.0.0").select(["1.0.0", "1.4.0", "0.9.0"])) == "1.4.0"
