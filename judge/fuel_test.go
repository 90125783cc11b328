package judge

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// asm assembles a module from its sections' contents (nil: absent), each
// a vector given as its count and bytes.
type asm struct {
	types, imports, funcs, memory, globals, exports, start, code []byte
}

func vec(items ...[]byte) []byte {
	b := appendULEB(nil, uint64(len(items)))
	for _, it := range items {
		b = append(b, it...)
	}
	return b
}

func name(s string) []byte { return append(appendULEB(nil, uint64(len(s))), s...) }

// body is a function body: locals groups, then code (without the final
// end, which it adds).
func body(locals []byte, code ...byte) []byte {
	fn := append(append([]byte(nil), locals...), code...)
	fn = append(fn, 0x0b)
	return append(appendULEB(nil, uint64(len(fn))), fn...)
}

func (a asm) bytes() []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range []struct {
		id   byte
		data []byte
	}{{1, a.types}, {2, a.imports}, {3, a.funcs}, {5, a.memory}, {6, a.globals}, {7, a.exports}, {8, a.start}, {10, a.code}} {
		if s.data != nil {
			m = append(m, s.id)
			m = appendULEB(m, uint64(len(s.data)))
			m = append(m, s.data...)
		}
	}
	return m
}

var (
	// fuelExportModule exports a global under the judge's reserved name.
	fuelExportModule = asm{
		types:   vec([]byte{0x60, 0, 0}),
		funcs:   vec([]byte{0}),
		globals: vec([]byte{0x7f, 0x00, 0x41, 0x00, 0x0b}),
		exports: vec(append(name("_start"), 0x00, 0x00), append(name(FuelExport), 0x03, 0x00)),
		code:    vec(body([]byte{0})),
	}.bytes()
	// atomicModule uses a thread opcode (0xFE): not meterable.
	atomicModule = asm{
		types:   vec([]byte{0x60, 0, 0}),
		funcs:   vec([]byte{0}),
		memory:  vec([]byte{0x00, 0x01}),
		exports: vec(append(name("_start"), 0x00, 0x00)),
		code:    vec(body([]byte{0}, 0xfe, 0x03, 0x00)), // atomic.fence
	}.bytes()
)

// computeModule exports functions of (i32) -> i64 that exercise the
// control flow the metering rewrites: loops, nested blocks, if/else,
// br_table, br_if with values, calls, recursion, typed select, sign
// extension, saturating truncation, bulk memory. An imported global
// and a global of its own check that the fuel global's index shifts
// nothing.
var computeModule = asm{
	types: vec(
		[]byte{0x60, 1, 0x7f, 1, 0x7e}, // 0: (i32) -> i64
		[]byte{0x60, 0, 0},             // 1: () -> ()
	),
	imports: vec(append(append(name("env"), name("g")...), 0x03, 0x7e, 0x00)), // global 0: imported i64
	funcs:   vec([]byte{0}, []byte{0}, []byte{0}, []byte{0}, []byte{0}, []byte{1}),
	memory:  vec([]byte{0x00, 0x01}),
	globals: vec([]byte{0x7e, 0x01, 0x42, 0x07, 0x0b}), // global 1: mut i64 = 7
	exports: vec(
		append(name("sum"), 0x00, 0x00),
		append(name("nested"), 0x00, 0x01),
		append(name("table"), 0x00, 0x02),
		append(name("fact"), 0x00, 0x03),
		append(name("misc"), 0x00, 0x04),
		append(name("memory"), 0x02, 0x00),
	),
	code: vec(
		// sum: local i64 acc; for i := n; i > 0; i-- { acc += i + g0 + g1 }
		body([]byte{1, 1, 0x7e},
			0x02, 0x40, // block
			0x03, 0x40, // loop
			0x20, 0x00, 0x45, 0x0d, 0x01, // local.get 0; i32.eqz; br_if 1
			0x20, 0x01, 0x20, 0x00, 0xad, 0x7c, // acc + u64(i)
			0x23, 0x00, 0x7c, 0x23, 0x01, 0x7c, 0x21, 0x01, // + g0 + g1 -> acc
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x21, 0x00, // i--
			0x0c, 0x00, // br 0
			0x0b, 0x0b,
			0x20, 0x01),
		// nested: loops in loops with if/else; returns a count
		body([]byte{2, 1, 0x7f, 1, 0x7e},
			0x03, 0x40, // loop (outer, over n)
			0x41, 0x00, 0x21, 0x01, // j := 0
			0x03, 0x40, // loop (inner, j < 3)
			0x20, 0x01, 0x41, 0x01, 0x71, // j & 1
			0x04, 0x40, // if
			0x20, 0x02, 0x42, 0x02, 0x7c, 0x21, 0x02,
			0x05, // else
			0x20, 0x02, 0x42, 0x01, 0x7c, 0x21, 0x02,
			0x0b,
			0x20, 0x01, 0x41, 0x01, 0x6a, 0x22, 0x01, 0x41, 0x03, 0x48, 0x0d, 0x00, // j++; br_if j < 3
			0x0b,
			0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x41, 0x00, 0x4a, 0x0d, 0x00, // n--; br_if n > 0
			0x0b,
			0x20, 0x02),
		// table: br_table over n % 4, each arm a value out of a block with a result
		body([]byte{0},
			0x02, 0x7e, // block (result i64)
			0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
			0x20, 0x00, 0x41, 0x04, 0x70, // n % 4
			0x0e, 0x03, 0x00, 0x01, 0x02, 0x03, // br_table 0 1 2 default 3
			0x0b, 0x42, 0x0a, 0x0c, 0x03, // arm 0: 10
			0x0b, 0x42, 0x14, 0x0c, 0x02, // arm 1: 20
			0x0b, 0x42, 0x1e, 0x0c, 0x01, // arm 2: 30
			0x0b, 0x42, 0x28, // default: 40
			0x0b),
		// fact: recursion through a call, with typed select
		body([]byte{0},
			0x20, 0x00, 0x41, 0x02, 0x48, // n < 2
			0x04, 0x7e, // if (result i64)
			0x42, 0x01,
			0x05,
			0x20, 0x00, 0xad, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x10, 0x03, 0x7e, // n * fact(n-1)
			0x0b,
			0x42, 0x00, 0x42, 0x05, 0x41, 0x01, 0x1c, 0x01, 0x7e, 0x7c), // + select(i64)(0, 5, 1): + 0
		// misc: sign extension, saturating truncation, memory.fill and
		// memory.copy (charged by length), a load; calls a () -> ()
		body([]byte{0},
			0x41, 0x00, 0x41, 0x2a, 0x20, 0x00, 0xfc, 0x0b, 0x00, // memory.fill(0, 42, n)
			0x41, 0x80, 0x02, 0x41, 0x00, 0x20, 0x00, 0xfc, 0x0a, 0x00, 0x00, // memory.copy(256, 0, n)
			0x10, 0x05, // call 5
			0x41, 0x80, 0x02, 0x28, 0x02, 0x00, // i32.load (256)
			0xc0,       // i32.extend8_s
			0xb7,       // f64.convert_i32_s
			0xfc, 0x07, // i64.trunc_sat_f64_u
		),
		// () -> (): a nop
		body([]byte{0}, 0x01),
	),
}.bytes()

// callAll instantiates a module and calls each export of (i32) -> i64 on
// each input, returning the results (or trap messages) and the fuel left.
func callAll(t *testing.T, wasm []byte, fuel int64, inputs []uint32) ([]string, int64) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	// The imported global: a module "env" exporting g = 3.
	envMod := asm{globals: vec([]byte{0x7e, 0x00, 0x42, 0x03, 0x0b}), exports: vec(append(name("g"), 0x03, 0x00))}.bytes()
	if _, err := rt.InstantiateWithConfig(ctx, envMod, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var g api.MutableGlobal
	if fuel > 0 {
		g = mod.ExportedGlobal(FuelExport).(api.MutableGlobal)
		g.Set(uint64(fuel))
	}
	var out []string
	for _, fn := range []string{"sum", "nested", "table", "fact", "misc"} {
		for _, in := range inputs {
			res, err := mod.ExportedFunction(fn).Call(ctx, uint64(in))
			if err != nil {
				out = append(out, fn+": "+trapMessage(err))
				continue
			}
			out = append(out, fn+": "+strconv.FormatUint(res[0], 10))
		}
	}
	if g == nil {
		return out, 0
	}
	return out, int64(g.Get())
}

// TestInstrumentSameAnswers: a metered module computes what the original
// does, and uses the same fuel every time.
func TestInstrumentSameAnswers(t *testing.T) {
	inputs := []uint32{0, 1, 2, 3, 4, 5, 17, 100}
	want, _ := callAll(t, computeModule, 0, inputs)
	m, err := instrument(computeModule)
	if err != nil {
		t.Fatal(err)
	}
	got, left := callAll(t, m.wasm, 1<<40, inputs)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the metered module answers differently (-original +metered):\n%s", diff)
	}
	_, left2 := callAll(t, m.wasm, 1<<40, inputs)
	if left != left2 || left >= 1<<40 {
		t.Errorf("fuel left %d, then %d", left, left2)
	}
	used := 1<<40 - left
	t.Logf("%d charges, %d fuel used", m.charges, used)

	// With less fuel than that, a run is stopped: a trap, and the
	// global below zero.
	_, left = callAll(t, m.wasm, used/2, inputs)
	if left >= 0 {
		t.Errorf("with half the fuel: %d left, want below zero", left)
	}
	// Bulk memory is charged by length: filling 64 KiB costs more than
	// filling nothing by about 64 KiB / 64.
	_, a := callAll(t, m.wasm, 1<<40, []uint32{0})
	_, b := callAll(t, m.wasm, 1<<40, []uint32{32768})
	if d := a - b; d < 2*32768>>bulkShift {
		t.Errorf("memory.fill and memory.copy of 32 KiB cost %d more than of nothing", d)
	}
}

// TestInstrumentRepoCheckers: the repository's checker modules meter, and
// compile, and answer as they did.
func TestInstrumentRepoCheckers(t *testing.T) {
	frame := []byte(`{"id":"a","kind":"function","input":[4,[[0,1],[0,2],[1,3],[2,3]]],"expected":[0,1,2,3],"output":"WzAsMiwxLDNd"}`)
	wrong := []byte(`{"id":"a","kind":"function","input":[4,[[0,1],[0,2],[1,3],[2,3]]],"expected":[0,1,2,3],"output":"WzMsMiwxLDBd"}`)
	sorted := []byte(`{"id":"a","kind":"function","input":["sorted",[3,1,2]],"expected":[1,2,3],"output":"WzIsMywxXQ=="}`)
	for _, tc := range []struct {
		name   string
		wasm   []byte
		frames [][]byte
	}{
		{"toposort", toposortChecker(t), [][]byte{frame, wrong}},
		{"test checker", testChecker(t), [][]byte{sorted, frame}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := instrument(tc.wasm)
			if err != nil {
				t.Fatal(err)
			}
			want := runRaw(t, tc.wasm, tc.frames)
			got := runRaw(t, m.wasm, tc.frames)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the metered module answers differently (-original +metered):\n%s", diff)
			}
			t.Logf("%d -> %d bytes, %d charges", len(tc.wasm), len(m.wasm), m.charges)
		})
	}
}

// runRaw runs a WASI module on each stdin and returns its stdout and
// error; a metered module is given ample fuel.
func runRaw(t *testing.T, wasm []byte, stdins [][]byte) []string {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compilationCache))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	code, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, stdin := range stdins {
		var stdout bytes.Buffer
		cfg := wazero.NewModuleConfig().WithName("").WithStdin(bytes.NewReader(stdin)).WithStdout(&stdout).WithStartFunctions()
		mod, err := rt.InstantiateModule(ctx, code, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if g, ok := mod.ExportedGlobal(FuelExport).(api.MutableGlobal); ok {
			g.Set(1 << 40)
		}
		_, err = mod.ExportedFunction("_start").Call(ctx)
		outs = append(outs, stdout.String()+errString(err))
		mod.Close(ctx)
	}
	return outs
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " error: " + err.Error()
}

// TestInstrumentRefuses: what cannot be metered is refused with
// errNotMeterable, never rewritten blindly.
func TestInstrumentRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm []byte
	}{
		{"not wasm", []byte("hello")},
		{"empty", nil},
		{"truncated", computeModule[:len(computeModule)-3]},
		{"reserved export", fuelExportModule},
		{"threads", atomicModule},
		{"exceptions", asm{types: vec([]byte{0x60, 0, 0}), funcs: vec([]byte{0}), code: vec(body([]byte{0}, 0x06, 0x40, 0x0b))}.bytes()},
		{"no end", asm{types: vec([]byte{0x60, 0, 0}), funcs: vec([]byte{0}), code: vec([]byte{0x02, 0x00, 0x01})}.bytes()},
		{"start section", asm{types: vec([]byte{0x60, 0, 0}), funcs: vec([]byte{0}), start: []byte{0x00}, code: vec(body([]byte{0}))}.bytes()},
		{"bodies and functions disagree", asm{types: vec([]byte{0x60, 0, 0}), funcs: vec([]byte{0}, []byte{0}), code: vec(body([]byte{0}))}.bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := instrument(tc.wasm); !errors.Is(err, errNotMeterable) {
				t.Errorf("error %v, want errNotMeterable", err)
			}
		})
	}
}

// FuzzInstrument: instrument never panics, and whatever it accepts of a
// module wazero compiles, wazero compiles metered too.
func FuzzInstrument(f *testing.F) {
	for _, m := range [][]byte{computeModule, trapModule, loopModule, fuelExportModule, atomicModule, envImportModule, bigMemoryModule} {
		f.Add(m)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, wasm []byte) {
		m, err := instrument(wasm)
		if err != nil {
			return
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer rt.Close(ctx)
		if _, err := rt.CompileModule(ctx, wasm); err != nil {
			return
		}
		if _, err := rt.CompileModule(ctx, m.wasm); err != nil {
			t.Errorf("the original compiles, the metered module does not: %v", err)
		}
	})
}
