// Package wasmcheck assembles the proof matrix's hostile checker: a WASI
// module, written out instruction by instruction, that the pm-checked task
// decides its cases with. It reads its whole input, then loops a number of
// times that grows with the square of the input's length (a checker that
// is cheap on the answers its author tried and slow on a long one), and
// rejects every output with a message longer than a verdict keeps that
// quotes the task's expected value again and again (a checker author who
// puts hidden data in a message). The probes V9.8-checker-fuel and
// V10.5-checker-message grade against it.
//
// The module is committed as proofmatrix/tasks/checked/hidden/checker.wasm;
// go generate in proofmatrix writes it again, and a test holds the file to
// Module.
package wasmcheck

import "strings"

// Secret is the pm-checked task's expected value, which the checker's
// message repeats.
const Secret = "tangerine-dusk-4242-qv"

// MessageBytes is the length of the checker's reject message: more than
// the 4096 bytes an answer's message may keep.
const MessageBytes = 5000

// Message is the checker's reject message: the expected value, again and
// again, MessageBytes long.
func Message() string {
	const part = "want " + Secret + "; "
	return strings.Repeat(part, MessageBytes/len(part)+1)[:MessageBytes]
}

// Answer is what the checker writes for every case.
func Answer() string { return `{"verdict":"reject","message":"` + Message() + `"}` }

// Memory layout (one 64 KiB page): the read vector at 0, the count read at
// 8, the write vector at 16, the count written at 24, the read buffer at
// 1024 (32 KiB), the answer at 40000.
const (
	readBuf    = 1024
	readLen    = 32768
	answerAddr = 40000
)

// Module returns the checker's bytes.
func Module() []byte {
	answer := Answer()
	var m []byte
	m = append(m, 0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00)
	// Types: 0 (i32 i32 i32 i32) -> i32, the WASI read and write calls;
	// 1 () -> (), _start.
	m = section(m, 1, vec(
		[]byte{0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f},
		[]byte{0x60, 0x00, 0x00},
	))
	m = section(m, 2, vec(
		cat(name("wasi_snapshot_preview1"), name("fd_read"), []byte{0x00, 0x00}),
		cat(name("wasi_snapshot_preview1"), name("fd_write"), []byte{0x00, 0x00}),
	))
	m = section(m, 3, vec([]byte{0x01}))       // function 2: type 1
	m = section(m, 5, vec([]byte{0x00, 0x01})) // one memory of one page
	m = section(m, 7, vec(
		cat(name("memory"), []byte{0x02, 0x00}),
		cat(name("_start"), []byte{0x00, 0x02}),
	))
	m = section(m, 10, vec(withSize(startBody(len(answer)))))
	m = section(m, 11, vec(cat([]byte{0x00}, i32const(answerAddr), []byte{0x0b}, name(answer))))
	return m
}

// startBody is _start: locals 0 ($n) and 1 ($total) i32, 2 ($k) i64.
func startBody(answerLen int) []byte {
	b := []byte{0x02, 0x02, 0x7f, 0x01, 0x7e} // two local groups
	store := func(addr, v int) { b = cat(b, i32const(addr), i32const(v), []byte{0x36, 0x02, 0x00}) }
	// block $done; loop $read
	b = append(b, 0x02, 0x40, 0x03, 0x40)
	store(0, readBuf)
	store(4, readLen)
	b = cat(b, i32const(0), i32const(0), i32const(1), i32const(8), []byte{0x10, 0x00}) // fd_read(0, iov, 1, &n)
	b = append(b, 0x0d, 0x01)                                                          // br_if $done: an error
	b = cat(b, i32const(8), []byte{0x28, 0x02, 0x00, 0x22, 0x00})                      // n = load(8), kept
	b = append(b, 0x45, 0x0d, 0x01)                                                    // br_if $done: n == 0
	b = append(b, 0x20, 0x00, 0x20, 0x01, 0x6a, 0x21, 0x01)                            // total += n
	b = append(b, 0x0c, 0x00, 0x0b, 0x0b)                                              // br $read; end; end
	// k = (total >> 4)^2
	b = cat(b, []byte{0x20, 0x01}, i32const(4), []byte{0x76, 0xad, 0x22, 0x02, 0x20, 0x02, 0x7e, 0x21, 0x02})
	// block $out; loop $burn: while k != 0 { k-- }
	b = append(b, 0x02, 0x40, 0x03, 0x40,
		0x20, 0x02, 0x50, 0x0d, 0x01,
		0x20, 0x02, 0x42, 0x01, 0x7d, 0x21, 0x02,
		0x0c, 0x00, 0x0b, 0x0b)
	store(16, answerAddr)
	store(20, answerLen)
	b = cat(b, i32const(1), i32const(16), i32const(1), i32const(24), []byte{0x10, 0x01, 0x1a}) // fd_write(1, iov, 1, &w)
	return append(b, 0x0b)
}

func i32const(v int) []byte { return append([]byte{0x41}, sleb(int64(v))...) }

func sleb(v int64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func uleb(v int) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func name(s string) []byte       { return append(uleb(len(s)), s...) }
func withSize(b []byte) []byte   { return append(uleb(len(b)), b...) }
func vec(items ...[]byte) []byte { return cat(append([][]byte{uleb(len(items))}, items...)...) }
func section(m []byte, id byte, content []byte) []byte {
	return cat(m, []byte{id}, withSize(content))
}
