package batch_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/attest"
	"github.com/strictgrade/strictgrade/batch"
	"github.com/strictgrade/strictgrade/schema"
)

// TestRunWritesReport: a run leaves results.md and report.html that count
// what results.jsonl holds, and a resume writes them again.
func TestRunWritesReport(t *testing.T) {
	f := newFixture(t, 5)
	signer := newSigner(t)
	ctrl := fakeController(t, signer, 2, false)
	opts := batch.Options{Controller: ctrl, Signer: signer, Items: f.items, Tasks: f.tasks, Out: f.out, Parallel: 2}
	if _, err := batch.Run(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(f.out, batch.ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"5 items (5 graded by the last run, 0 kept from before, 0 not graded;",
		"| PASS | 3 |", "| FAIL | 2 |",
		"| FAIL | wrong\\_answer | 2 |",
		"| copy | strict | 5 | 3 | 2 | 0 | 0 | 60.0% |",
		"## Grader errors\n\nNone.",
		"| item a | copy | PASS |  | 1/1 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	page, err := os.ReadFile(filepath.Join(f.out, batch.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, page)
	if got := strings.Count(string(page), `<rect class="bin"`); got == 0 {
		t.Errorf("report.html has no latency histogram")
	}

	// The resume keeps all five and writes the report again.
	os.Remove(filepath.Join(f.out, batch.ReportHTML))
	sum, err := batch.Run(t.Context(), opts)
	if err != nil || sum.Resumed != 5 {
		t.Fatalf("resume: %+v, %v", sum, err)
	}
	md, err = os.ReadFile(filepath.Join(f.out, batch.ReportMarkdown))
	if err != nil || !strings.Contains(string(md), "(0 graded by the last run, 5 kept from before, 0 not graded;") {
		t.Errorf("results.md after the resume: %v\n%s", err, md)
	}
	if _, err := os.Stat(filepath.Join(f.out, batch.ReportHTML)); err != nil {
		t.Errorf("the resume wrote no report.html: %v", err)
	}
}

// hostile are strings an items file, a task or a candidate could bring
// into a report.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(2)>`,
	`'><svg onload=alert(3)>`,
	`</td></tr></table><script>alert(4)</script>`,
	`<a href="javascript:alert(5)">x</a>`,
	`<!-- ]]> <style>*{display:none}</style>`,
	"| broken | [link](javascript:alert(6)) *bold* `code` \\",
	"{{.Title}} \u202eevil\u202c",
}

// TestReportEscapesHostileText writes a run directory whose every
// attacker-influenced string is hostile — item and task ids, reason codes,
// error messages, a verdict's reason, compat test ids, test reasons and
// dropped hunk paths (in a verdict signed and verified), an outcome the
// record lies about, invalid UTF-8 — and checks that the page holds only
// the template's own elements and attributes, no script and no event
// handler, shows each string as text, and that results.md breaks no table.
func TestReportEscapesHostileText(t *testing.T) {
	out := t.TempDir()
	writeHostileRun(t, out)
	if err := batch.WriteReport(out, nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, batch.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	checkPage(t, page)
	text := html.UnescapeString(string(page))
	for _, h := range hostile {
		// Each shows as text (bidirectional controls as spaces).
		want := strings.NewReplacer("\u202e", " ", "\u202c", " ").Replace(h)
		if !strings.Contains(text, want) {
			t.Errorf("report.html does not show %q as text", want)
		}
	}
	for _, want := range []string{"bad \uFFFD\uFFFD<b>utf8</b>", "1 of the items do not verify", "the record says \"" + hostile[7][:10]} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html does not show %q", want)
		}
	}

	md, err := os.ReadFile(filepath.Join(out, batch.ReportMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(md) {
		t.Error("results.md is not valid UTF-8")
	}
	for _, bad := range []string{"<script", "<img", "<svg", "<a ", "<style", "<!--", "<b>", "<i>", "\u202e"} {
		if bytes.Contains(md, []byte(bad)) {
			t.Errorf("results.md holds %q unescaped", bad)
		}
	}
	if link := regexp.MustCompile(`(^|[^\\])\]\(`); link.Match(md) {
		t.Errorf("results.md holds a link: %s", link.Find(md))
	}
	// Every row of a table has as many cells as its header.
	cells := regexp.MustCompile(`(^|[^\\])\|`)
	want := 0
	for i, line := range strings.Split(string(md), "\n") {
		if !strings.HasPrefix(line, "|") {
			want = 0
			continue
		}
		n := len(cells.FindAllString(line, -1))
		if want == 0 {
			want = n
		} else if n != want {
			t.Errorf("results.md line %d has %d cell separators, its table %d: %q", i+1, n, want, line)
		}
	}
}

// pageElements are the only elements report.html may hold.
var pageElements = []string{"!doctype", "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "code",
	"svg", "text", "rect", "line", "table", "tr", "th", "td", "details", "summary"}

// pageAttributes are the only attributes report.html may hold.
var pageAttributes = []string{"lang", "charset", "http-equiv", "content", "name", "id", "class", "style", "xmlns", "width", "height",
	"viewbox", "role", "aria-label", "x", "y", "dx", "dy", "x1", "y1", "x2", "y2", "text-anchor"}

// checkPage checks report.html's structure with a scanner that needs no
// HTML parser: html/template escapes every '<' of text and attribute
// values, so each '<' left opens a tag the template wrote, and the page
// must name only allowed elements and attributes (no script, no event
// handler, no link, no external resource) and forbid scripts by policy.
func checkPage(t *testing.T, page []byte) {
	t.Helper()
	if !utf8.Valid(page) {
		t.Error("report.html is not valid UTF-8")
	}
	s := string(page)
	csp := `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">`
	if i := strings.Index(s, csp); i < 0 || i > strings.Index(s, "<title>") {
		t.Error("report.html does not start its head with the script-forbidding Content-Security-Policy")
	}
	quoted := regexp.MustCompile(`"[^"]*"`)
	attr := regexp.MustCompile(`\s([^\s=/>]+)`)
	for i := strings.IndexByte(s, '<'); i >= 0; {
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			t.Fatalf("report.html: unterminated tag at byte %d", i)
		}
		tag := s[i+1 : i+end]
		name := strings.ToLower(strings.TrimPrefix(strings.FieldsFunc(tag, func(r rune) bool { return r == ' ' || r == '\n' })[0], "/"))
		name = strings.TrimSuffix(name, "/")
		if !slices.Contains(pageElements, name) {
			t.Errorf("report.html: element %q at byte %d: %.80s", name, i, s[i:])
		}
		rest := quoted.ReplaceAllString(tag, `""`)
		if name != "!doctype" {
			for _, m := range attr.FindAllStringSubmatch(rest, -1) {
				if a := strings.ToLower(m[1]); !slices.Contains(pageAttributes, a) {
					t.Errorf("report.html: attribute %q in <%s> at byte %d", a, name, i)
				}
			}
		}
		if strings.Contains(strings.ToLower(tag), "javascript:") || strings.Contains(strings.ToLower(tag), "url(") {
			t.Errorf("report.html: a tag names a script or resource: %.120s", tag)
		}
		next := strings.IndexByte(s[i+end:], '<')
		if next < 0 {
			break
		}
		i += end + next
	}
	// The style sheet itself loads nothing.
	style := s[strings.Index(s, "<style>"):strings.Index(s, "</style>")]
	for _, bad := range []string{"url(", "@import", "expression("} {
		if strings.Contains(style, bad) {
			t.Errorf("report.html's style sheet holds %q", bad)
		}
	}
}

// writeHostileRun writes a run directory into out whose every
// attacker-influenced string is one of hostile.
func writeHostileRun(t *testing.T, out string) {
	t.Helper()
	signer := newSigner(t)
	pem, err := signer.PublicKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	run := batch.RunInfo{Schema: batch.RunSchema, ID: strings.Repeat("r", 43)}
	runJSON, _ := json.Marshal(run)
	writeFiles(t, out, map[string]string{batch.KeyFile: string(pem), batch.RunFile: string(runJSON)})

	var lines [][]byte
	add := func(r batch.Record) {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	// A signed compat verdict full of hostile text.
	sub := []byte("diff --git a/x b/x\n")
	sum := sha256.Sum256(sub)
	data, err := os.ReadFile(filepath.Join("..", "schema", "testdata", "valid", "compat-final-flipped.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v schema.Verdict
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	v.Schema = schema.ID
	v.Outcome, v.ReasonCode, v.Reason = schema.OutcomeFail, schema.ReasonWrongAnswer, hostile[0]+hostile[1]
	v.Compat.Flipped, v.Compat.DroppedHunks = false, []schema.DroppedHunk{{Path: hostile[2], Rule: "denylist:conftest.py"}}
	v.Submission.SHA256, v.Submission.Size = hex.EncodeToString(sum[:]), int64(len(sub))
	v.Nonce = batch.ItemNonce(run, hostile[3])
	var cases []schema.Case
	for i, h := range hostile[:7] { // the schema refuses bidirectional controls
		c := schema.Case{ID: h, Outcome: schema.OutcomeFail, DecidedBy: schema.DecidedByJUnit, Suite: schema.SuiteHidden, Reason: hostile[len(hostile)-1-i]}
		if i%2 == 0 {
			c.Outcome, c.Reason = schema.OutcomePass, ""
		}
		cases = append(cases, c)
	}
	v.SetCases(cases)
	// item signs v for item id and writes its directory.
	item := func(id string) batch.Record {
		v.Nonce = batch.ItemNonce(run, id)
		signed, err := signer.Sign(t.Context(), &v, attest.SignOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dir := batch.ItemsDir + "/" + batch.SafeID(id)
		verdict, err := json.Marshal(&v)
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, out, map[string]string{
			filepath.Join(dir, batch.BundleFile):     string(signed.Bundle),
			filepath.Join(dir, batch.SubmissionFile): string(sub),
			filepath.Join(dir, batch.VerdictFile):    string(verdict),
		})
		return batch.Record{Item: id, Task: v.Task.ID, Tier: schema.TierCompat, Outcome: schema.OutcomeFail, ReasonCode: v.ReasonCode,
			TaskDigest: v.Task.Digest, SubmissionSHA256: v.Submission.SHA256, Nonce: v.Nonce,
			Bundle: dir + "/" + batch.BundleFile, Submission: dir + "/" + batch.SubmissionFile, Verdict: dir + "/" + batch.VerdictFile,
			Timings: schema.Timings{TotalMS: 1234}, Finished: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	}
	add(item(hostile[3]))
	// A record that lies about its signed outcome: it does not verify,
	// and the error quotes the lie.
	lie := item(hostile[6])
	lie.Outcome = schema.Outcome(hostile[7])
	add(lie)
	// Grader errors without a verdict.
	for i, h := range hostile {
		add(batch.Record{Item: "error " + h, Task: h, Tier: schema.TierStrict, Outcome: schema.OutcomeError, ReasonCode: h,
			Error: hostile[(i+3)%len(hostile)] + "\nsecond line", WallMS: int64(100 * (i + 1))})
	}
	results := append(bytes.Join(lines, []byte("\n")), '\n')
	// Invalid UTF-8 inside JSON strings.
	results = append(results, []byte("{\"item\":\"bad \xff\xfe<b>utf8</b>\",\"task\":\"t\xc3\",\"tier\":\"strict\",\"outcome\":\"ERROR\",\"error\":\"\xed\xa0\x80<i>x</i>\",\"wall_ms\":5}\n")...)
	writeFiles(t, out, map[string]string{batch.ResultsFile: string(results)})

}
