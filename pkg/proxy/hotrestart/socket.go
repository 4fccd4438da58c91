package hotrestart

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"
)

// SocketName is the address of the hot-restart socket a process of the
// given epoch listens on: --socket-path (a leading @ is the abstract
// namespace) with Envoy's suffix _<role>_<base id * 10 + epoch>.
func SocketName(path string, baseID, epoch uint32) string {
	return fmt.Sprintf("%s_parent_%d", path, uint64(baseID)*10+uint64(epoch))
}

// listen binds the socket name; a filesystem name (no leading @) gets mode
// and replaces a stale socket file left by a process that died.
func listen(name string, mode uint32) (*net.UnixListener, error) {
	abstract := strings.HasPrefix(name, "@")
	if !abstract {
		if fi, err := os.Lstat(name); err == nil && fi.Mode().Type() == fs.ModeSocket {
			// A socket nobody answers on is stale; a live one is refused
			// by the bind below.
			if c, err := net.Dial("unixpacket", name); err == nil {
				_ = c.Close()
			} else {
				_ = os.Remove(name)
			}
		}
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: name, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	if !abstract {
		ln.SetUnlinkOnClose(true)
		if err := os.Chmod(name, fs.FileMode(mode)); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("setting --socket-mode on %s: %w", name, err)
		}
	}
	return ln, nil
}

// errNoParent is wrapped in the error of a child that finds no parent.
var errNoParent = errors.New("no parent process listens on the hot-restart socket")
