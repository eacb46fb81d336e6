"""Prometheus metrics of the running bot (served by the health endpoint)."""

from __future__ import annotations

from collections.abc import Collection

from prometheus_client import Counter, Gauge, Histogram, Info

EVENTS_RECEIVED = Counter("lorebot_events_received_total", "Platform events received", ["platform"])
EVENTS_DROPPED = Counter("lorebot_events_dropped_total", "Events not handled", ["reason"])
TURNS = Counter("lorebot_turns_total", "Agent turns", ["outcome"])
# Answers of the model that lorebot had to work around: a sign the model is too small.
MODEL_SLIPS = Counter("lorebot_model_slips_total", "Model answers worked around", ["kind"])
MODEL_LATENCY = Histogram(
    "lorebot_model_latency_seconds",
    "Model call latency",
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
TOOL_CALLS = Counter("lorebot_tool_calls_total", "Tool calls by the model", ["tool", "outcome"])
PROPOSALS = Counter("lorebot_proposals_total", "Decided proposals", ["kind", "outcome"])
# Clicks on a card's buttons and typed decisions that decided nothing, by why.
DECISIONS_REFUSED = Counter(
    "lorebot_decisions_refused_total", "Clicks and typed decisions refused", ["reason"]
)
# Which replica of the database this process is, and whether it leads: each replica serves
# its own metrics, so a dashboard tells them apart by this id.
REPLICA = Info("lorebot_replica", "This process among the replicas of its database")
LEADING = Gauge("lorebot_replica_leading", "1 while this replica leads, else 0")
JOB_RUNS = Counter("lorebot_job_runs_total", "Scheduled job runs", ["job", "status"])


def tool_label(name: str, known: Collection[str]) -> str:
    """The `tool` label of a tool call: a known tool's name, else `other`, so names a model
    invents cannot create new series."""
    return name if name in known else "other"
