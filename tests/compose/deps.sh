#!/bin/sh
# make compose-deps: what make compose-test needs, from Debian's packages,
# and the Docker daemon running. Variables from the Makefile:
# COMPOSE_PACKAGES, COMPOSE_V2_SUITE, COMPOSE_PLUGIN_DIR, COMPOSE_APT_DIR.
#
# The compose v2 plugin: bookworm packages only docker-compose 1.29
# (Python); Debian's docker-compose 2.x is in trixie (13), a Go program
# that needs only libc6. It is fetched with apt-get from that suite under
# a private apt configuration (the system's sources stay as they are),
# unpacked, and its plugin put in COMPOSE_PLUGIN_DIR, where the docker
# client finds it: `docker compose` is v2, `docker-compose` stays 1.29.
set -u
say() { echo "compose-deps: $*"; }

root=yes
[ "$(id -u)" = 0 ] || root=

missing=""
for p in $COMPOSE_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ -z "$root" ]; then
        say "make compose-test needs:$missing; install them with: sudo apt-get install -y$missing"
        exit 1
    fi
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y $missing >/dev/null || { apt-get update >/dev/null && apt-get install -y $missing >/dev/null; } || exit 1
fi

if docker compose version >/dev/null 2>&1; then
    :
elif [ -z "$root" ]; then
    say "no docker compose v2 plugin (run make compose-deps as root to install Debian's): testing with docker-compose 1.29"
else
    apt_dir=$COMPOSE_APT_DIR
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/deb"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $COMPOSE_V2_SUITE main" \
        > "$apt_dir/sources.list"
    opts="-o Dir::Etc::SourceList=$apt_dir/sources.list -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists=$apt_dir/lists -o Dir::Cache=$apt_dir/cache -o APT::Sandbox::User=root"
    say "fetching Debian's docker-compose 2.x ($COMPOSE_V2_SUITE) for the compose v2 plugin"
    if apt-get $opts update >/dev/null 2>&1 \
       && version=$(apt-cache $opts policy docker-compose | awk '/Candidate:/{print $2}') \
       && case "$version" in 2.*) true;; *) false;; esac \
       && (cd "$apt_dir/deb" && rm -f ./*.deb && apt-get $opts download "docker-compose=$version" >/dev/null 2>&1) \
       && rm -rf "$apt_dir/unpacked" && dpkg-deb -x "$apt_dir/deb/"docker-compose_*.deb "$apt_dir/unpacked" \
       && mkdir -p "$COMPOSE_PLUGIN_DIR" \
       && install -m 755 "$apt_dir/unpacked/usr/libexec/docker/cli-plugins/docker-compose" "$COMPOSE_PLUGIN_DIR/docker-compose" \
       && docker compose version >/dev/null 2>&1; then
        say "docker compose: $(docker compose version --short) (Debian's docker-compose $version, in $COMPOSE_PLUGIN_DIR)"
    else
        say "Debian's $COMPOSE_V2_SUITE serves no docker-compose 2.x reachable from here: testing with docker-compose 1.29 only"
    fi
fi

if ! docker info >/dev/null 2>&1; then
    if [ -z "$root" ] || ! command -v dockerd >/dev/null 2>&1; then
        say "the Docker daemon is not running, and cannot be started from here (dockerd as root)"
        exit 1
    fi
    say "starting the Docker daemon (dockerd, its log in /var/log/sluice-dockerd.log)"
    setsid dockerd >/var/log/sluice-dockerd.log 2>&1 < /dev/null &
    tries=0
    until docker info >/dev/null 2>&1; do
        tries=$((tries + 1))
        if [ $tries -gt 60 ]; then
            say "dockerd did not answer within 30 s:"; tail -20 /var/log/sluice-dockerd.log
            exit 1
        fi
        sleep 0.5
    done
fi
exit 0
