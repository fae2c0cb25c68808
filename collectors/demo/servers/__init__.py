"""The servers `groupscope demo` starts on free loopback ports, and the test harness and benchmarks
start too, so that all three run against the very same servers: a real Apache Kafka broker in KRaft
mode from Maven Central's jars (kafka/), a real redis-server and the process wrapper both use
(processes.py), and headless Chromium for screenshots and browser tests (chromium.py). They never
run against a user's cluster."""
