package options

import "testing"

func TestAffinityCPUCount(t *testing.T) {
	n, err := affinityCPUCount()
	if err != nil {
		t.Fatalf("affinityCPUCount: %v", err)
	}
	if n < 1 {
		t.Errorf("affinityCPUCount() = %d, want at least 1", n)
	}
}
