package recordings

import (
	"bytes"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the reader: it must never panic, never allocate from a length
// field beyond the input, and either read events or report why not.
func FuzzReader(f *testing.F) {
	evs, s := sample(40)
	whole := write(f, evs, s, 10)
	f.Add(whole)
	f.Add(whole[:len(whole)/2])
	f.Add(header())
	bad := bytes.Clone(whole)
	bad[len(bad)/3] ^= 0xff
	f.Add(bad)
	f.Add([]byte("XFERTOP\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, salvage := range []bool{false, true} {
			rec, err := ReadAll("fuzz.xfr", data, Options{Salvage: salvage})
			if err != nil {
				continue
			}
			// Whatever was read must re-encode and read back identically.
			var buf bytes.Buffer
			w, _ := NewWriter("re", &buf)
			_ = w.WriteStrings(1, rec.Strings.All()[1:])
			for i := 0; i < len(rec.Events); i += 100 {
				_ = w.WriteEvents(rec.Events[i:min(i+100, len(rec.Events))])
			}
			_ = w.Close()
			again, err := ReadAll("re", buf.Bytes(), Options{})
			if err != nil || len(again.Events) != len(rec.Events) {
				t.Fatalf("re-encoding %d events: %v (%d back)", len(rec.Events), err, len(again.Events))
			}
			for i := range again.Events {
				if again.Events[i] != rec.Events[i] {
					t.Fatalf("event %d changed on re-encoding: %+v vs %+v", i, again.Events[i], rec.Events[i])
				}
			}
		}
	})
}
