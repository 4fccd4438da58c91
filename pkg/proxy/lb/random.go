package lb

import "github.com/outrigger-dev/outrigger/pkg/proxy/upstream"

// randomPolicy is RANDOM: any host of the list, each as likely, whatever
// its weight (Envoy's random balancer ignores weights).
type randomPolicy struct{}

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
