package dns

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	mdns "github.com/miekg/dns"

	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
)

// serverMode is how the test DNS server answers.
type serverMode int32

const (
	answerNormally serverMode = iota
	answerNothing             // drop every query: the client times out
	answerServFail
	answerRefused
	answerGarbageWithID // the query's ID, then bytes that do not parse
	answerGarbage       // bytes too short to be a DNS header
	answerWrongQuestion // a well-formed answer to another question
	answerTruncatedUDP  // TC set over UDP, the full answer over TCP
)

// testServer is a DNS server on 127.0.0.1 (UDP and TCP on one port) that
// answers from a table of records.
type testServer struct {
	addr string
	mode atomic.Int32

	mu      sync.Mutex
	records map[string][]mdns.RR // key: lower-case FQDN + "/" + type
	queries []string             // "udp A name." or "tcp AAAA name."
}

// startServer starts a test DNS server, stopped when the test ends.
func startServer(t *testing.T) *testServer {
	t.Helper()
	ts := &testServer{records: map[string][]mdns.RR{}}
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		pc, err = net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err = net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = pc.LocalAddr().String()
	udp := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) { ts.serve(w, r, "udp") })}
	tcp := &mdns.Server{Listener: ln, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) { ts.serve(w, r, "tcp") })}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
	})
	return ts
}

// set replaces the records of name (any case, with or without the final
// dot) for the types present in rrs; each rr is in zone-file syntax.
func (ts *testServer) set(t *testing.T, rrs ...string) {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	fresh := map[string]bool{}
	for _, s := range rrs {
		rr, err := mdns.NewRR(s)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		key := strings.ToLower(rr.Header().Name) + "/" + mdns.TypeToString[rr.Header().Rrtype]
		if !fresh[key] {
			ts.records[key] = nil
			fresh[key] = true
		}
		ts.records[key] = append(ts.records[key], rr)
	}
}

// seen returns the queries received so far.
func (ts *testServer) seen() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.queries...)
}

func (ts *testServer) serve(w mdns.ResponseWriter, r *mdns.Msg, proto string) {
	if len(r.Question) != 1 {
		return
	}
	q := r.Question[0]
	ts.mu.Lock()
	ts.queries = append(ts.queries, proto+" "+mdns.TypeToString[q.Qtype]+" "+strings.ToLower(q.Name))
	ts.mu.Unlock()
	m := new(mdns.Msg)
	m.SetReply(r)
	switch serverMode(ts.mode.Load()) {
	case answerNothing:
		return
	case answerServFail:
		m.Rcode = mdns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	case answerRefused:
		m.Rcode = mdns.RcodeRefused
		_ = w.WriteMsg(m)
		return
	case answerGarbageWithID:
		_, _ = w.Write([]byte{byte(r.Id >> 8), byte(r.Id), 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xff, 0xfe, 0x03})
		return
	case answerGarbage:
		_, _ = w.Write([]byte{1, 2, 3})
		return
	case answerWrongQuestion:
		m.Question[0].Name = "other.example."
		_ = w.WriteMsg(m)
		return
	case answerTruncatedUDP:
		if proto == "udp" {
			m.Truncated = true
			_ = w.WriteMsg(m)
			return
		}
	}
	name := strings.ToLower(q.Name)
	ts.mu.Lock()
	rrs := ts.records[name+"/"+mdns.TypeToString[q.Qtype]]
	cname := ts.records[name+"/CNAME"]
	exists := false
	for key := range ts.records {
		if strings.HasPrefix(key, name+"/") {
			exists = true
		}
	}
	ts.mu.Unlock()
	if len(cname) > 0 {
		m.Answer = append(m.Answer, cname...)
		target := strings.ToLower(cname[0].(*mdns.CNAME).Target)
		ts.mu.Lock()
		m.Answer = append(m.Answer, ts.records[target+"/"+mdns.TypeToString[q.Qtype]]...)
		ts.mu.Unlock()
	}
	m.Answer = append(m.Answer, rrs...)
	if !exists {
		m.Rcode = mdns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// testEnv is an Env whose system files are written for the test: a
// resolv.conf naming only the given nameservers (never the machine's) and
// a hosts file with the given lines.
func testEnv(t *testing.T, resolvConf string, hosts ...string) (Env, *stats.Store) {
	t.Helper()
	dir := t.TempDir()
	rc := filepath.Join(dir, "resolv.conf")
	hf := filepath.Join(dir, "hosts")
	if err := os.WriteFile(rc, []byte(resolvConf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hf, []byte(strings.Join(hosts, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := stats.NewStore()
	return Env{Stats: st, Log: logr.Discard(), ResolvConf: rc, Hosts: hf}, st
}

// fastOptions resolve through ts with short timeouts.
func fastOptions(ts *testServer) CaresOptions {
	return CaresOptions{Resolvers: []string{ts.addr}, QueryTimeout: 150 * time.Millisecond, QueryTries: 2}
}

// counters reads the dns.cares.* stats.
func counters(st *stats.Store) map[string]int64 {
	sc := st.Scope("dns.cares.")
	return map[string]int64{
		"resolve_total":       int64(sc.Counter("resolve_total").Value()),
		"not_found":           int64(sc.Counter("not_found").Value()),
		"get_addr_failure":    int64(sc.Counter("get_addr_failure").Value()),
		"timeouts":            int64(sc.Counter("timeouts").Value()),
		"pending_resolutions": sc.Gauge("pending_resolutions").Value(),
	}
}
