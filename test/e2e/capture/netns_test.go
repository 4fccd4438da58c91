package capture

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// pod is a pair of network namespaces joined by a veth pair, created for
// one test and deleted when it ends: "app" stands for the pod, "peer" for
// the rest of the network.
type pod struct {
	app, peer     string // namespace names (ip netns)
	appIP, peerIP string
	// appIP6 and peerIP6 are their IPv6 addresses.
	appIP6, peerIP6 string
}

// newPod creates the namespaces with unique names and addresses inside
// them (never on the host's own network).
func newPod(t *testing.T) *pod {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	p := &pod{
		app:    "ocap-app-" + id,
		peer:   "ocap-peer-" + id,
		appIP:  fmt.Sprintf("10.%d.%d.1", 200+int(b[0])%50, b[1]),
		peerIP: fmt.Sprintf("10.%d.%d.2", 200+int(b[0])%50, b[1]),
		// Unique local addresses (fd00::/8), never routed anywhere.
		appIP6:  canonical(fmt.Sprintf("fd6f:%s:%s::1", id[:4], id[4:])),
		peerIP6: canonical(fmt.Sprintf("fd6f:%s:%s::2", id[:4], id[4:])),
	}
	vApp, vPeer := "oca"+id, "ocp"+id
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", p.app).Run()
		_ = exec.Command("ip", "netns", "del", p.peer).Run()
	})
	run(t, "ip", "netns", "add", p.app)
	run(t, "ip", "netns", "add", p.peer)
	run(t, "ip", "link", "add", vApp, "type", "veth", "peer", "name", vPeer)
	run(t, "ip", "link", "set", vApp, "netns", p.app)
	run(t, "ip", "link", "set", vPeer, "netns", p.peer)
	for _, side := range []struct{ ns, dev, ip, ip6 string }{{p.app, vApp, p.appIP, p.appIP6}, {p.peer, vPeer, p.peerIP, p.peerIP6}} {
		run(t, "ip", "-n", side.ns, "addr", "add", side.ip+"/24", "dev", side.dev)
		// nodad: the address is usable at once, without duplicate
		// address detection's delay.
		run(t, "ip", "-n", side.ns, "-6", "addr", "add", side.ip6+"/64", "dev", side.dev, "nodad")
		run(t, "ip", "-n", side.ns, "link", "set", side.dev, "up")
		run(t, "ip", "-n", side.ns, "link", "set", "lo", "up")
	}
	return p
}

// canonical writes an IP address as Go (and the kernel) print it: no
// leading zeros.
func canonical(ip string) string { return netip.MustParseAddr(ip).String() }

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// inNetns runs f on a thread that has entered the named namespace, then
// returns the thread to the test's namespace. Sockets f creates belong to
// the namespace for good, whichever thread uses them afterwards.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored := false
		defer func() {
			// A thread that could not return stays locked and dies
			// with its goroutine.
			if restored {
				runtime.UnlockOSThread()
			}
		}()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		restored = unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
		errc <- ferr
	}()
	return <-errc
}

// asUser runs f on a thread that has entered the named namespace and
// taken the given uid and gid (that thread's only: Linux credentials are
// per thread), so that the sockets f opens belong to that user. The
// thread is never reused: it ends with its goroutine.
func asUser(ns string, uid, gid int, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
			errc <- fmt.Errorf("setresgid: %w", e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			errc <- fmt.Errorf("setresuid: %w", e)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// listen opens a TCP listener inside a namespace ("tcp4" or "tcp6").
func listen(t *testing.T, ns, network, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := inNetns(ns, func() (err error) {
		ln, err = net.Listen(network, addr)
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// dialer dials from inside a namespace (for an http.Transport).
func dialer(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(ns, func() (err error) {
			c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
}
