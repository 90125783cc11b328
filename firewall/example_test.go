package firewall_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/strictgrade/strictgrade/firewall"
)

func ExampleFilter() {
	// An archive as an agent might hand it over: a "./" prefix, a setuid
	// bit, an owner, and no entry for the parent directory.
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Name: "./out/answer.txt", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 3, Uid: 1000, Uname: "agent"})
	tw.Write([]byte("42\n"))
	tw.Close()

	var out bytes.Buffer
	m, err := firewall.Filter(context.Background(), &in, &out, firewall.Policy{})
	if err != nil {
		fmt.Println("rejected:", err)
		return
	}
	for _, d := range m.Dirs {
		fmt.Println("dir ", d)
	}
	for _, f := range m.Files {
		fmt.Printf("file %s %d bytes %04o sha256:%.12s\n", f.Path, f.Size, f.Mode, f.SHA256)
	}
	for _, n := range m.Normalised {
		fmt.Printf("note %s: %s\n", n.Path, n.Change)
	}
	fmt.Printf("archive %d bytes sha256:%.12s\n", m.ArchiveBytes, m.ArchiveSHA256)
	// Output:
	// dir  out
	// file out/answer.txt 3 bytes 0755 sha256:084c799cd551
	// note out: parent directory synthesised
	// note out/answer.txt: setuid/setgid/sticky bits cleared
	// archive 2560 bytes sha256:a180baff6591
}

func ExampleFilter_rejected() {
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	tw.WriteHeader(&tar.Header{Name: "conftest.py", Typeflag: tar.TypeSymlink, Linkname: "/judge/tests/conftest.py"})
	tw.Close()

	_, err := firewall.Filter(context.Background(), &in, io.Discard, firewall.Policy{})
	fmt.Println(err)
	fmt.Println(errors.Is(err, firewall.ErrSymlink))
	var rej *firewall.RejectError
	if errors.As(err, &rej) {
		fmt.Println(rej.Entry)
	}
	// Output:
	// firewall: symlink: entry "conftest.py": symbolic link to "/judge/tests/conftest.py"
	// true
	// conftest.py
}

func ExampleParsePolicy() {
	p, err := firewall.ParsePolicy([]byte(`{
		"max_file_bytes": 1048576,
		"deny": ["conftest.py", "*.pth", "sitecustomize.py", ".git/"],
		"deny_action": "drop"
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.MaxFileBytes, p.Deny, p.DenyAction)
	// Output: 1048576 [conftest.py *.pth sitecustomize.py .git/] drop
}
