package lb

import (
	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/common/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/upstream"
)

// randomPolicy is RANDOM: any host of the list, each as likely, whatever
// its weight (Envoy's random balancer ignores weights).
type randomPolicy struct {
	// locality is the typed policy's locality_lb_config (LocalityOf).
	locality *commonv3.LocalityLbConfig
}

func (randomPolicy) Name() string    { return "RANDOM" }
func (randomPolicy) HashBased() bool { return false }

func (randomPolicy) Pickers(env Env) PickerFactory {
	rnd := env.rand()
	return func(hosts []*upstream.Host, _ uint64) Picker {
		return &random{hosts: hosts, rand: rnd}
	}
}

// random picks a host of its list at random.
type random struct {
	hosts []*upstream.Host
	rand  func() uint64
}

func (p *random) Pick(*upstream.PickContext) *upstream.Host {
	return p.hosts[p.rand()%uint64(len(p.hosts))]
}
