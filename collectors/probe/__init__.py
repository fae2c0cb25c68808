"""The groupscope heartbeat probe for confluent-kafka consumers (docs/probe.md).

from collectors.probe import ProbedConsumer
consumer = ProbedConsumer(conf)          # instead of Consumer(conf); everything else unchanged
"""

from collectors.probe.consumer import DEFAULT_TOPIC, ProbedConsumer, groupscope_probe
from collectors.probe.emitter import ProbeCounters, TelemetryEmitter
from collectors.probe.events import CgrpStats, MemberIdentity, ProbeEvent

__all__ = [
    "DEFAULT_TOPIC",
    "CgrpStats",
    "MemberIdentity",
    "ProbeCounters",
    "ProbeEvent",
    "ProbedConsumer",
    "TelemetryEmitter",
    "groupscope_probe",
]
