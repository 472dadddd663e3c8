package wire

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func readEvents(t *testing.T, r io.Reader) []Event {
	t.Helper()
	rd := NewEventReader(r)
	var out []Event
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		cp := *ev
		cp.Raw, cp.Data = bytes.Clone(ev.Raw), bytes.Clone(ev.Data)
		out = append(out, cp)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		data  []string // "-" for an event without data
		names []string
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []string{`{"a":1}`, "[DONE]"}, []string{"", ""}},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []string{"x", "y"}, []string{"", ""}},
		{"lone cr", "data: x\r\rdata: y\r\r", []string{"x", "y"}, []string{"", ""}},
		{"mixed line ends", "event: e\rdata: a\r\ndata: b\n\r\n: c\r\r", []string{"a\nb", "-"}, []string{"e", ""}},
		{"cr at the end", "data: z\r", []string{"z"}, []string{""}},
		{"no space after colon", "data:x\n\n", []string{"x"}, []string{""}},
		{"multi-line data", "data: a\ndata: b\n\n", []string{"a\nb"}, []string{""}},
		{"named event", "event: response.created\ndata: {}\n\n", []string{"{}"}, []string{"response.created"}},
		{"comment", ": keep-alive\n\ndata: z\n\n", []string{"-", "z"}, []string{"", ""}},
		{"unterminated last event", "data: a\n\ndata: b", []string{"a", "b"}, []string{"", ""}},
		{"unterminated last line", "data: a\n", []string{"a"}, []string{""}},
		{"empty", "", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// One byte at a time: events must not depend on read boundaries.
			evs := readEvents(t, iotest.OneByteReader(strings.NewReader(tc.in)))
			if len(evs) != len(tc.data) {
				t.Fatalf("%d events, want %d: %+v", len(evs), len(tc.data), evs)
			}
			var raw bytes.Buffer
			for i, ev := range evs {
				want := tc.data[i]
				if want == "-" {
					if ev.HasData {
						t.Fatalf("event %d has data %q", i, ev.Data)
					}
				} else if !ev.HasData || string(ev.Data) != want {
					t.Fatalf("event %d data %q, want %q", i, ev.Data, want)
				}
				if ev.Event != tc.names[i] {
					t.Fatalf("event %d name %q", i, ev.Event)
				}
				raw.Write(ev.Raw)
			}
			if raw.String() != tc.in {
				t.Fatalf("raw bytes do not reassemble the input: %q", raw.String())
			}
		})
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	evs := readEvents(t, strings.NewReader("data: "+long+"\n\n"))
	if len(evs) != 1 || string(evs[0].Data) != long {
		t.Fatal("long line mangled")
	}
}

func TestSSEReaderEventTooLarge(t *testing.T) {
	rd := NewEventReader(io.MultiReader(strings.NewReader("data: "), strings.NewReader(strings.Repeat("y", MaxEventSize+10))))
	if _, err := rd.Next(); err != ErrEventTooLarge {
		t.Fatalf("err = %v", err)
	}
}

// FuzzSSEReader: any byte stream splits into events whose raw bytes
// reassemble it exactly (the relay's byte-for-byte guarantee) without panics.
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "event: x\ndata: 1\r\n\r\n", ": c\n\ndata: [DONE]", "\n\n\n", "data:\n", "\r\r\n", "x\rdata: 2\r\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Events must not depend on read boundaries: one byte at a time
		// (a CR last of a read, a CRLF split) gives the same events.
		whole, bytewise := readEvents(t, bytes.NewReader(in)), readEvents(t, iotest.OneByteReader(bytes.NewReader(in)))
		if !slices.EqualFunc(whole, bytewise, func(a, b Event) bool {
			return bytes.Equal(a.Raw, b.Raw) && bytes.Equal(a.Data, b.Data) && a.Event == b.Event && a.HasData == b.HasData && a.Stray == b.Stray
		}) {
			t.Fatalf("%q: events differ by read size:\n%+v\n%+v", in, whole, bytewise)
		}
		rd := NewEventReader(bytes.NewReader(in))
		var raw bytes.Buffer
		for i := 0; ; i++ {
			ev, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ev.Raw) == 0 && ev.Stray == 0 { // stray lines at the end come as an empty event that counts them
				t.Fatal("empty event")
			}
			raw.Write(ev.Raw)
			if i > len(in)+1 {
				t.Fatal("no progress")
			}
		}
		// Only stray lines, and blank lines ending a run of them, are
		// dropped: what is left is the input's other lines in order, and
		// the whole input when it has no stray line.
		// Lines are compared by content: a kept blank line may have gained
		// a \r (EventReader.keep).
		out, anyStray := splitLines(raw.Bytes()), false
		for _, line := range splitLines(in) {
			content := bytes.TrimRight(line, "\r\n")
			if len(out) > 0 && bytes.Equal(bytes.TrimRight(out[0], "\r\n"), content) {
				out = out[1:]
				continue
			}
			field, _, _ := bytes.Cut(content, []byte(":"))
			switch string(field) {
			case "data", "event", "id", "retry":
				t.Fatalf("line %q dropped from %q (got %q)", line, in, raw.Bytes())
			case "":
				if len(content) > 0 { // a comment
					t.Fatalf("comment %q dropped from %q (got %q)", line, in, raw.Bytes())
				}
			default:
				anyStray = true
			}
		}
		if len(out) > 0 {
			t.Fatalf("reassembled %q from %q: %q is not the input's", raw.Bytes(), in, out)
		}
		if !anyStray && !bytes.Equal(raw.Bytes(), in) {
			t.Fatalf("reassembled %q from %q", raw.Bytes(), in)
		}
	})
}

// splitLines splits after each \r\n, \n or lone \r, as the format does.
func splitLines(in []byte) [][]byte {
	var lines [][]byte
	for len(in) > 0 {
		n := len(in)
		if i := bytes.IndexAny(in, "\r\n"); i >= 0 {
			n = i + 1
			if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
				n++
			}
		}
		lines = append(lines, in[:n])
		in = in[n:]
	}
	return lines
}

// TestSSEReaderDropsStrayLines: lines that are not SSE fields never reach
// Raw and are counted; an event of stray lines only is skipped.
func TestSSEReaderDropsStrayLines(t *testing.T) {
	in := "<html>\n<body>oops</body>\n\ndata: {\"a\":1}\nnot a field\nid: 7\n\n: ping\n\ndata: [DONE]\n\ntrailing junk\n"
	evs := readEvents(t, iotest.OneByteReader(strings.NewReader(in)))
	var raw strings.Builder
	stray := 0
	for _, ev := range evs {
		raw.Write(ev.Raw)
		stray += ev.Stray
	}
	if want := "data: {\"a\":1}\nid: 7\n\n: ping\n\ndata: [DONE]\n\n"; raw.String() != want {
		t.Errorf("raw %q, want %q", raw.String(), want)
	}
	if stray != 4 {
		t.Errorf("%d stray lines counted, want 4", stray)
	}
	if len(evs) != 4 || evs[0].Stray != 3 || string(evs[0].Data) != `{"a":1}` || evs[3].Stray != 1 || len(evs[3].Raw) != 0 {
		t.Errorf("events %+v", evs)
	}
}

// TestSSEReaderStrayBetweenCRAndLF: dropping a stray line must not join a
// lone \r and the \n of the next line into one CRLF, which would lose the
// blank line that ends the event.
func TestSSEReaderStrayBetweenCRAndLF(t *testing.T) {
	evs := readEvents(t, iotest.OneByteReader(strings.NewReader("data: a\rjunk\n\ndata: b\n\n")))
	if len(evs) != 2 || string(evs[0].Data) != "a" || string(evs[0].Raw) != "data: a\r\r\n" || string(evs[1].Data) != "b" {
		t.Fatalf("events %+v", evs)
	}
}
