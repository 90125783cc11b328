package judge

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Fuel: a checker's deterministic budget.
//
// wazero has no fuel, so the judge meters a checker itself: before it
// compiles a module, instrument rewrites the binary. It appends one
// mutable i64 global (after the existing ones, so no index shifts),
// exported as FuelExport, and splits every function's code into segments
// that control can enter only at their start (a segment ends after each
// loop, if, else, end, br, br_if, br_table, return, unreachable and tail
// call). At the start of each segment it inserts a charge: subtract the
// segment's instruction count from the global. The charges at a
// function's entry and at loop headers also trap (unreachable) when the
// global went below zero; every other charge only subtracts, since
// control cannot return to it without passing one that checks, and
// between two checks it runs forward through a bounded stretch of code.
// memory.copy and memory.fill are charged one unit more per 64 bytes of
// their length, which the rewrite reads from the stack through one spare
// local. A run sets the global to its fuel before _start and reads it
// back after, trap or not: below zero means the run used up its fuel,
// whether a check stopped it or it ended first.
//
// Fuel is so an upper bound of the instructions a run executes (and the
// bytes it copies or fills), and a static count: the same module on the
// same input uses the same fuel on any machine at any load. What a unit
// costs in time still varies with the instruction (a WASI call, a
// memory.grow or a table operation costs one unit and is bounded by the
// input's size and the limits instead), which the wall-clock backstop
// covers.
//
// Every instruction is decoded, immediates included, so the rewrite never
// loses its place: the MVP, sign extension, the 0xFC prefix (saturating
// truncation, bulk memory, table ops), the 0xFD prefix (SIMD), tail calls
// and typed select; a module with any other opcode (threads, exceptions,
// GC) is refused as not meterable, a defect of the task that task check
// finds. So is a module with a start section, which would run while the
// module is instantiated, before a run sets its fuel (WASI commands, as
// Go, Rust and C toolchains build them, start at their _start export).

// FuelExport is the name under which an instrumented module exports its
// fuel global. A module that already exports the name is refused.
const FuelExport = "strictgrade.fuel"

// errNotMeterable: instrument cannot meter the module.
var errNotMeterable = errors.New("cannot meter the module")

// wasm section ids, in the order a module holds them (tag, 13, sits
// between memory and global; data count, 12, between element and code).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionRank is the position of a section id in a module's order.
func sectionRank(id byte) int {
	switch id {
	case secTag:
		return 55 // after memory (5), before global (6)
	case secDataCount:
		return 95 // after element (9), before code (10)
	}
	return int(id) * 10
}

type wasmSection struct {
	id   byte
	body []byte
}

// wasmReader decodes the binary format, remembering the first error.
type wasmReader struct {
	b   []byte
	pos int
	err error
}

func (r *wasmReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errNotMeterable}, args...)...)
	}
}

func (r *wasmReader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("unexpected end at byte %d", r.pos)
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *wasmReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.pos) {
		r.fail("unexpected end at byte %d", r.pos)
		return nil
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

// uleb reads an unsigned LEB128 of at most bits bits.
func (r *wasmReader) uleb(bits uint) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits+7 || shift >= 70 {
			r.fail("LEB128 too long at byte %d", r.pos)
			return 0
		}
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *wasmReader) u32() uint32 { return uint32(r.uleb(32)) }

// sleb skips a signed LEB128 of at most bits bits.
func (r *wasmReader) sleb(bits uint) {
	for shift := uint(0); ; shift += 7 {
		if shift >= bits+7 || shift >= 70 {
			r.fail("LEB128 too long at byte %d", r.pos)
			return
		}
		if r.byte()&0x80 == 0 || r.err != nil {
			return
		}
	}
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// instrumented is a metered module.
type instrumented struct {
	wasm []byte
	// charges is the number of static charges inserted (segments).
	charges int
}

// instrument returns the module wasm metered as the package comment
// says, or an error wrapping errNotMeterable. The fuel global starts at
// 0: a run sets it.
func instrument(wasm []byte) (instrumented, error) {
	r := &wasmReader{b: wasm}
	if magic := r.bytes(8); r.err != nil || string(magic) != "\x00asm\x01\x00\x00\x00" {
		return instrumented{}, fmt.Errorf("%w: not a WebAssembly 1.0 binary", errNotMeterable)
	}
	var secs []wasmSection
	for r.pos < len(wasm) && r.err == nil {
		id := r.byte()
		size := r.u32()
		body := r.bytes(uint64(size))
		secs = append(secs, wasmSection{id, body})
	}
	if r.err != nil {
		return instrumented{}, r.err
	}
	var importedGlobals, definedGlobals uint32
	var params []uint64 // by type index
	var funcTypes []uint32
	for _, s := range secs {
		var err error
		switch s.id {
		case secType:
			params, err = readParams(s.body)
		case secFunction:
			sr := &wasmReader{b: s.body}
			n := sr.u32()
			for i := uint32(0); i < n && sr.err == nil; i++ {
				funcTypes = append(funcTypes, sr.u32())
			}
			err = sr.err
		case secImport:
			importedGlobals, err = countImportedGlobals(s.body)
		case secGlobal:
			sr := &wasmReader{b: s.body}
			definedGlobals = sr.u32()
			err = sr.err
		case secExport:
			err = checkExports(s.body)
		case secStart:
			// It would run while the module is instantiated, before a
			// run can set the fuel global.
			err = fmt.Errorf("%w: it has a start section; a checker starts at its _start export", errNotMeterable)
		}
		if err != nil {
			return instrumented{}, err
		}
	}
	if uint64(importedGlobals)+uint64(definedGlobals) >= math.MaxUint32 {
		return instrumented{}, fmt.Errorf("%w: too many globals", errNotMeterable)
	}
	fuel := importedGlobals + definedGlobals

	// The new global: (global (mut i64) (i64.const 0)).
	newGlobal := []byte{0x7e, 0x01, 0x42, 0x00, 0x0b}
	// The new export: FuelExport = global fuel.
	newExport := appendULEB(nil, uint64(len(FuelExport)))
	newExport = append(newExport, FuelExport...)
	newExport = appendULEB(append(newExport, 0x03), uint64(fuel))

	out := instrumented{}
	var done [2]bool // global, export sections written
	add := func(id byte, extra []byte, old []byte) []byte {
		n := uint32(0)
		rest := []byte(nil)
		if old != nil {
			sr := &wasmReader{b: old}
			n = sr.u32()
			rest = old[sr.pos:]
		}
		body := appendULEB(nil, uint64(n)+1)
		body = append(body, rest...)
		return append(body, extra...)
	}
	var outSecs []wasmSection
	emitMissing := func(before int) {
		if !done[0] && sectionRank(secGlobal) < before {
			outSecs = append(outSecs, wasmSection{secGlobal, add(secGlobal, newGlobal, nil)})
			done[0] = true
		}
		if !done[1] && sectionRank(secExport) < before {
			outSecs = append(outSecs, wasmSection{secExport, add(secExport, newExport, nil)})
			done[1] = true
		}
	}
	for _, s := range secs {
		if s.id != secCustom {
			emitMissing(sectionRank(s.id))
		}
		switch s.id {
		case secGlobal:
			outSecs = append(outSecs, wasmSection{secGlobal, add(secGlobal, newGlobal, s.body)})
			done[0] = true
		case secExport:
			outSecs = append(outSecs, wasmSection{secExport, add(secExport, newExport, s.body)})
			done[1] = true
		case secCode:
			var fnParams []uint64
			for _, t := range funcTypes {
				if uint64(t) >= uint64(len(params)) {
					return instrumented{}, fmt.Errorf("%w: a function of unknown type %d", errNotMeterable, t)
				}
				fnParams = append(fnParams, params[t])
			}
			body, n, err := meterCode(s.body, fuel, fnParams)
			if err != nil {
				return instrumented{}, err
			}
			out.charges += n
			outSecs = append(outSecs, wasmSection{secCode, body})
		default:
			outSecs = append(outSecs, s)
		}
	}
	emitMissing(math.MaxInt)
	w := append([]byte(nil), wasm[:8]...)
	for _, s := range outSecs {
		w = append(w, s.id)
		w = appendULEB(w, uint64(len(s.body)))
		w = append(w, s.body...)
	}
	out.wasm = w
	return out, nil
}

// readParams reads a type section: the number of parameters of each
// function type.
func readParams(body []byte) ([]uint64, error) {
	r := &wasmReader{b: body}
	n := r.u32()
	var params []uint64
	for i := uint32(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			r.fail("type %d is not a function type (0x%02x)", i, form)
			break
		}
		p := r.u32()
		r.bytes(uint64(p))
		r.bytes(uint64(r.u32())) // results
		params = append(params, uint64(p))
	}
	return params, r.err
}

// countImportedGlobals reads an import section.
func countImportedGlobals(body []byte) (uint32, error) {
	r := &wasmReader{b: body}
	n := r.u32()
	var globals uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.bytes(uint64(r.u32())) // module
		r.bytes(uint64(r.u32())) // name
		switch kind := r.byte(); kind {
		case 0x00: // function: type index
			r.u32()
		case 0x01: // table: reftype, limits
			r.byte()
			readLimits(r)
		case 0x02: // memory: limits
			readLimits(r)
		case 0x03: // global: valtype, mutability
			r.byte()
			r.byte()
			globals++
		case 0x04: // tag: attribute, type index
			r.byte()
			r.u32()
		default:
			r.fail("import of unknown kind 0x%02x", kind)
		}
	}
	return globals, r.err
}

func readLimits(r *wasmReader) {
	flags := r.byte()
	r.uleb(64)
	if flags&0x01 != 0 {
		r.uleb(64)
	}
	if flags > 0x07 {
		r.fail("limits with unknown flags 0x%02x", flags)
	}
}

// checkExports refuses a module that exports FuelExport itself.
func checkExports(body []byte) error {
	r := &wasmReader{b: body}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		name := r.bytes(uint64(r.u32()))
		r.byte()
		r.u32()
		if r.err == nil && string(name) == FuelExport {
			return fmt.Errorf("%w: it exports %s, a name the judge reserves", errNotMeterable, FuelExport)
		}
	}
	return r.err
}

// meterCode rewrites a code section, inserting charges of the global
// fuel. It returns the new section and the number of charges.
func meterCode(body []byte, fuel uint32, params []uint64) ([]byte, int, error) {
	r := &wasmReader{b: body}
	n := r.u32()
	if r.err == nil && uint64(n) != uint64(len(params)) {
		return nil, 0, fmt.Errorf("%w: %d function bodies for %d functions", errNotMeterable, n, len(params))
	}
	out := appendULEB(nil, uint64(n))
	charges := 0
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		fn := r.bytes(uint64(size))
		if r.err != nil {
			return nil, 0, r.err
		}
		m, k, err := meterFunction(fn, fuel, params[i])
		if err != nil {
			return nil, 0, fmt.Errorf("function %d: %w", i, err)
		}
		charges += k
		out = appendULEB(out, uint64(len(m)))
		out = append(out, m...)
	}
	if r.pos != len(body) {
		return nil, 0, fmt.Errorf("%w: bytes after the last function", errNotMeterable)
	}
	return out, charges, nil
}

// insertion is code meterFunction inserts before the byte at a position
// of a body: a static charge of cost, or (bulk) the charge of a
// memory.copy or memory.fill by its length.
type insertion struct {
	at   int
	cost int64
	bulk bool
	// check: the charge also traps when the fuel went below zero.
	check bool
}

// bulkShift: memory.copy and memory.fill cost one unit more per 2^6
// bytes they write, charged by their length operand.
const bulkShift = 6

// meterFunction rewrites one function (locals and expression); params is
// the number of its parameters. It splits the code into segments that
// control can enter only at their start: a segment ends after a loop, if,
// else, end, br, br_if, br_table, return, unreachable or a tail call (a
// block's body is entered only by falling into it). Each segment starts
// with a charge of its instruction count. It returns the new function
// and the number of charges.
func meterFunction(fn []byte, fuel uint32, params uint64) ([]byte, int, error) {
	r := &wasmReader{b: fn}
	groups := r.u32()
	locals := params
	for i := uint32(0); i < groups && r.err == nil; i++ {
		locals += r.uleb(32)
		if t := r.byte(); !isValType(t) {
			r.fail("local of unknown type 0x%02x", t)
		}
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	if locals >= math.MaxUint32 {
		return nil, 0, fmt.Errorf("%w: too many locals", errNotMeterable)
	}
	codeStart := r.pos
	// Pass 1: decode, and find the segments and bulk memory operations.
	var ins []insertion
	seg := insertion{at: codeStart, check: true}
	depth := 1
	bulk := false
	for depth > 0 {
		if r.pos >= len(fn) {
			return nil, 0, fmt.Errorf("%w: the body has no end", errNotMeterable)
		}
		start := r.pos
		op := r.byte()
		seg.cost++
		ends := false
		switch op {
		case 0x02: // block
			r.sleb(33)
			depth++
		case 0x03, 0x04: // loop, if
			r.sleb(33)
			depth++
			ends = true
		case 0x0b: // end
			depth--
			ends = true
		case 0x05, 0x0c, 0x0d, 0x0e, 0x0f, 0x00, 0x12, 0x13:
			// else, br, br_if, br_table, return, unreachable, tail calls
			skipImmediates(r, op)
			ends = true
		case 0xfc:
			sub := skipFC(r)
			if sub == 10 || sub == 11 { // memory.copy, memory.fill
				ins = append(ins, insertion{at: start, bulk: true})
				bulk = true
			}
		default:
			skipImmediates(r, op)
		}
		if r.err != nil {
			return nil, 0, r.err
		}
		if ends {
			ins = append(ins, seg)
			seg = insertion{at: r.pos, check: op == 0x03}
		}
	}
	if r.pos != len(fn) {
		return nil, 0, fmt.Errorf("%w: bytes after the body's end", errNotMeterable)
	}
	// Charges go before the bulk operations they share a position with
	// (none do: a segment never starts at a memory.copy), in order.
	slices.SortStableFunc(ins, func(a, b insertion) int { return a.at - b.at })

	// Pass 2: copy, inserting the charges; a function with bulk memory
	// operations gets one more i32 local, after all others, for the
	// length.
	out := make([]byte, 0, len(fn)+len(ins)*24+8)
	at := codeStart
	if bulk {
		out = appendULEB(out, uint64(groups)+1)
		out = append(out, fn[len(appendULEB(nil, uint64(groups))):codeStart]...)
		out = append(out, 0x01, 0x7f)
	} else {
		out = append(out, fn[:codeStart]...)
	}
	charges := 0
	for _, in := range ins {
		out = append(out, fn[at:in.at]...)
		at = in.at
		if in.bulk {
			out = appendBulkCharge(out, fuel, uint32(locals))
			continue
		}
		out = appendCharge(out, fuel, in.cost, in.check)
		charges++
	}
	out = append(out, fn[at:]...)
	return out, charges, nil
}

// appendBulkCharge appends the code that charges a memory.copy or
// memory.fill, whose length (i32) is on the top of the stack, and leaves
// the stack as it was: local.tee the length into the spare local, then
// subtract length >> bulkShift from the fuel.
func appendBulkCharge(b []byte, fuel, local uint32) []byte {
	b = appendULEB(append(b, 0x22), uint64(local))   // local.tee
	b = appendULEB(append(b, 0x23), uint64(fuel))    // global.get
	b = appendULEB(append(b, 0x20), uint64(local))   // local.get
	b = append(b, 0xad)                              // i64.extend_i32_u
	b = append(b, 0x42, bulkShift)                   // i64.const
	b = append(b, 0x88)                              // i64.shr_u
	b = append(b, 0x7d)                              // i64.sub
	return appendULEB(append(b, 0x24), uint64(fuel)) // global.set
}

// appendCharge appends the code that subtracts cost from the fuel
// global and traps when it went below zero. The charge's own
// instructions are not counted.
func appendCharge(b []byte, fuel uint32, cost int64, check bool) []byte {
	b = appendULEB(append(b, 0x23), uint64(fuel)) // global.get
	b = appendSLEB(append(b, 0x42), cost)         // i64.const cost
	b = append(b, 0x7d)                           // i64.sub
	if !check {
		return appendULEB(append(b, 0x24), uint64(fuel)) // global.set
	}
	return appendTrap(b, fuel)
}

// appendTrap stores the new fuel (on the stack) and traps when it is
// below zero.
func appendTrap(b []byte, fuel uint32) []byte {
	b = appendULEB(append(b, 0x24), uint64(fuel)) // global.set
	b = appendULEB(append(b, 0x23), uint64(fuel)) // global.get
	b = append(b, 0x42, 0x00)                     // i64.const 0
	b = append(b, 0x53)                           // i64.lt_s
	b = append(b, 0x04, 0x40)                     // if
	b = append(b, 0x00)                           // unreachable
	return append(b, 0x0b)                        // end
}

// isValType reports whether t is a value type of the MVP, SIMD or
// reference types.
func isValType(t byte) bool {
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

// skipImmediates reads the immediates of op (not block, loop, if, end),
// or fails on an opcode it does not know.
func skipImmediates(r *wasmReader, op byte) {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b:
		// unreachable, nop, else, return, drop, select
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12: // br, br_if, call, return_call
		r.u32()
	case op == 0x0e: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1c: // select t*
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			if t := r.byte(); !isValType(t) {
				r.fail("select of unknown type 0x%02x", t)
			}
		}
	case op >= 0x20 && op <= 0x26: // local.*, global.*, table.get, table.set
		r.u32()
	case op >= 0x28 && op <= 0x3e: // loads and stores
		memarg(r)
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		r.u32()
	case op == 0x41:
		r.sleb(32)
	case op == 0x42:
		r.sleb(64)
	case op == 0x43:
		r.bytes(4)
	case op == 0x44:
		r.bytes(8)
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
	case op == 0xd0: // ref.null t
		if t := r.byte(); t != 0x70 && t != 0x6f {
			r.fail("ref.null of unknown type 0x%02x", t)
		}
	case op == 0xd1: // ref.is_null
	case op == 0xd2: // ref.func
		r.u32()
	case op == 0xfc:
		_ = skipFC(r)
	case op == 0xfd:
		skipFD(r)
	default:
		r.fail("unknown opcode 0x%02x at byte %d", op, r.pos-1)
	}
}

// memarg reads alignment (with the multi-memory flag) and offset.
func memarg(r *wasmReader) {
	align := r.u32()
	if align&0x40 != 0 {
		r.u32()
	}
	r.uleb(64)
}

// skipFC reads a 0xFC instruction after its prefix and returns its
// number.
func skipFC(r *wasmReader) uint32 {
	sub := r.u32()
	switch {
	case sub <= 7: // saturating truncation
	case sub == 8: // memory.init data mem
		r.u32()
		r.u32()
	case sub == 9: // data.drop
		r.u32()
	case sub == 10: // memory.copy mem mem
		r.u32()
		r.u32()
	case sub == 11: // memory.fill mem
		r.u32()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	case sub == 13 || (sub >= 15 && sub <= 17): // elem.drop, table.grow, table.size, table.fill
		r.u32()
	default:
		r.fail("unknown opcode 0xfc %d", sub)
	}
	return sub
}

// skipFD reads a 0xFD (SIMD) instruction after its prefix.
func skipFD(r *wasmReader) {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // v128 loads, store, load zero
		memarg(r)
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.bytes(16)
	case sub >= 21 && sub <= 34: // extract and replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load and store lane
		memarg(r)
		r.byte()
	case sub <= 255:
		// the rest of SIMD has no immediates (opcodes that do not
		// exist are refused by the compiler)
	default:
		r.fail("unknown opcode 0xfd %d", sub)
	}
}

// fuelUsed returns the fuel a run used from what was left in the global.
func fuelUsed(start int64, left uint64) (used int64, out bool) {
	l := int64(left)
	if l < 0 {
		return start, true
	}
	return start - l, false
}

// ReasonCheckerFuel is the reason code of a case whose checker ran out of
// fuel on the candidate's output: a FAIL the candidate's output caused,
// the same on every run.
const ReasonCheckerFuel = "checker_out_of_fuel"

// Fuel of checkers, as a Comparator sets it: 0 means the default.
//
// Reading its input is most of what a checker does on a large output: a
// Go checker decoding CheckerInput with encoding/json uses about 1,050
// units a byte of the candidate's output (measured: 1.08e9 for the
// toposort checker on a 1 MiB answer, 4.4e9 for 4 MiB, the most a checker
// with the default memory is given). The default covers a task's default
// output limit (1 MiB) more than twice over; task check measures what a
// task's checker needs at the task's own limit, and a task with a larger
// limit raises fuel (and timeout_ms with it).
const (
	// DefaultCheckerFuel is the default fuel of one checker run;
	// MaxCheckerFuel the largest accepted.
	DefaultCheckerFuel = 3_000_000_000
	MaxCheckerFuel     = 15_000_000_000
	// CheckerTotalFuel is the fuel all checker runs of one Judge share,
	// in the order of the cases: a run is given at most what is left, and
	// a run stopped by what is left fails its case as one stopped by its
	// own fuel does.
	CheckerTotalFuel = 15_000_000_000
)

// CheckerUse is what one checker run used, as Input.OnChecker hears of it.
type CheckerUse struct {
	// Case is the case id.
	Case string
	// Fuel is the fuel the run was given, Used what it used of it.
	Fuel, Used int64
	// OutOfFuel says the run was stopped by its fuel.
	OutOfFuel bool
}
