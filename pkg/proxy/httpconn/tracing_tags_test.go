package httpconn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/outrigger-dev/outrigger/pkg/proxy/tracing"
)

// encodingDriver is a driver whose tags encode as key=value;.
type encodingDriver struct{ tracing.Driver }

func (encodingDriver) EncodeTag(key, value string) string { return key + "=" + value + ";" }

// namedCluster is an upstream cluster with only a name.
type namedCluster struct {
	UpstreamCluster
	name string
}

func (c namedCluster) Name() string { return c.name }

// TestConstTagsMatchNames: the prepared tags a span gets are its
// cluster's, with their encoding, for clusters that share
// a slot, names equal in bytes but not in address, no cluster, and a
// driver that encodes nothing.
func TestConstTagsMatchNames(t *testing.T) {
	var names []string
	for i := range 3 * clusterTagSlots {
		names = append(names, fmt.Sprintf("cluster-%d", i))
	}
	names = append(names, strings.Clone(names[0]), "")
	for _, d := range []tracing.Driver{encodingDriver{}, nil} {
		c := newConstTags(d, "node", "zone")
		for round := range 3 {
			for _, name := range append(names, "(none)") {
				var sp tracing.Span
				sp.AddConstTag("before", "x")
				var want []tracing.Tag
				if name == "(none)" {
					c.addCommon(&sp, nil)
					want = []tracing.Tag{{Key: "component", Value: "proxy"}}
				} else {
					c.addCommon(&sp, namedCluster{name: name})
					want = []tracing.Tag{{Key: "component", Value: "proxy"},
						{Key: "upstream_cluster", Value: name}, {Key: "upstream_cluster.name", Value: name}}
				}
				if got := sp.Tags[1:]; fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("driver %v, round %d, cluster %q: tags %q, want %q", d, round, name, got, want)
				}
				var runs []tracing.EncodedRun
				if d != nil {
					enc := ""
					for _, w := range want {
						enc += w.Key + "=" + w.Value + ";"
					}
					runs = []tracing.EncodedRun{{At: 1, N: len(want), Enc: enc}}
				}
				if fmt.Sprint(sp.Encoded) != fmt.Sprint(runs) {
					t.Errorf("driver %v, round %d, cluster %q: encoded %v, want %v", d, round, name, sp.Encoded, runs)
				}
			}
		}
	}
}
