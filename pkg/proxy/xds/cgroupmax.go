package xds

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The files of the cgroup's memory limit, as the overload manager's
// cgroup_memory monitor reads them: cgroup v2's, else v1's.
const (
	cgroupV2MemoryMax = "sys/fs/cgroup/memory.max"
	cgroupV1MemoryMax = "sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// cgroupV1Unlimited is the least value v1 writes for no limit (the
// largest page-aligned int64, 9223372036854771712, on 4 KiB pages); any
// limit from there on is none.
const cgroupV1Unlimited = 1 << 62

// cgroupMemoryMax returns the memory limit of the process's cgroup read
// under root ("" for "/"): v2's memory.max, else v1's
// memory.limit_in_bytes; 0 when there is none ("max", v1's unlimited
// value) or neither file is readable and well-formed.
func cgroupMemoryMax(root string) uint64 {
	if root == "" {
		root = "/"
	}
	for _, name := range []string{cgroupV2MemoryMax, cgroupV1MemoryMax} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue
		}
		text := strings.TrimSpace(string(b))
		if text == "max" {
			return 0
		}
		v, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v >= cgroupV1Unlimited {
			// v1 may write -1 for no limit.
			return 0
		}
		return v
	}
	return 0
}
