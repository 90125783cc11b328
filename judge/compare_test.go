package judge

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/schema"
)

// compareCase is one row of a comparator table.
type compareCase struct {
	name  string
	c     Comparator
	got   string
	want  string
	equal bool
	// reason must occur in the reason of an unequal result.
	reason string
}

// textRule is the verdict schema's rule for text fields.
var textRule = regexp.MustCompile("^[^\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]*$")

// digestReason is everything a comparison's reason may say under the
// digest policy: a fixed phrase, a position in the candidate's output, and
// the output's length and sha256 prefix.
var digestReason = regexp.MustCompile(`^(first difference|not valid (JSON|CSV)( \([A-Za-z0-9 -]+\))?)` +
	`( at [a-z0-9 ,$\[\]#.()…]+)?; output \d+ bytes?, sha256 [0-9a-f]{12}$`)

// assertResult asserts what every Result must satisfy.
func assertResult(t *testing.T, r Result, c Comparator) {
	t.Helper()
	if r.DecidedBy != c.Kind {
		t.Errorf("DecidedBy = %q, want %q", r.DecidedBy, c.Kind)
	}
	if r.Equal != (r.Reason == "") {
		t.Errorf("Equal = %v with reason %q", r.Equal, r.Reason)
	}
	if !textRule.MatchString(r.Reason) || !utf8.ValidString(r.Reason) {
		t.Errorf("reason breaks the schema's text rule: %q", r.Reason)
	}
	if n := encodedLen(r.Reason); n > maxCaseReasonBytes {
		t.Errorf("reason takes %d bytes, more than %d", n, maxCaseReasonBytes)
	}
}

// runCompareTable checks each row's detailed reason, and that the digest
// reason of the same comparison says nothing but a position and a summary.
func runCompareTable(t *testing.T, tests []compareCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.Validate(); err != nil {
				t.Fatalf("comparator: %v", err)
			}
			r := CompareFor(schema.DisclosureDetailed, tt.c, []byte(tt.got), []byte(tt.want))
			assertResult(t, r, tt.c)
			if r.Equal != tt.equal {
				t.Fatalf("Compare(%q, %q) = %+v, want equal %v", tt.got, tt.want, r, tt.equal)
			}
			if !tt.equal && !strings.Contains(r.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", r.Reason, tt.reason)
			}
			if again := CompareFor(schema.DisclosureDetailed, tt.c, []byte(tt.got), []byte(tt.want)); again != r {
				t.Errorf("not deterministic: %+v then %+v", r, again)
			}
			d := Compare(tt.c, []byte(tt.got), []byte(tt.want))
			assertResult(t, d, tt.c)
			if d.Equal != r.Equal {
				t.Fatalf("the policy changed the outcome: %+v and %+v", d, r)
			}
			if !d.Equal && !digestReason.MatchString(d.Reason) {
				t.Errorf("digest reason %q says more than a position and a summary", d.Reason)
			}
		})
	}
}

func TestCompareExact(t *testing.T) {
	c := Comparator{Kind: KindExact}
	runCompareTable(t, []compareCase{
		{"equal", c, "a\nb\n", "a\nb\n", true, ""},
		{"empty", c, "", "", true, ""},
		{"trailing newline matters", c, "a\nb", "a\nb\n", false, "output ends early: 3 bytes, want 4 bytes"},
		{"extra output", c, "a\nb\nc", "a\nb\n", false, `byte 4 (line 3): unexpected extra output "c"`},
		{"crlf is not lf", c, "a\r\n", "a\n", false, `byte 1 (line 1): got "\r\n"`},
		{"unicode", c, "héllo", "hello", false, `byte 1 (line 1): got "éllo"`},
		{"invalid utf8 escaped", c, "\xff\xfe", "ab", false, `got "\xff\xfe"`},
		{"control characters escaped", c, "\x1b[31mPASS\u202e", "x", false, `got "\x1b[31mPASS\u202e"`},
	})
}

func TestCompareLines(t *testing.T) {
	c := Comparator{Kind: KindLines}
	fold := Comparator{Kind: KindLines, IgnoreCase: true}
	runCompareTable(t, []compareCase{
		{"equal", c, "a\nb\n", "a\nb\n", true, ""},
		{"missing final newline", c, "a\nb", "a\nb\n", true, ""},
		{"crlf", c, "a\r\nb\r\n", "a\nb\n", true, ""},
		{"trailing blanks", c, "a  \t\nb \n", "a\nb", true, ""},
		{"trailing empty lines", c, "a\nb\n\n\n \n", "a\nb\n", true, ""},
		{"both empty", c, "", "\n\n", true, ""},
		{"leading blanks matter", c, " a\n", "a\n", false, `line 1: got " a"`},
		{"inner empty line matters", c, "a\n\nb\n", "a\nb\n", false, `line 2: got ""`},
		{"fewer lines", c, "a\n", "a\nb\nc\n", false, "output ends early: got 1 line, want 3 lines"},
		{"more lines", c, "a\nb\n", "a\n", false, `line 2: unexpected extra line "b"`},
		{"case matters", c, "Hello\n", "hello\n", false, `line 1: got "Hello"`},
		{"ignore case", fold, "HELLO Straße\n", "hello straße\n", true, ""},
		{"ignore case final sigma folds", fold, "ΣΑΣ\n", "σας\n", true, ""},
		{"ignore case is not transliteration", fold, "STRASSE\n", "straße\n", false, `line 1: got "STRASSE"`},
		{"lone cr kept", c, "a\rb\n", "a b\n", false, `line 1: got "a\rb"`},
		{"unicode line", c, "naïve ✓\n", "naïve ✓\n", true, ""},
	})
}

func TestCompareTokens(t *testing.T) {
	c := Comparator{Kind: KindTokens}
	runCompareTable(t, []compareCase{
		{"spacing ignored", c, "1  2\t3\n\n4", "1 2 3 4\n", true, ""},
		{"crlf", c, "a\r\nb\r\n", "a b", true, ""},
		{"different token", c, "1 2 4", "1 2 3", false, `token 3: got "4"`},
		{"fewer tokens", c, "1 2", "1 2 3", false, "output ends early: got 2 tokens, want 3 tokens"},
		{"more tokens", c, "1 2 3 x", "1 2 3", false, `token 4: unexpected extra token "x"`},
		{"non-ascii space is not a separator", c, "a\u00a0b", "a b", false, "token 1"},
		{"empty", c, " \n\t", "", true, ""},
		{"ignore case", Comparator{Kind: KindTokens, IgnoreCase: true}, "YES no", "yes NO", true, ""},
	})
}

func TestCompareNumbers(t *testing.T) {
	exact := Comparator{Kind: KindNumbers}
	abs := Comparator{Kind: KindNumbers, AbsTol: 0.5}
	rel := Comparator{Kind: KindNumbers, RelTol: 0.25}
	nan := Comparator{Kind: KindNumbers, AllowNaN: true}
	big := "123456789012345678901234567890"
	runCompareTable(t, []compareCase{
		{"same value other spelling", exact, "1.0 1e0 10e-1 +1 001.000", "1 1 1 1 1", true, ""},
		{"negative zero", exact, "-0 -0.0 0e5", "0 0 0", true, ""},
		{"exact decimal not float", exact, "0.10000000000000001", "0.1", false, `token 1: got "0.10000000000000001"`},
		{"big integers exact", exact, big, big, true, ""},
		{"big integers differ in last digit", exact, big[:len(big)-1] + "1", big, false, "token 1"},
		{"beyond float64 equal", exact, "1e400", "10e399", true, ""},
		{"beyond float64 differ", abs, "1e400", "2e400", false, "not within the tolerance"},
		{"abs edge inside", abs, "1.5", "1", true, ""},
		{"abs edge just outside", abs, "1.5000001", "1", false, `got "1.5000001", not within the tolerance`},
		{"abs negative", abs, "-1.25", "-1.75", true, ""},
		{"rel edge inside", rel, "3", "4", true, ""},
		{"rel edge outside", rel, "2.9", "4", false, "not within the tolerance"},
		{"rel uses larger magnitude", rel, "4", "3", true, ""},
		{"rel zero against tiny", rel, "0", "1e-300", false, "not within"},
		{"nan never equal", exact, "nan", "1", false, "NaN equals nothing"},
		{"nan with allow", nan, "NaN -nan", "nan NAN", true, ""},
		{"nan against number with allow", nan, "nan", "1", false, `got "nan"`},
		{"inf equals inf", exact, "inf +Infinity -INF", "Inf inf -infinity", true, ""},
		{"inf sign matters", exact, "-inf", "inf", false, `got "-inf"`},
		{"inf never within tolerance", abs, "1e308", "inf", false, "token 1"},
		{"large finite vs inf", rel, "1.7976931348623157e308", "inf", false, "token 1"},
		{"huge difference overflows", abs, "1e308", "-1e308", false, "not within"},
		{"not a number", exact, "1 two 3", "1 2 3", false, `token 2: "two" is not a number`},
		{"hex is not a number", exact, "0x10", "16", false, "is not a number"},
		{"underscores are not numbers", exact, "1_000", "1000", false, "is not a number"},
		{"exponent out of range", exact, "1e99999999999999999999", "1", false, `token 1: "1e99999999999999999999" is out of range (exponent out of range)`},
		{"leading dot and trailing dot", exact, ".5 5.", "0.5 5", true, ""},
		{"count mismatch", exact, "1 2", "1 2 3", false, "output ends early: got 2 numbers, want 3 numbers"},
		{"extra token", exact, "1 2 3", "1 2", false, `token 3: unexpected extra token "3"`},
		{"lines do not matter", exact, "1\n2 3", "1 2\n3\n", true, ""},
		{"subnormal", abs, "5e-324", "0", true, ""},
	})
}

func TestCompareNumbersExpectedUnusable(t *testing.T) {
	for _, tt := range []struct {
		c    Comparator
		want string
	}{
		{Comparator{Kind: KindNumbers}, "1 x"},
		{Comparator{Kind: KindNumbers}, "nan"},
		{Comparator{Kind: KindJSON}, `{"a":1,"a":2}`},
		{Comparator{Kind: KindJSON}, `[1,]`},
		{Comparator{Kind: KindCSV}, "a,\"b\n"},
		{Comparator{Kind: KindCSV}, "1,nan\n"},
		{Comparator{Kind: KindCSV, CSVHeader: true}, ""},
	} {
		err := checkExpected(tt.c, []byte(tt.want))
		if !errors.Is(err, ErrExpected) {
			t.Errorf("checkExpected(%s, %q) = %v, want ErrExpected", tt.c.Kind, tt.want, err)
		}
		r := Compare(tt.c, []byte(tt.want), []byte(tt.want))
		if r.Equal || !strings.Contains(r.Reason, "unusable expected value") {
			t.Errorf("Compare(%s) with an unusable expected value = %+v", tt.c.Kind, r)
		}
	}
}

func TestCompareUnorderedLines(t *testing.T) {
	c := Comparator{Kind: KindUnorderedLines}
	runCompareTable(t, []compareCase{
		{"permutation", c, "b\na\nc\n", "a\nb\nc\n", true, ""},
		{"duplicates count", c, "a\na\nb\n", "a\nb\na", true, ""},
		{"duplicate too many", c, "a\na\na\n", "a\na\nb\n", false, `line 3: "a" is not expected`},
		{"missing line", c, "a\n", "a\nb\n", false, "output ends early: got 1 line, want 2 lines"},
		{"crlf and trailing blanks", c, "b \r\na\r\n", "a\nb\n", true, ""},
		{"unexpected line", c, "a\nz\n", "a\nb\n", false, `line 2: "z" is not expected`},
		{"ignore case", Comparator{Kind: KindUnorderedLines, IgnoreCase: true}, "B\na\n", "A\nb\n", true, ""},
	})
}

func TestCompareCSV(t *testing.T) {
	c := Comparator{Kind: KindCSV}
	tol := Comparator{Kind: KindCSV, AbsTol: 1e-6}
	hdr := Comparator{Kind: KindCSV, CSVHeader: true, IgnoreCase: true}
	runCompareTable(t, []compareCase{
		{"equal", c, "a,b\n1,2\n", "a,b\n1,2\n", true, ""},
		{"crlf", c, "a,b\r\n1,2\r\n", "a,b\n1,2\n", true, ""},
		{"quoting is not content", c, "\"a\",\"1,5\"\n", "a,\"1,5\"\n", true, ""},
		{"quoted newline", c, "\"x\ny\",1\n", "\"x\ny\",1\n", true, ""},
		{"escaped quote", c, "\"say \"\"hi\"\"\"\n", "\"say \"\"hi\"\"\"\n", true, ""},
		{"numeric cells by value", c, "1.0,2e0\n", "1,2\n", true, ""},
		{"numeric cells exact without tolerance", c, "1.0000001\n", "1\n", false, `row 1, column 1: got "1.0000001"`},
		{"numeric cells with tolerance", tol, "1.0000001, 2\n", "1,2\n", true, ""},
		{"text where number expected", c, "x\n", "1\n", false, `got "x", want a number`},
		{"text cell", c, "a,c\n", "a,b\n", false, `row 1, column 2: got "c"`},
		{"column count", c, "a,b,c\n", "a,b\n", false, "row 1: got 3 columns, want 2"},
		{"fewer rows", c, "a\n", "a\nb\n", false, "output ends early: got 1 row, want 2"},
		{"extra row", c, "a\nb\n", "a\n", false, "row 2: unexpected extra row"},
		{"bare quote", c, "a\"b\n", "ab\n", false, "not valid CSV: line 1, column 2"},
		{"unterminated quote", c, "\"ab\n", "ab\n", false, "not valid CSV"},
		{"header exact", hdr, "Name,Value\nA,1\n", "Name,Value\na,1\n", true, ""},
		{"header ignores no case", hdr, "name,Value\na,1\n", "Name,Value\na,1\n", false, `row 1, column 1 (header): got "name"`},
		{"nan cell never equal", c, "nan\n", "1\n", false, "NaN equals nothing"},
		{"nan cell allowed", Comparator{Kind: KindCSV, AllowNaN: true}, "NaN\n", "nan\n", true, ""},
		{"empty", c, "", "", true, ""},
		{"blank lines skipped", c, "a\n\nb\n", "a\nb\n", true, ""},
	})
}

func TestComparatorValidate(t *testing.T) {
	valid := []Comparator{
		{Kind: KindExact}, {Kind: KindLines, IgnoreCase: true}, {Kind: KindNumbers, AbsTol: 1, RelTol: 0.5, AllowNaN: true},
		{Kind: KindJSON, RelTol: 1e-9, UnorderedArrays: true}, {Kind: KindCSV, CSVHeader: true, AbsTol: 1e-3, AllowNaN: true, IgnoreCase: true},
		{Kind: KindUnorderedLines}, {Kind: KindTokens},
	}
	for _, c := range valid {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
	invalid := map[string]Comparator{
		"is not one of":                            {},
		"kind \"regex\"":                           {Kind: "regex"},
		"abs_tol does not apply to kind lines":     {Kind: KindLines, AbsTol: 1},
		"abs_tol must be a finite number":          {Kind: KindNumbers, AbsTol: math.Inf(1)},
		"rel_tol must be a finite number":          {Kind: KindNumbers, RelTol: math.NaN()},
		"abs_tol must be a finite number >= 0":     {Kind: KindNumbers, AbsTol: -1},
		"rel_tol must be below 1":                  {Kind: KindNumbers, RelTol: 1},
		"allow_nan does not apply to kind json":    {Kind: KindJSON, AllowNaN: true},
		"unordered_arrays does not apply":          {Kind: KindLines, UnorderedArrays: true},
		"ignore_case does not apply to kind exact": {Kind: KindExact, IgnoreCase: true},
		"ignore_case does not apply to kind json":  {Kind: KindJSON, IgnoreCase: true},
		"csv_header does not apply":                {Kind: KindLines, CSVHeader: true},
	}
	for want, c := range invalid {
		err := c.Validate()
		if !errors.Is(err, ErrComparator) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(%+v) = %v, want an ErrComparator containing %q", c, err, want)
		}
		if r := Compare(c, nil, nil); r.Equal || r.DecidedBy != "comparator" {
			t.Errorf("Compare with invalid comparator %+v = %+v", c, r)
		}
	}
}

func TestClampText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a\nb", `a\u000ab`},
		{"x\u202ey", `x\u202ey`},
		{"\xff", `\xff`},
		{strings.Repeat("é", 6), "ééé…"},
		{strings.Repeat("é", 5), strings.Repeat("é", 5)},
		{`a"b"c"d"e`, `a"b"c…`},
		{"😀😀😀", "😀…"},
		{strings.Repeat("x", 11), strings.Repeat("x", 7) + "…"},
	} {
		got := clampText(tt.in, 10)
		if got != tt.want {
			t.Errorf("clampText(%q, 10) = %q, want %q", tt.in, got, tt.want)
		}
		// The bound is on the bytes schema.Marshal writes.
		enc, err := json.Marshal(got)
		if err != nil || len(enc)-2 > 10 || len(enc)-2 != encodedLen(got) {
			t.Errorf("clampText(%q, 10) = %q encodes to %d bytes (%v)", tt.in, got, len(enc)-2, err)
		}
	}
}
