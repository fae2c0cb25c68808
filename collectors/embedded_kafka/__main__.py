"""`python -m collectors.embedded_kafka`: fetch the broker's jars once (make test, demo and bench)."""

from collectors.embedded_kafka.jars import main

main()
