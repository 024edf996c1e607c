// Package pkt builds and parses the raw Ethernet/IPv4/UDP frames that
// ringfire's AF_XDP and AF_PACKET transports move. It is pure: no syscalls,
// no logging, and the per-packet paths (Header.Build, Template.Build, Parse,
// Sum, Checksum) do not allocate.
//
// A frame, optionally with one 802.1Q (0x8100) or 802.1ad (0x88a8) tag:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|                 destination MAC (6 bytes)                     |
//	+                               +-------------------------------+
//	|                               |                               |
//	+-------------------------------+                               +
//	|                    source MAC (6 bytes)                       |
//	+-------------------------------+-------------------------------+
//	| [TPID 0x8100/0x88a8]          | [PCP|DEI|  VLAN ID (12 bit)]  |  optional 4-byte tag
//	+-------------------------------+-------------------------------+
//	| EtherType 0x0800              |Ver=4| IHL |      TOS          |
//	+-------------------------------+-------------------------------+
//	|  IP total length              |  identification               |
//	+-------------------------------+-------------------------------+
//	|0|DF|MF| fragment offset       |     TTL       |  proto = 17   |
//	+-------------------------------+-------------------------------+
//	|  IP header checksum           |  source address ...           |
//	+-------------------------------+-------------------------------+
//	|  ... source address           |  destination address ...      |
//	+-------------------------------+-------------------------------+
//	|  ... destination address      |  [IP options when IHL > 5]    |
//	+-------------------------------+-------------------------------+
//	|  UDP source port              |  UDP destination port         |
//	+-------------------------------+-------------------------------+
//	|  UDP length (8 + payload)     |  UDP checksum                 |
//	+-------------------------------+-------------------------------+
//	|  payload ...                  |  [Ethernet padding, ignored]  |
//	+-------------------------------+-------------------------------+
//
// Build writes 14 (+4 with a tag) + 20 + 8 = 42 (46) header bytes, no IP
// options, DF set, and a full UDP checksum (never 0: a computed 0 is sent as
// 0xffff, RFC 768). Template precomputes the fixed part of one flow's headers
// and produces exactly the bytes Header.Build would.
//
// # UDP checksums accepted by Parse
//
// Parse accepts three forms of the UDP checksum field:
//
//   - 0: the sender computed no checksum (allowed for UDP over IPv4).
//   - a correct full checksum: the one's complement sum of the pseudo-header
//     (source and destination address, zero byte, protocol 17, UDP length),
//     the UDP header and the payload folds to 0xffff.
//   - the CHECKSUM_PARTIAL form: when a Linux sender has TX checksum offload
//     enabled on a virtual link (veth), the kernel leaves the checksum to the
//     "hardware" and hands the frame over with the field holding the folded,
//     NOT inverted, 16-bit one's complement sum of the pseudo-header only
//     (~csum_tcpudp_magic(saddr, daddr, len, IPPROTO_UDP, 0) in the kernel).
//     Parse computes that sum from the frame's addresses and UDP length and
//     accepts the frame when it equals the field. The payload is then not
//     covered by any checksum; the kernel itself trusts such frames.
//
// Anything else is ErrChecksum.
package pkt
