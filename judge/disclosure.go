package judge

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/strictgrade/strictgrade/schema"
)

// How reasons obey the verdict's disclosure policy (schema.Disclosure).
//
// A comparator describes the first difference it found as a finding, in two
// renderings. The digest rendering (the default policy) is built only from
// positions in the candidate's own output — byte offsets, line, token, row
// and column numbers, JSON paths made of array indices and key ranks — and
// a fixed vocabulary ("first difference", "not valid JSON"); the reason adds
// the length and a short sha256 prefix of the candidate bytes
// (schema.Summary). The detailed rendering says what the comparators have
// always said: it quotes candidate text (escaped and truncated) and states
// expected lengths, types and counts. Neither ever quotes an expected value
// or an expected object key.
//
// Positions are still information: a candidate can encode a few bytes in
// where its output differs, and a first-difference offset tells how long a
// common prefix with the expected output is. What the digest policy rules
// out is text: nothing a candidate echoes from a hidden input, and nothing
// of the expected output, is ever quoted.

// finding is the first difference a comparator found.
type finding struct {
	// what names it for the digest rendering, in a fixed vocabulary that
	// speaks of the candidate's output alone.
	what string
	// at locates it in the candidate's output, in positions only; empty
	// when there is nothing to point at.
	at string
	// detail is the detailed rendering.
	detail string
}

const firstDifference = "first difference"

// differsAt is the usual finding: the outputs first differ at a position.
func differsAt(at, detail string) *finding {
	return &finding{what: firstDifference, at: at, detail: detail}
}

// render returns the finding under policy d.
func (f *finding) render(d schema.Disclosure) string {
	if d == schema.DisclosureDetailed {
		return f.detail
	}
	if f.at == "" {
		return f.what
	}
	return f.what + " at " + f.at
}

// subject names the candidate output a reason is about.
type subject struct {
	// detailed and digest prefix the reason under each policy (empty for
	// the output the case is graded on by default). Only detailed may
	// name a file.
	detailed, digest string
	// noun names the bytes schema.Summary describes under the digest
	// policy: "output", "file", "record".
	noun string
}

var mainOutput = subject{noun: "output"}

// reason turns a finding about the bytes got into a case reason.
func (s subject) reason(d schema.Disclosure, f *finding, got []byte) string {
	if d == schema.DisclosureDetailed {
		return prefixed(s.detailed, f.detail)
	}
	return prefixed(s.digest, f.render(d)+"; "+s.noun+" "+schema.Summary(got))
}

// say picks a reason by policy: detail may quote candidate text, digest
// must not.
func say(d schema.Disclosure, digest, detail string) string {
	if d == schema.DisclosureDetailed {
		return detail
	}
	return digest
}

func prefixed(prefix, s string) string {
	if prefix == "" {
		return s
	}
	return prefix + ": " + s
}

// effective returns the policy a skeleton asks for: its own, or the
// default when it names none.
func effective(d schema.Disclosure) schema.Disclosure {
	if d == "" {
		return schema.DisclosureDigest
	}
	return d
}

// clampText makes s safe for a verdict text field: characters the schema
// forbids (controls, line separators, bidirectional overrides) and invalid
// UTF-8 become escapes, and the result takes at most maxBytes bytes once
// encoded as a JSON string (so also at most maxBytes characters), a cut
// being marked with "…". maxBytes must be at least 4.
func clampText(s string, maxBytes int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case forbiddenInText(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	out := b.String()
	if encodedLen(out) <= maxBytes {
		return out
	}
	const cut = "…" // 3 bytes, never escaped
	n := 0
	for i, r := range out {
		w := runeEncodedLen(r)
		if n+w > maxBytes-len(cut) {
			return out[:i] + cut
		}
		n += w
	}
	return out
}

// encodedLen returns how many bytes s takes inside a JSON string as
// schema.Marshal writes it, for text clampText has made safe.
func encodedLen(s string) int {
	n := 0
	for _, r := range s {
		n += runeEncodedLen(r)
	}
	return n
}

func runeEncodedLen(r rune) int {
	if r == '"' || r == '\\' {
		return 2
	}
	return utf8.RuneLen(r)
}

// forbiddenInText matches the characters the verdict schema's "text" rule
// excludes.
func forbiddenInText(r rune) bool {
	return r <= 0x1f || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
