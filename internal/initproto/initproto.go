// Package initproto is the frame the Docker backend writes on a sandbox's
// standard input for sginit, the trusted init that lays trees out before
// the workload starts (ADR 0013).
//
// A frame is the magic "SGI1", a 4-byte big-endian header length, the
// header as JSON, then each tree's archive in the header's order, exactly
// Size bytes each. Whatever follows the frame on the stream is the
// workload's standard input.
package initproto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Magic opens every frame.
const Magic = "SGI1"

// MaxHeaderBytes bounds the JSON header.
const MaxHeaderBytes = 1 << 20

// Ready is what sginit writes on standard error once it has laid out the
// trees and dropped its privileges, right before it executes the workload.
// Everything on standard error after it is the workload's; a stream that
// does not start with it means the init failed, and what is there instead
// is the init's own message.
const Ready = "\x00sginit: ready\x00\n"

// Exit statuses of sginit itself.
const (
	ExitIdle  = 121 // no frame arrived within the idle limit
	ExitFrame = 122 // the frame was malformed or a tree could not be laid out
	ExitDrop  = 123 // privileges could not be dropped, or did not stay dropped
	ExitExec  = 124 // the workload could not be executed
)

// Header says what to run and what trees follow.
type Header struct {
	Argv  []string     `json:"argv"`
	Trees []TreeHeader `json:"trees"`
}

// TreeHeader is one tree of a frame: where it goes and how many archive
// bytes follow for it.
type TreeHeader struct {
	Dir  string `json:"dir"`
	Size int64  `json:"size"`
}

// Tree is a tree to write: its directory and its archive.
type Tree struct {
	Dir     string
	Archive []byte
}

// Write writes a frame running argv with trees.
func Write(w io.Writer, argv []string, trees []Tree) error {
	h := Header{Argv: argv, Trees: make([]TreeHeader, len(trees))}
	for i, t := range trees {
		h.Trees[i] = TreeHeader{Dir: t.Dir, Size: int64(len(t.Archive))}
	}
	js, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if len(js) > MaxHeaderBytes {
		return fmt.Errorf("initproto: header of %d bytes", len(js))
	}
	buf := make([]byte, 0, 8+len(js))
	buf = append(buf, Magic...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(js)))
	buf = append(buf, js...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	for _, t := range trees {
		if _, err := w.Write(t.Archive); err != nil {
			return err
		}
	}
	return nil
}

// ErrFrame means a frame is malformed.
var ErrFrame = errors.New("initproto: malformed frame")

// ReadHeader reads a frame's magic and header from r, which it does not
// read past. The trees' archives follow.
func ReadHeader(r io.Reader) (Header, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	if string(pre[:4]) != Magic {
		return Header{}, fmt.Errorf("%w: bad magic", ErrFrame)
	}
	n := binary.BigEndian.Uint32(pre[4:])
	if n > MaxHeaderBytes {
		return Header{}, fmt.Errorf("%w: header of %d bytes", ErrFrame, n)
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(r, js); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	var h Header
	if err := json.Unmarshal(js, &h); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	if len(h.Argv) == 0 || h.Argv[0] == "" {
		return Header{}, fmt.Errorf("%w: no command", ErrFrame)
	}
	for _, t := range h.Trees {
		if t.Size < 0 {
			return Header{}, fmt.Errorf("%w: negative size", ErrFrame)
		}
	}
	return h, nil
}
