package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h1Request is the request every HTTP/1.1 client sends (but the memory
// test's, which also asks for /big).
const h1Request = "GET /small HTTP/1.1\r\nHost: bench\r\n\r\n"

// h1CloseRequest is h1Request asking the proxy to close the connection
// after its response.
const h1CloseRequest = "GET /small HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"

// ioTimeout bounds every exchange of the clients.
const ioTimeout = 10 * time.Second

// readH1Response reads one response with a Content-Length body from br.
func readH1Response(br *bufio.Reader) error {
	length, status := -1, ""
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if status == "" {
			status = string(line)
			continue
		}
		if len(line) <= 2 {
			break
		}
		if name, value, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(name, []byte("content-length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(value)))
		}
	}
	if len(status) < 12 || status[9:12] != "200" {
		return fmt.Errorf("response %q", status)
	}
	if length < 0 {
		return errors.New("response without a content-length")
	}
	_, err := br.Discard(length)
	return err
}

// h1Exchange sends one request on c and reads its response.
func h1Exchange(c net.Conn, br *bufio.Reader) error { return h1Send(c, br, h1Request) }

// h1Send sends req on c and reads its response.
func h1Send(c net.Conn, br *bufio.Reader, req string) error {
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	return readH1Response(br)
}

// openIdle opens n connections to addr, parallel at a time, each
// carrying one request (open does the exchange), and returns them open
// and idle.
func openIdle(addr string, n, parallel int, open func(c net.Conn) error) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, parallel)
	for w := range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				c, err := net.DialTimeout("tcp", addr, ioTimeout)
				if err == nil {
					conns[i] = c
					err = open(c)
					_ = c.SetDeadline(time.Time{})
				}
				if err != nil {
					errs[w] = fmt.Errorf("connection %d: %w", i, err)
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, nil
}

// closeAll closes the connections openIdle opened.
func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// openH1 is openIdle's exchange for HTTP/1.1.
func openH1(c net.Conn) error { return h1Exchange(c, bufio.NewReaderSize(c, 1024)) }

// openH2C is openIdle's exchange for h2c with prior knowledge: the
// preface, the settings, one GET, its whole response, and the server's
// settings acknowledged. The connection then stays open with nothing in
// flight.
func openH2C(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(ioTimeout))
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "bench"}, {":path", "/small"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	bw := bufio.NewWriter(c)
	_, _ = bw.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(bw, bufio.NewReader(c))
	_ = fr.WriteSettings()
	_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	if err := bw.Flush(); err != nil {
		return err
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = fr.WriteSettingsAck()
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		case *http2.RSTStreamFrame:
			return fmt.Errorf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			return fmt.Errorf("goaway: %v", f.ErrCode)
		case *http2.HeadersFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				return nil
			}
		case *http2.DataFrame:
			if f.StreamID == 1 && f.StreamEnded() {
				return nil
			}
		}
	}
}

// newConns runs a closed loop of parallel clients against addr, each
// connecting, sending one request, reading its response and closing,
// until ctx ends or max connections were made; it counts the completed
// ones in done and the failed ones in failed. With closeReq the requests
// carry Connection: close.
func newConns(ctx context.Context, addr string, parallel int, max int64, closeReq bool, done, failed *atomic.Int64) {
	req := h1Request
	if closeReq {
		req = h1CloseRequest
	}
	var wg sync.WaitGroup
	var started atomic.Int64
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nil, 1024)
			for ctx.Err() == nil && started.Add(1) <= max {
				c, err := net.DialTimeout("tcp", addr, ioTimeout)
				if err != nil {
					failed.Add(1)
					continue
				}
				br.Reset(c)
				err = h1Send(c, br, req)
				_ = c.Close()
				if err != nil {
					failed.Add(1)
					continue
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
}
