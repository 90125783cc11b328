//go:build engine

package batch_test

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/internal/headless"
)

// pageFacts is evaluated in the rendered page: what a script or a handler
// would need to exist.
const pageFacts = `JSON.stringify({
  scripts: document.querySelectorAll("script").length,
  handlers: [...document.querySelectorAll("*")].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith("on")).length,
  links: document.querySelectorAll("a, link, img, iframe, object, embed, form, base").length,
  svgs: document.querySelectorAll("svg").length,
  text: document.body.innerText
})`

// startBrowser starts headless Chromium; a missing browser fails the test.
func startBrowser(t *testing.T) *headless.Browser {
	t.Helper()
	if _, err := os.Stat(headless.DefaultBinary); err != nil {
		t.Fatalf("headless Chromium is needed (Debian package chromium, see TAGS.md): %v", err)
	}
	b, err := headless.Start(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// render loads the file path in b.
func render(t *testing.T, b *headless.Browser, path string, o headless.Options) *headless.Result {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path}
	res, err := b.Load(t.Context(), u.String(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReportRendersInChromium renders the report of a run and of a run
// directory full of hostile text in headless Chromium: no console error,
// no uncaught exception, no error in the browser's log, no dialog, no
// request but the page itself, no script element or event handler in the
// DOM, and the hostile strings shown as text. Copies of the report with a
// broken script injected prove that each kind of problem is caught.
func TestReportRendersInChromium(t *testing.T) {
	f := newFixture(t, 6)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 2, false)
	if _, err := batch.Run(t.Context(), batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out}); err != nil {
		t.Fatal(err)
	}
	browser := startBrowser(t)
	hostileDir := t.TempDir()
	writeHostileRun(t, hostileDir)
	if err := batch.WriteReport(hostileDir, nil); err != nil {
		t.Fatal(err)
	}

	for name, dir := range map[string]string{"run": f.out, "hostile": hostileDir} {
		t.Run(name, func(t *testing.T) {
			page := filepath.Join(dir, batch.ReportHTML)
			res := render(t, browser, page, headless.Options{Eval: pageFacts, Screenshot: true})
			for _, p := range res.Problems {
				t.Errorf("%s: %s", page, p)
			}
			if len(res.Requests) != 1 || !strings.HasSuffix(res.Requests[0], "/"+batch.ReportHTML) {
				t.Errorf("the page made requests %q; want only itself", res.Requests)
			}
			var facts struct {
				Scripts, Handlers, Links, Svgs int
				Text                           string
			}
			var s string
			if err := json.Unmarshal(res.Eval, &s); err != nil || json.Unmarshal([]byte(s), &facts) != nil {
				t.Fatalf("page facts: %v: %s", err, res.Eval)
			}
			if facts.Scripts != 0 || facts.Handlers != 0 || facts.Links != 0 || facts.Svgs < 2 {
				t.Errorf("the DOM holds %d scripts, %d event handlers, %d links or embeds, %d SVG charts", facts.Scripts, facts.Handlers, facts.Links, facts.Svgs)
			}
			if name == "hostile" {
				for _, h := range hostile[:5] {
					if !strings.Contains(facts.Text, h) {
						t.Errorf("the rendered page does not show %q as text", h)
					}
				}
			}
			if len(res.Screenshot) < 1000 || string(res.Screenshot[1:4]) != "PNG" {
				t.Errorf("screenshot: %d bytes, not a PNG", len(res.Screenshot))
			}
		})
	}

	// Each broken copy must be caught, by the kind of problem it causes.
	orig, err := os.ReadFile(filepath.Join(f.out, batch.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	csp := `<meta http-equiv="Content-Security-Policy"`
	withoutCSP := strings.Replace(string(orig), csp, `<meta name="x-removed"`, 1)
	for _, tc := range []struct {
		name, page, kind string
	}{
		{"inline script under the policy", inject(string(orig), `<script>throw new Error("injected")</script>`), "log"},
		{"uncaught exception", inject(withoutCSP, `<script>null.boom()</script>`), "exception"},
		{"syntax error", inject(withoutCSP, `<script>function (</script>`), "exception"},
		{"console error", inject(withoutCSP, `<script>console.error("injected error")</script>`), "console"},
		{"dialog", inject(withoutCSP, `<script>alert("injected")</script>`), "dialog"},
		{"external style sheet", inject(string(orig), `<link rel="stylesheet" href="https://example.invalid/x.css">`), "log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), batch.ReportHTML)
			if err := os.WriteFile(path, []byte(tc.page), 0o644); err != nil {
				t.Fatal(err)
			}
			res := render(t, browser, path, headless.Options{Settle: time.Second})
			found := false
			for _, p := range res.Problems {
				found = found || p.Kind == tc.kind
			}
			if !found {
				t.Errorf("problems %v: none of kind %q", res.Problems, tc.kind)
			}
			t.Logf("caught: %v", res.Problems)
		})
	}
}

func inject(page, html string) string { return strings.Replace(page, "</body>", html+"\n</body>", 1) }
