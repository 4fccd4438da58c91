package hotrestart

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Request kinds, the child's questions to its parent.
const (
	kindHello          = "hello"
	kindShutdownAdmin  = "shutdown_admin"
	kindListenSocket   = "pass_listen_socket"
	kindStats          = "stats"
	kindDrainListeners = "drain_listeners"
	kindTerminate      = "terminate"
)

// maxMessage bounds one datagram; stats are sent in chunks below it.
const maxMessage = 1 << 20

// statsChunk is how many stats one stats answer holds.
const statsChunk = 2000

// request is what the child sends.
type request struct {
	Kind    string `json:"kind"`
	Version string `json:"version,omitempty"`
	Network string `json:"network,omitempty"`
	Address string `json:"address,omitempty"`
	Count   int    `json:"count,omitempty"`
}

// reply is what the parent answers; a stats answer comes in several
// replies, the last with Done set.
type reply struct {
	Error string `json:"error,omitempty"`
	// hello
	Version       string `json:"version,omitempty"`
	OriginalStart int64  `json:"original_start_unix_nano,omitempty"`
	Generation    uint64 `json:"generation,omitempty"`
	// stats
	Counters map[string]uint64 `json:"counters,omitempty"`
	Gauges   map[string]int64  `json:"gauges,omitempty"`
	Done     bool              `json:"done,omitempty"`
}

// send writes v as one datagram, with the descriptors fds attached.
func send(c *net.UnixConn, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > maxMessage {
		return fmt.Errorf("hot-restart message of %d bytes exceeds %d", len(b), maxMessage)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err = c.WriteMsgUnix(b, oob, nil)
	return err
}

// receive reads one datagram into v and returns the descriptors it
// carried, as files the caller owns.
func receive(c *net.UnixConn, v any) ([]*os.File, error) {
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(64*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	files, ferr := parseRights(oob[:oobn])
	if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
		closeFiles(files)
		return nil, errors.New("hot-restart message truncated")
	}
	if n == 0 {
		closeFiles(files)
		return nil, errors.New("hot-restart peer closed the connection")
	}
	if ferr != nil {
		closeFiles(files)
		return nil, ferr
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		closeFiles(files)
		return nil, fmt.Errorf("bad hot-restart message: %w", err)
	}
	return files, nil
}

// parseRights turns SCM_RIGHTS control messages into files.
func parseRights(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for i := range msgs {
		fds, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "hot-restart-socket"))
		}
	}
	return files, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}
