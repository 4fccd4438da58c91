package tlsinspector

import "testing"

// TestFingerprintParts checks the pieces the fingerprints are made of:
// GREASE values, JA4's ALPN characters and versions, and that GREASE is
// left out of JA3.
func TestFingerprintParts(t *testing.T) {
	for _, v := range []uint16{0x0a0a, 0x1a1a, 0xfafa} {
		if !grease(v) {
			t.Errorf("%#04x is GREASE", v)
		}
	}
	for _, v := range []uint16{0x0a1a, 0x1301, 0x000a} {
		if grease(v) {
			t.Errorf("%#04x is not GREASE", v)
		}
	}
	for in, want := range map[string]string{"": "00", "h2": "h2", "http/1.1": "h1", "\xabx\xcd": "ad"} {
		if got := ja4ALPN(in); got != want {
			t.Errorf("ja4ALPN(%q) = %q, want %q", in, got, want)
		}
	}
	f := helloFields{version: 0x0303, ciphers: []uint16{4865}, extensions: []uint16{0, 10}, groups: []uint16{29}, pointFormats: []uint8{0}}
	// md5("771,4865,0-10,29,0"), by md5sum
	if got, want := ja3(f), "f3f2335434a688e6551634e27259067a"; got != want {
		t.Errorf("ja3 = %q, want %q", got, want)
	}
	f.sni, f.versions = true, []uint16{0x0304, 0x0303}
	if got := ja4(f)[:10]; got != "t13d010200" {
		t.Errorf("ja4 prefix = %q, want t13d010200", got)
	}
}
