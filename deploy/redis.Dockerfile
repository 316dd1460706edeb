# Redis from Debian's packages, for the gateways' shared limits (the
# compose file's redis service), where Docker Hub's redis image is not to
# be had; the compose file gives the command, which the official image
# runs the same (docker-compose.official.yml puts redis:7 in its place,
# docs/operations.md). It runs as Debian's redis user.
FROM debian:12-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no"]
