// Package benchkit holds what the load programs under test/bench share:
// a free loopback port and a counter read from a sidecar's admin /stats.
package benchkit

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// FreePort returns a loopback port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Counter reads one stat's value from the admin at adminURL
// ("http://host:port").
func Counter(adminURL, stat string) (int, error) {
	r, err := http.Get(adminURL + "/stats?filter=^" + regexp.QuoteMeta(stat) + "$")
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), stat+": "); ok {
			return strconv.Atoi(v)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("stat %s not found", stat)
}
