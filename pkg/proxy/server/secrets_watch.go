package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/go-logr/logr"

	"github.com/outrigger-dev/outrigger/pkg/proxy/filewatch"
	"github.com/outrigger-dev/outrigger/pkg/proxy/logging"
	"github.com/outrigger-dev/outrigger/pkg/proxy/stats"
	"github.com/outrigger-dev/outrigger/pkg/proxy/tlsconfig"
)

// maxStableReads bounds the reads of a secret's files while they keep
// changing under the reader (Envoy's SdsApi: five).
const maxStableReads = 5

// secretWatch follows the files a secret delivered by SDS names, as
// Envoy's SdsApi does: the secret's watched_directory (tls_certificate's
// or validation_context's) when it has one, else the directory of each
// file, for files moved into place (the kubelet swapping a mounted
// Secret's ..data link). When their contents change, the contexts using
// the secret compile again and new handshakes use the new files. Files
// that do not make a context (a key that does not match, a half-written
// chain) keep the old one, with a warning and sds.<name>.key_rotation_failed.
type secretWatch struct {
	p      *tlsconfig.Provider
	log    logr.Logger
	failed *stats.Counter

	mu      sync.Mutex
	watches []*filewatch.Watcher
	// digest is of the files the contexts were last compiled with.
	digest [sha256.Size]byte
	closed bool
}

// newSecretWatch is the watch of p's files, with its stat in scope
// (sds.<name>.).
func newSecretWatch(p *tlsconfig.Provider, scope stats.Scope, log logr.Logger) *secretWatch {
	return &secretWatch{p: p, log: log, failed: scope.Counter("key_rotation_failed")}
}

// watchDir is one directory to follow.
type watchDir struct {
	path   string
	modify bool
}

// watchDirs are the directories the secret's files are followed in.
func watchDirs(sec *tlsv3.Secret) []watchDir {
	var wd *corev3.WatchedDirectory
	switch {
	case sec.GetTlsCertificate() != nil:
		wd = sec.GetTlsCertificate().GetWatchedDirectory()
	case sec.GetValidationContext() != nil:
		wd = sec.GetValidationContext().GetWatchedDirectory()
	}
	if wd != nil {
		return []watchDir{{path: wd.GetPath(), modify: wd.GetWatchModify()}}
	}
	var out []watchDir
	for _, name := range secretFiles(sec) {
		d := watchDir{path: filepath.Dir(name)}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// offer applies sec with update (the provider's Update) after setting up
// the watches of its files, which replace the previous value's once it is
// applied. A directory that cannot be watched rejects the secret, as
// Envoy's watcher does.
func (w *secretWatch) offer(sec *tlsv3.Secret, update func() error) error {
	var (
		watches []*filewatch.Watcher
		errs    []error
	)
	for _, d := range watchDirs(sec) {
		dw, err := filewatch.Moves(d.path, d.modify, anyName, w.log)
		if err != nil {
			errs = append(errs, fmt.Errorf("watched directory: %w", err))
			continue
		}
		watches = append(watches, dw)
	}
	if err := errors.Join(errs...); err != nil {
		closeWatches(watches)
		return err
	}
	// The digest is taken before the contexts read the files: a change
	// in between is seen by the watch and compiled again.
	digest := filesDigest(sec)
	if err := update(); err != nil {
		closeWatches(watches)
		return err
	}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		closeWatches(watches)
		return nil
	}
	old := w.watches
	w.watches, w.digest = watches, digest
	w.mu.Unlock()
	closeWatches(old)
	for _, dw := range watches {
		go func() {
			for range dw.Moved() {
				w.changed()
			}
		}()
	}
	return nil
}

// changed reads the secret's files again and, when their contents
// differ from the ones compiled, compiles the contexts with them.
func (w *secretWatch) changed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	sec := w.p.Secret()
	if sec == nil {
		return
	}
	// A stable set of files: one read that two in a row agree on.
	digest := filesDigest(sec)
	stable := false
	for range maxStableReads {
		next := filesDigest(sec)
		if next == digest {
			stable = true
			break
		}
		digest = next
	}
	if !stable {
		logging.Warning(w.log, fmt.Sprintf("Unable to atomically refresh secrets due to > %d non-atomic rotations observed", maxStableReads), "secret", w.p.Name())
	}
	if digest == w.digest {
		return
	}
	if err := w.p.Refresh(); err != nil {
		logging.Warning(w.log, "Failed to reload certificates: "+err.Error(), "secret", w.p.Name())
		w.failed.Inc()
		return
	}
	w.digest = digest
}

// close stops following the files.
func (w *secretWatch) close() {
	w.mu.Lock()
	w.closed = true
	old := w.watches
	w.watches = nil
	w.mu.Unlock()
	closeWatches(old)
}

// anyName accepts every file moved into a secret's watched directory.
func anyName(string) bool { return true }

// closeWatches closes each watch.
func closeWatches(ws []*filewatch.Watcher) {
	for _, dw := range ws {
		_ = dw.Close()
	}
}
