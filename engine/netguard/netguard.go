package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// AddressPolicy says which destination addresses webhooks may reach. The zero policy
// allows only public unicast addresses; cloud metadata addresses are refused whatever it
// says.
type AddressPolicy struct {
	// AllowLoopback lets webhooks reach loopback addresses: 127.0.0.0/8, ::1
	// (--allow-loopback-webhooks).
	AllowLoopback bool
	// AllowLinkLocal lets webhooks reach link-local addresses: 169.254.0.0/16, fe80::/10,
	// but for the metadata addresses among them (--allow-link-local-webhooks).
	AllowLinkLocal bool
	// AllowPrivate lets webhooks reach private addresses: RFC 1918, CGNAT 100.64.0.0/10,
	// fc00::/7 (--allow-private-webhooks).
	AllowPrivate bool
}

// ErrAddressRefused is in the chain of every error of AddressPolicy.Check, so that a
// refusal at connect time can be told from a network failure with errors.Is.
var ErrAddressRefused = errors.New("webhook destination refused")

// MaxWebhookURLLength is the longest webhook URL accepted.
const MaxWebhookURLLength = 2048

// addrClass is the class of an address as the policy sees it.
type addrClass int

const (
	classPublic addrClass = iota
	classInvalid
	classUnspecified
	classMulticast
	classBroadcast
	classReserved
	classLoopback
	classLinkLocal
	classMetadata
	classPrivate
	classShared
)

var (
	// metadataAddrs serve a cloud instance's or container's credentials: never a
	// webhook's destination, whatever the flags.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack…
		netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
		netip.MustParseAddr("169.254.170.2"),   // AWS ECS task credentials
		netip.MustParseAddr("169.254.170.23"),  // AWS EKS Pod Identity
		netip.MustParseAddr("fd00:ec2::23"),    // AWS EKS Pod Identity over IPv6
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	}
	prefixThisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	prefixLoopback4   = netip.MustParsePrefix("127.0.0.0/8")
	prefixLinkLocal4  = netip.MustParsePrefix("169.254.0.0/16")
	prefixLinkLocal6  = netip.MustParsePrefix("fe80::/10")
	prefixMulticast4  = netip.MustParsePrefix("224.0.0.0/4")
	prefixMulticast6  = netip.MustParsePrefix("ff00::/8")
	prefixReserved4   = netip.MustParsePrefix("240.0.0.0/4")
	prefixShared4     = netip.MustParsePrefix("100.64.0.0/10")
	prefixNAT64       = netip.MustParsePrefix("64:ff9b::/96")
	prefixV4Compat    = netip.MustParsePrefix("::/96")
	broadcast4        = netip.MustParseAddr("255.255.255.255")
	privatePrefixes   = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("fc00::/7"),
		netip.MustParsePrefix("fec0::/10"), // deprecated site-local, private in practice
	}
)

// classify returns the class of ip, which has no zone and is unmapped.
func classify(ip netip.Addr) addrClass {
	switch {
	case !ip.IsValid():
		return classInvalid
	case ip.IsUnspecified(), prefixThisNetwork.Contains(ip):
		return classUnspecified
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return classMetadata
		}
	}
	switch {
	case ip.Is6() && (prefixNAT64.Contains(ip) || prefixV4Compat.Contains(ip) && ip != netip.IPv6Loopback()):
		// An IPv6 address that carries an IPv4 one (NAT64, deprecated IPv4-compatible) is
		// judged by the IPv4 address it reaches.
		b := ip.As16()
		return classify(netip.AddrFrom4([4]byte(b[12:])))
	case ip.IsLoopback(), prefixLoopback4.Contains(ip):
		return classLoopback
	case prefixLinkLocal4.Contains(ip), prefixLinkLocal6.Contains(ip):
		return classLinkLocal
	case prefixMulticast4.Contains(ip), prefixMulticast6.Contains(ip):
		return classMulticast
	case ip == broadcast4:
		return classBroadcast
	case prefixReserved4.Contains(ip):
		return classReserved
	case prefixShared4.Contains(ip):
		return classShared
	}
	for _, p := range privatePrefixes {
		if p.Contains(ip) {
			return classPrivate
		}
	}
	return classPublic
}

// refusal says why p refuses ip: what the address is and what would allow it; both are
// empty when p allows ip.
func (p AddressPolicy) refusal(ip netip.Addr) (what, rule string) {
	const (
		never     = "never allowed"
		loopback  = "refused unless the node runs with --allow-loopback-webhooks"
		linkLocal = "refused unless the node runs with --allow-link-local-webhooks"
		private   = "refused unless the node runs with --allow-private-webhooks"
	)
	switch classify(ip) {
	case classPublic:
		return "", ""
	case classInvalid:
		return "not a valid IP address", never
	case classUnspecified:
		return "an unspecified address", never
	case classMulticast:
		return "a multicast address", never
	case classBroadcast:
		return "the broadcast address", never
	case classReserved:
		return "a reserved address (240.0.0.0/4)", never
	case classLoopback:
		if p.AllowLoopback {
			return "", ""
		}
		return "a loopback address", loopback
	case classLinkLocal:
		if p.AllowLinkLocal {
			return "", ""
		}
		return "a link-local address", linkLocal
	case classMetadata:
		return "a cloud metadata address", never
	case classShared:
		if p.AllowPrivate {
			return "", ""
		}
		return "a shared (CGNAT 100.64.0.0/10) address, treated as private", private
	default: // classPrivate
		if p.AllowPrivate {
			return "", ""
		}
		return "a private address", private
	}
}

// normalize drops the zone of ip and unmaps an IPv4-mapped IPv6 address.
func normalize(ip netip.Addr) netip.Addr { return ip.WithZone("").Unmap() }

// Check returns nil when webhooks may reach ip under p, else a validation_error on "url"
// whose chain holds ErrAddressRefused. Unspecified, multicast, broadcast, reserved and
// cloud metadata addresses (169.254.169.254, fd00:ec2::254, 169.254.170.2,
// 169.254.170.23, fd00:ec2::23, 100.100.100.200) are always refused; loopback
// (127.0.0.0/8, ::1) needs AllowLoopback; link-local (169.254.0.0/16, fe80::/10)
// AllowLinkLocal; private addresses (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// 100.64.0.0/10, fc00::/7) need AllowPrivate. An IPv4-mapped IPv6 address is judged as
// the IPv4 address it maps.
func (p AddressPolicy) Check(ip netip.Addr) error {
	ip = normalize(ip)
	what, rule := p.refusal(ip)
	if what == "" {
		return nil
	}
	return refused(fmt.Sprintf("webhook destination %s is %s; %s", ip, what, rule))
}

func refused(msg string) *model.Error {
	return &model.Error{Kind: model.KindValidation, Field: "url", Msg: msg, Err: ErrAddressRefused}
}

// Dialer returns a dialer that checks, through its Control function, every address it
// connects to against p: the check happens when the connection is made, after name
// resolution, so a name that resolves to another address later (DNS rebinding) cannot
// reach a refused one.
func (p AddressPolicy) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   p.control,
	}
}

// control is the net.Dialer Control function of Dialer.
func (p AddressPolicy) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refused(fmt.Sprintf("webhook destination %s is not an IP address and port", model.Quote(address)))
	}
	return p.Check(ap.Addr())
}

// ValidateWebhookURL checks a webhook destination when it is registered: an absolute
// https URL of at most MaxWebhookURLLength bytes, with a host and no user info, whose host
// is an address p allows or a name that resolves (through resolver, nil for
// net.DefaultResolver) only to such addresses. Hosts written as IPv4 numbers in the forms
// of inet_aton (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are read as those addresses.
// The errors are validation_errors on "url".
func ValidateWebhookURL(ctx context.Context, raw string, p AddressPolicy, resolver *net.Resolver) error {
	if raw == "" {
		return model.Invalid("url", "url is required")
	}
	if len(raw) > MaxWebhookURLLength {
		return model.Invalid("url", "url is longer than %d bytes", MaxWebhookURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return model.Invalid("url", "url is not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		return model.Invalid("url", "webhook URLs must use https, not http")
	case "":
		return model.Invalid("url", "url must be an absolute https URL")
	default:
		return model.Invalid("url", "webhook URLs must use https, not %s", model.Quote(u.Scheme))
	}
	if u.Opaque != "" {
		return model.Invalid("url", "url must be of the form https://host/path")
	}
	if u.User != nil {
		return model.Invalid("url", "url must not contain a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return model.Invalid("url", "url has no host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return model.Invalid("url", "url has an invalid port %s", model.Quote(port))
		}
	}

	// A literal IP address.
	if ip, err := netip.ParseAddr(host); err != nil && strings.Contains(host, ":") {
		return model.Invalid("url", "url host %s is not a valid IPv6 address", model.Quote(host))
	} else if err == nil {
		return p.Check(ip)
	}
	// An IPv4 address in one of the forms inet_aton and browsers accept.
	name := strings.TrimSuffix(host, ".")
	if endsInNumber(name) {
		ip, ok := parseInetAton(name)
		if !ok {
			return model.Invalid("url", "url host %s is not a valid IPv4 address", model.Quote(host))
		}
		if what, rule := p.refusal(ip); what != "" {
			return refused(fmt.Sprintf("url host %s is the IPv4 address %s, which is %s; %s", model.Quote(host), ip, what, rule))
		}
		return nil
	}

	// A name: every address it resolves to must be allowed. "localhost" and its
	// subdomains are loopback whatever the resolver says (RFC 6761).
	lower := strings.ToLower(name)
	if (lower == "localhost" || strings.HasSuffix(lower, ".localhost")) && !p.AllowLoopback {
		what, rule := p.refusal(netip.IPv6Loopback())
		return refused(fmt.Sprintf("url host %s is %s; %s", model.Quote(host), what, rule))
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ips, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return model.Invalid("url", "url host %s does not resolve", model.Quote(host))
	}
	for _, ip := range ips {
		ip = normalize(ip)
		if what, rule := p.refusal(ip); what != "" {
			return refused(fmt.Sprintf("url host %s resolves to %s, which is %s; %s", model.Quote(host), ip, what, rule))
		}
	}
	return nil
}

// endsInNumber reports whether the last dot-separated label of host is a number in the
// sense of the WHATWG URL standard (decimal digits, or 0x and hex digits): such a host is
// an IPv4 address or invalid, never a name.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		return strings.Trim(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// parseInetAton parses an IPv4 address the way inet_aton(3) does: one to four parts
// separated by dots, each decimal, octal (leading 0) or hexadecimal (leading 0x); the last
// part fills the bytes the others leave (127.1 = 127.0.0.1, 2130706433 = 127.0.0.1).
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, part := range parts {
		v, ok := parseInetAtonPart(part)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		n = n<<8 | v
	}
	rest := 8 * uint(5-len(vals)) // bits the last part fills
	last := vals[len(vals)-1]
	if last >= 1<<rest {
		return netip.Addr{}, false
	}
	n = n<<rest | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// parseInetAtonPart parses one part of an inet_aton address, at most 0xffffffff.
func parseInetAtonPart(s string) (uint64, bool) {
	base := 10
	switch {
	case s == "":
		return 0, false
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
		if s == "" {
			return 0, true // "0x" alone is 0, as inet_aton and browsers read it
		}
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	var v uint64
	for _, c := range []byte(s) {
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= uint64(base) {
			return 0, false
		}
		v = v*uint64(base) + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}
