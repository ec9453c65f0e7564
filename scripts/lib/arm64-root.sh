# shellcheck shell=bash
# An arm64 Debian root file system for the emulated aarch64 checks (issue 40,
# scripts/suites/70-platforms.sh): made by `mmdebstrap --arch=arm64` from Debian's archive
# only, run through qemu-aarch64-static registered in binfmt_misc, and cached between runs
# outside the checkout (a fresh clone reuses it). Needs lib/common.sh (log, die,
# ensure_apt_packages, as_root). Defines functions only.
#
#   arm64_root_ensure          prints the root's path; makes it when the cache has none for
#                              this package list (≈10–20 min under emulation on 2 cores)
#   arm64_chroot ROOT CMD…     runs CMD inside ROOT with /proc, /dev, /sys and a shared
#                              directory mounted (see ARM64_SHARE), then unmounts them
#
#   BATON_ARM64_SUITE      Debian suite (default: bookworm)
#   BATON_ARM64_MIRROR     Debian mirror (default: http://deb.debian.org/debian)
#   BATON_ARM64_PACKAGES   what goes in beside apt (default below)
#   BATON_ARM64_CACHE      cache dir (default: ${XDG_CACHE_HOME:-$HOME/.cache}/baton/arm64-root)
#   ARM64_SHARE            a host directory bind-mounted at /share inside the root (optional)
#
# The cache key is a hash of suite, mirror and package list: changing any of them makes a
# new root beside the old one. A root is made in a temporary directory and renamed into
# place when complete, so an interrupted run leaves no half-made root to be reused.

[[ -n ${_BATON_ARM64_ROOT_SH:-} ]] && return 0
_BATON_ARM64_ROOT_SH=1

ARM64_PACKAGES_DEFAULT=python3,python3-venv,openjdk-17-jre-headless,ca-certificates

# Registers qemu-aarch64 with binfmt_misc (mounting it first: it is not mounted at boot
# here), so arm64 ELF files run transparently, in and out of the chroot.
arm64_binfmt() {
    ensure_apt_packages qemu-user-static binfmt-support
    if [[ ! -e /proc/sys/fs/binfmt_misc/register ]]; then
        as_root mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc \
            || die "cannot mount binfmt_misc (needed to run arm64 programs in the root)"
    fi
    if [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then
        as_root update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    fi
    if [[ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]]; then
        # binfmt-support could not (no init system): the entry qemu-user-static ships,
        # with F (the interpreter opened now, so it works inside a chroot too).
        local magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
        local mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
        printf ':qemu-aarch64:M::%s:%s:/usr/bin/qemu-aarch64-static:F\n' "$magic" "$mask" \
            | as_root tee /proc/sys/fs/binfmt_misc/register >/dev/null \
            || die "cannot register qemu-aarch64 with binfmt_misc"
    fi
    grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "binfmt_misc: qemu-aarch64 is not enabled"
}

arm64_root_dir() {
    local suite=${BATON_ARM64_SUITE:-bookworm} mirror=${BATON_ARM64_MIRROR:-http://deb.debian.org/debian}
    local pkgs=${BATON_ARM64_PACKAGES:-$ARM64_PACKAGES_DEFAULT} key
    key=$(printf '%s\n%s\n%s\n' "$suite" "$mirror" "$pkgs" | sha256sum | cut -c1-16)
    echo "${BATON_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton/arm64-root}/$suite-$key"
}

arm64_root_ensure() {
    arm64_binfmt
    local dir suite=${BATON_ARM64_SUITE:-bookworm} mirror=${BATON_ARM64_MIRROR:-http://deb.debian.org/debian}
    local pkgs=${BATON_ARM64_PACKAGES:-$ARM64_PACKAGES_DEFAULT}
    dir=$(arm64_root_dir)
    if [[ -f $dir/.baton-complete ]]; then
        log "   arm64 root: cached at $dir"
        echo "$dir"; return 0
    fi
    ensure_apt_packages mmdebstrap arch-test   # arch-test: mmdebstrap checks the foreign arch runs
    local tmp="$dir.tmp.$$" t0=$SECONDS logf="${dir}.log"
    mkdir -p "$(dirname "$dir")"
    rm -rf "$tmp"
    log "   arm64 root: mmdebstrap --arch=arm64 $suite ($pkgs) → $dir (log: $logf)"
    if ! as_root timeout "${BATON_ARM64_TIMEOUT:-3600}" mmdebstrap --mode=root --arch=arm64 --variant=apt \
        --include="$pkgs" "$suite" "$tmp" "$mirror" >"$logf" 2>&1; then
        tail -n 30 "$logf" >&2
        rm -rf "$tmp"
        die "mmdebstrap for the arm64 root failed (log: $logf)"
    fi
    printf '%s\n%s\n%s\n' "$suite" "$mirror" "$pkgs" >"$tmp/.baton-complete"
    mv "$tmp" "$dir"
    log "   arm64 root made in $(( SECONDS - t0 ))s ($(du -sh "$dir" | cut -f1))"
    echo "$dir"
}

# arm64_chroot ROOT CMD…: CMD inside ROOT (as root, HOME=/root, a plain PATH); the
# host's loopback is the root's (one network namespace), so 127.0.0.1 reaches the
# host's servers.
arm64_chroot() {
    local root=$1; shift
    [[ -f $root/.baton-complete ]] || die "arm64_chroot: $root is not a complete arm64 root"
    local -a mounted=()
    local m rc=0
    for m in proc sys dev; do
        mountpoint -q "$root/$m" && continue
        case $m in
            proc) as_root mount -t proc proc "$root/proc" ;;
            *) as_root mount --rbind "/$m" "$root/$m" && as_root mount --make-rslave "$root/$m" ;;
        esac || die "cannot mount /$m in $root"
        mounted+=("$root/$m")
    done
    if [[ -n ${ARM64_SHARE:-} ]]; then
        mkdir -p "$root/share"
        if ! mountpoint -q "$root/share"; then
            as_root mount --bind "$ARM64_SHARE" "$root/share" || die "cannot bind $ARM64_SHARE at $root/share"
            mounted+=("$root/share")
        fi
    fi
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    as_root env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 \
        chroot "$root" "$@" || rc=$?
    for (( m = ${#mounted[@]} - 1; m >= 0; m-- )); do
        as_root umount -R "${mounted[m]}" 2>/dev/null || as_root umount -lR "${mounted[m]}" || true
    done
    return "$rc"
}
