package ipdetection

import "testing"

func TestLastXFF(t *testing.T) {
	tests := []struct {
		xff    string
		skip   uint32
		want   string // "" for an error
		single bool
	}{
		{"203.0.113.1", 0, "203.0.113.1", true},
		{"203.0.113.1, 10.0.0.1", 0, "10.0.0.1", false},
		{"203.0.113.1, 10.0.0.1", 1, "203.0.113.1", false},
		{"203.0.113.1,10.0.0.1", 2, "", false},
		{"2001:db8::1, 10.0.0.1", 1, "2001:db8::1", false},
		{"not-an-ip", 0, "", false},
		{"", 0, "", false},
	}
	for _, tc := range tests {
		ip, single, err := LastXFF(tc.xff, tc.skip)
		if tc.want == "" {
			if err == nil {
				t.Errorf("LastXFF(%q, %d) = %v, want an error", tc.xff, tc.skip, ip)
			}
			continue
		}
		if err != nil || ip.String() != tc.want || single != tc.single {
			t.Errorf("LastXFF(%q, %d) = %v, %v, %v; want %s, %v", tc.xff, tc.skip, ip, single, err, tc.want, tc.single)
		}
	}
}
