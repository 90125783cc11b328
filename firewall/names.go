package firewall

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// nameError is a name rule violation: the sentinel and the reason.
type nameError struct {
	err    error
	reason string
}

// canonicalName turns the raw name of an entry into its canonical path.
//
// One leading "./" is removed; for directories one trailing "/" is removed.
// The result must then be a relative slash-separated path with no empty,
// "." or ".." components, made of printable NFC UTF-8 text without
// backslashes or colons, with no component starting with ".wh.", and within
// the length and depth limits. root reports the archive root itself ("./" or
// "." as a directory), which is not an entry of the canonical archive.
func canonicalName(raw string, isDir bool, l *limits) (p string, root bool, ne *nameError) {
	if raw == "" {
		return "", false, &nameError{ErrName, "empty name"}
	}
	p = raw
	if strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if isDir && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	if p == "" || p == "." {
		if isDir {
			return "", true, nil
		}
		return "", false, &nameError{ErrName, "the archive root as a regular file"}
	}
	if !isDir && strings.HasSuffix(p, "/") {
		return "", false, &nameError{ErrName, "regular file name ends with \"/\""}
	}
	if p[0] == '/' {
		return "", false, &nameError{ErrTraversal, "absolute name"}
	}
	// Traversal first, so that "a//../b" reports the more serious problem.
	for rest := p; ; {
		c, after, more := strings.Cut(rest, "/")
		if c == ".." {
			return "", false, &nameError{ErrTraversal, "name has a \"..\" component"}
		}
		if !more {
			break
		}
		rest = after
	}
	ascii := true
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b >= utf8.RuneSelf:
			ascii = false
		case b < 0x20 || b == 0x7f:
			return "", false, &nameError{ErrName, "name has a control character"}
		case b == '\\':
			return "", false, &nameError{ErrName, "name has a backslash"}
		case b == ':':
			return "", false, &nameError{ErrName, "name has a colon"}
		}
	}
	if !ascii {
		if !utf8.ValidString(p) {
			return "", false, &nameError{ErrName, "name is not valid UTF-8"}
		}
		for _, r := range p {
			if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) ||
				unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
				return "", false, &nameError{ErrName, fmt.Sprintf("name has the control or format character %U", r)}
			}
		}
		if !norm.NFC.IsNormalString(p) {
			return "", false, &nameError{ErrName, "name is not in Unicode NFC"}
		}
	}
	if len(p) > l.maxNameLen {
		return "", false, &nameError{ErrLimit, fmt.Sprintf("name is %d bytes, above the limit of %d", len(p), l.maxNameLen)}
	}
	depth := 0
	for rest := p; ; {
		c, after, more := strings.Cut(rest, "/")
		depth++
		switch {
		case c == "":
			return "", false, &nameError{ErrName, "name has an empty component"}
		case c == ".":
			return "", false, &nameError{ErrName, "name has a \".\" component"}
		case strings.HasPrefix(c, ".wh."):
			return "", false, &nameError{ErrWhiteout, "name has a whiteout component " + quote(c)}
		case len(c) > l.maxComponentLen:
			return "", false, &nameError{ErrLimit, fmt.Sprintf("a component is %d bytes, above the limit of %d", len(c), l.maxComponentLen)}
		}
		if !more {
			break
		}
		rest = after
	}
	if depth > l.maxDepth {
		return "", false, &nameError{ErrLimit, fmt.Sprintf("name has %d components, above the depth limit of %d", depth, l.maxDepth)}
	}
	return p, false, nil
}

// folder computes the collision key of a canonical path: the path
// case-folded and NFC-normalised. Two paths collide when their keys are
// equal. Folding and normalisation act on each component independently, so
// the key of a parent directory is the key of the child cut at the matching
// "/". For ASCII paths without upper-case letters the key is the path itself
// and nothing is allocated.
type folder struct {
	caser *cases.Caser
}

func (f *folder) key(p string) string {
	upper, ascii := false, true
	for i := 0; i < len(p); i++ {
		b := p[i]
		if b >= utf8.RuneSelf {
			ascii = false
			break
		}
		if 'A' <= b && b <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return p
		}
		return strings.ToLower(p)
	}
	if f.caser == nil {
		c := cases.Fold()
		f.caser = &c
	}
	return norm.NFC.String(f.caser.String(p))
}
