package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageTimeout bounds each browser step; a healthy step takes milliseconds.
const pageTimeout = 20 * time.Second

// newBrowser starts headless Chromium ($CHROMIUM, default Debian's
// /usr/bin/chromium) with a fresh profile and everything that would reach
// the network turned off, and returns a tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin := os.Getenv("CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no browser at %s: run `make test-browser` (hack/chromium.sh installs Debian's chromium) or set CHROMIUM", bin)
	}
	// chromedp's defaults (headless, no first run, no background
	// networking, no sync, no extensions...) and what a closed network and
	// a root user need besides.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // the test may run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser now, so a broken install fails here. The first run
	// must not have a deadline (the browser lives as long as its context);
	// go test's -timeout bounds it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return ctx
}

// do runs browser steps within pageTimeout.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(step, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one browser action within pageTimeout and returns its value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	step, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(step, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// peek runs one browser action within pageTimeout for a poll: an error
// (the page is between two documents, say) is only "not yet".
func peek[T any](ctx context.Context, a chromedp.Action[T]) (T, bool) {
	step, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(step, a)
	return v, err == nil
}

// outputDir is where the test leaves its screenshots for people to look
// at: $TEST_OUTPUT_DIR/browser, by default bin/test-output/browser in the
// repository (t.TempDir would be deleted).
func outputDir(t *testing.T) string {
	t.Helper()
	base := os.Getenv("TEST_OUTPUT_DIR")
	if base == "" {
		_, file, _, _ := runtime.Caller(0)
		base = filepath.Join(filepath.Dir(file), "..", "..", "bin", "test-output")
	}
	dir := filepath.Join(base, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot saves the tab as a PNG in the output folder and logs its path.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot", chromedp.FullScreenshot(100)) // quality 100 is PNG
	path, err := filepath.Abs(filepath.Join(outputDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// activeRowJS finds the active page's row of the upstream request counter
// and returns its value, change count and test mark, or null.
const activeRowJS = `(() => {
  const row = [...document.querySelectorAll('#active-stats tbody tr')]
      .find((tr) => tr.cells[0].textContent === 'cluster.web.upstream_rq_total');
  return row ? {value: row.cells[1].textContent, changes: row.cells[2].textContent, mark: row.dataset.testMark || ''} : null;
})()`

// activeRow is what activeRowJS returns.
type activeRow struct {
	Value, Changes, Mark string
}

// TestActiveStatsPage loads the active page, types a filter, drives traffic
// and sees the counter's value change in the same row.
func TestActiveStatsPage(t *testing.T) {
	s := startSidecar(t)
	ctx := newBrowser(t)
	admin := "http://" + s.admin

	do(t, ctx, "open the active page and type a filter",
		chromedp.Navigate(admin+"/stats?format=active-html"),
		chromedp.WaitVisible(chromedp.CSS("#active-stats")),
		chromedp.SetValue(chromedp.CSS("#active-update-interval"), "1"),
		chromedp.SendKeys(chromedp.CSS("#param-1-stats-filter"), `^cluster\.web\.upstream_rq`+"\r"),
	)

	s.traffic(t, 3)
	row := waitRow(t, ctx, func(r *activeRow) bool { return r != nil && r.Value == "3" })
	before := row.Changes // 0, or more if an update came amid the requests
	// Mark the row's element: if the page replaced it rather than updating
	// it, the mark would be gone.
	do(t, ctx, "mark the row", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[any](`[...document.querySelectorAll('#active-stats tbody tr')]
      .find((tr) => tr.cells[0].textContent === 'cluster.web.upstream_rq_total').dataset.testMark = 'kept'`)(ctx, tg)
		return err
	}))

	s.traffic(t, 5)
	row = waitRow(t, ctx, func(r *activeRow) bool { return r != nil && r.Value == "8" })
	if row.Mark != "kept" || atoi(t, row.Changes) <= atoi(t, before) {
		t.Errorf("after more traffic the row is %+v (had %s changes): want the same element (mark kept) with a change counted", row, before)
	}

	names := value(t, ctx, "read the names", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#active-stats tbody tr')].map((tr) => tr.cells[0].textContent)`))
	for _, n := range names {
		if !strings.HasPrefix(n, "cluster.web.upstream_rq") {
			t.Errorf("the filter shows %q", n)
		}
	}
	if search := value(t, ctx, "read the address", chromedp.Evaluate[string](`location.search`)); !strings.Contains(search, "filter=%5Ecluster%5C.web%5C.upstream_rq") {
		t.Errorf("the address %q does not keep the filter", search)
	}
	screenshot(t, ctx, "active-stats.png")
}

// atoi parses a number the page shows.
func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("the page shows %q where a number belongs", s)
	}
	return n
}

// waitRow polls the active page until the counter's row satisfies ok.
func waitRow(t *testing.T, ctx context.Context, ok func(*activeRow) bool) *activeRow {
	t.Helper()
	var row *activeRow
	waitFor(t, 15*time.Second, "the active page to show the counter", func() bool {
		r, read := peek(ctx, chromedp.Evaluate[*activeRow](activeRowJS))
		row = r
		return read && ok(row)
	})
	return row
}

// TestStatsHTMLPage loads /stats?format=html with a filter and checks what
// it shows: the counter's value, the filled-in form, the empty sections.
func TestStatsHTMLPage(t *testing.T) {
	s := startSidecar(t)
	s.traffic(t, 2)
	ctx := newBrowser(t)

	do(t, ctx, "open the stats page",
		chromedp.Navigate("http://"+s.admin+`/stats?format=html&usedonly&filter=^cluster\.web\.upstream_rq_total$`))
	if title := value(t, ctx, "read the title", chromedp.Title()); title != "Outrigger Admin: stats" {
		t.Errorf("title %q", title)
	}
	filter := value(t, ctx, "read the filter", chromedp.Value(chromedp.CSS("#param-1-stats-filter")))
	format := value(t, ctx, "read the format", chromedp.Value(chromedp.CSS("#param-1-stats-format")))
	if filter != `^cluster\.web\.upstream_rq_total$` || format != "html" {
		t.Errorf("form shows filter %q, format %q", filter, format)
	}
	rows := value(t, ctx, "read the rows", chromedp.Evaluate[string](
		`[...document.querySelectorAll('table.stats tbody tr')].map((tr) => tr.innerText).join('\n')`))
	if fields := strings.Fields(rows); len(fields) != 3 || fields[0] != "cluster.web.upstream_rq_total" || fields[1] != "2" || fields[2] != "counter" {
		t.Errorf("stats rows %q, want the counter at 2", rows)
	}
	empty := value(t, ctx, "read the empty sections", chromedp.Evaluate[string](
		`[...document.querySelectorAll('p.none')].map((p) => p.textContent).join('|')`))
	if empty != "No text readouts found|No histograms found" {
		t.Errorf("empty sections %q", empty)
	}

	// Choosing a type in the form and applying it reloads the page.
	do(t, ctx, "apply another type",
		chromedp.SetValue(chromedp.CSS("#param-1-stats-type"), "Histograms"),
		chromedp.Click(chromedp.CSS("form#stats button")),
	)
	waitFor(t, 10*time.Second, "the page with only histograms", func() bool {
		h, _ := peek(ctx, chromedp.Evaluate[string](
			`[...document.querySelectorAll('h2')].map((h) => h.textContent).join('|')`))
		return h == "Histograms"
	})
	do(t, ctx, "open the cluster's stats", chromedp.Navigate("http://"+s.admin+`/stats?format=html&filter=^cluster\.web\.`))
	screenshot(t, ctx, "stats-html.png")
}

// TestHomePageForms submits two of the home page's forms, a mutation with a
// parameter and one without, and sees their effect.
func TestHomePageForms(t *testing.T) {
	s := startSidecar(t)
	ctx := newBrowser(t)
	admin := "http://" + s.admin

	do(t, ctx, "set every logger to debug from the home page",
		chromedp.Navigate(admin+"/"),
		chromedp.WaitVisible(chromedp.CSS(`form[action='logging'] button`)),
		chromedp.SetValue(chromedp.CSS(`select[form='logging'][name='level']`), "debug"),
		chromedp.Click(chromedp.CSS(`form[action='logging'] button`)),
	)
	body := answer(t, ctx, "/logging")
	if !strings.Contains(body, "active loggers:") || strings.Contains(body, ": info") {
		t.Errorf("the /logging form answered %q, want every logger at debug", body)
	}
	if _, levels := get(t, admin+"/logging"); strings.Contains(levels, ": info") {
		t.Errorf("after the form, /logging still lists info loggers:\n%s", levels)
	}

	do(t, ctx, "fail health checks from the home page",
		chromedp.Navigate(admin+"/"),
		chromedp.WaitVisible(chromedp.CSS(`form[action='healthcheck/fail'] button`)),
		chromedp.Click(chromedp.CSS(`form[action='healthcheck/fail'] button`)),
	)
	if body := answer(t, ctx, "/healthcheck/fail"); body != "OK" {
		t.Errorf("the /healthcheck/fail form answered %q", body)
	}
	if code, state := get(t, admin+"/ready"); code != http.StatusServiceUnavailable || !strings.Contains(state, "DRAINING") {
		t.Errorf("after the /healthcheck/fail form, /ready is %d %q", code, state)
	}
	do(t, ctx, "back home", chromedp.Navigate(admin+"/"))
	screenshot(t, ctx, "home.png")
}

// answer waits until the tab shows the answer of a form posted to path and
// returns its text.
func answer(t *testing.T, ctx context.Context, path string) string {
	t.Helper()
	var body string
	waitFor(t, 10*time.Second, "the answer of "+path, func() bool {
		loc, ok := peek(ctx, chromedp.Location())
		if !ok || !strings.HasSuffix(loc, path) {
			return false
		}
		body, ok = peek(ctx, chromedp.Text(chromedp.CSS("body")))
		body = strings.TrimSpace(body)
		return ok && body != ""
	})
	return body
}

// TestCrossSiteFormRefused opens a page on another site whose form posts
// itself to the admin, as an attacker's page would: the browser sends it,
// the admin refuses it, and the proxy keeps passing health checks.
func TestCrossSiteFormRefused(t *testing.T) {
	s := startSidecar(t)
	ctx := newBrowser(t)

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><body>
<form id='f' method='post' action='http://%s/healthcheck/fail'><input type='hidden' name='x' value='1'></form>
<script>document.getElementById('f').submit();</script>
</body></html>`, s.admin)
	}))
	t.Cleanup(evil.Close)
	// "localhost" is another site than "127.0.0.1", where the admin is.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)

	do(t, ctx, "open the other site's page", chromedp.Navigate(evilURL))
	if body := answer(t, ctx, "/healthcheck/fail"); !strings.Contains(body, "cross-origin request refused") {
		t.Errorf("the admin answered the cross-site form with %q", body)
	}
	if code, state := get(t, "http://"+s.admin+"/ready"); code != http.StatusOK {
		t.Errorf("after the cross-site form, /ready is %d %q: the mutation ran", code, state)
	}
}
