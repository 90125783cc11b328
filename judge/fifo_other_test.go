//go:build !unix

package judge

import "errors"

func mkfifo(string) error { return errors.New("not supported") }
