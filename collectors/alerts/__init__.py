"""Alerting over the Redis data: evaluation cycles, the alert store, notifiers, the Celery worker and
the Prometheus metrics. The rules themselves are pure (coordinator_model/alert_rules/)."""
