package bootstrap

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/outrigger-dev/outrigger/pkg/proxy/builtin"
)

// addSeeds adds the named testdata files to the corpus.
func addSeeds(f *testing.F, names ...string) {
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzLoadYAML feeds arbitrary bytes as --config-yaml. Load must never
// panic; a configuration accepted strictly must load identically, with no
// unknown fields, when unknown fields are allowed; and whatever loads must
// go through Validate without panicking.
func FuzzLoadYAML(f *testing.F) {
	addSeeds(f, "full.yaml", "invalid.yaml", "full.json")
	for _, s := range []string{unknownYAML, unknownJSON, "", "{}", "null", "[", "node: {id: off}", "admin: {address: 5}", "a: &a [*a]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, strictErr := Load(LoadOptions{ConfigYAML: string(data)})
		lenient, lenientErr := Load(LoadOptions{ConfigYAML: string(data), AllowUnknownStaticFields: true})
		if strictErr == nil {
			if lenientErr != nil {
				t.Fatalf("accepted strictly but refused with unknown fields allowed: %v", lenientErr)
			}
			if !proto.Equal(strict.Bootstrap, lenient.Bootstrap) || len(lenient.UnknownFields) != 0 {
				t.Fatalf("allowing unknown fields changed a clean configuration: %v, unknown %q", lenient.Bootstrap, lenient.UnknownFields)
			}
		}
		if lenientErr == nil {
			_ = Validate(lenient.Bootstrap, builtin.Registry())
		}
	})
}

// FuzzDecodeJSON checks the JSON walker against protojson: whatever
// protojson accepts strictly, decode accepts too, with the same result (the
// walker must never invent a problem).
func FuzzDecodeJSON(f *testing.F) {
	addSeeds(f, "full.json")
	for _, s := range []string{unknownJSON, `{"node": {"id": "a", "id": "b"}}`, `{"statsFlushInterval": "1.5s"}`, `{"admin": {"address": {"socketAddress": {"portValue": "80"}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := decode(formatJSON, data, false)
		var want bootstrapv3.Bootstrap
		if protojson.Unmarshal(data, &want) != nil {
			return
		}
		if len(res.errs) > 0 {
			t.Fatalf("protojson accepts the input but decode refuses it: %v", res.errs)
		}
		if !proto.Equal(&want, res.bootstrap) {
			t.Fatalf("decode = %v, protojson = %v", res.bootstrap, &want)
		}
	})
}

// FuzzDecodeText checks the text-format walker against prototext in the
// same way.
func FuzzDecodeText(f *testing.F) {
	addSeeds(f, "full.pb_text")
	for _, s := range []string{unknownText, `node < id: "a" 'b' >`, `admin { address { socket_address { port_value: -1 } } }`, "node: { id: \"x\" } # c\n;"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := decode(formatText, data, false)
		var want bootstrapv3.Bootstrap
		if prototext.Unmarshal(data, &want) != nil {
			return
		}
		if len(res.errs) > 0 {
			t.Fatalf("prototext accepts the input but decode refuses it: %v", res.errs)
		}
		if !proto.Equal(&want, res.bootstrap) {
			t.Fatalf("decode = %v, prototext = %v", res.bootstrap, &want)
		}
	})
}

// FuzzDecodeBinary feeds arbitrary wire data: no panic, and a strictly
// accepted configuration is unchanged when unknown fields are allowed.
func FuzzDecodeBinary(f *testing.F) {
	addSeeds(f, fullPB)
	f.Add([]byte{0x0a, 0x02, 0xc8, 0x3e})
	f.Fuzz(func(t *testing.T, data []byte) {
		strict := decode(formatBinary, data, false)
		lenient := decode(formatBinary, data, true)
		if len(strict.errs) == 0 {
			if len(lenient.errs) > 0 || !proto.Equal(strict.bootstrap, lenient.bootstrap) || len(lenient.unknown) > 0 {
				t.Fatalf("allowing unknown fields changed a clean configuration: %v %v", lenient.errs, lenient.unknown)
			}
		}
		if len(lenient.errs) == 0 {
			_ = Validate(lenient.bootstrap, builtin.Registry())
		}
	})
}
