# kafkalite broker image; the `tests` stage adds the test extras, kcat, a JDK (for the
# Java client tests) and the test suite.
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY broker broker
COPY protocol protocol
COPY coordinator coordinator
COPY storage storage
COPY timekeeping timekeeping
COPY client client
COPY pipeline pipeline
COPY schema_registry schema_registry
# kafkalite/ links the folders above into the one import package.
COPY kafkalite kafkalite
RUN pip install .

FROM base AS broker
# The Schema Registry's format libraries (--schema-registry).
RUN pip install ".[registry]"
# Listen on every interface inside the container; compose sets the advertised addresses.
ENV KAFKALITE_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKALITE_LOG_DIRS=/var/lib/kafkalite
VOLUME /var/lib/kafkalite
EXPOSE 9092 8081
HEALTHCHECK --interval=5s --timeout=5s --start-period=5s --retries=10 \
    CMD ["python", "-m", "kafkalite.broker.cli.healthcheck", "127.0.0.1:9092"]
ENTRYPOINT ["kafkalite"]
CMD ["serve", "--log-format", "json"]

# The suite starts brokers of its own too, so it does not inherit the broker's settings.
FROM base AS tests
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kcat default-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
RUN pip install ".[test]"
COPY tests tests
CMD ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/integration"]
