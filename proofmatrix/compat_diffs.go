package proofmatrix

import (
	"fmt"
	"strings"
)

// Diff builders for the compat tier's "textkit" task: a small package whose
// textkit/core.py the probes edit. The context lines below are those of the
// task's base commit.

var coreHead = []string{`"""The helpers themselves."""`, ``, `import re`}

var coreSlugifyBefore = []string{
	`        slugify("Hello, World!") == "hello-world"`,
	`    """`,
	`    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")`,
}

const coreSlugifyLine = `    return re.sub(r"[^a-z0-9]", "-", ascii_text.lower())`

var coreSlugifyAfter = []string{``, ``, `def word_count(text: str) -> int:`}

// coreEdit returns a diff of textkit/core.py that inserts prelude after the
// module docstring and replaces slugify's return line with body (both may
// be empty).
func coreEdit(prelude, body []string) string {
	var b strings.Builder
	b.WriteString("diff --git a/textkit/core.py b/textkit/core.py\n--- a/textkit/core.py\n+++ b/textkit/core.py\n")
	shift := 0
	if len(prelude) > 0 {
		fmt.Fprintf(&b, "@@ -1,3 +1,%d @@\n", 3+len(prelude))
		b.WriteString(" " + coreHead[0] + "\n")
		for _, l := range prelude {
			b.WriteString("+" + l + "\n")
		}
		b.WriteString(" " + coreHead[1] + "\n " + coreHead[2] + "\n")
		shift = len(prelude)
	}
	if len(body) > 0 {
		fmt.Fprintf(&b, "@@ -13,7 +%d,%d @@\n", 13+shift, 6+len(body))
		for _, l := range coreSlugifyBefore {
			b.WriteString(" " + l + "\n")
		}
		b.WriteString("-" + coreSlugifyLine + "\n")
		for _, l := range body {
			b.WriteString("+" + l + "\n")
		}
		for _, l := range coreSlugifyAfter {
			b.WriteString(" " + l + "\n")
		}
	}
	return b.String()
}

// newFile returns a diff that creates path with content.
func newFile(path, content string) string {
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// pyLines splits a Python snippet into lines for coreEdit.
func pyLines(s string) []string {
	return strings.Split(strings.TrimSuffix(strings.TrimPrefix(s, "\n"), "\n"), "\n")
}

// The honest fix and a wrong one, as in examples/compat-textkit.
var (
	compatHonest = coreEdit(nil, []string{
		`    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower())`,
		`    return slug.strip("-")`,
	})
	compatWrong = coreEdit(nil, []string{
		`    return re.sub(r"[^a-z0-9]", "-", ascii_text.lower()).strip("-")`,
	})
)

// honestBody is the fixed slugify body, for attacks that ride on it.
var honestBody = []string{
	`    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower())`,
	`    return slug.strip("-")`,
}

// compatBase is the textkit task's base commit.
const compatBase = "ec5117f71c6c3bfd7c6ca62a9d21c310f417498d"
