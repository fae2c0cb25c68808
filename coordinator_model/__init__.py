"""Kafka's group coordinator rebuilt from evidence: pure Python, no I/O."""

import sys as _sys

from coordinator_model.offsets import lag as _lag

# The pipeline keeps engines pickled in Spark's state store; those pickled before lag.py moved into
# offsets/ name its classes under the old module path. The alias lets them load (and they are saved
# under the new path at their next change).
_sys.modules.setdefault("coordinator_model.lag", _lag)
