package theme

import "testing"

// Without colour, glyphs alone tell activities apart: each is distinct and one cell wide.
func TestGlyphsDistinct(t *testing.T) {
	seen := map[string]Activity{}
	for _, a := range Legend(true) {
		g := a.Glyph()
		if len([]rune(g)) != 1 {
			t.Errorf("%s glyph %q is not one character", a.Name(), g)
		}
		if b, ok := seen[g]; ok {
			t.Errorf("%s and %s share glyph %q", a.Name(), b.Name(), g)
		}
		seen[g] = a
	}
	s := DefaultStyles(true)
	if s.ActivityOn[Kernel] == "" || s.ActivityOff[Kernel] == "" {
		t.Error("kernel style has no colour sequences")
	}
}
