// Package xdptest holds test helpers for the AF_XDP data path: the
// steering program attached to an interface of a test namespace (Attach)
// or attached and pinned there (Pin), and an interface's MAC address there
// (MAC). Tests only.
package xdptest
