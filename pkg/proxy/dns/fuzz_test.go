package dns

import (
	"testing"

	mdns "github.com/miekg/dns"
)

// FuzzParseAnswer feeds arbitrary datagrams to the response parser, as a
// DNS server answering garbage would: it must never panic, and whatever it
// accepts answers the query.
func FuzzParseAnswer(f *testing.F) {
	q := new(mdns.Msg)
	q.SetQuestion("a.test.", mdns.TypeA)
	q.Id = 0x1234
	good := new(mdns.Msg)
	good.SetReply(q)
	rr, _ := mdns.NewRR("a.test. 30 IN A 10.0.0.1")
	cn, _ := mdns.NewRR("a.test. 30 IN CNAME b.test.")
	good.Answer = []mdns.RR{cn, rr}
	packed, _ := good.Pack()
	f.Add(packed)
	f.Add([]byte{0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xff})
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := parseAnswer(b, q)
		if err != nil {
			return
		}
		if resp.Id != q.Id || len(resp.Question) != 1 || !sameQuestion(resp.Question[0], q.Question[0]) {
			t.Fatalf("accepted an answer to another query: %v", resp)
		}
		for _, a := range answers(resp, "a.test.", mdns.TypeA) {
			if !a.IP.Is4() {
				t.Fatalf("an A lookup returned %v", a.IP)
			}
		}
	})
}
