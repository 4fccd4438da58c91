// Package capture is the `sidecar capture` subcommand: it installs, in the
// network namespace it runs in (a pod's, from an init container), the
// rules that send the pod's TCP traffic through the proxy, as Istio's
// istio-iptables does in its REDIRECT mode:
//
//   - inbound: connections arriving for the included ports (all by
//     default), minus the excluded ones, are redirected to the proxy's
//     inbound capture port (15006), where a listener with the original_dst
//     listener filter serves them;
//   - outbound: connections the pod opens to the included CIDRs (all by
//     default), minus the excluded CIDRs and ports, are redirected to the
//     outbound capture port (15001), where a use_original_dst listener
//     serves them. The proxy's own connections (its uid or gid) and
//     connections over the loopback interface (to 127.0.0.0/8, ::1 and the
//     pod's own addresses) are never redirected.
//
// Why nftables through netlink rather than iptables-restore: the rules are
// programmed with github.com/google/nftables, a pure-Go netlink client, so
// the subcommand runs from the sidecar's own scratch-based image, which has
// no iptables binaries; an init container needs only that image, uid 0 and
// the NET_ADMIN capability. Every Linux a Kubernetes node runs today has
// nf_tables (iptables itself is nf_tables underneath on current
// distributions), and a pod's network namespace starts empty, so the
// proxy's tables do not meet anyone else's rules there.
//
// The rules live in their own tables, "ip outrigger" and "ip6 outrigger",
// with the base chains OUTRIGGER_INBOUND (nat, prerouting) and
// OUTRIGGER_OUTPUT (nat, output). Installing replaces both tables in one
// atomic netlink batch, so running twice leaves one copy; --cleanup
// deletes them; --dry-run prints them in nft's syntax and changes nothing.
package capture
