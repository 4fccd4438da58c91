package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// Bounds of the load loop that runs through a hot restart: a few clients
// that keep their connections alive and a few that open one per request
// (so a refused connection would show), for at most hotLoadDuration and
// hotLoadMax requests each.
const (
	hotLoadKeepAlive = 3
	hotLoadFresh     = 2
	hotLoadMax       = 4000
	hotLoadPause     = 3 * time.Millisecond
)

// randomBaseID is a base id no other spec of this run is likely to use,
// so that specs never share a hot-restart socket.
func randomBaseID() int { return 1000 + rand.IntN(400_000_000) }

// hotLoad is a load loop running in the background.
type hotLoad struct {
	mu         sync.Mutex
	ok, failed int
	errors     []string
	stop       chan struct{}
	wg         sync.WaitGroup
}

// startHotLoad sends GET /hello to the listener until Stop (or hotLoadMax
// requests per client), expecting 200 and body.
func startHotLoad(port int, body string, maxDuration time.Duration) *hotLoad {
	l := &hotLoad{stop: make(chan struct{})}
	deadline := time.Now().Add(maxDuration)
	client := func(keepAlive bool) {
		defer GinkgoRecover()
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 1}}
		defer c.CloseIdleConnections()
		for i := 0; i < hotLoadMax && time.Now().Before(deadline); i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			resp, err := c.Get(listenerURL(port, "/hello"))
			var got []byte
			if err == nil {
				got, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			l.mu.Lock()
			switch {
			case err != nil:
				l.failed++
				l.errors = append(l.errors, err.Error())
			case resp.StatusCode != 200 || string(got) != body:
				l.failed++
				l.errors = append(l.errors, fmt.Sprintf("%d %q", resp.StatusCode, got))
			default:
				l.ok++
			}
			l.mu.Unlock()
			time.Sleep(hotLoadPause)
		}
	}
	for range hotLoadKeepAlive {
		l.wg.Go(func() { client(true) })
	}
	for range hotLoadFresh {
		l.wg.Go(func() { client(false) })
	}
	return l
}

// Stop ends the loop and returns the answers it counted.
func (l *hotLoad) Stop() (ok, failed int, errs []string) {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.failed, l.errors
}

var _ = Describe("Hot restart", func() {
	var (
		port   int
		baseID string
		config string
	)
	BeforeEach(func() {
		port = freePort()
		baseID = strconv.Itoa(randomBaseID())
		config = Bootstrap{Listeners: []Listener{helloListener("hello", port, "hi")}}.YAML()
	})
	timing := []string{"--drain-time-s", "1", "--parent-shutdown-time-s", "3"}

	It("hands the listening socket to the next epoch: no refused connection, no failed request, stats carried over", func() {
		parent := Start(newDir(), config, append([]string{"--base-id", baseID}, timing...)...)
		load := startHotLoad(port, "hi", 20*time.Second)
		time.Sleep(time.Second)

		child := Start(newDir(), config, append([]string{"--base-id", baseID, "--restart-epoch", "1"}, timing...)...)
		Expect(child.Stderr()).To(ContainSubstring("took the parent's listening socket over"))
		Expect(parent.Wait(20*time.Second)).To(Equal(0), "the parent exits cleanly once told to")
		Expect(parent.Stderr()).To(ContainSubstring("the child asked this process to exit"))
		time.Sleep(500 * time.Millisecond) // the child serves alone for a moment
		ok, failed, errs := load.Stop()
		Expect(failed).To(BeZero(), "failed requests: %v", errs)
		Expect(ok).To(BeNumerically(">", 50))

		// Every request went to one of the two processes; the child's
		// counter holds both once the parent is gone.
		Expect(statInt(child, "http.hello.downstream_rq_2xx")).To(BeEquivalentTo(ok))
		Expect(statInt(child, "server.hot_restart_epoch")).To(BeEquivalentTo(1))
		Expect(statInt(child, "server.hot_restart_generation")).To(BeEquivalentTo(2))
		info := child.ServerInfo()
		Expect(info.GetCommandLineOptions().GetRestartEpoch()).To(BeEquivalentTo(1))
		Expect(info.GetUptimeAllEpochs().AsDuration()).To(BeNumerically(">=", info.GetUptimeCurrentEpoch().AsDuration()+time.Second),
			"uptime_all_epochs counts from epoch 0")
	})

	It("hot-restarts twice in a row", func() {
		short := []string{"--drain-time-s", "1", "--parent-shutdown-time-s", "2"}
		first := Start(newDir(), config, append([]string{"--base-id", baseID}, short...)...)
		load := startHotLoad(port, "hi", 30*time.Second)
		second := Start(newDir(), config, append([]string{"--base-id", baseID, "--restart-epoch", "1"}, short...)...)
		Expect(first.Wait(20 * time.Second)).To(Equal(0))
		third := Start(newDir(), config, append([]string{"--base-id", baseID, "--restart-epoch", "2"}, short...)...)
		Expect(second.Wait(20 * time.Second)).To(Equal(0))
		time.Sleep(300 * time.Millisecond)
		ok, failed, errs := load.Stop()
		Expect(failed).To(BeZero(), "failed requests: %v", errs)
		Expect(statInt(third, "http.hello.downstream_rq_2xx")).To(BeEquivalentTo(ok))
		Expect(statInt(third, "server.hot_restart_generation")).To(BeEquivalentTo(3))
	})

	It("refuses a child whose hot-restart version differs", func() {
		parent := Start(newDir(), config, "--base-id", baseID)
		path := filepath.Join(newDir(), "bootstrap.yaml")
		writeFile(path, config)
		r := Run("-c", path, "--base-id", baseID, "--restart-epoch", "1", "--max-stats", "100")
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring(`hot restart compatibility version mismatch: the parent process has "1.60.16384", this process "1.60.100"`))
		Expect(parent.Running()).To(BeTrue(), "the parent keeps serving")
		Expect(parent.Get("/ready").Status).To(Equal(200))
	})

	It("fails clearly when the parent of --restart-epoch 1 is missing, naming the socket", func() {
		path := filepath.Join(newDir(), "bootstrap.yaml")
		writeFile(path, config)
		r := Run("-c", path, "--base-id", baseID, "--restart-epoch", "1")
		Expect(r.ExitCode).To(Equal(1))
		id, err := strconv.Atoi(baseID)
		Expect(err).NotTo(HaveOccurred())
		Expect(r.Stderr).To(ContainSubstring(fmt.Sprintf("unable to connect to the parent's hot-restart socket @proxy_domain_socket_parent_%d", id*10)))
	})

	It("starts fresh with --skip-hot-restart-on-no-parent", func() {
		s := Start(newDir(), config, "--base-id", baseID, "--restart-epoch", "1", "--skip-hot-restart-on-no-parent")
		Expect(s.Get("/ready").Status).To(Equal(200))
		Expect(statInt(s, "server.hot_restart_generation")).To(BeEquivalentTo(1))
	})

	It("runs epochs under the hot-restarter: SIGHUP starts the next, SIGTERM ends them all", func() {
		dir := newDir()
		path := filepath.Join(dir, "bootstrap.yaml")
		writeFile(path, config)
		session := startProcess("hot-restarter", "--", "-c", path, "--base-id", baseID,
			"--drain-time-s", "1", "--parent-shutdown-time-s", "2", "--termination-drain-time-s", "0")
		Eventually(func() string { return string(session.Err.Contents()) }, startTimeout).Should(ContainSubstring("starting main dispatch loop"))
		load := startHotLoad(port, "hi", 30*time.Second)
		session.Signal(syscall.SIGHUP)
		Eventually(func() string { return string(session.Err.Contents()) }, 20*time.Second).Should(ContainSubstring("epoch 0 exited with code 0"))
		Expect(string(session.Err.Contents())).To(ContainSubstring("initializing epoch 1"))
		ok, failed, errs := load.Stop()
		Expect(failed).To(BeZero(), "failed requests: %v", errs)
		Expect(ok).To(BeNumerically(">", 20))
		session.Terminate()
		Eventually(session, 20*time.Second).Should(gexec.Exit(0))
		Expect(string(session.Err.Contents())).To(ContainSubstring("epoch 1 exited with code 0"))
	})

	It("refuses --restart-epoch given to the hot-restarter", func() {
		r := Run("hot-restarter", "--", "--restart-epoch", "1")
		Expect(r.ExitCode).To(Equal(1))
		Expect(r.Stderr).To(ContainSubstring("--restart-epoch is set by the restarter and cannot be given"))
	})
})
