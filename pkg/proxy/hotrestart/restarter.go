package hotrestart

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// restarterKillWait is how long the restarter waits for its children to
// exit after forwarding SIGTERM before it kills them (as Envoy's
// hot-restarter.py does).
const restarterKillWait = 30 * time.Second

// RestarterUsage is the hot-restarter subcommand's help.
const RestarterUsage = `usage: sidecar hot-restarter [--] <sidecar options>

Runs the proxy as a container's entry point, as Envoy's hot-restarter.py:
starts epoch 0 with the options given, and on SIGHUP starts the next epoch
(--restart-epoch 1, 2, ...), which takes the listening sockets over from the
running one. SIGTERM and SIGINT are forwarded to every running epoch. The
restarter exits when the last epoch has exited: 0 when it exited cleanly; if
an epoch fails, the others are terminated and the restarter exits 1.
`

// RunRestarter is the hot-restarter subcommand: bin is the proxy binary,
// args its options. It returns the exit code.
func RunRestarter(bin string, args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	for _, a := range args {
		switch name := strings.SplitN(strings.TrimLeft(a, "-"), "=", 2)[0]; {
		case a == "-h" || a == "--help":
			fmt.Fprint(stderr, RestarterUsage)
			return 0
		case strings.HasPrefix(a, "-") && (name == "restart-epoch" || name == "use-dynamic-base-id"):
			fmt.Fprintf(stderr, "error: hot-restarter: --%s is set by the restarter and cannot be given\n", name)
			return 1
		}
	}
	r := &restarter{bin: bin, args: args, stderr: stderr, exited: make(chan childExit, 8)}
	return r.run()
}

// childExit is one epoch's end.
type childExit struct {
	epoch int
	code  int
}

type restarter struct {
	bin      string
	args     []string
	stderr   io.Writer
	epoch    int
	children map[int]*exec.Cmd
	exited   chan childExit
}

func (r *restarter) logf(format string, a ...any) {
	fmt.Fprintf(r.stderr, "hot-restarter: "+format+"\n", a...)
}

func (r *restarter) run() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	r.children = map[int]*exec.Cmd{}
	if err := r.start(); err != nil {
		r.logf("%v", err)
		return 1
	}
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				r.logf("SIGHUP: starting epoch %d", r.epoch)
				if err := r.start(); err != nil {
					r.logf("%v", err)
					r.terminateAll(syscall.SIGTERM)
					return 1
				}
			default:
				r.logf("%v: forwarding to every epoch", sig)
				r.forward(sig)
			}
		case e := <-r.exited:
			delete(r.children, e.epoch)
			r.logf("epoch %d exited with code %d", e.epoch, e.code)
			if e.code != 0 {
				r.terminateAll(syscall.SIGTERM)
				return 1
			}
			if len(r.children) == 0 {
				return 0
			}
		}
	}
}

// start starts the next epoch.
func (r *restarter) start() error {
	args := append([]string{"--restart-epoch", strconv.Itoa(r.epoch)}, r.args...)
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting epoch %d: %w", r.epoch, err)
	}
	epoch := r.epoch
	r.children[epoch] = cmd
	r.epoch++
	go func() {
		_ = cmd.Wait()
		r.exited <- childExit{epoch: epoch, code: cmd.ProcessState.ExitCode()}
	}()
	return nil
}

func (r *restarter) forward(sig os.Signal) {
	for _, c := range r.children {
		_ = c.Process.Signal(sig)
	}
}

// terminateAll signals every running epoch and waits for them, killing
// those still running after restarterKillWait.
func (r *restarter) terminateAll(sig os.Signal) {
	r.forward(sig)
	deadline := time.After(restarterKillWait)
	for len(r.children) > 0 {
		select {
		case e := <-r.exited:
			delete(r.children, e.epoch)
		case <-deadline:
			r.logf("killing the epochs still running")
			for _, c := range r.children {
				_ = c.Process.Kill()
			}
			deadline = nil
		}
	}
}
