package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestEDSUpdatesKeepCanaries applies 200 random EDS updates (endpoints
// added, removed, turned canary or not; the unchanged entries the last
// update's messages, as the xds decoder delivers them) and checks
// IsCanary for every address after each against the assignment: an
// update that neither adds nor removes a canary shares the previous
// set's canaries, and must still be right.
func TestEDSUpdatesKeepCanaries(t *testing.T) {
	c := edsBackend(t)
	rng := rand.New(rand.NewPCG(3, 4))
	entry := func(port uint32, canary bool) *endpointv3.LbEndpoint {
		lbe := claOf(port).Endpoints[0].LbEndpoints[0]
		if canary {
			md, err := structpb.NewStruct(map[string]any{"canary": true})
			if err != nil {
				t.Fatal(err)
			}
			lbe.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{"envoy.lb": md}}
		}
		return lbe
	}
	type state struct {
		lbe    *endpointv3.LbEndpoint
		canary bool
	}
	eps := map[uint32]state{}
	for p := uint32(9000); p < 9100; p++ {
		eps[p] = state{entry(p, p%10 == 0), p%10 == 0}
	}
	for step := range 200 {
		for range rng.IntN(3) {
			p := 9000 + rng.Uint32N(120)
			switch rng.IntN(3) {
			case 0:
				delete(eps, p)
			default:
				canary := rng.IntN(4) == 0
				eps[p] = state{entry(p, canary), canary}
			}
		}
		var list []*endpointv3.LbEndpoint
		for p := uint32(9000); p < 9120; p++ {
			if s, ok := eps[p]; ok {
				list = append(list, s.lbe)
			}
		}
		applyLevels(t, c, &endpointv3.LocalityLbEndpoints{LbEndpoints: list})
		for p := uint32(9000); p < 9120; p++ {
			s, ok := eps[p]
			if got := c.IsCanary(fmt.Sprintf("127.0.0.1:%d", p)); got != (ok && s.canary) {
				t.Fatalf("step %d: IsCanary(%d) = %v, want %v", step, p, got, ok && s.canary)
			}
		}
	}
}
