package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dropExecutablePages unmaps from this process the resident pages of the
// executable's read-only mappings (its code, and its read-only data: type
// information, the function tables, protobuf descriptors), and returns
// how many bytes were resident there. A read-only private mapping of a
// file holds nothing but the file's own pages, so MADV_DONTNEED loses
// nothing: a later access faults the same bytes back from the page cache.
// A mapping that holds private copies of its pages (a debugger's
// breakpoints, relocations written before it was made read-only) is left
// alone, since dropping those would bring the file's original bytes back.
//
// It then keeps what comes back to the pages the process reads: see
// faultExecutableByPage.
func dropExecutablePages() (int64, error) {
	exe, err := selfExecutable()
	if err != nil {
		return 0, err
	}
	maps, err := executableMappings(exe)
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, m := range maps {
		if m.anonymous != 0 || m.rss == 0 {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return dropped, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		dropped += m.rss
	}
	return dropped, faultExecutableByPage(exe, maps)
}

// faultExecutableByPage makes a later fault on the executable's read-only
// mappings map the page read, not the 64 KiB around it. On a fault in a
// file mapping the kernel maps, besides the page, every neighbour within
// fault_around_bytes (64 KiB) that the page cache holds, and reads ahead
// 128 KiB or more when the page is not cached; a freshly built or copied
// binary is cached whole, so each page of code or tables the data plane
// reads cost 16 resident pages, which the process never reads (the hot
// code of a request and the function tables that stack scans read are
// scattered over a 70 MiB file: measured on the peers benchmark's
// bootstrap, every one of the executable's resident 64 KiB windows was
// full). MADV_RANDOM stops the read-ahead of those mappings, and
// POSIX_FADV_DONTNEED evicts from the page cache the executable's pages
// that no process maps (pages another process of the same binary maps
// stay), so the neighbours a fault finds cached are the pages some process
// did read. The cost is a read from the file for each page's first use
// after start, instead of a mapping of a cached page; nothing changes once
// a page is resident. Neither call loses data: the file's pages are clean.
func faultExecutableByPage(exe executable, maps []mapping) error {
	for _, m := range maps {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_RANDOM); errno != 0 {
			return fmt.Errorf("madvise random %#x-%#x: %w", m.start, m.end, errno)
		}
	}
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", exe.path, err)
	}
	return nil
}

// mapping is one read-only private mapping of the executable, from
// /proc/self/smaps: its addresses, its resident and privately copied
// bytes, and whether it is advised for random access (MADV_RANDOM, "rr" in
// its VmFlags).
type mapping struct {
	start, end     uintptr
	rss, anonymous int64
	random         bool
}

// executable names this process's executable file the ways
// /proc/self/smaps may: by device and inode ("fe:00", "10453219"), and by
// path. On overlayfs (a container's image) the mappings show the inode of
// the layer's file, which stat on /proc/self/exe does not give, but their
// path is the one /proc/self/exe links to.
type executable struct{ dev, ino, path string }

// selfExecutable describes this process's executable.
func selfExecutable() (executable, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return executable{}, err
	}
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return executable{}, err
	}
	return executable{
		dev:  fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev)),
		ino:  strconv.FormatUint(st.Ino, 10),
		path: path,
	}, nil
}

// executableMappings lists the read-only private mappings of exe in
// /proc/self/smaps.
func executableMappings(exe executable) ([]mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && !bytes.ContainsAny(k, " -") {
			// A field of the current mapping ("Rss:   123 kB").
			if cur == nil {
				continue
			}
			switch string(k) {
			case "Rss":
				cur.rss = kilobytes(v)
			case "Anonymous":
				cur.anonymous = kilobytes(v)
			case "VmFlags":
				cur.random = slices.Contains(strings.Fields(string(v)), "rr")
			}
			continue
		}
		// A mapping's header: "start-end perms offset dev inode path".
		cur = nil
		fields := strings.Fields(string(line))
		if len(fields) < 6 || (fields[1] != "r-xp" && fields[1] != "r--p") {
			continue
		}
		if (fields[3] != exe.dev || fields[4] != exe.ino) && strings.Join(fields[5:], " ") != exe.path {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, mapping{start: uintptr(start), end: uintptr(end)})
		cur = &out[len(out)-1]
	}
	return out, sc.Err()
}

// kilobytes parses a size field of smaps ("   123 kB") into bytes.
func kilobytes(v []byte) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(v)), "kB")), 10, 64)
	return n << 10
}
