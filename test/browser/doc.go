// Package browser drives the admin interface's pages in a real browser:
// headless Chromium (Debian's package, installed by hack/chromium.sh),
// controlled from Go through the DevTools protocol with chromedp. The test
// starts the built sidecar with a real upstream, sends bounded traffic
// through it, and checks what a person would see: the active stats page
// updating values in place, the HTML stats page, a home-page form taking
// effect, and a page on another site failing to drive a mutation.
//
// Run it with `make test-browser` (part of `make test`), or by hand with
// SIDECAR_BIN=bin/sidecar go test ./test/browser/. Its screenshots go to
// bin/test-output/browser/ (or $TEST_OUTPUT_DIR/browser/).
package browser
