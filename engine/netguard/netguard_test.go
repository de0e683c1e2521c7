package netguard_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/netguard"
)

// Which policies allow an address.
const (
	guardNever     = iota // refused whatever the flags
	guardAlways           // public
	guardLoopback         // needs AllowLoopback
	guardLinkLocal        // needs AllowLinkLocal
	guardPrivate          // needs AllowPrivate
)

func TestAddressPolicyCheck(t *testing.T) {
	tests := []struct {
		addr string
		need int
	}{
		// Public.
		{"93.184.216.34", guardAlways},
		{"8.8.8.8", guardAlways},
		{"1.1.1.1", guardAlways},
		{"2606:2800:220:1:248:1893:25c8:1946", guardAlways},
		{"2001:4860:4860::8888", guardAlways},
		{"::ffff:93.184.216.34", guardAlways},
		{"172.15.255.255", guardAlways},
		{"172.32.0.0", guardAlways},
		{"100.63.255.255", guardAlways},
		{"100.128.0.0", guardAlways},
		{"169.253.255.255", guardAlways},
		{"223.255.255.255", guardAlways},
		{"64:ff9b::808:808", guardAlways}, // NAT64 of 8.8.8.8

		// Unspecified, multicast, broadcast, reserved: never.
		{"0.0.0.0", guardNever},
		{"0.1.2.3", guardNever},
		{"::", guardNever},
		{"::ffff:0.0.0.0", guardNever},
		{"224.0.0.1", guardNever},
		{"239.255.255.250", guardNever},
		{"ff02::1", guardNever},
		{"ff0e::1", guardNever},
		{"::ffff:224.0.0.1", guardNever},
		{"255.255.255.255", guardNever},
		{"240.0.0.1", guardNever},

		// Loopback: AllowLoopback.
		{"127.0.0.1", guardLoopback},
		{"127.255.255.254", guardLoopback},
		{"::1", guardLoopback},
		{"::ffff:127.0.0.1", guardLoopback},
		{"::127.0.0.1", guardLoopback},     // deprecated IPv4-compatible
		{"64:ff9b::7f00:1", guardLoopback}, // NAT64 of 127.0.0.1

		// Link-local: AllowLinkLocal, not AllowLoopback.
		{"169.254.0.1", guardLinkLocal},
		{"169.254.255.255", guardLinkLocal},
		{"::ffff:169.254.10.10", guardLinkLocal},
		{"64:ff9b::a9fe:101", guardLinkLocal}, // NAT64 of 169.254.1.1
		{"fe80::1", guardLinkLocal},
		{"fe80::1%eth0", guardLinkLocal},
		{"febf:ffff::1", guardLinkLocal},

		// Cloud metadata: never, even where the flags open the range they sit in.
		{"169.254.169.254", guardNever}, // AWS, GCP, Azure
		{"::ffff:169.254.169.254", guardNever},
		{"64:ff9b::a9fe:a9fe", guardNever}, // NAT64 of 169.254.169.254
		{"169.254.170.2", guardNever},      // AWS ECS task credentials
		{"169.254.170.23", guardNever},     // AWS EKS Pod Identity
		{"fd00:ec2::254", guardNever},      // AWS over IPv6, inside fc00::/7
		{"fd00:ec2::23", guardNever},       // EKS Pod Identity over IPv6, inside fc00::/7
		{"100.100.100.200", guardNever},    // Alibaba, inside 100.64.0.0/10

		// Private: AllowPrivate.
		{"10.0.0.1", guardPrivate},
		{"10.255.255.255", guardPrivate},
		{"172.16.0.1", guardPrivate},
		{"172.31.255.255", guardPrivate},
		{"192.168.1.1", guardPrivate},
		{"::ffff:192.168.1.1", guardPrivate},
		{"100.64.0.1", guardPrivate}, // CGNAT
		{"100.127.255.255", guardPrivate},
		{"fc00::1", guardPrivate},
		{"fd12:3456:789a::1", guardPrivate},
		{"64:ff9b::a00:1", guardPrivate}, // NAT64 of 10.0.0.1
	}
	var policies []netguard.AddressPolicy
	for _, loop := range []bool{false, true} {
		for _, ll := range []bool{false, true} {
			for _, priv := range []bool{false, true} {
				policies = append(policies, netguard.AddressPolicy{AllowLoopback: loop, AllowLinkLocal: ll, AllowPrivate: priv})
			}
		}
	}
	for _, tt := range tests {
		ip := netip.MustParseAddr(tt.addr)
		for _, p := range policies {
			want := tt.need == guardAlways || tt.need == guardLoopback && p.AllowLoopback ||
				tt.need == guardLinkLocal && p.AllowLinkLocal || tt.need == guardPrivate && p.AllowPrivate
			err := p.Check(ip)
			if want && err != nil {
				t.Errorf("%s with %+v: refused: %v", tt.addr, p, err)
			}
			if !want {
				if err == nil {
					t.Errorf("%s with %+v: allowed", tt.addr, p)
					continue
				}
				if !errors.Is(err, netguard.ErrAddressRefused) || !model.IsKind(err, model.KindValidation) {
					t.Errorf("%s with %+v: %v is not a validation_error wrapping ErrAddressRefused", tt.addr, p, err)
				}
				hint := map[int]string{guardNever: "never", guardLoopback: "--allow-loopback-webhooks",
					guardLinkLocal: "--allow-link-local-webhooks", guardPrivate: "--allow-private-webhooks"}[tt.need]
				if !strings.Contains(err.Error(), hint) {
					t.Errorf("%s with %+v: %q does not mention %q", tt.addr, p, err, hint)
				}
			}
		}
	}
	if err := (netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}).Check(netip.Addr{}); err == nil {
		t.Error("the zero Addr is allowed")
	}
}

// guardTestResolver is a resolver whose DNS server, dialled in memory, answers every A
// query with the given IPv4 address and every other query with no answer: tests resolve
// names without any network.
func guardTestResolver(t *testing.T, ipv4 [4]byte) *net.Resolver {
	t.Helper()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go guardServeDNS(server, ipv4)
			return client, nil
		},
	}
}

// guardServeDNS answers the queries read from c. A net.Pipe is not a PacketConn, so the
// resolver frames its messages as over TCP, with a two-byte length.
func guardServeDNS(c net.Conn, ipv4 [4]byte) {
	defer c.Close()
	for {
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, int(l[0])<<8|int(l[1]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := guardDNSAnswer(q, ipv4)
		if resp == nil {
			return
		}
		resp = append([]byte{byte(len(resp) >> 8), byte(len(resp))}, resp...)
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// guardDNSAnswer answers one query: the question echoed and, for an A query, one A record.
func guardDNSAnswer(q []byte, ipv4 [4]byte) []byte {
	if len(q) < 12 {
		return nil
	}
	// Skip the question name.
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	if i+5 > len(q) {
		return nil
	}
	question := q[12 : i+5]
	qtype := int(q[i+1])<<8 | int(q[i+2])
	resp := []byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}
	resp = append(resp, question...)
	if qtype == 1 { // A
		resp[7] = 1
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
		resp = append(resp, ipv4[:]...)
	}
	return resp
}

func TestValidateWebhookURL(t *testing.T) {
	ctx := context.Background()
	long := "https://example.com/" + strings.Repeat("a", netguard.MaxWebhookURLLength)
	tests := []struct {
		name     string
		url      string
		policy   netguard.AddressPolicy
		resolver *net.Resolver
		ok       bool
		mention  string
	}{
		{"OKPublicV4", "https://93.184.216.34/hook", netguard.AddressPolicy{}, nil, true, ""},
		{"OKPublicV4Port", "https://93.184.216.34:8443/hook?x=1", netguard.AddressPolicy{}, nil, true, ""},
		{"OKPublicV6", "https://[2606:2800:220:1:248:1893:25c8:1946]/hook", netguard.AddressPolicy{}, nil, true, ""},
		{"OKPublicDecimal", "https://1572395042/", netguard.AddressPolicy{}, nil, true, ""}, // 93.184.216.34
		{"OKPublicName", "https://hooks.example.com/in", netguard.AddressPolicy{}, guardTestResolver(t, [4]byte{93, 184, 216, 34}), true, ""},
		{"OKLoopbackAllowed", "https://127.0.0.1:8443/", netguard.AddressPolicy{AllowLoopback: true}, nil, true, ""},
		{"OKPrivateAllowed", "https://10.1.2.3/", netguard.AddressPolicy{AllowPrivate: true}, nil, true, ""},
		{"OKUpperCaseScheme", "HTTPS://93.184.216.34/", netguard.AddressPolicy{}, nil, true, ""},

		{"ErrEmpty", "", netguard.AddressPolicy{}, nil, false, "required"},
		{"ErrHTTP", "http://93.184.216.34/hook", netguard.AddressPolicy{}, nil, false, "https"},
		{"ErrFTP", "ftp://93.184.216.34/hook", netguard.AddressPolicy{}, nil, false, "https"},
		{"ErrRelative", "/hook", netguard.AddressPolicy{}, nil, false, "absolute"},
		{"ErrMalformed", "https://exa mple.com/", netguard.AddressPolicy{}, nil, false, "valid URL"},
		{"ErrMalformedPercent", "https://example.com/%zz", netguard.AddressPolicy{}, nil, false, "valid URL"},
		{"ErrOpaque", "https:example.com", netguard.AddressPolicy{}, nil, false, "https://host"},
		{"ErrNoHost", "https:///hook", netguard.AddressPolicy{}, nil, false, "no host"},
		{"ErrUserinfo", "https://user:pass@93.184.216.34/", netguard.AddressPolicy{}, nil, false, "user"},
		{"ErrUserOnly", "https://user@93.184.216.34/", netguard.AddressPolicy{}, nil, false, "user"},
		{"ErrTooLong", long, netguard.AddressPolicy{}, nil, false, "longer"},
		{"ErrPortZero", "https://93.184.216.34:0/", netguard.AddressPolicy{}, nil, false, "port"},
		{"ErrPortTooLarge", "https://93.184.216.34:70000/", netguard.AddressPolicy{}, nil, false, "port"},

		{"ErrLoopback", "https://127.0.0.1/", netguard.AddressPolicy{}, nil, false, "--allow-loopback-webhooks"},
		{"ErrLoopbackWithPrivateFlag", "https://127.0.0.1/", netguard.AddressPolicy{AllowPrivate: true}, nil, false, "loopback"},
		{"ErrLoopbackV6", "https://[::1]:8443/", netguard.AddressPolicy{}, nil, false, "loopback"},
		{"ErrMappedLoopback", "https://[::ffff:127.0.0.1]/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrMappedHexLoopback", "https://[::ffff:7f00:1]/", netguard.AddressPolicy{}, nil, false, "loopback"},
		{"ErrZonedLinkLocal", "https://[fe80::1%25eth0]/", netguard.AddressPolicy{}, nil, false, "link-local"},
		{"ErrLinkLocalWithLoopbackFlag", "https://169.254.1.1/", netguard.AddressPolicy{AllowLoopback: true}, nil, false, "--allow-link-local-webhooks"},
		{"ErrLinkLocalV6WithLoopbackFlag", "https://[fe80::1]/", netguard.AddressPolicy{AllowLoopback: true}, nil, false, "--allow-link-local-webhooks"},
		{"OKLinkLocalAllowed", "https://169.254.1.1/", netguard.AddressPolicy{AllowLinkLocal: true}, nil, true, ""},
		{"OKLinkLocalV6Allowed", "https://[fe80::1%25eth0]/", netguard.AddressPolicy{AllowLinkLocal: true}, nil, true, ""},
		{"ErrMetadataWithEveryFlag", "https://169.254.169.254/latest/meta-data/", netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, nil, false, "never"},
		{"ErrMetadataV6WithEveryFlag", "https://[fd00:ec2::254]/", netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, nil, false, "metadata"},
		{"ErrMetadataDecimalWithEveryFlag", "https://2852039166/", netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, nil, false, "metadata"},
		{"ErrECSCredentials", "https://169.254.170.2/v2/credentials", netguard.AddressPolicy{AllowLinkLocal: true}, nil, false, "metadata"},
		{"ErrNameToLinkLocalWithLoopbackFlag", "https://ll.example.com/", netguard.AddressPolicy{AllowLoopback: true}, guardTestResolver(t, [4]byte{169, 254, 3, 4}), false, "--allow-link-local-webhooks"},
		{"ErrNameToMetadataWithEveryFlag", "https://meta2.example.com/", netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, guardTestResolver(t, [4]byte{169, 254, 169, 254}), false, "metadata"},
		{"ErrDecimal", "https://2130706433/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrHex", "https://0x7f000001/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrHexUpper", "https://0X7F000001/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrHexDotted", "https://0x7f.1/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrShort", "https://127.1/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrShortThree", "https://127.0.1/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrOctal", "https://0177.0.0.1/", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrOctalPrivate", "https://012.0.0.1/", netguard.AddressPolicy{}, nil, false, "10.0.0.1"},
		{"ErrTrailingDot", "https://127.0.0.1./", netguard.AddressPolicy{}, nil, false, "127.0.0.1"},
		{"ErrMetadataDecimal", "https://2852039166/", netguard.AddressPolicy{}, nil, false, "metadata"},
		{"ErrZero", "https://0/", netguard.AddressPolicy{AllowLoopback: true, AllowPrivate: true}, nil, false, "never"},
		{"ErrBadNumeric", "https://256.0.0.1/", netguard.AddressPolicy{}, nil, false, "not a valid IPv4"},
		{"ErrBadOctal", "https://08.0.0.1/", netguard.AddressPolicy{}, nil, false, "not a valid IPv4"},
		{"ErrFiveParts", "https://1.2.3.4.5/", netguard.AddressPolicy{}, nil, false, "not a valid IPv4"},
		{"ErrTooBig", "https://4294967296/", netguard.AddressPolicy{}, nil, false, "not a valid IPv4"},
		{"ErrNumericTLD", "https://example.123/", netguard.AddressPolicy{}, nil, false, "not a valid IPv4"},
		{"ErrPrivate", "https://192.168.0.10/", netguard.AddressPolicy{}, nil, false, "--allow-private-webhooks"},
		{"ErrPrivateWithLoopbackFlag", "https://10.0.0.1/", netguard.AddressPolicy{AllowLoopback: true}, nil, false, "--allow-private-webhooks"},
		{"ErrCGNAT", "https://100.64.1.1/", netguard.AddressPolicy{}, nil, false, "CGNAT"},
		{"ErrULA", "https://[fd00::1]/", netguard.AddressPolicy{}, nil, false, "private"},
		{"ErrMetadata", "https://169.254.169.254/latest/meta-data/", netguard.AddressPolicy{}, nil, false, "metadata"},
		{"ErrMulticast", "https://224.0.0.1/", netguard.AddressPolicy{AllowLoopback: true, AllowPrivate: true}, nil, false, "multicast"},
		{"ErrBadIPv6", "https://[::1::2]/", netguard.AddressPolicy{}, nil, false, "not a valid"},
		{"ErrLocalhost", "https://localhost/", netguard.AddressPolicy{}, nil, false, "--allow-loopback-webhooks"},
		{"ErrLocalhostUpper", "https://LOCALHOST:8443/", netguard.AddressPolicy{}, nil, false, "loopback"},
		{"ErrLocalhostSub", "https://api.localhost/", netguard.AddressPolicy{}, nil, false, "loopback"},
		{"ErrNameToLoopback", "https://rebind.example.com/", netguard.AddressPolicy{}, guardTestResolver(t, [4]byte{127, 0, 0, 1}), false, "resolves to 127.0.0.1"},
		{"ErrNameToPrivate", "https://intranet.example.com/", netguard.AddressPolicy{}, guardTestResolver(t, [4]byte{10, 0, 0, 7}), false, "--allow-private-webhooks"},
		{"ErrNameToMetadata", "https://meta.example.com/", netguard.AddressPolicy{}, guardTestResolver(t, [4]byte{169, 254, 169, 254}), false, "metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := netguard.ValidateWebhookURL(ctx, tt.url, tt.policy, tt.resolver)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var e *model.Error
			if !errors.As(err, &e) || e.Kind != model.KindValidation || e.Field != "url" {
				t.Fatalf("%v is not a validation_error on url", err)
			}
			if !strings.Contains(e.Msg, tt.mention) {
				t.Fatalf("message %q does not mention %q", e.Msg, tt.mention)
			}
		})
	}
}

func TestValidateWebhookURLNameToLoopbackAllowed(t *testing.T) {
	r := guardTestResolver(t, [4]byte{127, 0, 0, 1})
	p := netguard.AddressPolicy{AllowLoopback: true}
	if err := netguard.ValidateWebhookURL(context.Background(), "https://dev.example.com/", p, r); err != nil {
		t.Fatalf("a name resolving to loopback with AllowLoopback: %v", err)
	}
}

func TestValidateWebhookURLNoResolve(t *testing.T) {
	// A resolver whose server fails every query: the name does not resolve.
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := netguard.ValidateWebhookURL(ctx, "https://nowhere.invalid/", netguard.AddressPolicy{}, r)
	if !model.IsKind(err, model.KindValidation) || !strings.Contains(err.Error(), "does not resolve") {
		t.Fatalf("got %v, want a validation_error saying the host does not resolve", err)
	}
}

func TestAddressGuardDialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := context.Background()

	for _, addr := range []string{ln.Addr().String(), "[::ffff:127.0.0.1]:" + guardPortOf(t, ln)} {
		_, err := netguard.AddressPolicy{}.Dialer().DialContext(ctx, "tcp", addr)
		if !errors.Is(err, netguard.ErrAddressRefused) {
			t.Errorf("dial %s with the default policy: %v, want ErrAddressRefused", addr, err)
		}
	}
	c, err := netguard.AddressPolicy{AllowLoopback: true}.Dialer().DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial with AllowLoopback: %v", err)
	}
	c.Close()
}

// TestAddressGuardDialerLinkLocal: at connect time --allow-loopback-webhooks opens no
// link-local or metadata address, and --allow-link-local-webhooks no metadata one. The
// refusals happen in the dialer's Control function, before any packet is sent.
func TestAddressGuardDialerLinkLocal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		policy netguard.AddressPolicy
		addr   string
		hint   string
	}{
		{netguard.AddressPolicy{AllowLoopback: true}, "169.254.1.1:443", "--allow-link-local-webhooks"},
		{netguard.AddressPolicy{AllowLoopback: true}, "[fe80::1]:443", "--allow-link-local-webhooks"},
		{netguard.AddressPolicy{AllowLoopback: true}, "169.254.169.254:80", "never"},
		{netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, "169.254.169.254:80", "metadata"},
		{netguard.AddressPolicy{AllowLoopback: true, AllowLinkLocal: true, AllowPrivate: true}, "[fd00:ec2::254]:80", "metadata"},
		{netguard.AddressPolicy{AllowLinkLocal: true}, "169.254.170.2:80", "metadata"},
		{netguard.AddressPolicy{AllowLinkLocal: true}, "[::ffff:169.254.169.254]:80", "metadata"},
	} {
		_, err := tc.policy.Dialer().DialContext(ctx, "tcp", tc.addr)
		if !errors.Is(err, netguard.ErrAddressRefused) || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("dial %s with %+v: %v, want ErrAddressRefused mentioning %q", tc.addr, tc.policy, err, tc.hint)
		}
	}
}

func guardPortOf(t *testing.T, ln net.Listener) string {
	t.Helper()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
