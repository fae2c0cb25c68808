"""The collectors pipeline on Spark: Kafka (or a capture folder) -> decode -> coordinator model per
group (stateful, checkpointed) -> Redis. Entry point: `collectors.pipeline.job.run_pipeline`."""
