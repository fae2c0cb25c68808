"""Errors of the coordinator model."""

from __future__ import annotations


class EvidenceError(ValueError):
    """A piece of evidence (record, log line, JSON object) that cannot be understood."""


class AlertConfigError(ValueError):
    """The alert configuration cannot be used; the message names the setting."""
