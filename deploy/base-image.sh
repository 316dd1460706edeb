#!/bin/sh
# The Debian 12 base image every deploy/ Dockerfile starts from
# (debian:12-slim), made from Debian's own packages, for a machine that
# reaches Debian's mirror but not Docker Hub:
#
#   deploy/base-image.sh            make it unless the daemon has it already
#   deploy/base-image.sh --force    make it again
#
# debootstrap (Debian's package, root) lays a minimal bookworm in a
# temporary folder; the documentation, manual pages, locales and apt's
# lists are taken out and kept out (dpkg's path-exclude, as the slim
# images do), and the tree is imported as the image. Where Docker Hub is
# reached, `docker pull debian:12-slim` does the same.
set -eu

IMAGE=${SLUICE_BASE_IMAGE:-debian:12-slim}
MIRROR=${SLUICE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY=${SLUICE_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}

if [ "${1:-}" != --force ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "base image $IMAGE: present"
    exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "base image: debootstrap is missing; install it with: sudo apt-get install -y debootstrap" >&2
        exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >/dev/null \
        || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap >/dev/null; }
fi
if [ "$(id -u)" != 0 ]; then
    echo "base image: debootstrap needs root" >&2
    exit 1
fi

dir=$(mktemp -d /var/tmp/sluice-base.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM
start=$(date +%s)
echo "base image $IMAGE: debootstrap --variant=minbase bookworm ($MIRROR)"
debootstrap --variant=minbase bookworm "$dir" "$MIRROR" > "$dir.log" 2>&1 \
    || { tail -20 "$dir.log" >&2; rm -f "$dir.log"; exit 1; }
rm -f "$dir.log"

cat > "$dir/etc/apt/sources.list" <<SOURCES
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
SOURCES
# Packages never start services at install (there is no init to run them),
# as in Docker Hub's Debian images.
printf '#!/bin/sh\nexit 101\n' > "$dir/usr/sbin/policy-rc.d"
chmod 755 "$dir/usr/sbin/policy-rc.d"
# What the slim images leave out, now and for every package installed later.
cat > "$dir/etc/dpkg/dpkg.cfg.d/docker-slim" <<'SLIM'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
SLIM
cat > "$dir/etc/apt/apt.conf.d/docker-clean" <<'CLEAN'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Install-Recommends "false";
Acquire::Languages "none";
CLEAN
find "$dir/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
rm -rf "$dir/usr/share/man/"* "$dir/usr/share/info/"* "$dir/usr/share/locale/"* \
       "$dir/var/lib/apt/lists/"* "$dir/var/cache/apt/"*.bin "$dir/var/cache/apt/archives/"*.deb \
       "$dir/var/log/"*.log "$dir/var/log/apt/"* "$dir/tmp/"*

tar --numeric-owner -C "$dir" -c . | docker import -c 'CMD ["bash"]' - "$IMAGE" >/dev/null
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
echo "base image $IMAGE: made in $(( $(date +%s) - start )) s, $(( size / 1048576 )) MiB"
