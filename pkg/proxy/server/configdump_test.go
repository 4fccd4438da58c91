package server

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3" // typed_config in the sample
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/outrigger-dev/outrigger/internal/golden"
	"github.com/outrigger-dev/outrigger/pkg/proxy/extension"
)

// dumpServer is a server with just what ConfigDump reads: the bootstrap
// and the clock.
func dumpServer(t *testing.T, yamlPath string) *Server {
	t.Helper()
	b := &bootstrapv3.Bootstrap{}
	if yamlPath != "" {
		raw, err := os.ReadFile(yamlPath)
		if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := protojson.Unmarshal(js, b); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	// No extension: the dumps' node lists none.
	none, err := extension.New()
	if err != nil {
		t.Fatal(err)
	}
	return &Server{
		boot:  b,
		ext:   none,
		now:   func() time.Time { return start.Add(time.Hour) },
		start: start,
	}
}

// renderDumps lays the dumps out as /config_dump would list them, one
// JSON document each. The node's build version is left out: it follows
// the release being built.
func renderDumps(t *testing.T, dumps []proto.Message) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, d := range dumps {
		d = proto.Clone(d)
		if bd, ok := d.(*adminv3.BootstrapConfigDump); ok {
			bd.GetBootstrap().GetNode().UserAgentVersionType = nil
		}
		compact, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(d)
		if err != nil {
			t.Fatalf("render %T: %v", d, err)
		}
		out.WriteString("# " + string(d.ProtoReflect().Descriptor().FullName()) + "\n")
		if err := json.Indent(&out, compact, "", " "); err != nil {
			t.Fatal(err)
		}
		out.WriteString("\n")
	}
	return out.Bytes()
}

func TestConfigDump(t *testing.T) {
	for name, tc := range map[string]struct {
		bootstrap  string
		includeEDS bool
		types      []string
	}{
		"static": {
			bootstrap: "configdump_bootstrap.yaml",
			types:     []string{"Bootstrap", "Clusters", "Listeners", "ScopedRoutes", "Routes", "Secrets"},
		},
		"static-with-eds": {
			bootstrap:  "configdump_bootstrap.yaml",
			includeEDS: true,
			types:      []string{"Bootstrap", "Clusters", "Endpoints", "Listeners", "ScopedRoutes", "Routes", "Secrets"},
		},
		"empty-with-eds": { // no cluster, no endpoint dump (as Envoy)
			includeEDS: true,
			types:      []string{"Bootstrap", "Clusters", "Listeners", "ScopedRoutes", "Routes", "Secrets"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := ""
			if tc.bootstrap != "" {
				path = filepath.Join("testdata", tc.bootstrap)
			}
			s := dumpServer(t, path)
			dumps := s.ConfigDump(tc.includeEDS)
			var types []string
			for _, d := range dumps {
				types = append(types, string(d.ProtoReflect().Descriptor().Name()))
			}
			var want []string
			for _, ty := range tc.types {
				want = append(want, ty+"ConfigDump")
			}
			if !slices.Equal(types, want) {
				t.Errorf("dumps = %q, want %q", types, want)
			}
			golden.Check(t, filepath.Join("testdata", "configdump-"+name+".golden"), renderDumps(t, dumps))

			node := dumps[0].(*adminv3.BootstrapConfigDump).GetBootstrap().GetNode()
			if node.GetUserAgentName() != UserAgentName || node.GetUserAgentBuildVersion() == nil {
				t.Errorf("node %v lacks the build identity /server_info shows", node)
			}
		})
	}
}

// TestConfigDumpReturnsCopies checks that callers may modify the dumps
// (the admin masks them) without touching the server's bootstrap.
func TestConfigDumpReturnsCopies(t *testing.T) {
	s := dumpServer(t, filepath.Join("testdata", "configdump_bootstrap.yaml"))
	before := proto.Clone(s.boot)
	for _, d := range s.ConfigDump(true) {
		proto.Reset(d)
	}
	bd := s.ConfigDump(false)[0].(*adminv3.BootstrapConfigDump)
	bd.Bootstrap.StaticResources.Clusters = nil
	if !proto.Equal(s.boot, before) {
		t.Error("modifying a dump changed the server's bootstrap")
	}
}

func TestInitDumpStatic(t *testing.T) {
	s := dumpServer(t, filepath.Join("testdata", "configdump_bootstrap.yaml"))
	if d := s.InitDump(); d == nil || len(d.GetUnreadyTargetsDumps()) != 0 {
		t.Errorf("InitDump = %v, want an empty dump: static listeners wait for nothing", d)
	}
}
