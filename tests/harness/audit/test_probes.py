"""Which probes an audit plays, and under which kind each is reported."""

from harness.audit.auditor import AuditConfig, _probes
from tasks import get_suite


class _SuiteWithExploit:
    """frozenlake@1 declaring one of its trivial actions as an exploit as well."""

    def __init__(self, suite, exploit: str):
        self._suite = suite
        self.exploit_policies = {exploit: f"noop:{exploit}"}

    def __getattr__(self, name):
        return getattr(self._suite, name)


def test_an_exploit_listed_among_trivial_actions_is_reported_as_an_exploit():
    suite = get_suite("frozenlake@1")
    exploit = next(iter(suite.trivial_actions))
    notes: list[str] = []
    probes = _probes(AuditConfig("frozenlake@1"), _SuiteWithExploit(suite, exploit), notes)
    by_id = {probe.policy.id: probe for probe in probes}
    assert len(by_id) == len(probes)  # every policy played once
    assert by_id[f"noop:{exploit}"].kind == "exploit"
    assert by_id[f"noop:{exploit}"].name == exploit
    others = [name for name in suite.trivial_actions if name != exploit]
    assert all(by_id[f"noop:{name}"].kind == "trivial" for name in others)


def test_without_exploits_every_trivial_action_stays_trivial():
    suite = get_suite("frozenlake@1")
    probes = _probes(AuditConfig("frozenlake@1"), suite, [])
    kinds = {probe.policy.id: probe.kind for probe in probes}
    assert all(kinds[f"noop:{name}"] == "trivial" for name in suite.trivial_actions)
    assert "exploit" not in kinds.values()
