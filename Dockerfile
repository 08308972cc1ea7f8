# Herald's image: the binary scripts/release.sh packages (release build, Swift runtime linked statically), on Debian.
#   scripts/release.sh && podman build -t herald .        (or docker build)
#   podman run -p 127.0.0.1:8080:8080 -v herald-data:/var/lib/herald herald
# docs/operations.md, "Container image".
FROM debian:bookworm-slim

# The binary needs SQLite's library; ca-certificates holds the roots Apple's APNs certificates chain to.
# apt-get clean: a base image without the registry image's docker-clean setting keeps APT's caches (80 MB).
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libsqlite3-0 \
    && apt-get clean && rm -rf /var/lib/apt/lists/*

# A fixed numeric id, so Kubernetes' runAsNonRoot can check it and a mounted volume's owner is predictable.
RUN groupadd --gid 10001 herald \
    && useradd --no-log-init --uid 10001 --gid herald --home-dir /var/lib/herald --shell /usr/sbin/nologin herald \
    && install -d -o herald -g herald -m 0750 /var/lib/herald

COPY deploy/container/herald-healthcheck /usr/local/bin/herald-healthcheck
# The whole folder: a debug package (CI's) also holds the Swift runtime libraries, found beside the binary.
COPY dist/herald/ /opt/herald/

# Inside a container the server must listen on every interface to be reached; publish the port on the host's
# loopback (-p 127.0.0.1:8080:8080) or behind a proxy. The SQLite database and the in-process emulator's CA go to
# the volume. XDG_STATE_HOME is where `herald emulator` writes its CA and key when given no --ca-file.
# /metrics has a listener of its own (9464), which the API's port does not answer for: publish 8080 to the apps,
# never 9464; Prometheus reaches 9464 over the container network (docs/security.md, "Metrics").
ENV PATH=/opt/herald:$PATH \
    HERALD_LISTEN=0.0.0.0:8080 \
    HERALD_METRICS_LISTEN=0.0.0.0:9464 \
    HERALD_DATABASE_URL=sqlite:///var/lib/herald/herald.sqlite \
    HERALD_EMULATOR_CA_FILE=/var/lib/herald/herald-emulator-ca.pem \
    XDG_STATE_HOME=/var/lib/herald
WORKDIR /var/lib/herald
VOLUME /var/lib/herald
USER 10001:10001
EXPOSE 8080 9464

HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["herald-healthcheck"]
# herald handles SIGTERM itself (graceful shutdown: background sends are put back in the queue), so it can be PID 1.
STOPSIGNAL SIGTERM
ENTRYPOINT ["herald"]
CMD ["serve"]
