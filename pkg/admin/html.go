package admin

import (
	"crypto/rand"
	"encoding/base64"
)

// The admin's HTML pages (the home page, /stats?format=html and
// /stats?format=active-html) are self-contained: inline style and script,
// nothing loaded from elsewhere, because the admin is usually reached
// through a port-forward from a machine that may have no internet access.
// Their links are relative, without the leading slash, so the pages also
// work embedded under another console's sub-path.

// pageStyle is the style sheet every admin page inlines.
const pageStyle = `body { font-family: sans-serif; margin: 1em 2em; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 1.2em; }
.nav { margin: 0 0 1em 0; }
.home-table { border-collapse: collapse; }
.home-data { text-align: left; vertical-align: top; padding: 0.2em 1.5em 0.2em 0.3em; }
.option { padding: 0.1em 0.3em 0.1em 2em; }
.gray { background-color: #eeeeee; }
.vert-space { height: 0.4em; }
.home-form { display: inline; margin: 0; }
.button-as-link { background: none; border: none; padding: 0; color: #0645ad; text-decoration: underline; cursor: pointer; font: inherit; }
.stats { border-collapse: collapse; font-family: monospace; }
.stats th { text-align: left; background-color: #dddddd; padding: 0.2em 0.6em; font-family: sans-serif; }
.stats td { padding: 0.1em 0.6em; vertical-align: top; }
.stats tr:nth-child(even) { background-color: #f4f4f4; }
.stats .value { text-align: right; }
.none { font-style: italic; }
.status { color: #b00020; min-height: 1.2em; }
.stats tr.changed { background-color: #fff3b0; }
`

// cspNonceBytes is the entropy of a page's script nonce.
const cspNonceBytes = 16

// newCSPNonce returns a fresh nonce for one page's inline scripts.
func newCSPNonce() string {
	b := make([]byte, cspNonceBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// setHTMLHeaders marks w as an admin HTML page. Its Content-Security-Policy
// lets the page use only what it carries itself: its inline style, the
// scripts holding scriptNonce (none when it is empty), requests back to the
// admin, and forms that submit to the admin. A stat name or value that
// smuggled markup past the escaping still could not run a script; and the
// page may be framed only by the admin's own origin, so another site cannot
// overlay it to trick a click on a mutation's button (clickjacking, which
// the cross-origin check cannot see: the POST would come from the page
// itself).
func setHTMLHeaders(w *Response, scriptNonce string) {
	w.SetContentType(ContentTypeHTML)
	policy := "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; " +
		"frame-ancestors 'self'; base-uri 'none'"
	if scriptNonce != "" {
		policy += "; script-src 'nonce-" + scriptNonce + "'; connect-src 'self'"
	}
	h := w.Header()
	h.Set("Content-Security-Policy", policy)
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Referrer-Policy", "no-referrer")
}
