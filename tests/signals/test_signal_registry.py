import numpy as np
import pytest

from harness.core import UnknownNameError
from signals import Signal
from signals.registry import (FAMILIES, MissingResourceError, SignalResources, make_signal,
                              resolve_signals, signal_info, signal_names)


def test_at_least_14_methods_across_8_families():
    names = signal_names()
    assert len(names) >= 14 and len(set(names)) == len(names)
    families = {signal_info(n).family for n in names}
    assert families == set(FAMILIES) and len(FAMILIES) == 8


def test_resolve_families_and_names_in_registry_order():
    assert resolve_signals("all") == signal_names()
    chosen = resolve_signals("critic,random,critic-ridge")
    assert chosen == ["random", "critic-ridge", "mc-behaviour"]
    with pytest.raises(UnknownNameError, match="did you mean 'entropy'"):
        resolve_signals("entropi")


def test_missing_resources_are_one_clear_error():
    with pytest.raises(MissingResourceError, match="needs a model"):
        make_signal("judge-single", SignalResources())
    with pytest.raises(MissingResourceError, match="needs reference"):
        make_signal("reference", SignalResources())
    signal = make_signal("random", SignalResources(seed=3))
    assert isinstance(signal, Signal) and signal.name == "random"
