// Package headless loads pages in headless Chromium and reports what went
// wrong while it rendered: console errors, uncaught exceptions, the
// browser's own error log (a Content-Security-Policy violation, a resource
// that failed), JavaScript dialogs, and every network request the page
// made. It speaks the DevTools protocol over the pipe Chromium opens with
// --remote-debugging-pipe (file descriptors 3 and 4, NUL-terminated JSON),
// so it needs neither a port nor a WebSocket library. Start one browser,
// Load each page in a new tab, Close it. Tests use it to check
// that a generated page is self-contained and runs without error.
package headless

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// DefaultBinary is Debian's chromium launcher.
const DefaultBinary = "/usr/bin/chromium"

// Browser is one headless Chromium, with a throw-away profile, driven
// over its DevTools pipe. Load pages with Load, one at a time or
// concurrently; Close it.
type Browser struct {
	c       *conn
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	profile string
	w, r    *os.File
}

// Start runs binary (DefaultBinary when empty) headless.
func Start(ctx context.Context, binary string) (*Browser, error) {
	if binary == "" {
		binary = DefaultBinary
	}
	profile, err := os.MkdirTemp("", "headless-profile-*")
	if err != nil {
		return nil, err
	}
	// toBrowser is read by the browser as fd 3, fromBrowser written as fd 4.
	toBrowserR, toBrowserW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	fromBrowserR, fromBrowserW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		toBrowserR.Close()
		toBrowserW.Close()
		return nil, err
	}
	// Not CommandContext: the browser outlives Start's ctx, until Close.
	cmd := exec.Command(binary, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--mute-audio",
		"--hide-scrollbars", "--window-size=1280,1600", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowserR, fromBrowserW}
	b := &Browser{cmd: cmd, stderr: &lockedBuffer{}, profile: profile, w: toBrowserW, r: fromBrowserR}
	cmd.Stderr = b.stderr
	err = cmd.Start()
	toBrowserR.Close()
	fromBrowserW.Close()
	if err != nil {
		toBrowserW.Close()
		fromBrowserR.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("headless: start %s: %w", binary, err)
	}
	b.c = &conn{w: toBrowserW, pending: map[int]chan reply{}, sessions: map[string]chan event{}}
	go b.c.read(fromBrowserR)
	var v struct{ Product string }
	if err := b.c.call(ctx, "", "Browser.getVersion", nil, &v); err != nil {
		b.Close()
		return nil, b.errorf(err)
	}
	return b, nil
}

func (b *Browser) errorf(err error) error {
	return fmt.Errorf("headless: %w (browser stderr: %s)", err, tail(b.stderr.String(), 600))
}

// Close ends the browser and removes its profile.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.c.call(ctx, "", "Browser.close", nil, nil)
	b.w.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
	b.r.Close()
	return os.RemoveAll(b.profile)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Options configures Load. The zero value is usable.
type Options struct {
	// Settle is how long to keep listening after the load event, for
	// errors that come late; default 500ms.
	Settle time.Duration
	// Screenshot asks for a PNG of the whole page in Result.Screenshot.
	Screenshot bool
	// Eval, when set, is a JavaScript expression evaluated in the page
	// after it settled, by the protocol (so a page's policy forbidding
	// scripts does not stop it); its JSON value is Result.Eval.
	Eval string
}

// Problem is one thing that went wrong while the page rendered.
type Problem struct {
	// Kind is "console" (console.error or console.assert), "exception"
	// (uncaught), "log" (the browser's error log: a policy violation, a
	// failed resource) or "dialog" (alert, confirm, prompt).
	Kind string
	Text string
}

func (p Problem) String() string { return p.Kind + ": " + p.Text }

// Result is what Load saw.
type Result struct {
	Problems []Problem
	// Requests are the URLs the page requested, the page itself first.
	Requests []string
	// Screenshot is a PNG when Options.Screenshot was set.
	Screenshot []byte
	// Eval is the value of Options.Eval.
	Eval json.RawMessage
}

// Load renders url in a new tab and returns what went wrong there. An
// error means the page could not be loaded or the browser could not be
// driven, never that the page had problems.
func (b *Browser) Load(ctx context.Context, url string, o Options) (*Result, error) {
	if o.Settle == 0 {
		o.Settle = 500 * time.Millisecond
	}
	res, err := b.c.load(ctx, url, o)
	if err != nil {
		return nil, b.errorf(err)
	}
	return res, nil
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

type reply struct {
	result json.RawMessage
	err    error
}

type event struct {
	session string
	method  string
	params  json.RawMessage
}

// conn is one DevTools protocol connection over the pipe.
type conn struct {
	w       io.Writer
	mu      sync.Mutex
	next    int
	pending map[int]chan reply
	// sessions routes each session's events to its listener.
	sessions map[string]chan event
	closed   error
}

func (c *conn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	var err error
	for {
		var msg []byte
		msg, err = br.ReadBytes(0)
		if err != nil {
			break
		}
		var m struct {
			ID        int             `json:"id"`
			Session   string          `json:"sessionId"`
			Method    string          `json:"method"`
			Params    json.RawMessage `json:"params"`
			Result    json.RawMessage `json:"result"`
			Error     *struct{ Message string }
			ErrorData json.RawMessage `json:"data"`
		}
		if json.Unmarshal(msg[:len(msg)-1], &m) != nil {
			continue
		}
		if m.Method != "" {
			c.mu.Lock()
			if ch := c.sessions[m.Session]; ch != nil {
				select {
				case ch <- event{m.Session, m.Method, m.Params}:
				default: // a flood of events: the oldest matter most, keep them
				}
			}
			c.mu.Unlock()
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			rep := reply{result: m.Result}
			if m.Error != nil {
				rep.err = errors.New(m.Error.Message)
			}
			ch <- rep
		}
	}
	c.mu.Lock()
	c.closed = fmt.Errorf("the browser closed the pipe: %w", err)
	for id, ch := range c.pending {
		ch <- reply{err: c.closed}
		delete(c.pending, id)
	}
	for id, ch := range c.sessions {
		close(ch)
		delete(c.sessions, id)
	}
	c.mu.Unlock()
}

// call sends a command and waits for its reply, decoding it into out.
func (c *conn) call(ctx context.Context, session, method string, params, out any) error {
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return c.closed
	}
	c.next++
	id := c.next
	ch := make(chan reply, 1)
	c.pending[id] = ch
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err == nil {
		_, err = c.w.Write(append(data, 0))
	}
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case rep := <-ch:
		if rep.err != nil {
			return fmt.Errorf("%s: %w", method, rep.err)
		}
		if out != nil {
			return json.Unmarshal(rep.result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *conn) load(ctx context.Context, url string, o Options) (*Result, error) {
	var target struct{ TargetID string }
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var attached struct{ SessionID string }
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	s := attached.SessionID
	events := make(chan event, 4096)
	c.mu.Lock()
	if c.closed != nil {
		c.mu.Unlock()
		return nil, c.closed
	}
	c.sessions[s] = events
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.sessions, s)
		c.mu.Unlock()
		c.call(context.WithoutCancel(ctx), "", "Target.closeTarget", map[string]any{"targetId": target.TargetID}, nil)
	}()
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable", "Network.enable"} {
		if err := c.call(ctx, s, m, nil, nil); err != nil {
			return nil, err
		}
	}
	res := &Result{}
	// The events are read by one goroutine, which also answers dialogs.
	loaded := make(chan struct{})
	var (
		mu       sync.Mutex
		loadOnce sync.Once
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ev event
			var ok bool
			select {
			case ev, ok = <-events:
				if !ok {
					return
				}
			case <-stop:
				return
			}
			p, kind := problemOf(ev)
			mu.Lock()
			switch {
			case kind != "":
				res.Problems = append(res.Problems, Problem{Kind: kind, Text: p})
			case ev.method == "Network.requestWillBeSent":
				var r struct{ Request struct{ URL string } }
				json.Unmarshal(ev.params, &r)
				res.Requests = append(res.Requests, r.Request.URL)
			}
			mu.Unlock()
			switch ev.method {
			case "Page.loadEventFired":
				loadOnce.Do(func() { close(loaded) })
			case "Page.javascriptDialogOpening":
				go c.call(ctx, s, "Page.handleJavaScriptDialog", map[string]any{"accept": false}, nil)
			}
		}
	}()
	defer func() { close(stop); <-done }()

	var nav struct{ ErrorText string }
	if err := c.call(ctx, s, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return nil, err
	}
	if nav.ErrorText != "" {
		return nil, fmt.Errorf("navigating to %s: %s", url, nav.ErrorText)
	}
	select {
	case <-loaded:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%s did not finish loading in 30s", url)
	}
	select {
	case <-time.After(o.Settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if o.Eval != "" {
		var ev struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
			ExceptionDetails *struct{ Text string } `json:"exceptionDetails"`
		}
		if err := c.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": o.Eval, "returnByValue": true}, &ev); err != nil {
			return nil, err
		}
		if ev.ExceptionDetails != nil {
			return nil, fmt.Errorf("evaluating %q: %s", o.Eval, ev.ExceptionDetails.Text)
		}
		res.Eval = ev.Result.Value
	}
	if o.Screenshot {
		var shot struct{ Data string }
		if err := c.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot); err != nil {
			return nil, err
		}
		png, err := base64.StdEncoding.DecodeString(shot.Data)
		if err != nil {
			return nil, fmt.Errorf("Page.captureScreenshot: %w", err)
		}
		res.Screenshot = png
	}
	mu.Lock()
	defer mu.Unlock()
	out := *res
	return &out, nil
}

// problemOf returns the problem an event reports, if any, and its kind.
func problemOf(ev event) (string, string) {
	switch ev.method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string
			Args []struct {
				Value       any
				Description string
			}
		}
		json.Unmarshal(ev.params, &p)
		if p.Type != "error" && p.Type != "assert" {
			return "", ""
		}
		var parts []string
		for _, a := range p.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, fmt.Sprint(a.Value))
			}
		}
		return "console." + p.Type + "(" + strings.Join(parts, ", ") + ")", "console"
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		json.Unmarshal(ev.params, &p)
		return strings.TrimSpace(p.ExceptionDetails.Text + " " + p.ExceptionDetails.Exception.Description), "exception"
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Source, Text, URL string }
		}
		json.Unmarshal(ev.params, &p)
		if p.Entry.Level != "error" {
			return "", ""
		}
		return p.Entry.Source + ": " + p.Entry.Text, "log"
	case "Page.javascriptDialogOpening":
		var p struct{ Type, Message string }
		json.Unmarshal(ev.params, &p)
		return p.Type + ": " + p.Message, "dialog"
	}
	return "", ""
}
