package logging

import "github.com/go-logr/logr"

// helperFile is this file as fine-grain logging names it.
const helperFile = "pkg/proxy/logging/finegrain_helper_test.go"

// logFromHelperFile logs from a second source file, so that fine-grain
// tests can tell files apart.
func logFromHelperFile(l logr.Logger, msg string) { l.V(1).Info(msg) }

// touchHelperFile makes fine-grain logging see this file without logging.
func touchHelperFile(l logr.Logger) bool { return l.V(1).Enabled() }
