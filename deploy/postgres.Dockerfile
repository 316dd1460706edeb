# PostgreSQL 15 from Debian's packages, for sluice-audit's store (the
# compose file's postgres service), where Docker Hub's postgres image is
# not to be had. It takes what that image takes, so either can be used
# (docker-compose.official.yml, docs/operations.md): POSTGRES_USER,
# POSTGRES_PASSWORD and POSTGRES_DB on the first start (an empty data
# folder), the data in /var/lib/postgresql/data (PGDATA), pg_isready for
# the healthcheck. It runs as Debian's postgres user.
FROM debian:12-slim
RUN mkdir -p /etc/postgresql-common/createcluster.d \
    && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/no-main.conf \
    && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/postgresql/data /run/postgresql \
    && chown postgres:postgres /var/lib/postgresql/data /run/postgresql \
    && chmod 700 /var/lib/postgresql/data
COPY deploy/compose/postgres-start /usr/local/bin/postgres-start
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
USER postgres
EXPOSE 5432
CMD ["postgres-start"]
