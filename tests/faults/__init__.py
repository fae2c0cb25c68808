"""The fault suite of issue 32: one running collector under hostile input, a lost Redis, a full one, a
refused write, a killed collector and a broker stopped and killed (conftest.py has the bench)."""
