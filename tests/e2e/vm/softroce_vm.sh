#!/usr/bin/env bash
# softroce_vm.sh - run one command inside a throwaway qemu VM booted from Debian's own kernel
# (the package linux-image-amd64 points at), with Soft-RoCE (rdma_rxe) on a dummy netdev, and
# return the command's exit code. fabricbench's verbs tests use it to get a real RDMA device
# on machines that have none (CI). Usage:
#
#   softroce_vm.sh [--rw DIR]... [--timeout SEC] [-v] -- COMMAND [ARGS...]
#
# The guest sees the host's root filesystem read-only over 9p under a tmpfs overlay (so it can
# write anywhere; those writes are discarded), runs COMMAND with the host's working directory
# and exported environment, as root. Each --rw DIR is shared read-write at the same path.
# The guest has no network card: rxe0 sits on dummy0 with 192.0.2.1/32 (TEST-NET-1), so
# GID 0 is the IPv6 link-local GID and GID 1 is the RoCEv2 GID ::ffff:192.0.2.1. rxe sees the
# destination MAC is its own and loops packets back inside the driver.
#
# Exit status: COMMAND's, or 77 when the VM cannot be had here (qemu, busybox-static, kmod,
# cpio, iproute2 or the kernel package missing; the reason is printed), 124 when the VM ran
# past --timeout (qemu killed), 125 when the VM booted but failed before the command ran.
#
# Host packages (Debian): qemu-system-x86 busybox-static cpio kmod iproute2 rdma-core
# ibverbs-providers (the guest runs the host's userland; tests also use perftest,
# ibverbs-utils). This script installs nothing; the kernel .deb is fetched with
# `apt-get download` (needs a reachable Debian mirror once) and cached in $FB_VM_CACHE.
#
# Environment: FB_VM_CACHE (default /var/cache/fabricbench-vm, else ~/.cache/fabricbench-vm),
# FB_VM_KERNEL_PKG (pin, e.g. linux-image-6.1.0-57-amd64), FB_VM_ACCEL (tcg|kvm|auto; default
# auto: one 10 s KVM probe, answer cached), FB_VM_MEM (MiB, 2048), FB_VM_CPUS (default nproc,
# at most 4), FB_VM_APPEND (more kernel arguments).
# Inside the guest: FB_SOFTROCE_DEV=rxe0 FB_SOFTROCE_GID_INDEX=1 FB_SOFTROCE_IP=192.0.2.1
# FB_IN_VM=1, FB_VM_HOST_STAT (a file holding the host's /proc/stat "cpu" line, refreshed every
# 0.5 s: lets a guest measurement see the host's steal time).
set -euo pipefail

SELF=$(basename "$0")
TIMEOUT=900
VERBOSE=0
RW_DIRS=()
MEM=${FB_VM_MEM:-2048}
ncpu=$(nproc 2>/dev/null || echo 2); [ "$ncpu" -gt 4 ] && ncpu=4
CPUS=${FB_VM_CPUS:-$ncpu}
ACCEL=${FB_VM_ACCEL:-auto}
if [ -n "${FB_VM_CACHE:-}" ]; then CACHE=$FB_VM_CACHE
elif [ -w /var/cache ] || [ -w /var/cache/fabricbench-vm ]; then CACHE=/var/cache/fabricbench-vm
else CACHE=${HOME:-/tmp}/.cache/fabricbench-vm; fi

log() { echo "$SELF: $*" >&2; }
vlog() { if [ "$VERBOSE" = 1 ]; then echo "$SELF: $*" >&2; fi; }
skip() { echo "SKIP: $* (softroce VM unavailable)"; exit 77; }
die() { echo "$SELF: error: $*" >&2; exit 125; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rw) RW_DIRS+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -v|--verbose) VERBOSE=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "$SELF: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "$SELF: no command given (see --help)" >&2; exit 2; }
case "$ACCEL" in tcg|kvm|auto) ;; *) echo "$SELF: FB_VM_ACCEL must be tcg, kvm or auto" >&2; exit 2 ;; esac

T0=$(now)
mkdir -p "$CACHE" 2>/dev/null || skip "cannot create cache folder $CACHE"

# ------------------------------------------------------------------ host tools
static_busybox() {
  local b; b=$(command -v busybox 2>/dev/null) || return 1
  case "$(LC_ALL=C ldd "$b" 2>&1 || true)" in
    *"not a dynamic executable"*|*"statically linked"*) echo "$b" ;; *) return 1 ;; esac
}
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
static_busybox >/dev/null || missing+=(busybox-static)
command -v cpio >/dev/null || missing+=(cpio)
{ command -v depmod && command -v modprobe; } >/dev/null 2>&1 || missing+=(kmod)
command -v rdma >/dev/null || missing+=(iproute2)
ls /usr/lib/*/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 || missing+=(ibverbs-providers)
[ ${#missing[@]} -eq 0 ] || skip "missing host packages: ${missing[*]} (apt-get install -y --no-install-recommends ${missing[*]})"

# ------------------------------------------------------------------ kernel
exec 8>"$CACHE/.lock"; flock 8        # one preparation at a time
pkg=${FB_VM_KERNEL_PKG:-}
if [ -z "$pkg" ]; then
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  [ -n "$pkg" ] || pkg=$(ls -d "$CACHE"/kernel-* 2>/dev/null | sed -n 's|.*/kernel-|linux-image-|p' | tail -1)
fi
[ -n "$pkg" ] || skip "cannot tell which kernel package linux-image-amd64 means (run apt-get update)"
KV=${pkg#linux-image-}
RXE=kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko
if [ -f "/boot/vmlinuz-$KV" ] && ls /lib/modules/"$KV"/$RXE* >/dev/null 2>&1; then
  VMLINUZ=/boot/vmlinuz-$KV; MODROOT=/
else
  KD=$CACHE/kernel-$KV
  if [ ! -f "$KD/boot/vmlinuz-$KV" ] || ! ls "$KD/lib/modules/$KV/"$RXE* >/dev/null 2>&1; then
    log "fetching $pkg with apt-get download (once; cached in $CACHE)"
    dl=$(mktemp -d "$CACHE/dl.XXXXXX")
    if ! ( cd "$dl" && apt-get -q -o APT::Sandbox::User=root download "$pkg" ) >"$dl/log" 2>&1; then
      tail -3 "$dl/log"; rm -rf "$dl"; skip "apt-get download $pkg failed (no Debian mirror reachable?)"
    fi
    rm -rf "$KD" "$KD.tmp"; mkdir -p "$KD.tmp"
    dpkg-deb -x "$dl"/"$pkg"_*.deb "$KD.tmp" || { rm -rf "$dl"; die "dpkg-deb -x failed"; }
    rm -rf "$dl" "$KD.tmp/usr"; mv "$KD.tmp" "$KD"
    depmod -b "$KD" "$KV" || die "depmod failed"
  fi
  VMLINUZ=$KD/boot/vmlinuz-$KV; MODROOT=$KD
fi

# ------------------------------------------------------------------ initramfs
# crc32_generic/crc32_pclmul must be preloaded: rxe allocates the crc32 transform for the ICRC
# and request_module() cannot work in this initramfs ("rdma link add" fails with ENOENT).
MODULES="virtio_pci virtio_console 9pnet_virtio 9p overlay crc32_generic crc32_pclmul
         rdma_rxe ib_uverbs rdma_ucm ib_umad dummy"
guest_init() {
cat <<'INIT'
#!/bin/busybox sh
# PID 1: modules, root = host / (9p, read-only) under a tmpfs overlay, rxe, command, poweroff.
export PATH=/bin:/sbin
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
say() { echo "fb-init: $* (t=$(cut -d' ' -f1 /proc/uptime))" > /dev/console; }
fin() { sync; poweroff -f; sleep 5; }
KV=$(uname -r)
while read -r m; do insmod "/lib/modules/$KV/$m" 2>/dev/null || say "insmod $m failed"; done < /modules.list
P9="trans=virtio,version=9p2000.L,msize=262144"
mkdir -p /xfer /lower /upper /newroot
mount -t 9p -o "$P9,cache=none" xfer /xfer || { say "FATAL: cannot mount xfer"; fin; }
fail() { say "FATAL: $*"; echo "$*" > /xfer/fatal; fin; }
. /xfer/config.sh
if [ "$PROBE" = 1 ]; then echo ok > /xfer/probe; fin; fi
mount -t 9p -o "$P9,ro,cache=loose" hostroot /lower || fail "cannot mount host root"
mount -t tmpfs -o mode=755 tmpfs /upper && mkdir -p /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot || fail "overlay failed"
R=/newroot
mount -t proc proc $R/proc; mount -t sysfs sysfs $R/sys; mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts; mount -t tmpfs tmpfs $R/dev/shm; mount -t tmpfs tmpfs $R/run
# /tmp stays the host's (read-only lower layer, writable through the overlay), so builds and
# clones under /tmp (CI) are visible in the guest.
mkdir -p "$R$RUNDIR" && mount --bind /xfer "$R$RUNDIR" || fail "cannot bind run folder"
for ent in $RW_MOUNTS; do
  tag=${ent%%:*}; p=${ent#*:}
  mkdir -p "$R$p" && mount -t 9p -o "$P9,cache=none" "$tag" "$R$p" || fail "cannot mount $p read-write"
done
mkdir -p $R/lib/modules && cp -a /lib/modules/$KV $R/lib/modules/
hostname localhost
ip link set lo up
OUT=
for i in $(seq 1 50); do
  for d in /sys/class/virtio-ports/*; do
    [ "$(cat "$d/name" 2>/dev/null)" = fb.out ] && OUT=/dev/${d##*/}
  done
  [ -n "$OUT" ] && [ -e "$OUT" ] && break
  sleep 0.1
done
[ -n "$OUT" ] && [ -e "$OUT" ] || fail "no virtio output port"
exec 3>"$OUT"
chroot $R /bin/sh "$RUNDIR/setup.sh" > /xfer/setup.log 2>&1 < /dev/null || fail "rxe set-up failed"
say "rxe ready"
chroot $R /bin/bash "$RUNDIR/cmd.sh" < /dev/null >&3 2>&3 3>&-
rc=$?
say "command rc=$rc"
echo $rc > /xfer/rc.tmp && mv /xfer/rc.tmp /xfer/rc
exec 3>&-
fin
INIT
}
sum=$( { guest_init; echo "$MODULES"; echo "$KV"; } | sha256sum | cut -c1-16)
INITRD=$CACHE/initrd-$KV-$sum.cpio.gz
if [ ! -f "$INITRD" ]; then
  vlog "building initramfs for $KV"
  ir=$(mktemp -d "$CACHE/ir.XXXXXX")
  mkdir -p "$ir"/{bin,sbin,proc,sys,dev,lib/modules/$KV}
  cp "$(static_busybox)" "$ir/bin/busybox"
  : > "$ir/modules.list"
  for m in $MODULES; do
    modprobe -d "$MODROOT" -S "$KV" --show-depends "$m" > "$ir/deps" 2>&1 \
      || { cat "$ir/deps" >&2; rm -rf "$ir"; skip "kernel module $m not found for $KV"; }
    while read -r kw f _; do
      [ "$kw" = insmod ] || continue
      rel=${f#*/lib/modules/"$KV"/}; rel=${rel%.xz}; rel=${rel%.zst}; rel=${rel%.gz}
      grep -qxF "$rel" "$ir/modules.list" && continue
      echo "$rel" >> "$ir/modules.list"
      mkdir -p "$ir/lib/modules/$KV/$(dirname "$rel")"
      case "$f" in
        *.ko.xz) xz -dc "$f" > "$ir/lib/modules/$KV/$rel" ;;
        *.ko.zst) zstd -qdc "$f" > "$ir/lib/modules/$KV/$rel" ;;
        *.ko.gz) gzip -dc "$f" > "$ir/lib/modules/$KV/$rel" ;;
        *) cp "$f" "$ir/lib/modules/$KV/$rel" ;;
      esac
    done < "$ir/deps"
  done
  rm -f "$ir/deps"
  guest_init > "$ir/init"; chmod 755 "$ir/init"
  ( cd "$ir" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 ) > "$INITRD.tmp"
  mv "$INITRD.tmp" "$INITRD"; rm -rf "$ir"
fi

# ------------------------------------------------------------------ qemu
QEMU_PID= ; CAT_PID= ; RUN= ; STAT_PID=
cleanup() {
  if [ -n "$STAT_PID" ]; then kill "$STAT_PID" 2>/dev/null || true; fi
  if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID" 2>/dev/null || true; sleep 1; kill -9 "$QEMU_PID" 2>/dev/null || true
  fi
  if [ -n "$CAT_PID" ] && kill -0 "$CAT_PID" 2>/dev/null; then kill "$CAT_PID" 2>/dev/null || true; fi
  if [ -n "$RUN" ] && [ -d "$RUN" ]; then rm -rf "$RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# boot ACCEL LIMIT: the guest's command output comes back through a virtio-serial port wired to
# a qemu "pipe" chardev (two FIFOs); a stdio chardev would hang once stdin hits EOF.
boot() {
  local accel=$1 limit=$2 a extra=""
  rm -f "$RUN/o.in" "$RUN/o.out"; mkfifo "$RUN/o.in" "$RUN/o.out"
  cat "$RUN/o.out" &
  CAT_PID=$!
  case "$accel" in
    kvm) a=(-accel kvm -cpu host,-arch-capabilities) ;;
    tcg) a=(-accel tcg,thread=multi -cpu max)
         # Under TCG every vCPU's TSC is the host's (invariant, constant rate), but the guest's
         # boot-time sync check sees emulation skew, marks the TSC unstable and falls back to the
         # emulated HPET: each clock read then costs ~2 us and jitters, and perftest's CPU-clock
         # calibration (rdtsc against gettimeofday) drifts or fails ("r^2 < 0.9"). Trust the TSC.
         extra="clocksource=tsc tsc=reliable" ;;
  esac
  timeout --kill-after=10 "$limit" qemu-system-x86_64 "${a[@]}" \
    -M pc -m "$MEM" -smp "$CPUS" -nodefaults -no-user-config -nic none \
    -display none -no-reboot -serial "file:$RUN/boot.log" \
    -device virtio-serial-pci -chardev "pipe,id=out,path=$RUN/o" \
    -device virtserialport,chardev=out,name=fb.out \
    -fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap" \
    -device virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot \
    -fsdev "local,id=fsx,path=$RUN,security_model=none,multidevs=remap" \
    -device virtio-9p-pci,fsdev=fsx,mount_tag=xfer \
    "${QEMU_FS[@]}" -kernel "$VMLINUZ" -initrd "$INITRD" \
    -append "console=ttyS0 panic=-1 mitigations=off loglevel=6${extra:+ $extra}${FB_VM_APPEND:+ $FB_VM_APPEND}" < /dev/null &
  QEMU_PID=$!
  local rc=0; wait "$QEMU_PID" || rc=$?
  QEMU_PID=
  ( exec 9<>"$RUN/o.out" ) 2>/dev/null || true
  wait "$CAT_PID" 2>/dev/null || true
  CAT_PID=
  return $rc
}

ACC=$ACCEL
if [ "$ACCEL" = auto ]; then
  ACC=tcg
  if [ -w /dev/kvm ]; then
    stamp="$CACHE/kvm-probe-$(uname -r)-$KV"
    if [ ! -f "$stamp" ]; then
      RUN=$(mktemp -d "${TMPDIR:-/tmp}/fbvm-probe.XXXXXX"); printf 'PROBE=1\n' > "$RUN/config.sh"
      QEMU_FS=()
      boot kvm 10 >/dev/null 2>&1 || true
      if [ -f "$RUN/probe" ]; then echo kvm > "$stamp"; else echo tcg > "$stamp"; fi
      rm -rf "$RUN"; RUN=
    fi
    ACC=$(cat "$stamp")
  fi
fi
flock -u 8; exec 8>&-
vlog "prepared in $(since "$T0") s: kernel $KV, accel $ACC"

RUN=$(mktemp -d "${TMPDIR:-/tmp}/fbvm-run.XXXXXX"); chmod 755 "$RUN"
QEMU_FS=(); rwm=; i=0
for d in "${RW_DIRS[@]}"; do
  [ -d "$d" ] || { echo "$SELF: --rw $d: not a directory" >&2; exit 2; }
  d=$(cd "$d" && pwd -P)
  case "$d" in *[[:space:]]*|/|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*|/tmp)
    echo "$SELF: --rw $d: not supported (blank, or hidden by the guest's own mounts)" >&2; exit 2 ;; esac
  QEMU_FS+=(-fsdev "local,id=fsrw$i,path=$d,security_model=none,multidevs=remap"
            -device "virtio-9p-pci,fsdev=fsrw$i,mount_tag=rw$i")
  rwm="$rwm rw$i:$d"; i=$((i+1))
done
case "$PWD" in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*)
  cd /; vlog "working directory is hidden in the guest; using /" ;; esac
{ printf 'PROBE=0\n'; printf 'RUNDIR=%q\n' "$RUN"; printf 'RW_MOUNTS=%q\n' "$rwm"; } > "$RUN/config.sh"

# rxe set-up inside the guest (host userland: ip, rdma)
cat > "$RUN/setup.sh" <<SETUP
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy
sysctl -qw net.ipv6.conf.dummy0.accept_dad=0 || true
ip link set dummy0 up
ip addr add 192.0.2.1/32 dev dummy0
rdma link add rxe0 type rxe netdev dummy0
want=0000:0000:0000:0000:0000:ffff:c000:0201
n=0
while [ "\$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)" != "\$want" ]; do
  n=\$((n+1)); [ \$n -lt 100 ] || { echo "GID 1 of rxe0 never became \$want"; exit 1; }
  sleep 0.1
done
rdma link
SETUP

{
  echo '# generated by softroce_vm.sh'
  while IFS= read -r name; do
    case "$name" in
      BASH*|SHELLOPTS|SHLVL|PWD|OLDPWD|_|HOSTNAME|TERM|TERMCAP|COLUMNS|LINES|DISPLAY|SSH_*|XDG_RUNTIME_DIR|DBUS_SESSION_BUS_ADDRESS|TMPDIR) continue ;;
    esac
    [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    printf 'export %s=%q\n' "$name" "${!name}"
  done < <(compgen -e)
  echo 'export TERM=dumb FB_IN_VM=1 FB_SOFTROCE_DEV=rxe0 FB_SOFTROCE_GID_INDEX=1 FB_SOFTROCE_IP=192.0.2.1'
  printf 'export FB_VM_HOST_STAT=%q\n' "$RUN/hoststat"
  printf 'cd -- %q || exit 126\n' "$PWD"
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$RUN/cmd.sh"

# The host's aggregate CPU counters (/proc/stat's "cpu" line), refreshed every 0.5 s into the
# shared run folder: a guest measurement can tell how much CPU the host lost meanwhile to its own
# hypervisor (steal), which slows the emulated guest by the same share (the verbs perf step uses it).
( while :; do head -n 1 /proc/stat > "$RUN/hoststat.tmp" 2>/dev/null && mv -f "$RUN/hoststat.tmp" "$RUN/hoststat"
    sleep 0.5; done ) &
STAT_PID=$!

vlog "booting ($ACC, $CPUS vCPU, $MEM MiB, timeout ${TIMEOUT}s)"
T1=$(now)
qrc=0
boot "$ACC" "$TIMEOUT" || qrc=$?
vlog "VM run took $(since "$T1") s (total $(since "$T0") s)"
if [ "$VERBOSE" = 1 ]; then
  [ -f "$RUN/setup.log" ] && sed 's/^/  setup| /' "$RUN/setup.log" >&2
  grep -E 'fb-init|rxe|Oops|BUG|panic' "$RUN/boot.log" | sed 's/^/  kernel| /' >&2 || true
fi
[ -f "$RUN/rc" ] && exit "$(cat "$RUN/rc")"
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
  log "the VM ran past ${TIMEOUT}s and was killed; kernel log tail:"
  tail -n 15 "$RUN/boot.log" >&2 2>/dev/null || true
  exit 124
fi
log "the VM stopped before the command finished (qemu rc=$qrc)"
[ -f "$RUN/fatal" ] && log "guest said: $(cat "$RUN/fatal")"
[ -f "$RUN/setup.log" ] && sed 's/^/  setup| /' "$RUN/setup.log" >&2
log "kernel log tail:"; tail -n 25 "$RUN/boot.log" >&2 2>/dev/null || true
exit 125
