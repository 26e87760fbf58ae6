#!/bin/bash
# tests/vm/run-in-vm.sh — run one command as root in a throwaway qemu VM on a
# pure cgroup v2 kernel, for tests that must see a cgroup2-only host
# (`make check-cgroupv2`).  Needs only Debian packages: qemu-system-x86,
# linux-image-amd64 (a kernel in /boot with 9p modules: not the "cloud"
# flavour), busybox-static (or a static /bin/busybox), kmod, cpio.
#
# How: the kernel is the host's /boot/vmlinuz-VER; the initramfs, built
# here each run, is a static busybox plus the modules to mount a 9p share
# (virtio_pci, 9pnet_virtio, 9p, overlay).  Its /init mounts the host's /
# read-only over 9p with a tmpfs overlay on top (the guest may write
# anywhere; nothing reaches the host), and a second, read-write 9p share
# holding the command and, afterwards, its output and exit status.  The
# kernel command line has cgroup_no_v1=all, so no v1 hierarchy exists;
# the guest mounts cgroup2 at /sys/fs/cgroup and enables every controller.
# The command's output is streamed (the host follows the output file).
#
# Usage: tests/vm/run-in-vm.sh [-m MEM] [-c CPUS] [-t SECONDS] [-k VMLINUZ]
#                              [-C DIR] [--keep-console FILE] -- CMD [ARG...]
#   defaults: -m 1G -c 2, no timeout, the newest /boot/vmlinuz-* with 9p,
#   -C the current directory.  Exported environment variables reach the
#   command (except the session's: DISPLAY, SSH_*, TERM*, ...).
# Exit status: CMD's; 124 the timeout hit; 125 the VM could not be set up or
# did not report a status (the guest console is printed then).
set -euo pipefail
prog=${0##*/}
die() { echo "$prog: $*" >&2; exit 125; }

mem=1G cpus=2 limit=0 kernel='' chdir=$PWD keep_console=''
while [ $# -gt 0 ]; do
	case $1 in
	-m) mem=$2; shift 2 ;;
	-c) cpus=$2; shift 2 ;;
	-t) limit=$2; shift 2 ;;
	-k) kernel=$2; shift 2 ;;
	-C) chdir=$(realpath -- "$2"); shift 2 ;;
	--keep-console) keep_console=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (see --help)" ;;
	esac
done
[ $# -gt 0 ] || die "no command given (see --help)"

# ---- what the host must have ------------------------------------------------------------
qemu=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
command -v cpio >/dev/null || die "cpio missing (apt-get install cpio)"
command -v modprobe >/dev/null || die "modprobe missing (apt-get install kmod)"
bb=''
for c in /usr/lib/busybox-static/busybox /bin/busybox /usr/bin/busybox; do
	if [ -x "$c" ] && ! ldd "$c" >/dev/null 2>&1; then bb=$c; break; fi
done
[ -n "$bb" ] || die "no static busybox (apt-get install busybox-static)"
if [ -z "$kernel" ]; then
	for k in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -rV); do
		v=${k#/boot/vmlinuz-}
		if [ -e "/lib/modules/$v/kernel/fs/9p/9p.ko" ] || compgen -G "/lib/modules/$v/kernel/fs/9p/9p.ko.*" >/dev/null; then
			kernel=$k; break
		fi
	done
	[ -n "$kernel" ] || die "no /boot/vmlinuz-* with 9p modules (apt-get install linux-image-amd64)"
fi
[ -r "$kernel" ] || die "kernel $kernel not readable"
kver=${kernel##*/vmlinuz-}
[ -d "/lib/modules/$kver" ] || die "/lib/modules/$kver missing for $kernel"
accel=(-accel tcg -cpu max)
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=(-accel kvm -cpu host); fi

work=$(mktemp -d "${TMPDIR:-/tmp}/an-vm.XXXXXX")
qemu_pid='' follow_pid=''
finish() {
	[ -n "$follow_pid" ] && kill "$follow_pid" 2>/dev/null
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	rm -rf -- "$work"
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
io=$work/io ird=$work/initramfs
mkdir -p "$io" "$ird/bin" "$ird/lib/modules"

# ---- the command and its environment ---------------------------------------------------------
export -p | grep -vE '^declare -x (DISPLAY|WAYLAND_DISPLAY|XAUTHORITY|XDG_[A-Z_]*|DBUS_SESSION_BUS_ADDRESS|SSH_[A-Z_]*|TERM|TERMCAP|TMUX|TMUX_PANE|STY|PWD|OLDPWD|SHLVL|_|INVOCATION_ID|JOURNAL_STREAM|NOTIFY_SOCKET|COLUMNS|LINES)(=|$)' > "$io/env"
{
	printf 'cd -- %q || exit 125\n' "$chdir"
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} > "$io/cmd"
: > "$io/out"

# ---- initramfs: busybox + the modules of a 9p root ----------------------------------------
cp "$bb" "$ird/bin/busybox"
: > "$ird/lib/modules/load"
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -S "$kver" --show-depends "$m" || die "modules: cannot resolve $m for $kver"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	name=${ko##*/}
	case $ko in
	*.ko) cp "$ko" "$ird/lib/modules/$name" ;;
	*.ko.xz) name=${name%.xz}; xz -dc "$ko" > "$ird/lib/modules/$name" ;;
	*.ko.zst) name=${name%.zst}; zstd -qdc "$ko" > "$ird/lib/modules/$name" ;;
	*.ko.gz) name=${name%.gz}; gzip -dc "$ko" > "$ird/lib/modules/$name" ;;
	*) echo "$prog: unknown module file $ko" >&2; exit 1 ;;
	esac
	echo "$name" >> "$ird/lib/modules/load"
done
[ -s "$ird/lib/modules/load" ] || die "modules: none collected for $kver"

# stage 1 (initramfs /init): the root file system, then switch_root
cat > "$ird/init" <<'STAGE1'
#!/bin/busybox sh
b=/bin/busybox
fail() { echo "an-vm stage 1: $*"; $b poweroff -f; }
$b mkdir -p /proc /sys /dev /ro /rw /root
$b mount -t proc proc /proc
$b mount -t sysfs sysfs /sys
$b mount -t devtmpfs devtmpfs /dev
while read -r m; do $b insmod "/lib/modules/$m" || fail "insmod $m"; done < /lib/modules/load
p9=trans=virtio,version=9p2000.L,msize=524288
$b mount -t 9p -o "$p9,ro,cache=loose" hostroot /ro || fail "mount the host root (9p)"
$b mount -t tmpfs -o mode=0755 tmpfs /rw
$b mkdir -p /rw/upper /rw/work
$b mount -t overlay -o lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/work overlay /root || fail "overlay root"
$b mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /root/run
$b mkdir -p /root/run/an-vm
$b mount -t 9p -o "$p9,cache=none" anvmio /root/run/an-vm || fail "mount the io share (9p)"
for d in dev proc sys; do $b mount --move /$d /root/$d; done
exec $b switch_root /root /bin/bash /run/an-vm/stage2
STAGE1
chmod 0755 "$ird/init"

# stage 2 (pid 1 on the overlay root, host's bash): cgroup2, then the command
cat > "$io/stage2" <<'STAGE2'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
io=/run/an-vm
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control || echo "an-vm: controller $c not enabled" >> $io/out
done
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts && ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount -t mqueue mqueue /dev/mqueue
mount -t tmpfs -o mode=1777 tmpfs /tmp
modprobe -q loop 2>/dev/null
ip link set lo up 2>/dev/null
set -a; source $io/env; set +a
export AN_VM=1
(source $io/cmd) >> $io/out 2>&1 < /dev/null
echo $? > $io/status.tmp && mv $io/status.tmp $io/status
sync
echo o > /proc/sysrq-trigger 2>/dev/null
/bin/busybox poweroff -f
STAGE2

(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.gz"

# ---- boot -----------------------------------------------------------------------------------
append="console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1"
limiter=()
[ "$limit" -gt 0 ] && limiter=(timeout "$limit")
"${limiter[@]}" "$qemu" -nodefaults -no-reboot -display none "${accel[@]}" -m "$mem" -smp "$cpus" \
	-kernel "$kernel" -initrd "$work/initramfs.gz" -append "$append" \
	-serial "file:$work/console" \
	-fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap" \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-fsdev "local,id=anvmio,path=$io,security_model=none" \
	-device virtio-9p-pci,fsdev=anvmio,mount_tag=anvmio \
	-device virtio-rng-pci &
qemu_pid=$!
tail -n +1 -f --pid="$qemu_pid" "$io/out" &
follow_pid=$!
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=''
wait "$follow_pid" 2>/dev/null || true
follow_pid=''
[ -n "$keep_console" ] && cp "$work/console" "$keep_console"
if [ "$limit" -gt 0 ] && [ "$qemu_rc" = 124 ]; then
	echo "$prog: the VM ran past ${limit}s and was killed" >&2
	exit 124
fi
if [ ! -s "$io/status" ]; then
	echo "$prog: the VM reported no exit status; its console:" >&2
	tail -n 40 "$work/console" >&2
	exit 125
fi
exit "$(cat "$io/status")"
