package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// Bounds on waiting for a process. A healthy sidecar starts and stops in
// milliseconds; these only keep a broken one from hanging the suite.
const (
	startTimeout = 10 * time.Second
	stopTimeout  = 5 * time.Second
	killTimeout  = 5 * time.Second
)

// adminAddrPattern is what --admin-address-path must contain: the bound
// loopback address with the port resolved, and no trailing newline.
var adminAddrPattern = regexp.MustCompile(`^127\.0\.0\.1:[1-9][0-9]*$`)

// Sidecar is one sidecar process started by a spec. Every process is stopped
// by the spec's cleanup (SIGINT, then SIGKILL after a bounded wait), so specs
// never leak processes, whatever their outcome.
type Sidecar struct {
	// Dir is the spec's private directory: the bootstrap file, the admin
	// address file, logs and profiles live there.
	Dir string
	// ConfigPath is the bootstrap file given with -c.
	ConfigPath string
	// AddressPath is the file given with --admin-address-path.
	AddressPath string
	// Admin is the admin listener's address as the sidecar reported it.
	Admin string

	session *gexec.Session
	client  *http.Client
}

// Launch writes config to dir/name, starts the sidecar with
// `-c <file> --admin-address-path <dir>/admin.addr` followed by args, and
// returns at once without waiting for the admin listener (use Start for a
// sidecar that must come up). An empty config means no -c (for --config-yaml).
func Launch(dir, name, config string, args ...string) *Sidecar {
	GinkgoHelper()
	return launchEnv(dir, name, config, nil, args...)
}

// launchEnv is Launch with env (NAME=value) added to the sidecar's
// environment.
func launchEnv(dir, name, config string, env []string, args ...string) *Sidecar {
	GinkgoHelper()
	s := &Sidecar{
		Dir:         dir,
		AddressPath: filepath.Join(dir, "admin.addr"),
		// No keep-alive: a connection kept from before a restart or a
		// shutdown must not turn into a confusing transport error, and every
		// request then shows up as its own connection in the access log.
		client: &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{DisableKeepAlives: true},
		},
	}
	// A sidecar started before in the same directory left its address
	// there: Start must wait for this one's, not read the old one.
	if err := os.Remove(s.AddressPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		Fail(fmt.Sprintf("removing the old admin address file: %v", err))
	}
	full := []string{"--admin-address-path", s.AddressPath}
	if config != "" {
		s.ConfigPath = filepath.Join(dir, name)
		Expect(os.WriteFile(s.ConfigPath, []byte(config), 0o600)).To(Succeed())
		full = append([]string{"-c", s.ConfigPath}, full...)
	}
	s.session = startProcessEnv(env, append(full, ownHotRestartSocket(args)...)...)
	return s
}

// ownHotRestartSocket gives a sidecar that picks neither a base id nor a
// socket path a hot-restart socket of its own: every process listens on
// one, and sidecars started at once would otherwise all ask for the
// default name (and all but one fail, as Envoy's would).
func ownHotRestartSocket(args []string) []string {
	for _, a := range args {
		switch strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-") {
		case "base-id", "use-dynamic-base-id", "socket-path", "disable-hot-restart", "restart-epoch":
			return args
		}
	}
	return append(slices.Clip(args), "--socket-path", fmt.Sprintf("@outrigger_e2e_%d_%d", os.Getpid(), hotRestartSockets.Add(1)))
}

// hotRestartSockets numbers the sockets ownHotRestartSocket hands out.
var hotRestartSockets atomic.Int64

// Start is Launch followed by a bounded wait for the admin address file
// and, when the sidecar logs to stderr at the info level or a more verbose
// one, for it to say it is LIVE: its listeners are bound only after the
// admin listener, so a spec that used one at once could find it refused.
// It fails the spec at once, with the process's stderr, if the sidecar
// exits instead of coming up.
func Start(dir, config string, args ...string) *Sidecar {
	GinkgoHelper()
	return StartEnv(dir, config, nil, args...)
}

// StartEnv is Start with env (NAME=value) added to the sidecar's
// environment.
func StartEnv(dir, config string, env []string, args ...string) *Sidecar {
	GinkgoHelper()
	s := launchEnv(dir, "bootstrap.yaml", config, env, args...)
	s.WaitForAdmin()
	if logsLiveToStderr(args) {
		s.WaitLive()
	}
	return s
}

// logsLiveToStderr reports whether a sidecar started with args writes the
// "starting main dispatch loop" line to stderr: no --log-path, and no
// level above info.
func logsLiveToStderr(args []string) bool {
	for i, a := range args {
		switch a {
		case "--log-path":
			return false
		case "-l", "--log-level":
			if i+1 < len(args) {
				switch args[i+1] {
				case "warning", "warn", "error", "critical", "off":
					return false
				}
			}
		}
	}
	return true
}

// WaitForAdmin waits until the address file holds a complete address.
func (s *Sidecar) WaitForAdmin() {
	GinkgoHelper()
	Eventually(func() string {
		if code := s.session.ExitCode(); code != -1 {
			StopTrying(fmt.Sprintf("sidecar exited with code %d before its admin listener came up; stderr:\n%s",
				code, s.Stderr())).Now()
		}
		b, err := os.ReadFile(s.AddressPath)
		if err != nil {
			return ""
		}
		return string(b)
	}, startTimeout).Should(MatchRegexp(adminAddrPattern.String()))
	b, err := os.ReadFile(s.AddressPath)
	Expect(err).NotTo(HaveOccurred())
	s.Admin = string(b)
}

// WaitLive waits until the server says it is LIVE: its admin comes up
// before the listeners, so /ready answers 503 for a moment after Start.
// It reads the log rather than asking /ready, whose requests some specs
// count in the admin's stats; the log must go to stderr at the default
// level (info) or a more verbose one.
func (s *Sidecar) WaitLive() {
	GinkgoHelper()
	Eventually(s.Stderr, startTimeout).Should(ContainSubstring("starting main dispatch loop"))
}

// Stdout and Stderr return everything the process wrote so far.
func (s *Sidecar) Stdout() string { return string(s.session.Out.Contents()) }

// Stderr returns everything the process wrote to stderr so far.
func (s *Sidecar) Stderr() string { return string(s.session.Err.Contents()) }

// Signal sends sig to the process.
func (s *Sidecar) Signal(sig os.Signal) { s.session.Signal(sig) }

// Running reports whether the process has not exited yet.
func (s *Sidecar) Running() bool { return s.session.ExitCode() == -1 }

// Wait waits (bounded) for the process to exit and returns its exit code.
func (s *Sidecar) Wait(timeout time.Duration) int {
	GinkgoHelper()
	Eventually(s.session, timeout).Should(gexec.Exit(), "the sidecar did not exit; stderr:\n%s", s.Stderr())
	return s.session.ExitCode()
}

// Response is an HTTP answer read in full.
type Response struct {
	Status int
	Body   string
	Header http.Header
}

// Get sends GET <path> to the admin listener.
func (s *Sidecar) Get(path string) Response {
	GinkgoHelper()
	return s.Do(http.MethodGet, path, nil, nil)
}

// Post sends a body-less POST <path> to the admin listener, as curl -X POST does.
func (s *Sidecar) Post(path string) Response {
	GinkgoHelper()
	return s.Do(http.MethodPost, path, nil, nil)
}

// Do sends one request to the admin listener. path goes on the wire exactly
// as given (it may hold "//" or ".." to exercise normalization).
func (s *Sidecar) Do(method, path string, body io.Reader, header http.Header) Response {
	GinkgoHelper()
	Expect(s.Admin).NotTo(BeEmpty(), "the sidecar's admin address is not known yet")
	return httpDo(s.client, method, "http://"+s.Admin+path, body, header)
}

// httpDo sends one request and reads the whole answer.
func httpDo(client *http.Client, method, url string, body io.Reader, header http.Header) Response {
	GinkgoHelper()
	req, err := http.NewRequest(method, url, body)
	Expect(err).NotTo(HaveOccurred())
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	Expect(err).NotTo(HaveOccurred(), "%s %s", method, url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred(), "reading the answer to %s %s", method, url)
	return Response{Status: resp.StatusCode, Body: string(b), Header: resp.Header}
}

// Result is the outcome of a sidecar run to completion.
type Result struct {
	ExitCode int
	Stdout   string
	Stderr   string
}

// Run runs the sidecar with args and waits (bounded) for it to exit. It is
// for invocations that must not serve: --version, --help, command line
// errors, --mode validate. A run that does not exit in time fails the spec
// and is stopped by the cleanup.
func Run(args ...string) Result {
	GinkgoHelper()
	return runEnv(nil, args...)
}

// runEnv is Run with env (NAME=value) added to the environment.
func runEnv(env []string, args ...string) Result {
	GinkgoHelper()
	session := startProcessEnv(env, args...)
	Eventually(session, startTimeout).Should(gexec.Exit(),
		"sidecar %s did not exit; stderr:\n%s", strings.Join(args, " "), session.Err.Contents())
	return Result{
		ExitCode: session.ExitCode(),
		Stdout:   string(session.Out.Contents()),
		Stderr:   string(session.Err.Contents()),
	}
}

// startProcess starts the binary and registers its cleanup.
func startProcess(args ...string) *gexec.Session {
	GinkgoHelper()
	return startProcessEnv(nil, args...)
}

// startProcessEnv is startProcess with env added to the environment.
func startProcessEnv(env []string, args ...string) *gexec.Session {
	GinkgoHelper()
	cmd := exec.Command(sidecarBin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Own process group: a signal a developer sends to the test run with ^C
	// is not delivered to the sidecars too, so cleanup stays in charge.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	session, err := gexec.Start(cmd,
		gexec.NewPrefixedWriter("[sidecar out] ", GinkgoWriter),
		gexec.NewPrefixedWriter("[sidecar err] ", GinkgoWriter))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stopProcess, session)
	return session
}

// stopProcess ends a session this suite started: SIGINT (an immediate
// clean shutdown; SIGTERM would first hold the process for its termination
// drain), then SIGKILL if the process has not exited within stopTimeout. It
// never touches anything else.
func stopProcess(session *gexec.Session) error {
	if session.ExitCode() != -1 {
		return nil
	}
	session.Interrupt()
	select {
	case <-session.Exited:
		return nil
	case <-time.After(stopTimeout):
	}
	session.Kill()
	select {
	case <-session.Exited:
		return errors.New("the sidecar had not exited after SIGINT and was killed (a request still in flight holds a clean shutdown for up to its 5 s grace: release held upstream requests in a cleanup registered after the sidecar started)")
	case <-time.After(killTimeout):
		return errors.New("the sidecar survived SIGKILL")
	}
}
