# Prometheus from Debian's packages (the compose file's monitoring
# profile), with the shipped scrape config and alert rules
# (deploy/prometheus/): every sluice service's instances found by
# compose's DNS. It runs as Debian's prometheus user.
FROM debian:12-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
COPY deploy/prometheus/prometheus.yml deploy/prometheus/alerts.yml /etc/prometheus/
USER prometheus
EXPOSE 9090
CMD ["prometheus", "--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus", \
     "--web.listen-address=0.0.0.0:9090"]
