"""`python -m collectors.demo.servers.kafka`: fetch the broker's jars once (make test, demo and bench)."""

from collectors.demo.servers.kafka.jars import main

main()
