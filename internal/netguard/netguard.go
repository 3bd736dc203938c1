// Package netguard keeps outbound requests made on a tenant's behalf (webhook deliveries)
// away from the server's own network: loopback, private, link-local (cloud metadata at
// 169.254.169.254 included), unspecified, multicast and other non-public addresses.
package netguard

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrPrivate is returned by Control when the address being dialled is not public.
var ErrPrivate = errors.New("netguard: refused: private address")

// extra lists non-public ranges that netip's predicates do not cover.
var extra = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
}

// Blocked reports whether ip is not a public unicast address: loopback, private (RFC 1918,
// fc00::/7), link-local, unspecified, multicast, or one of a few reserved ranges. An
// IPv4-mapped IPv6 address is judged as its IPv4 address.
func Blocked(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range extra {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// CheckURL validates a webhook URL as written by a tenant: an absolute http or https URL
// with a host, without userinfo (user:pass@), whose host is not a literal non-public IP
// address nor "localhost" (or a name under .localhost). With allowPrivate the address checks
// are skipped (tests with a receiver on 127.0.0.1). The error's text says what is wrong and
// never repeats the URL.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("must be an http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials (user:pass@)")
	}
	host := u.Hostname()
	if host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http(s) URL with a host")
	}
	if allowPrivate {
		return nil
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return errors.New("must not point to a loopback, private, link-local or multicast address")
	}
	if ip, err := netip.ParseAddr(host); err == nil && Blocked(ip) {
		return errors.New("must not point to a loopback, private, link-local or multicast address")
	}
	return nil
}

// Control is a net.Dialer Control function refusing connections to non-public addresses
// (ErrPrivate). It sees the resolved address of every connection attempt, so a name that
// resolves (or re-resolves: DNS rebinding) to a private address is refused too.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return ErrPrivate
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || Blocked(ip) {
		return ErrPrivate
	}
	return nil
}
