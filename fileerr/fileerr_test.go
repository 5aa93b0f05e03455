package fileerr

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestFromYAML: the decoder's errors become file:line errors, the line taken out of the message.
func TestFromYAML(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "a: 1\nb: [\n", "f.yaml:2: did not find expected node content"},
		{"tab", "a:\n\tb: 1\n", "f.yaml:2: found character that cannot start any token"},
		{"empty", "", "f.yaml: empty file"},
	} {
		var n yaml.Node
		err := yaml.NewDecoder(bytes.NewReader([]byte(tc.doc))).Decode(&n)
		if err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if got := FromYAML("f.yaml", err).Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := At("f.yaml", 0, "no %s", "steps").Error(); got != "f.yaml: no steps" {
		t.Errorf("At without a line: %q", got)
	}
}
