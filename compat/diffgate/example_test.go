package diffgate_test

import (
	"fmt"

	"github.com/strictgrade/strictgrade/compat/diffgate"
)

// The gate keeps the fix and drops the conftest.py that would have
// rewritten every test report, recording which rule dropped it.
func ExampleGate_Filter() {
	gate := diffgate.Gate{Allow: []string{"textkit/**"}, Deny: diffgate.DefaultDeny}
	diff := `diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,2 @@
+def pytest_runtest_makereport(item, call):
+    pass
diff --git a/textkit/core.py b/textkit/core.py
--- a/textkit/core.py
+++ b/textkit/core.py
@@ -1 +1 @@
-    return re.sub(r"[^a-z0-9]", "-", text)
+    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")
`
	f, err := gate.Filter([]byte(diff))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("kept:", f.Paths)
	for _, d := range f.Dropped {
		fmt.Println("dropped:", d.Path, "by", d.Rule)
	}

	_, err = gate.Filter([]byte("@@ -1 +1 @@\n-a\n+b\n"))
	fmt.Println(err)
	// Output:
	// kept: [textkit/core.py]
	// dropped: conftest.py by denylist:conftest.py
	// diffgate: malformed diff: line 1: hunk outside a file section
}
