package breakout

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"time"
)

// Accept is the Want of a case the firewall must accept.
const Accept = "accept"

// Case is one archive with its expected decision.
type Case struct {
	// Name is the stable identifier and file stem, prefixed by the row of
	// the hostile-archive table it comes from (N names, D duplicates, L links
	// and types, M metadata, S sizes and framing, C containerd's
	// TestBreakouts, X denylist, B benign).
	Name string `json:"name"`
	Desc string `json:"desc"`
	// Want is Accept or the name of the firewall sentinel error
	// ("ErrSymlink", ...).
	Want string `json:"want"`
	// Policy is the JSON policy to filter with; empty means the zero Policy.
	Policy json.RawMessage `json:"policy,omitempty"`
	Data   []byte          `json:"-"`
}

func gnu(ents ...Ent) []byte { return W(tar.FormatGNU, ents...) }
func pax(ents ...Ent) []byte { return W(tar.FormatPAX, ents...) }
func std(ents ...Ent) []byte { return W(tar.FormatUnknown, ents...) }
func link(typ byte, name, target string) Ent {
	return Ent{Hdr: tar.Header{Name: name, Typeflag: typ, Linkname: target, Mode: 0o777}}
}
func node(typ byte, name string) Ent {
	return Ent{Hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644}}
}
func arc() *Arc { return &Arc{} }

// patch writes ents with the Writer and lets fn edit the bytes.
func patch(fn func(b []byte) []byte, ents ...Ent) []byte {
	return fn(std(ents...))
}

func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

// All returns every case, in a stable order.
func All() []Case {
	long := strings.Repeat("x", 120)
	hdrOnly := Raw{Name: "smuggled.txt", Size: 5}.Block()
	var cs []Case
	add := func(name, want, desc string, data []byte) {
		cs = append(cs, Case{Name: name, Want: want, Desc: desc, Data: data})
	}
	addP := func(name, want, policy, desc string, data []byte) {
		cs = append(cs, Case{Name: name, Want: want, Policy: json.RawMessage(policy), Desc: desc, Data: data})
	}

	// Names and paths.
	add("N01-abs-path", "ErrTraversal", "absolute name", std(Reg("/etc/passwd", "x")))
	add("N02-dotdot-prefix", "ErrTraversal", "leading ..", std(Reg("../evil", "x")))
	add("N03-dotdot-middle", "ErrTraversal", "a/../../evil", std(Reg("a/../../evil", "x")))
	add("N04-dotdot-benign", "ErrTraversal", "a/../b stays inside but is not canonical", std(Reg("a/../b", "x")))
	add("N05-dot-prefix", Accept, "one leading ./ is removed", std(Reg("./a.txt", "hello\n")))
	add("N06-inner-dot", "ErrName", "a/./b", std(Reg("a/./b", "x")))
	add("N07-empty-segment", "ErrName", "a//b", std(Reg("a//b", "x")))
	add("N08-empty-name", "ErrName", "empty name", std(Reg("", "x")))
	add("N09-root-entry", Accept, "./ root entry is skipped", std(Dir("./"), Reg("./a", "a")))
	add("N09b-root-entry-dot", Accept, ". root entry is skipped", std(Dir("."), Reg("a", "a")))
	add("N09c-root-entry-twice", "ErrDuplicate", "two root entries", std(Dir("./"), Dir(".")))
	add("N10-dot-as-file", "ErrName", ". as a regular file", std(Reg(".", "x")))
	add("N11-trailing-slash-file", "ErrName", "regular file named f/", arc().H(Raw{Name: "f/", Size: 1}).D("x").End().Out())
	add("N12-legacy-rega", Accept, "type flag NUL: trailing / means directory",
		arc().H(Raw{Name: "legacy/", Patch: func(b []byte) { b[156] = 0 }}).
			H(Raw{Name: "file", Size: 2, Patch: func(b []byte) { b[156] = 0 }}).D("ok").End().Out())
	add("N13-backslash", "ErrName", `a\..\..\evil`, std(Reg(`a\..\..\evil`, "x")))
	add("N14-drive-colon", "ErrName", "C:evil", std(Reg("C:evil", "x")))
	add("N15-nul-in-ustar-name", "ErrFormat", "bytes hidden after a NUL in the name field",
		arc().H(Raw{Name: "ok.txt\x00../../x", Size: 1}).D("x").End().Out())
	add("N16-nul-in-pax-path", "ErrPAX", "NUL in a PAX path record",
		arc().PAX("path", "ok\x00../x").File("ok", "x").End().Out())
	add("N17-escape-sequence", "ErrName", "terminal escape in a name", std(Reg("a\x1b[2Jb", "x")))
	add("N17b-newline", "ErrName", "newline in a name", std(Reg("a\nb", "x")))
	add("N17c-c1-control", "ErrName", "U+0085 in a name", std(Reg("a\u0085b", "x")))
	add("N17d-bidi-override", "ErrName", "U+202E in a name", std(Reg("invoice\u202Efdp.exe", "x")))
	add("N18-invalid-utf8-pax", "ErrName", "invalid UTF-8 via PAX", std(Reg("\xff\xfe", "x")))
	add("N18b-invalid-utf8-ustar", "ErrName", "invalid UTF-8 in the ustar name field", arc().File("a\xffb", "x").End().Out())
	add("N19-non-nfc", "ErrName", "NFD name", std(Reg("cafe\u0301", "x")))
	add("N20-long-component", "ErrLimit", "300-byte component", std(Reg(strings.Repeat("c", 300), "x")))
	add("N21-long-path", "ErrLimit", "5000-byte path", std(Reg(strings.Repeat("abcd/", 999)+"f", "x")))
	add("N22-pax-header-too-big", "ErrLimit", "PAX header declaring 2 MiB (data absent: rejected before reading)",
		arc().H(Raw{Name: "PaxHeaders/x", Typeflag: 'x', Size: 2 << 20}).D("30 path=aaaaaaaaaaaaaaaaaaaaa\n").Out())
	add("N23-deep-nesting", "ErrLimit", "200 levels", std(Reg(strings.Repeat("d/", 200)+"f", "x")))
	add("N24-whiteout-file", "ErrWhiteout", ".wh.passwd", std(Reg(".wh.passwd", "")))
	add("N25-opaque-whiteout", "ErrWhiteout", "dir/.wh..wh..opq", std(Dir("dir/"), Reg("dir/.wh..wh..opq", "")))
	add("N26-whiteout-escape", "ErrWhiteout", ".wh.. (containerd WhiteoutRootParent)", std(Reg(".wh..", "")))
	add("N29-gnu-longname-traversal", "ErrTraversal", "GNU L long name ../../xxx...", gnu(Reg("../../"+long, "x")))
	add("N30-pax-path-override", "ErrTraversal", "PAX path=../../evil over ustar innocent.txt",
		arc().PAX("path", "../../evil").File("innocent.txt", "abc").End().Out())
	add("N31-pax-path-override-benign", "ErrPAX", "PAX path=real.txt over ustar decoy.txt: needless override",
		arc().PAX("path", "real.txt").File("decoy.txt", "abc").End().Out())
	add("N32-pax-path-empty", "ErrPAX", "empty PAX path record", arc().PAX("path", "").File("a", "x").End().Out())
	add("N33-gnu-longname-short", "ErrFormat", "GNU L long name for a short name",
		arc().H(Raw{Name: "././@LongLink", Typeflag: 'L', Size: 6, GNU: true}).D("short\x00").
			H(Raw{Name: "short", Size: 1, GNU: true}).D("x").End().Out())
	add("N34-gnu-longname-unterminated", "ErrFormat", "GNU L long name without its NUL",
		arc().H(Raw{Name: "././@LongLink", Typeflag: 'L', Size: 120, GNU: true}).D(long).
			H(Raw{Name: "x", Size: 1, GNU: true}).D("x").End().Out())

	// Duplicates, collisions, tree shape.
	add("D01-exact-duplicate", "ErrDuplicate", "a.txt twice", std(Reg("a.txt", "one"), Reg("a.txt", "two")))
	add("D02-dup-after-normalisation", "ErrDuplicate", "a.txt and ./a.txt", std(Reg("a.txt", "one"), Reg("./a.txt", "two")))
	add("D03-case-collision", "ErrDuplicate", "README and readme", std(Reg("README", "one"), Reg("readme", "two")))
	add("D03b-case-collision-dir", "ErrDuplicate", "A/ then a/x", std(Dir("A/"), Reg("a/x", "x")))
	add("D04-unicode-collision", "ErrName", "café (NFC) then cafe\u0301 (NFD, rejected as non-NFC)",
		std(Reg("caf\u00e9", "one"), Reg("cafe\u0301", "two")))
	add("D04b-fold-collision", "ErrDuplicate", "straße and STRASSE collide under case folding",
		std(Reg("stra\u00dfe", "one"), Reg("STRASSE", "two")))
	add("D05-file-then-child", "ErrConflict", "x then x/y", std(Reg("x", "x"), Reg("x/y", "y")))
	add("D06-dir-then-file", "ErrConflict", "x/ then x", std(Dir("x/"), Reg("x", "x")))
	add("D06b-file-then-dir", "ErrConflict", "x then x/", std(Reg("x", "x"), Dir("x/")))
	add("D07-implicit-parents", Accept, "a/b/c.txt without its parents", std(Reg("a/b/c.txt", "c")))
	add("D08-dir-repeated", "ErrDuplicate", "d/ twice", std(Dir("d/"), Dir("d/")))
	add("D09-implied-then-declared", Accept, "a/b.txt then a/: merged", std(Reg("a/b.txt", "b"), Dir("a/")))
	add("D10-long-name-collision", "ErrDuplicate", "case collision between long PAX names",
		std(Reg(strings.Repeat("Long", 40), "1"), Reg(strings.Repeat("long", 40), "2")))

	// Entry types and links.
	add("L01-symlink-absolute", "ErrSymlink", "l -> /etc", std(link(tar.TypeSymlink, "l", "/etc")))
	add("L02-symlink-relative-escape", "ErrSymlink", "l -> ../../x", std(link(tar.TypeSymlink, "l", "../../x")))
	add("L03-symlink-internal", "ErrSymlink", "l -> sub/file", std(Dir("sub/"), Reg("sub/file", "x"), link(tar.TypeSymlink, "l", "sub/file")))
	add("L04-symlink-then-write-through", "ErrSymlink", "l -> /tmp then l/evil", std(link(tar.TypeSymlink, "l", "/tmp"), Reg("l/evil", "x")))
	add("L05-dir-swapped-for-symlink", "ErrSymlink", "foo/, foo/tmp/x, foo -> /, foo/tmp/x",
		std(Dir("foo/"), Reg("foo/tmp/x", "1"), link(tar.TypeSymlink, "foo", "/"), Reg("foo/tmp/x", "2")))
	add("L06-symlink-named-dotdot", "ErrSymlink", "symlink named ..", std(link(tar.TypeSymlink, "..", "/")))
	add("L06b-symlink-empty-name", "ErrSymlink", "symlink with an empty name", std(link(tar.TypeSymlink, "", "/")))
	add("L07-symlink-root-itself", "ErrSymlink", ". -> /", std(link(tar.TypeSymlink, ".", "/")))
	add("L08-two-archive-symlink", "ErrSymlink", "x -> ../../home/v/.ssh (first of a two-archive attack)",
		std(link(tar.TypeSymlink, "x", "../../home/v/.ssh")))
	add("L09-hardlink-absolute", "ErrHardlink", "h -> /etc/passwd", std(link(tar.TypeLink, "h", "/etc/passwd")))
	add("L10-hardlink-escape", "ErrHardlink", "h -> ../../etc/passwd", std(link(tar.TypeLink, "h", "../../etc/passwd")))
	add("L11-hardlink-internal", "ErrHardlink", "a.txt then h -> a.txt", std(Reg("a.txt", "a"), link(tar.TypeLink, "h", "a.txt")))
	add("L12-hardlink-forward-ref", "ErrHardlink", "h -> later.txt before later.txt", std(link(tar.TypeLink, "h", "later.txt"), Reg("later.txt", "x")))
	add("L13-hardlink-to-symlink", "ErrSymlink", "s -> /etc/shadow then h -> s",
		std(link(tar.TypeSymlink, "s", "/etc/shadow"), link(tar.TypeLink, "h", "s")))
	add("L14-hardlink-to-dir", "ErrHardlink", "h -> d/", std(Dir("d/"), link(tar.TypeLink, "h", "d/")))
	add("L15-hardlink-with-data-smuggle", "ErrHardlink", "hard link declaring 512 bytes that hold a header",
		arc().H(Raw{Name: "h", Typeflag: '1', Linkname: "a", Size: 512}).Bytes(hdrOnly).D("hello").End().Out())
	add("L16-dir-with-size-smuggle", "ErrHeaderOnly", "directory declaring 512 bytes that hold a header",
		arc().H(Raw{Name: "d/", Typeflag: '5', Mode: 0o755, Size: 512}).Bytes(hdrOnly).D("hello").End().Out())
	add("L16b-rega-dir-with-size", "ErrHeaderOnly", "type NUL name d/ (a directory) declaring data",
		arc().H(Raw{Name: "d/", Size: 5, Patch: func(b []byte) { b[156] = 0 }}).D("hello").End().Out())
	add("L17-char-device", "ErrDevice", "null 1:3", std(Ent{Hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}}))
	add("L18-block-device", "ErrDevice", "sda 8:0", std(Ent{Hdr: tar.Header{Name: "sda", Typeflag: tar.TypeBlock, Devmajor: 8, Mode: 0o660}}))
	add("L19-fifo", "ErrFIFO", "named pipe", std(node(tar.TypeFifo, "p")))
	add("L20-devnum-overflow", "ErrDevice", "device major 1<<33", std(Ent{Hdr: tar.Header{Name: "c", Typeflag: tar.TypeChar, Devmajor: 1 << 33}}))
	add("L21-contiguous", "ErrType", "type 7", std(Reg("c", "x"), Ent{Hdr: tar.Header{Name: "cont", Typeflag: tar.TypeCont, Size: 1}, Data: "x"}))
	for _, t := range []byte{'V', 'M', 'D', 'N', 'X', 'Z', '9'} {
		add("L22-vendor-type-"+string(t), "ErrType", "type flag "+string(t),
			arc().H(Raw{Name: "v", Typeflag: t}).End().Out())
	}
	add("L23-pax-global-header", "ErrType", "global header path=../g",
		std(Ent{Hdr: tar.Header{Name: "g", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"path": "../g", "uid": "0"}}}, Reg("a", "a")))
	add("L24-gnu-longlink", "ErrType", "GNU K long link name before a symlink",
		gnu(link(tar.TypeSymlink, "s", "/"+strings.Repeat("t", 200))))
	add("L25-old-gnu-sparse", "ErrSparse", "type S",
		arc().H(Raw{Name: "sparse", Typeflag: 'S', GNU: true, Size: 0, Patch: func(b []byte) {
			copy(b[483:495], "17777777777\x00") // realsize
		}}).End().Out())
	add("L26-pax-sparse-bomb", "ErrSparse", "GNU sparse 1.0 declaring 1 TiB",
		arc().PAX("GNU.sparse.major", "1", "GNU.sparse.minor", "0", "GNU.sparse.name", "big.bin",
			"GNU.sparse.realsize", "1099511627776").
			H(Raw{Name: "GNUSparseFile.0/big.bin", Size: 512 + 1}).D("1\n0\n1\n"+strings.Repeat("\x00", 506)+"x").End().Out())
	add("L27-pax-sparse-0x", "ErrSparse", "GNU sparse 0.0 offset/numbytes records",
		arc().PAX("GNU.sparse.offset", "0", "GNU.sparse.numbytes", "1", "GNU.sparse.size", "1099511627776").File("s", "x").End().Out())
	add("L28-gnu-sparse-fields-on-reg", "ErrFormat", "GNU regular file with isextended set",
		arc().H(Raw{Name: "r", GNU: true, Size: 1, Patch: func(b []byte) { b[482] = 1 }}).D("x").End().Out())

	// Metadata.
	add("M01-special-bits", Accept, "setuid, setgid, sticky are cleared", std(
		Ent{Hdr: tar.Header{Name: "suid", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 1}, Data: "s"},
		Ent{Hdr: tar.Header{Name: "sgid", Typeflag: tar.TypeReg, Mode: 0o2755, Size: 1}, Data: "g"},
		Ent{Hdr: tar.Header{Name: "sticky/", Typeflag: tar.TypeDir, Mode: 0o1777}}))
	add("M02-world-writable", Accept, "0666 and 0777 become 0644 and 0755", std(
		Ent{Hdr: tar.Header{Name: "rw", Typeflag: tar.TypeReg, Mode: 0o666, Size: 1}, Data: "w"},
		Ent{Hdr: tar.Header{Name: "rwx", Typeflag: tar.TypeReg, Mode: 0o777, Size: 1}, Data: "x"}))
	add("M03-mode-0000-dir", Accept, "directory mode 0 becomes 0755", std(Ent{Hdr: tar.Header{Name: "d/", Typeflag: tar.TypeDir}}))
	add("M04-ifmt-bits-in-mode", Accept, "S_IFSOCK bits in a regular file's mode", std(
		Ent{Hdr: tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o140755, Size: 1}, Data: "f"}))
	add("M05-owner", Accept, "uid 1<<40, names root/wheel", std(
		Ent{Hdr: tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Uid: 1 << 40, Gid: 7, Uname: "root", Gname: "wheel", Size: 1}, Data: "f"}))
	add("M06-xattr-file-caps", Accept, "security.capability xattr is dropped and noted", std(
		Ent{Hdr: tar.Header{Name: "ping", Typeflag: tar.TypeReg, Mode: 0o755, Size: 1,
			PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01\x00\x00\x02\x00\x20\x00\x00"}}, Data: "p"}))
	add("M07-xattr-trusted-selinux", Accept, "trusted.* and security.selinux are dropped", std(
		Ent{Hdr: tar.Header{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1,
			PAXRecords: map[string]string{"SCHILY.xattr.trusted.x": "1", "SCHILY.xattr.security.selinux": "system_u:object_r:bin_t:s0"}}, Data: "f"}))
	add("M08-unknown-pax-key", "ErrPAX", "GOLANG.x record", std(
		Ent{Hdr: tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 1, PAXRecords: map[string]string{"GOLANG.x": "1"}}, Data: "f"}))
	add("M08b-schily-filetype", "ErrPAX", "SCHILY.filetype record", arc().PAX("SCHILY.filetype", "socket").File("f", "x").End().Out())
	add("M08c-libarchive-vendor", Accept, "LIBARCHIVE.creationtime and SCHILY.fflags are known", arc().
		PAX("LIBARCHIVE.creationtime", "1700000000", "SCHILY.fflags", "uchg").File("f", "x").End().Out())
	add("M09-hdrcharset", "ErrPAX", "hdrcharset=BINARY", arc().PAX("hdrcharset", "BINARY").File("f", "x").End().Out())
	add("M10-mtime-extremes", Accept, "times are replaced by 0", std(
		Ent{Hdr: tar.Header{Name: "y1", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}},
		Ent{Hdr: tar.Header{Name: "y9999", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Date(9999, 12, 31, 23, 59, 59, 999, time.UTC), Format: tar.FormatPAX}},
		Ent{Hdr: tar.Header{Name: "pre1970", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}},
		Ent{Hdr: tar.Header{Name: "sub", Typeflag: tar.TypeReg, Mode: 0o644, ModTime: time.Unix(1700000000, 123456789), Format: tar.FormatPAX,
			AccessTime: time.Unix(1, 5), ChangeTime: time.Unix(2, 5)}}))
	add("M11-pax-size-override", "ErrPAX", "ustar size 3, PAX size=600 (TARmageddon)",
		arc().PAX("size", "600").H(Raw{Name: "f", Size: 3}).D("abc").End().Out())
	add("M12-pax-size-zero-ustar", "ErrPAX", "ustar size 0, PAX size=5",
		arc().PAX("size", "5").H(Raw{Name: "f"}).D("hello").End().Out())
	add("M13-linkpath-on-regular", "ErrPAX", "linkpath record on a regular file",
		arc().PAX("linkpath", "/etc/passwd").File("f", "x").End().Out())
	add("M14-linkname-on-regular", "ErrFormat", "link name field set on a regular file",
		arc().H(Raw{Name: "f", Size: 1, Linkname: "/etc/passwd"}).D("x").End().Out())
	add("M15-two-extended-headers", "ErrFormat", "two PAX headers for one entry",
		arc().PAX("mtime", "1").PAX("path", long+"/f").File("f", "x").End().Out())
	add("M16-pax-then-end", "ErrFormat", "PAX header followed by the end marker",
		arc().PAX("mtime", "1").End().Out())
	add("M17-pax-malformed-length", "ErrPAX", "record length does not match",
		arc().H(Raw{Name: "PaxHeaders/x", Typeflag: 'x', Size: 12}).D("99 mtime=1\n\n").File("f", "x").End().Out())
	add("M18-pax-repeated-key", "ErrPAX", "path record twice",
		arc().PAX("path", long+"/a", "path", long+"/b").File("f", "x").End().Out())
	add("M19-pax-uid-malformed", "ErrPAX", "uid=-1", arc().PAX("uid", "-1").File("f", "x").End().Out())
	add("M20-star-trailer", "ErrFormat", "star header (tar\\0 in the padding)",
		arc().H(Raw{Name: "f", Size: 1, Patch: func(b []byte) { copy(b[508:512], "tar\x00") }}).D("x").End().Out())
	add("M21-v7-header", "ErrFormat", "V7 header without magic",
		arc().H(Raw{Name: "f", Size: 1, Magic: "\x00\x00\x00\x00\x00\x00", Version: "\x00\x00"}).D("x").End().Out())
	add("M22-malformed-mode", "ErrFormat", "mode field with a non-octal digit",
		arc().H(Raw{Name: "f", Size: 1, Patch: func(b []byte) { copy(b[100:108], "00006x4\x00") }}).D("x").End().Out())
	add("M23-empty-pax-header", "ErrFormat", "PAX header with no records",
		arc().H(Raw{Name: "PaxHeaders/x", Typeflag: 'x'}).File("f", "x").End().Out())
	add("M24-pax-time-malformed", "ErrPAX", "mtime=1e9", arc().PAX("mtime", "1e9").File("f", "x").End().Out())

	// Sizes, framing, trailer.
	add("S01-negative-size-pax", "ErrPAX", "PAX size=-1", arc().PAX("size", "-1").File("f", "").End().Out())
	add("S02-negative-size-base256", "ErrFormat", "base-256 size 0xff...",
		arc().H(Raw{Name: "f", SizeField: bytes.Repeat([]byte{0xff}, 12)}).End().Out())
	add("S03-huge-declared-size", "ErrLimit", "base-256 size 2^55 with 1 KiB of data",
		arc().H(Raw{Name: "f", SizeField: Base256(1 << 55)}).D(strings.Repeat("z", 1024)).Out())
	addP("S04-per-file-oversize", "ErrLimit", `{"max_file_bytes":1024}`, "1025-byte file over a 1024-byte limit",
		std(Reg("big", strings.Repeat("b", 1025))))
	addP("S05-total-oversize", "ErrLimit", `{"max_total_bytes":4096}`, "5 x 1 KiB over a 4 KiB total",
		std(Reg("1", strings.Repeat("1", 1024)), Reg("2", strings.Repeat("2", 1024)), Reg("3", strings.Repeat("3", 1024)),
			Reg("4", strings.Repeat("4", 1024)), Reg("5", strings.Repeat("5", 1024))))
	add("S06-size-gt-data", "ErrTruncated", "archive cut inside an entry's data",
		std(Reg("a", strings.Repeat("a", 2000)))[:512+1000])
	add("S07-size-lt-data", "ErrFormat", "size 3 followed by 600 bytes of data",
		arc().H(Raw{Name: "f", Size: 3}).D("abc"+strings.Repeat("!", 597)).End().Out())
	add("S08-bad-checksum", "ErrChecksum", "checksum off by one", arc().H(Raw{Name: "f", Size: 1, BadChecksum: true}).D("x").End().Out())
	add("S08b-flipped-byte", "ErrChecksum", "one name byte flipped after writing", patch(func(b []byte) []byte {
		b = bytes.Clone(b)
		b[0] ^= 0x20
		return b
	}, Reg("a", "a")))
	add("S08c-malformed-checksum", "ErrChecksum", "checksum field not octal", patch(func(b []byte) []byte {
		b = bytes.Clone(b)
		copy(b[148:156], "zzzzzz\x00 ")
		return b
	}, Reg("a", "a")))
	add("S09-no-end-marker", "ErrTrailer", "last 1024 bytes dropped", trimEnd(std(Reg("a", "a")), 1024))
	add("S10-lone-zero-block", "ErrTrailer", "last 512 bytes dropped", trimEnd(std(Reg("a", "a")), 512))
	add("S11-concatenated-archive", "ErrTrailer", "a second archive after the marker",
		append(std(Reg("a", "a")), std(Reg("hidden", "h"))...))
	add("S11b-trailing-garbage", "ErrTrailer", "non-zero bytes after the marker",
		append(std(Reg("a", "a")), append(make([]byte, 511), 'x')...))
	add("S12-record-padding", Accept, "padded with zeros to a 10240-byte record", padTo(std(Reg("a", "a")), 10240))
	add("S13-endless-zeros", "ErrTrailer", "marker then 128 KiB of zeros", append(std(Reg("a", "a")), make([]byte, 128<<10)...))
	add("S14-zero-then-nonzero", "ErrTrailer", "one zero block then a header",
		arc().Bytes(make([]byte, 512)).File("a", "a").End().Out())
	add("S15-empty-input", "ErrTrailer", "0 bytes", []byte{})
	add("S15b-empty-archive", Accept, "1024 zero bytes", make([]byte, 1024))
	add("S16-not-a-tar", "ErrFormat", "text", padTo([]byte("this is not a tar archive\n"), 1024))
	add("S16b-zip", "ErrCompressed", "zip local file header", append([]byte("PK\x03\x04"), make([]byte, 600)...))
	add("S16c-short-garbage", "ErrTruncated", "10 bytes", []byte("0123456789"))
	add("S17-gzip", "ErrCompressed", "gzip of a tar with 256 KiB of zeros", gzipped(std(Reg("z", string(make([]byte, 256<<10))))))
	add("S17b-bzip2", "ErrCompressed", "bzip2 magic", append([]byte("BZh91AY&SY"), make([]byte, 600)...))
	add("S17c-xz", "ErrCompressed", "xz magic", append([]byte("\xfd7zXZ\x00"), make([]byte, 600)...))
	add("S17d-zstd", "ErrCompressed", "zstd magic", append([]byte("\x28\xb5\x2f\xfd"), make([]byte, 600)...))
	add("S17e-lz4", "ErrCompressed", "lz4 frame magic", append([]byte("\x04\x22\x4d\x18"), make([]byte, 600)...))
	add("S17f-gzip-short", "ErrCompressed", "a gzip stream shorter than a block", gzipped([]byte("x")))
	add("S18-nested-archive", Accept, "a .tar.gz file is opaque data", std(Reg("x.tar.gz", string(gzipped(std(Reg("../evil", "x")))))))
	addP("S19-many-entries", "ErrLimit", `{"max_entries":100}`, "101 empty files over a 100-entry limit", manyFiles(101))
	addP("S19b-many-implied-dirs", "ErrLimit", `{"max_entries":10}`, "one entry implying 10 directories",
		std(Reg("a/b/c/d/e/f/g/h/i/j/k", "x")))
	add("S21-declared-20GiB", "ErrLimit", "base-256 size of 20 GiB, no data",
		arc().H(Raw{Name: "big", SizeField: Base256(20 << 30)}).Out())
	add("S21b-declared-20GiB-pax", "ErrLimit", "PAX size=20 GiB, no data",
		arc().PAX("size", "21474836480").H(Raw{Name: "big"}).Out())
	addP("S23-input-over-limit", "ErrLimit", `{"max_input_bytes":4096}`, "5 KiB of input over a 4 KiB limit",
		std(Reg("a", strings.Repeat("a", 3000))))
	add("S24-not-multiple-of-512", "ErrTrailer", "marker then 100 zero bytes", append(std(Reg("a", "a")), make([]byte, 100)...))
	add("S25-nonzero-data-padding", "ErrFormat", "hidden bytes in the padding after data",
		arc().H(Raw{Name: "f", Size: 1}).Bytes(append([]byte("x"), bytes.Repeat([]byte("!"), 511)...)).End().Out())
	add("S26-truncated-header", "ErrTruncated", "input ends inside a header", std(Reg("a", "a"))[:512+512+100])
	add("S27-truncated-pax", "ErrTruncated", "input ends inside a PAX header's data",
		arc().H(Raw{Name: "PaxHeaders/x", Typeflag: 'x', Size: 700}).Bytes([]byte("30 path=")).Out())
	add("S28-marker-split", "ErrTrailer", "input ends inside the second end block", std(Reg("a", "a"))[:1024+512+100])

	// containerd TestBreakouts, as archives: all links are refused.
	add("C01-SymlinkUpAndOut", "ErrSymlink", "dummy/up -> ../../../../../../etc", std(Dir("dummy/"), link(tar.TypeSymlink, "dummy/up", "../../../../../../etc")))
	add("C02-SymlinkMultipleAbsolute", "ErrSymlink", "base/one -> /, base/two -> /etc", std(Dir("base/"), link(tar.TypeSymlink, "base/one", "/"), link(tar.TypeSymlink, "base/two", "/etc")))
	add("C03-HardlinkRelativeLong", "ErrHardlink", "dir/link -> ../../../.../etc/passwd", std(Dir("dir/"), link(tar.TypeLink, "dir/link", strings.Repeat("../", 20)+"etc/passwd")))
	add("C04-HardlinkDirectRelative", "ErrHardlink", "dirlink -> ../", std(link(tar.TypeLink, "dirlink", "../")))
	add("C05-SymlinkSlashEnded", "ErrSymlink", "dir/loop/ -> /", std(Dir("dir/"), link(tar.TypeSymlink, "dir/loop/", "/")))
	add("C06-DirectoryOverrideSymlink", "ErrSymlink", "localetc -> /etc, then localetc/ as a directory", std(link(tar.TypeSymlink, "localetc", "/etc"), Dir("localetc/")))
	add("C07-WhiteoutParent", "ErrWhiteout", "d/.wh... whites out the parent", std(Dir("d/"), Reg("d/.wh...", "")))
	add("C08-WhiteoutSymlink", "ErrSymlink", "etc -> /etc, then .wh.etc", std(link(tar.TypeSymlink, "etc", "/etc"), Reg(".wh.etc", "")))
	add("C09-HardlinkSymlinkChmod", "ErrSymlink", "passwd -> /etc/passwd, then a setuid hard link to it", std(link(tar.TypeSymlink, "passwd", "/etc/passwd"),
		Ent{Hdr: tar.Header{Name: "passwd-link", Typeflag: tar.TypeLink, Linkname: "passwd", Mode: 0o4755}}))
	add("C10-SymlinkEmptyFile", "ErrSymlink", "foo, then bar -> foo", std(Reg("foo", ""), link(tar.TypeSymlink, "bar", "foo")))

	// Denylist.
	deny := `{"deny":["conftest.py","*.pth","sitecustomize.py",".git/"]}`
	denyDrop := `{"deny":["conftest.py","*.pth","sitecustomize.py",".git/"],"deny_action":"drop"}`
	repo := func() []byte {
		return std(Dir("src/"), Reg("src/app.py", "print(1)\n"), Reg("tests/conftest.py", "import os\n"),
			Dir(".git/"), Reg(".git/config", "[core]\n"), Reg(".git/hooks/pre-commit", "#!/bin/sh\n"),
			Reg("site/evil.pth", "import x\n"), Reg(".gitignore", "*.pyc\n"))
	}
	addP("X01-deny-reject", "ErrDenied", deny, "tests/conftest.py matches conftest.py", repo())
	addP("X02-deny-drop", Accept, denyDrop, "denied entries dropped and recorded", repo())
	addP("X03-deny-case-insensitive", "ErrDenied", deny, "CONFTEST.PY matches conftest.py", std(Reg("CONFTEST.PY", "x")))
	addP("X04-deny-dir-only", Accept, deny, "a file named .git is not the directory .git/", std(Reg(".git", "gitdir: ../x\n")))
	addP("X05-deny-implied-dir", "ErrDenied", deny, ".git/config without a .git/ entry", std(Reg("a/.git/config", "x")))
	addP("X06-deny-anchored", Accept, `{"deny":["/setup.cfg","ci/**"]}`, "anchored patterns do not match deeper paths",
		std(Reg("pkg/setup.cfg", "x"), Reg("pkg/ci/x", "y")))
	addP("X07-deny-anchored-hit", "ErrDenied", `{"deny":["/setup.cfg","ci/**"]}`, "ci/** matches ci/a/b",
		std(Reg("ci/a/b", "x")))
	addP("X08-deny-still-validated", "ErrSymlink", denyDrop, "a symlink below a dropped directory still rejects",
		std(Dir(".git/"), link(tar.TypeSymlink, ".git/l", "/etc")))

	// Benign archives in every supported format.
	benign := []Ent{
		Dir("proj/"), Reg("proj/README.md", "# proj\n"),
		{Hdr: tar.Header{Name: "proj/run.sh", Typeflag: tar.TypeReg, Mode: 0o750, Size: 10, Uid: 1000, Gid: 1000, Uname: "agent", Gname: "agent",
			ModTime: time.Unix(1700000000, 0)}, Data: "#!/bin/sh\n"},
		Reg("proj/data/empty.txt", ""),
		Reg("proj/data/"+strings.Repeat("long-name-", 12)+".txt", "long\n"),
		Reg("proj/"+strings.Repeat("deep/", 30)+"leaf.txt", "deep\n"),
		Reg("proj/blob.bin", string(bytes.Repeat([]byte{0, 1, 2, 3, 255}, 300))),
		Reg("proj/caf\u00e9/na\u00efve \u65e5\u672c.txt", "unicode\n"),
	}
	add("B01-benign-default", Accept, "Writer's own format choice", std(benign...))
	add("B02-benign-pax", Accept, "PAX format", pax(benign...))
	add("B03-benign-gnu", Accept, "GNU format", gnu(benign[:len(benign)-1]...))
	add("B04-docker-style", Accept, "dirs first with trailing /, PAX xattrs, ./ prefix",
		std(Dir("./"), Dir("./out/"), Ent{Hdr: tar.Header{Name: "./out/result.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3,
			PAXRecords: map[string]string{"SCHILY.xattr.user.x": "1"}}, Data: "{}\n"}))
	add("B05-gnu-long-name", Accept, "GNU L long name (exactly 100 bytes and longer)",
		gnu(Reg(strings.Repeat("a", 100), "1"), Reg(strings.Repeat("b", 150), "2")))
	add("B06-pax-long-name", Accept, "PAX path record for a 150-byte component-free name",
		arc().PAX("path", strings.Repeat("p", 150)).File("placeholder", "x").End().Out())
	return cs
}

func trimEnd(b []byte, n int) []byte { return b[:len(b)-n] }

func padTo(b []byte, n int) []byte {
	return append(b, make([]byte, (n-len(b)%n)%n)...)
}

func manyFiles(n int) []byte {
	ents := make([]Ent, n)
	for i := range ents {
		ents[i] = Reg("f"+strings.Repeat("0", 3)+itoa(i), "")
	}
	return std(ents...)
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
