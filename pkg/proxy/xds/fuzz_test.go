package xds

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/outrigger-dev/outrigger/pkg/proxy/bootstrap"
)

// FuzzDecodeDiscoveryResponse feeds arbitrary bytes as a resource file in
// each format. Decoding must never panic; a file accepted strictly must be
// accepted identically, with no unknown fields, when unknown fields are
// allowed; and whatever the bootstrap decoder accepts, the update
// extraction must handle.
func FuzzDecodeDiscoveryResponse(f *testing.F) {
	for _, name := range []string{"testdata/lds.yaml", "testdata/lds.json", "testdata/lds.pb_text"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{unknownLDS, "{}", "resources: [{}]", `resources: [{"@type": type.googleapis.com/envoy.service.discovery.v3.Resource, resource: {}}]`, "\x12\x02\x0a\x00"} {
		f.Add([]byte(s))
	}
	d := newTestDecoder(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, path := range []string{"lds.yaml", "lds.json", "lds.pb_text", "lds.pb"} {
			// The bootstrap decoder alone, on the response message.
			_, _ = bootstrap.Decoder{Types: d.types.resolver}.DecodeBytes(path, data, d.types.newResponse())

			strict, _, strictErr := d.decodeBytes(path, data, false)
			lenient, unknown, lenientErr := d.decodeBytes(path, data, true)
			if strictErr != nil {
				continue
			}
			if lenientErr != nil {
				t.Fatalf("%s: accepted strictly but refused with unknown fields allowed: %v", path, lenientErr)
			}
			if len(unknown) > 0 {
				t.Fatalf("%s: unknown fields %q in a file accepted strictly", path, unknown)
			}
			if diff := cmp.Diff(strict, lenient, protocmp.Transform()); diff != "" {
				t.Fatalf("%s: allowing unknown fields changed the update:\n%s", path, diff)
			}
		}
	})
}
