package upstream

import "testing"

func TestLatch(t *testing.T) {
	var h Host
	h.Stats.RqTotal.Add(5)
	h.Stats.RqSuccess.Add(3)
	h.Stats.RqError.Add(1)
	if got := h.Stats.Latch(); got != (Latched{Success: 3, Error: 1, Issued: 5}) {
		t.Errorf("first latch %+v, want every count so far", got)
	}
	if got := h.Stats.Latch(); got != (Latched{}) {
		t.Errorf("second latch %+v, want nothing new", got)
	}
	h.Stats.RqTotal.Add(2)
	h.Stats.RqError.Add(2)
	if got := h.Stats.Latch(); got != (Latched{Error: 2, Issued: 2}) {
		t.Errorf("third latch %+v, want the growth since the second", got)
	}
	if h.Stats.RqTotal.Load() != 7 {
		t.Errorf("rq_total %d: latching must not change what /clusters shows", h.Stats.RqTotal.Load())
	}
}

func TestAddressProto(t *testing.T) {
	if sa := AddressProto("[::1]:8080").GetSocketAddress(); sa.GetAddress() != "::1" || sa.GetPortValue() != 8080 {
		t.Errorf("socket address %v", sa)
	}
	if p := AddressProto("/run/app.sock").GetPipe(); p.GetPath() != "/run/app.sock" {
		t.Errorf("pipe %v", p)
	}
	if a := AddressProto("nonsense"); a.GetAddress() != nil {
		t.Errorf("an unparsable address gave %v", a)
	}
}
