package judge

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Bounds of the search for a pairing of unordered arrays under a tolerance
// (see jsonCmp.bag).
const (
	// maxMatchElements: longer arrays are only paired in sorted order.
	maxMatchElements = 128
	// maxMatchWork bounds elements × nodes of the two arrays.
	maxMatchWork = 1 << 20
)

// compareJSONBytes parses both documents and compares them.
func compareJSONBytes(c Comparator, got, want []byte) (*finding, error) {
	wv, err := parseJSON(want)
	if err != nil {
		return nil, fmt.Errorf("%w: json: %v", ErrExpected, err)
	}
	gv, err := parseJSON(got)
	if err != nil {
		return jsonSyntax(err), nil
	}
	return compareJSONValues(c, gv, wv), nil
}

// compareJSONValues compares two values from parseJSON and returns nil or
// the first difference, located by its JSON path (see jsonCmp.diff for
// which difference is first).
//
// Every function here recurses once per level of nesting, so the nesting
// is checked first: parseJSON never yields more than MaxJSONDepth levels,
// and a value from elsewhere that has more is refused, without being
// compared, rather than allowed to run the judge out of stack.
func compareJSONValues(c Comparator, got, want any) *finding {
	if nestedDeeper(got, MaxJSONDepth) || nestedDeeper(want, MaxJSONDepth) {
		return differsAt("$", fmt.Sprintf("$: values nested deeper than %d levels are not compared", MaxJSONDepth))
	}
	j := &jsonCmp{tol: c.tolerance(), unordered: c.UnorderedArrays}
	return j.diff(&jsonPath{}, got, want)
}

// nestedDeeper reports whether v nests arrays and objects more than limit
// levels deep, counting v itself as a level as parseJSON does. It stops at
// the first container beyond the limit, so it never recurses deeper than
// limit+1 levels.
func nestedDeeper(v any, limit int) bool {
	switch t := v.(type) {
	case []any:
		if limit == 0 {
			return true
		}
		for _, e := range t {
			if nestedDeeper(e, limit-1) {
				return true
			}
		}
	case map[string]any:
		if limit == 0 {
			return true
		}
		for _, e := range t {
			if nestedDeeper(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// jsonCmp is the configuration of one json comparison.
type jsonCmp struct {
	tol       tolerance
	unordered bool
}

// jsonPath is the path from the root to the value jsonCmp.diff is at, in
// both renderings: detailed names object members by key, digest by the
// rank of the key among the object's keys in byte order, from 0 (.#2 is
// the member with the third smallest key), so that it quotes nothing.
// Array elements are [i] in both.
type jsonPath struct {
	detailed, digest []string
}

func (p *jsonPath) push(detailed, digest string) {
	p.detailed, p.digest = append(p.detailed, detailed), append(p.digest, digest)
}

func (p *jsonPath) pop() {
	p.detailed, p.digest = p.detailed[:len(p.detailed)-1], p.digest[:len(p.digest)-1]
}

// differs is the finding for the value at p. The digest path may point
// further into the candidate's value (at: an unmatched element of an
// unordered array); the detailed reason says that in why.
func (p *jsonPath) differs(why string, at ...string) *finding {
	digest := append(slices.Clip(p.digest), at...)
	return differsAt(joinPath(digest), joinPath(p.detailed)+": "+why)
}

// diff returns the first difference between got (the candidate's value)
// and want at path p, or nil. Its explanation may state want's type and
// length, never its content: not even a key of an expected object.
//
// The walk is depth first; it descends into arrays element by element in
// index order, and into objects member by member in byte order of their
// keys (slices.Sort), so the first difference is the first in that order:
// $.a.x before $.b, $[1][5] before $[2]. It descends only where the
// shapes agree. Values of different JSON types, ordered arrays of
// different lengths and objects with different key sets differ as a whole,
// and an unordered array is decided as a whole by bag (a pairing has no
// "first" element to descend into), so its finding is the array's, with
// the digest path pointing at the candidate element bag names. The walk
// visits each value once, and sorts each object's keys once; the only
// superlinear work is bag's, which bounds its own.
func (j *jsonCmp) diff(p *jsonPath, got, want any) *finding {
	if gt, wt := jsonType(got), jsonType(want); gt != wt {
		return p.differs(fmt.Sprintf("got %s, want %s %s", describe(got), article(wt), wt))
	}
	switch g := got.(type) {
	case nil:
		return nil
	case bool:
		if g == want.(bool) {
			return nil
		}
	case string:
		if g == want.(string) {
			return nil
		}
	case json.Number:
		if j.numbersEqual(g, want.(json.Number)) {
			return nil
		}
		return p.differs(j.tol.mismatch(jsonNumber(g)))
	case []any:
		w := want.([]any)
		if j.unordered {
			eq, i, why := j.bag(g, w, true)
			switch {
			case eq:
				return nil
			case i >= 0:
				return p.differs(why, "["+strconv.Itoa(i)+"]")
			}
			return p.differs(why)
		}
		if len(g) != len(w) {
			return p.differs(fmt.Sprintf("got an array of %s, want %d", plural(len(g), "element"), len(w)))
		}
		for i := range g {
			seg := "[" + strconv.Itoa(i) + "]"
			p.push(seg, seg)
			if f := j.diff(p, g[i], w[i]); f != nil {
				return f
			}
			p.pop()
		}
		return nil
	case map[string]any:
		w := want.(map[string]any)
		if why := keysDiffer(g, w); why != "" {
			return p.differs(why)
		}
		for rank, k := range sortedKeys(g) {
			p.push(keySegment(k), ".#"+strconv.Itoa(rank))
			if f := j.diff(p, g[k], w[k]); f != nil {
				return f
			}
			p.pop()
		}
		return nil
	}
	// A bool or string that differs; or a type parseJSON never produces,
	// which equals nothing.
	return p.differs("got " + describe(got))
}

// keysDiffer explains why two objects do not have the same keys, or
// returns "". A missing key is reported first, without naming it (that
// would quote the expected object), and otherwise the unexpected key that
// is smallest in byte order.
func keysDiffer(got, want map[string]any) string {
	if sameKeys(got, want) {
		return ""
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			return "lacks a key the expected object has"
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			return "unexpected key " + quoteString(k)
		}
	}
	return "" // unreachable: the key sets differ
}

// sameKeys reports whether two objects have the same keys.
func sameKeys(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k := range x {
		if _, ok := y[k]; !ok {
			return false
		}
	}
	return true
}

// equal is the equality jsonCmp.diff decides, without a finding, for the
// comparisons between elements that jsonCmp.bag makes; except that the
// unordered arrays it meets are paired in sorted order only (matching
// off), which bounds the work of an exhaustive pairing to one level, the
// outermost arrays that diff hands to bag.
func (j *jsonCmp) equal(x, y any) bool {
	switch a := x.(type) {
	case nil:
		return y == nil
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case string:
		b, ok := y.(string)
		return ok && a == b
	case json.Number:
		b, ok := y.(json.Number)
		return ok && j.numbersEqual(a, b)
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		if j.unordered {
			eq, _, _ := j.bag(a, b, false)
			return eq
		}
		for i := range a {
			if !j.equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := y.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !j.equal(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

// numbersEqual compares two JSON numbers (already validated by parseJSON).
func (j *jsonCmp) numbersEqual(a, b json.Number) bool {
	return j.tol.equal(jsonNumber(a), jsonNumber(b))
}

func jsonNumber(n json.Number) number {
	d, _ := parseDecimal(string(n))
	return number{class: finite, dec: d, text: string(n)}
}

// bag compares two arrays as multisets. It returns whether they are equal
// and, when not, the index of a candidate element without a match (-1 when
// the lengths differ) and a detailed explanation (x is the candidate's
// array).
//
// Without a tolerance, equality of elements is an equivalence, so the
// arrays are equal exactly when their multisets of canonical hashes are.
//
// With a tolerance it is not (1 ~ 1.5 ~ 2, but 1 !~ 2), so a greedy pairing
// could miss one that exists. Both arrays are first sorted by a canonical
// order in which numbers, also inside elements, order by value, and paired
// position by position; for arrays of numbers this finds a pairing
// whenever one exists. If that fails and matching is allowed and the arrays
// are small enough (maxMatchElements, maxMatchWork), a maximum bipartite
// matching over all pairs decides exactly. Matching is allowed for the
// arrays jsonCmp.diff reaches (those inside no other array), not for
// arrays nested in their elements (see jsonCmp.equal), so its cost is paid
// at one level only. Either way an
// accepted pairing is a real one: a bag is never equal unless every
// candidate element is paired with a distinct expected element it equals.
func (j *jsonCmp) bag(x, y []any, matching bool) (bool, int, string) {
	if len(x) != len(y) {
		return false, -1, fmt.Sprintf("got an array of %s, want %d (compared without order)", plural(len(x), "element"), len(y))
	}
	if j.tol.exact() {
		return j.bagExact(x, y)
	}
	kx, ky := make([]sortKey, len(x)), make([]sortKey, len(y))
	work := 0
	for i := range x {
		kx[i], ky[i] = j.sortKey(x[i]), j.sortKey(y[i])
		work += kx[i].nodes + ky[i].nodes
	}
	px, py := sortedOrder(kx), sortedOrder(ky)
	firstBad := -1
	for k := range px {
		if !j.equal(x[px[k]], y[py[k]]) {
			firstBad = px[k]
			break
		}
	}
	if firstBad < 0 {
		return true, -1, ""
	}
	if !matching || len(x) > maxMatchElements || len(x)*work > maxMatchWork {
		return false, firstBad, fmt.Sprintf("element [%d] (%s) differs from its counterpart in sorted order (too large to search all pairings)", firstBad, describe(x[firstBad]))
	}
	if i := j.unmatched(x, y); i >= 0 {
		return false, i, fmt.Sprintf("element [%d] (%s) has no match in the expected array", i, describe(x[i]))
	}
	return true, -1, ""
}

// bagExact compares multisets of canonical hashes.
func (j *jsonCmp) bagExact(x, y []any) (bool, int, string) {
	counts := make(map[[32]byte]int, len(y))
	for _, v := range y {
		counts[canonicalHash(v)]++
	}
	for i, v := range x {
		h := canonicalHash(v)
		if counts[h] == 0 {
			return false, i, fmt.Sprintf("element [%d] (%s) has no match in the expected array (or appears more often)", i, describe(v))
		}
		counts[h]--
	}
	return true, -1, ""
}

// unmatched finds a maximum matching between x and y (Kuhn's augmenting
// paths, trying candidates in index order) and returns the first element
// of x left unmatched, or -1.
func (j *jsonCmp) unmatched(x, y []any) int {
	n := len(x)
	// eq caches pair comparisons: 0 unknown, 1 equal, 2 different.
	eq := make([]uint8, n*n)
	equal := func(i, k int) bool {
		if eq[i*n+k] == 0 {
			eq[i*n+k] = 2
			if j.equal(x[i], y[k]) {
				eq[i*n+k] = 1
			}
		}
		return eq[i*n+k] == 1
	}
	owner := make([]int, n) // owner[k] is the x index paired with y[k]
	for k := range owner {
		owner[k] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for k := 0; k < n; k++ {
			if seen[k] || !equal(i, k) {
				continue
			}
			seen[k] = true
			if owner[k] < 0 || try(owner[k], seen) {
				owner[k] = i
				return true
			}
		}
		return false
	}
	first := -1
	for i := 0; i < n; i++ {
		if !try(i, make([]bool, n)) && first < 0 {
			first = i
		}
	}
	return first
}

// canonicalHash hashes a value so that equal values, with arrays taken as
// multisets and numbers by decimal value, hash alike.
func canonicalHash(v any) [32]byte {
	h := sha256.New()
	var lenBuf [8]byte
	writeLen := func(n int) {
		binary.BigEndian.PutUint64(lenBuf[:], uint64(n))
		h.Write(lenBuf[:])
	}
	switch t := v.(type) {
	case nil:
		h.Write([]byte{'n'})
	case bool:
		if t {
			h.Write([]byte{'t'})
		} else {
			h.Write([]byte{'f'})
		}
	case json.Number:
		d, _ := parseDecimal(string(t))
		s := d.String()
		h.Write([]byte{'d'})
		writeLen(len(s))
		h.Write([]byte(s))
	case string:
		h.Write([]byte{'s'})
		writeLen(len(t))
		h.Write([]byte(t))
	case []any:
		hs := make([][32]byte, len(t))
		for i, e := range t {
			hs[i] = canonicalHash(e)
		}
		slices.SortFunc(hs, func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
		h.Write([]byte{'a'})
		writeLen(len(hs))
		for _, e := range hs {
			h.Write(e[:])
		}
	case map[string]any:
		keys := sortedKeys(t)
		h.Write([]byte{'o'})
		writeLen(len(keys))
		for _, k := range keys {
			writeLen(len(k))
			h.Write([]byte(k))
			e := canonicalHash(t[k])
			h.Write(e[:])
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortKey places a value in the canonical order used to pair unordered
// arrays under a tolerance: by JSON type, then by shape (everything but
// the numbers, arrays as multisets), then by the values of its numbers.
type sortKey struct {
	rank  int
	shape [32]byte
	nums  []float64
	nodes int
}

func (j *jsonCmp) sortKey(v any) sortKey {
	h := sha256.New()
	k := sortKey{nodes: 1}
	switch t := v.(type) {
	case nil:
		k.rank = 0
	case bool:
		k.rank = 1
		h.Write([]byte(strconv.FormatBool(t)))
	case json.Number:
		k.rank = 2
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !math.IsInf(f, 0) {
			f = 0
		}
		k.nums = []float64{f}
	case string:
		k.rank = 3
		h.Write([]byte(t))
	case []any:
		k.rank = 4
		kids := make([]sortKey, len(t))
		for i, e := range t {
			kids[i] = j.sortKey(e)
		}
		slices.SortStableFunc(kids, compareSortKeys)
		for _, c := range kids {
			h.Write([]byte{byte(c.rank)})
			h.Write(c.shape[:])
			k.nums = append(k.nums, c.nums...)
			k.nodes += c.nodes
		}
	case map[string]any:
		k.rank = 5
		for _, key := range sortedKeys(t) {
			c := j.sortKey(t[key])
			fmt.Fprintf(h, "%d:%s", len(key), key)
			h.Write([]byte{byte(c.rank)})
			h.Write(c.shape[:])
			k.nums = append(k.nums, c.nums...)
			k.nodes += c.nodes
		}
	}
	h.Sum(k.shape[:0])
	return k
}

func compareSortKeys(a, b sortKey) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	if c := bytes.Compare(a.shape[:], b.shape[:]); c != 0 {
		return c
	}
	return slices.Compare(a.nums, b.nums)
}

// sortedOrder returns the indexes of keys in canonical order (stable).
func sortedOrder(keys []sortKey) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareSortKeys(keys[a], keys[b]) })
	return idx
}

// keySegment renders an object key in a detailed JSON path: .name for
// identifier-like keys, ["..."] (escaped, truncated) for others.
func keySegment(k string) string {
	if isIdentifier(k) {
		return "." + k
	}
	return "[" + quoteString(k) + "]"
}

func isIdentifier(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || !isDigit(c)) {
			return false
		}
	}
	return true
}

// maxPathLen bounds a rendered path; longer paths lose leading segments.
const maxPathLen = 160

func joinPath(segs []string) string {
	n := 1
	first := len(segs)
	for first > 0 && n+len(segs[first-1]) <= maxPathLen {
		first--
		n += len(segs[first])
	}
	if first > 0 {
		return "$…" + strings.Join(segs[first:], "")
	}
	return "$" + strings.Join(segs, "")
}

// article is the indefinite article for a JSON type name.
func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an"
	}
	return "a"
}
