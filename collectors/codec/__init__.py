"""The `__consumer_offsets` codec: Kafka's record schemas (schema.py) compiled into readers, writers
and kafka-dump-log JSON renderers (compiler.py).

- `records`: the typed dataclasses the coordinator model consumes (importing it compiles nothing)
- `decoder.decode_record(key, value, partition, offset, timestamp) -> records.OffsetsRecord`
- `encoder.encode_record(rec) -> (key, value)`
- `render.record_to_json(rec) -> dict` (kafka-dump-log --offsets-decoder shape)
- `errors.DecodeError`: the only exception decoding raises

See docs/offsets-records.md.
"""
