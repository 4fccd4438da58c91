package listener

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// echoLine answers one line with the same line, then closes.
type echoLine struct{}

func (echoLine) HandleConn(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	_, _ = c.Write([]byte(line))
}

func TestBindServeStop(t *testing.T) {
	for name, addr := range map[string]string{"ipv4 port 0": "127.0.0.1:0", "ipv6 port 0": "[::1]:0"} {
		t.Run(name, func(t *testing.T) {
			l := New(Config{Name: "test", Address: addr, Handler: echoLine{}, Log: logr.Discard()})
			if l.Addr() != nil {
				t.Fatal("Addr before Bind is not nil")
			}
			if err := l.Bind(); err != nil {
				if name == "ipv6 port 0" {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatal(err)
			}
			if port := l.Addr().(*net.TCPAddr).Port; port == 0 {
				t.Fatal("port 0 was not resolved")
			}
			served := make(chan error, 1)
			go func() { served <- l.Serve() }()

			c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("hello\n")); err != nil {
				t.Fatal(err)
			}
			got, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || got != "hello\n" {
				t.Fatalf("echo = %q, %v", got, err)
			}
			c.Close()

			l.Stop()
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("Serve after Stop returned %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Serve did not return after Stop")
			}
			<-l.Done()
			if _, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
				t.Fatal("a stopped listener still accepts")
			}
		})
	}
}

func TestBindErrorNamesTheListener(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	l := New(Config{Name: "clash", Address: taken.Addr().String(), Handler: echoLine{}, Log: logr.Discard()})
	err = l.Bind()
	if want := `listener "clash": cannot bind`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v, want prefix %q", err, want)
	}
}

func TestServeBeforeBind(t *testing.T) {
	l := New(Config{Name: "early", Address: "127.0.0.1:0", Handler: echoLine{}, Log: logr.Discard()})
	if err := l.Serve(); err == nil {
		t.Fatal("Serve before Bind succeeded")
	}
}
