package proofmatrix

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strictgrade/strictgrade/controller"
	"github.com/strictgrade/strictgrade/schema"
	"github.com/strictgrade/strictgrade/task"
)

// Probes of what a verdict reveals and of answers that do not depend on
// the inputs: a grader that answers the agent must not become an oracle.
func init() {
	register(
		&Probe{ID: "V5.10-call-order", Taxonomy: "V5.10", Class: "V5", Title: "answers keyed to the order of calls", Source: "TAXONOMY",
			Strict: judged(&Case{Task: "add20", Files: map[string]string{"solution.py": callOrderKeyed}}, "twenty cases are called in an order drawn from the grade's nonce: the file's own order comes up once in 20! grades")},
		&Probe{ID: "V9.3-disk-exhaustion", Taxonomy: "V9.3", Class: "V9", Title: "fills the output directory's bytes and inodes", Source: "TAXONOMY",
			Strict: &Case{Task: "fill", Files: map[string]string{"solution.py": diskFiller},
				Expect: Blocked, Layer: "judge: missing_output", Why: "/output is a tmpfs capped in bytes and inodes: the flood stops at the cap, never on the host's disk, and leaves no room for an answer"}},
		&Probe{ID: "V10.5-disclosure", Taxonomy: "V10.5", Class: "V10", Title: "echoes hidden inputs through every channel", Source: "TAXONOMY",
			Strict: &Case{Custom: disclosureProbe, Expect: Blocked, Layer: "disclosure: nothing quoted",
				Why: "under the default policy reasons quote candidate bytes only as digests and positions, and never expected data"}},
	)
}

// callOrderKeyed knows the hidden answers of the add20 task in file order
// and returns them by call count, ignoring its input.
const callOrderKeyed = `ANSWERS = [101, 106, 111, 116, 121, 126, 131, 136, 141, 146, 151, 156, 161, 166, 171, 176, 181, 186, 191, 196]
calls = 0
def solve(numbers):
    global calls
    answer = ANSWERS[calls % len(ANSWERS)]
    calls += 1
    return answer
`

// diskFiller writes 1 MiB files until the output directory is full, then
// empty files until it runs out of inodes, tries to write its answer last,
// and claims success whatever happened.
const diskFiller = `import os
chunk = b"x" * (1 << 20)
n = 0
try:
    while n < 100000:
        with open("/output/fill-%06d" % n, "wb") as f:
            f.write(chunk)
        n += 1
except OSError:
    pass
try:
    while n < 2000000:
        open("/output/empty-%07d" % n, "wb").close()
        n += 1
except OSError:
    pass
try:
    with open("/output/out.txt", "w") as f:
        f.write("done\n")
except OSError:
    pass
`

// echoSubmissions are, per task, submissions that push the case's hidden
// inputs out through every channel a candidate has: the return value, an
// exception, standard output and error, the exit status, output file
// names and contents, and a partly right answer whose failure message
// would sit next to expected data.
var echoSubmissions = map[string][]map[string]string{
	"secretfn": {
		{"solution.py": "import json\ndef solve(visitor):\n    return {\"echo\": visitor, \"text\": json.dumps(visitor)}\n"},
		{"solution.py": "def solve(visitor):\n    return {\"greeting_for_visitor\": visitor[\"name\"], \"name_length_in_chars\": visitor[\"name\"]}\n"},
		{"solution.py": "def solve(visitor):\n    return {\"greeting_for_visitor\": \"Hello, \" + visitor[\"name\"] + \"?\", \"name_length_in_chars\": 0}\n"},
		{"solution.py": "import json\ndef solve(visitor):\n    raise ValueError(\"seen \" + json.dumps(visitor))\n"},
		{"solution.py": "import json, sys\ndef solve(visitor):\n    print(json.dumps(visitor))\n    sys.stderr.write(json.dumps(visitor))\n    return {}\n"},
		{"solution.py": "import json, sys\ndef solve(visitor):\n    sys.exit(json.dumps(visitor))\n"},
	},
	"secretcmd": {
		{"solution": "#!/usr/bin/env python3\nimport sys\nsys.stdout.write(\" \".join(sys.argv[1:]) + \"\\n\" + sys.stdin.read())\n"},
		{"solution": "#!/usr/bin/env python3\nimport sys\ndata = sys.stdin.read()\nsys.stdout.write(data[::-1][1:] + data)\n"},
		{"solution": "#!/usr/bin/env python3\nimport sys\ndata = sys.stdin.read()\nsys.stderr.write(data + \" \".join(sys.argv))\nsys.exit(data.encode()[3] % 200 + 1)\n"},
	},
	"secretdata": {
		{"solution.py": "data = open('/input/in.txt').read()\nopen('/output/out.txt', 'w').write(data)\n"},
		{"solution.py": "lines = open('/input/in.txt').read().splitlines()\nopen('/output/out.txt', 'w').write(lines[0].upper() + '\\n' + lines[1] + '\\n')\n"},
		{"solution.py": "import os\nname = open('/input/in.txt').read().splitlines()[0]\nos.symlink('/etc/passwd', '/output/' + name)\n"},
		{"solution.py": "name = open('/input/in.txt').read().splitlines()[1]\nopen('/output/' + name, 'w').write(name)\nraise SystemExit('failed on ' + name)\n"},
	},
}

// disclosureProbe grades every echo submission and looks for hidden text in
// the signed statement: any 8-byte run of a hidden input or expected value,
// or an expected object key.
func disclosureProbe(ctx context.Context, env *Env) (Observation, error) {
	var found []string
	var lastRun string
	for _, name := range slices.Sorted(maps.Keys(echoSubmissions)) {
		loaded, err := env.Task(name)
		if err != nil {
			return Observation{}, err
		}
		t, ok := loaded.(*task.Task)
		if !ok {
			return Observation{}, fmt.Errorf("proofmatrix: task %q is not a strict task", name)
		}
		secrets, keys, err := hiddenText(t)
		if err != nil {
			return Observation{}, err
		}
		for i, files := range echoSubmissions[name] {
			dir, err := env.TempDir()
			if err != nil {
				return Observation{}, err
			}
			if err := writeFiles(dir, files); err != nil {
				return Observation{}, err
			}
			res, err := env.Grade(ctx, name, controller.Submission{Dir: dir})
			if res == nil {
				return Observation{}, err
			}
			if res.Verdict.Outcome != schema.OutcomeFail {
				return Classify(res.Verdict, false), fmt.Errorf("echo submission %s#%d graded %s, want FAIL: %s", name, i, res.Verdict.Outcome, res.Verdict.Reason)
			}
			lastRun = res.Verdict.RunID
			for _, leak := range leaks(res.Signed.Payload, secrets, keys) {
				found = append(found, fmt.Sprintf("%s#%d: %s", name, i, leak))
			}
		}
	}
	if len(found) > 0 {
		return Observation{Result: Succeeds, Layer: "none", Outcome: "FAIL", RunID: lastRun,
			Reason: schema.Excerpt([]byte("hidden text in a signed verdict: "+strings.Join(found, "; ")), 400)}, nil
	}
	return Observation{Result: Blocked, Layer: "disclosure: nothing quoted", Outcome: "FAIL", RunID: lastRun}, nil
}

// hiddenText returns the task's hidden strings (inputs, arguments, input
// files, expected values and files) and the keys of expected objects.
func hiddenText(t *task.Task) (secrets, keys []string, err error) {
	for _, c := range t.Cases.Cases {
		secrets = append(secrets, c.Stdin)
		secrets = append(secrets, c.Argv...)
		if c.ExpectedStdout != nil {
			secrets = append(secrets, *c.ExpectedStdout)
		}
		addSecret := func(s string) { secrets = append(secrets, s) }
		addKey := func(k string) { keys = append(keys, k) }
		for _, part := range []struct {
			raw  json.RawMessage
			keys func(string)
		}{{c.Args, nil}, {c.Expected, addKey}} {
			if len(part.raw) == 0 {
				continue
			}
			var v any
			if err := json.Unmarshal(part.raw, &v); err != nil {
				return nil, nil, err
			}
			walkJSON(v, addSecret, part.keys)
		}
		for _, files := range []map[string]string{c.InputFiles, c.ExpectedFiles} {
			for _, rel := range files {
				data, err := t.HiddenFile(rel)
				if err != nil {
					return nil, nil, err
				}
				secrets = append(secrets, string(data))
			}
		}
	}
	return secrets, keys, nil
}

// leaks reports what of the hidden text appears in a signed statement,
// read both as bytes and with every JSON string decoded.
func leaks(payload []byte, secrets, keys []string) []string {
	var hay strings.Builder
	hay.Write(payload)
	var doc any
	if json.Unmarshal(payload, &doc) == nil {
		walkJSON(doc, func(s string) {
			hay.WriteString("\x00" + s)
			var inner any
			if json.Unmarshal([]byte(s), &inner) == nil {
				walkJSON(inner, func(s string) { hay.WriteString("\x00" + s) }, nil)
			}
		}, nil)
	}
	text := hay.String()
	var out []string
	for _, s := range secrets {
		for i := 0; i+8 <= len(s); i++ {
			if w := s[i : i+8]; strings.Contains(text, w) {
				out = append(out, fmt.Sprintf("%q from hidden %q", w, schema.Excerpt([]byte(s), 40)))
				break
			}
		}
	}
	for _, k := range keys {
		if strings.Contains(text, k) {
			out = append(out, fmt.Sprintf("expected key %q", k))
		}
	}
	return out
}

// walkJSON calls str for every string value and key for every object key.
func walkJSON(v any, str, key func(string)) {
	switch x := v.(type) {
	case string:
		str(x)
	case []any:
		for _, e := range x {
			walkJSON(e, str, key)
		}
	case map[string]any:
		for k, e := range x {
			if key != nil {
				key(k)
			}
			walkJSON(e, str, key)
		}
	}
}
