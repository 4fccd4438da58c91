package dns

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
)

// The system files a c-ares resolver reads, as c-ares does.
const (
	DefaultResolvConf = "/etc/resolv.conf"
	DefaultHostsFile  = "/etc/hosts"
)

// defaultNameserver is c-ares' nameserver when the system names none.
const defaultNameserver = "127.0.0.1:53"

// defaultNdots is resolv.conf's default: a name with at least one dot is
// tried as it is before the search domains.
const defaultNdots = 1

// maxSystemFile bounds how much of resolv.conf or the hosts file is read.
const maxSystemFile = 1 << 20

// system is what the resolver takes from resolv.conf.
type system struct {
	// nameservers are "ip:port"; defaultOnly is set when resolv.conf
	// names none (or cannot be read) and c-ares' default is used.
	nameservers []string
	defaultOnly bool
	search      []string
	ndots       int
}

// loadSystem reads resolv.conf at path. A missing or unreadable file gives
// c-ares' defaults: the nameserver 127.0.0.1:53, no search domains.
func loadSystem(path string) system {
	sys := system{ndots: defaultNdots}
	data, err := readBounded(path)
	if err == nil {
		if cc, err := mdns.ClientConfigFromReader(bytes.NewReader(data)); err == nil {
			port := cc.Port
			if port == "" {
				port = "53"
			}
			for _, s := range cc.Servers {
				ip, err := netip.ParseAddr(s)
				if err != nil {
					continue
				}
				sys.nameservers = append(sys.nameservers, net.JoinHostPort(ip.String(), port))
			}
			for _, d := range cc.Search {
				if d = strings.Trim(d, "."); d != "" {
					sys.search = append(sys.search, d)
				}
			}
			if cc.Ndots > 0 {
				sys.ndots = cc.Ndots
			}
		}
	}
	if len(sys.nameservers) == 0 {
		sys.nameservers = []string{defaultNameserver}
		sys.defaultOnly = true
	}
	return sys
}

// readBounded reads at most maxSystemFile bytes of a file.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSystemFile))
}

// hostsFile is the hosts file, read again when it changes (checked at most
// once a second), as c-ares looks names up there before asking the DNS.
type hostsFile struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	checked time.Time
	modTime time.Time
	size    int64
	byName  map[string][]netip.Addr
}

// lookup returns the addresses the hosts file gives name, in file order.
func (h *hostsFile) lookup(name string) []netip.Addr {
	if h == nil || h.path == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if h.byName == nil || now.Sub(h.checked) >= time.Second {
		h.checked = now
		h.reload()
	}
	return h.byName[normalizeName(name)]
}

// reload re-reads the file when its size or modification time changed.
func (h *hostsFile) reload() {
	st, err := os.Stat(h.path)
	if err != nil {
		h.byName = map[string][]netip.Addr{}
		return
	}
	if h.byName != nil && st.ModTime().Equal(h.modTime) && st.Size() == h.size {
		return
	}
	h.modTime, h.size = st.ModTime(), st.Size()
	data, err := readBounded(h.path)
	if err != nil {
		h.byName = map[string][]netip.Addr{}
		return
	}
	h.byName = parseHosts(data)
}

// parseHosts reads "address name [alias...]" lines; comments start with
// '#'. Lines whose address is not an IP are skipped.
func parseHosts(data []byte) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSystemFile)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		ip, err := netip.ParseAddr(fields[0])
		if err != nil || ip.Zone() != "" {
			continue
		}
		ip = ip.Unmap()
		for _, n := range fields[1:] {
			key := normalizeName(n)
			if !containsAddr(out[key], ip) {
				out[key] = append(out[key], ip)
			}
		}
	}
	return out
}

func containsAddr(list []netip.Addr, ip netip.Addr) bool {
	for _, a := range list {
		if a == ip {
			return true
		}
	}
	return false
}

// isLocalhost reports whether c-ares answers name with the loopback
// address when the hosts file does not list it ("localhost" and names
// under ".localhost", RFC 6761).
func isLocalhost(name string) bool {
	n := normalizeName(name)
	return n == "localhost" || strings.HasSuffix(n, ".localhost")
}
