"""`python -m collectors.embedded_kafka`: fetch the broker's jars once (make test, make demo and make bench call it)."""

from collectors.embedded_kafka.jars import main

main()
