// Package systemd holds ringfire's systemd units: ringfire.service runs
// `ringfire run /etc/ringfire/ringfire.toml`, the template
// ringfire@.service `ringfire run /etc/ringfire/%i.toml`, both as the
// unprivileged user ringfire with exactly the capabilities AF_XDP needs
// (CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON, CAP_IPC_LOCK) and
// systemd's hardening. README.md says how to install them, and how to
// run the same without systemd (setcap). The package has no Go API: its
// test runs `systemd-analyze verify` on the units.
package systemd
