package candidate

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// orderDomain separates the call-order stream from every other use of a
// nonce.
const orderDomain = "strictgrade/candidate/call-order/v1"

// CallOrder returns the order in which a function task whose cases share
// one process calls its n cases in the grade issued nonce: a permutation of
// 0 … n-1, where element k is the index (in the task's case list) of the
// k-th call.
//
// The permutation is a Fisher–Yates shuffle driven by a SHA-256 counter
// stream: block b is SHA-256(orderDomain ‖ 0x00 ‖ nonce ‖ 0x00 ‖ b as 8
// big-endian bytes), read as 64-bit big-endian words, and each draw below
// i+1 rejects the words at or above the largest multiple of i+1, so every
// permutation is equally likely. The same nonce always gives the same order
// (a verdict's nonce is enough to reproduce it); different nonces give
// independent orders. Without the nonce, the order cannot be predicted from
// inside the container.
//
// Every permutation is equally likely, the task's own order included: a
// candidate that keys its answers to the order of calls passes one grade in
// n!, which is what the shuffle buys. With very few cases that is little
// (one in two for two cases); a task with few cases that cares sets
// "isolation": "case", where each process sees a single call.
func CallOrder(nonce string, n int) []int {
	order := make([]int, max(n, 0))
	for i := range order {
		order[i] = i
	}
	s := orderStream{prefix: []byte(orderDomain + "\x00" + nonce + "\x00"), used: sha256.Size}
	for i := len(order) - 1; i > 0; i-- {
		j := s.below(uint64(i) + 1)
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// orderStream is the SHA-256 counter stream behind CallOrder.
type orderStream struct {
	prefix []byte
	block  uint64
	buf    [sha256.Size]byte
	used   int // bytes of buf consumed; len(buf) asks for the next block
}

func (s *orderStream) word() uint64 {
	if s.used == len(s.buf) {
		var ctr [8]byte
		binary.BigEndian.PutUint64(ctr[:], s.block)
		s.buf = sha256.Sum256(append(append([]byte(nil), s.prefix...), ctr[:]...))
		s.block++
		s.used = 0
	}
	w := binary.BigEndian.Uint64(s.buf[s.used:])
	s.used += 8
	return w
}

// below returns a uniform draw from [0, n), n > 0.
func (s *orderStream) below(n uint64) int {
	// Words below limit, a multiple of n, map evenly onto [0, n).
	limit := math.MaxUint64 - math.MaxUint64%n
	for {
		w := s.word()
		if w < limit {
			return int(w % n)
		}
	}
}

// callOrder is the order function runFunction uses; a test swaps in the
// identity to show what a fixed order would let through.
var callOrder = CallOrder
