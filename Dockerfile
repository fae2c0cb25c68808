# One image for every groupscope process (collector, Celery worker + beat, dashboard).
# Spark runs inside the collector container in local[*] mode; it needs a Java 17 runtime.
FROM python:3.11-slim-bookworm

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps tini \
    && rm -rf /var/lib/apt/lists/*

ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GROUPSCOPE_CHECKPOINT_DIR=/var/lib/groupscope/checkpoints

WORKDIR /app
COPY pyproject.toml README.md ./
COPY collectors ./collectors
COPY coordinator_model ./coordinator_model
COPY dashboard ./dashboard
RUN pip install .

RUN useradd --system --create-home --home-dir /var/lib/groupscope groupscope
USER groupscope
ENTRYPOINT ["/usr/bin/tini", "--", "groupscope"]
CMD ["--help"]
