"""Benchmark audits: can a suite's reward be trusted? Trivial-policy and oracle ceilings,
learnability under GRPO, sampling headroom, grader determinism and declared exploit probes,
measured with the runner and stored (`audit_suite`; ``harness audit SUITE``)."""

from harness.audit.auditor import AuditConfig, AuditResult, BasePolicyFailed, audit_suite

__all__ = ["AuditConfig", "AuditResult", "BasePolicyFailed", "audit_suite"]
