package ui

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's view table, its view keys and its picture of the console's tab line list the
// console's views as they are (tabNames), each on its key, so they cannot drift from it again.
func TestReadmeViews(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "| view | key | what it shows |")
	if start < 0 {
		t.Fatal("README.md has no view table (| view | key | what it shows |)")
	}
	row := regexp.MustCompile("^\\| ([A-Za-z]+) \\| `([0-9])` \\|")
	var got []string
	for _, line := range strings.Split(text[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("README view table row %q: want | Name | `key` |", line)
			continue
		}
		got = append(got, m[2]+" "+m[1])
	}
	var want []string
	for i, name := range tabNames {
		want = append(want, fmt.Sprintf("%d %s", i+1, name))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("README view table: %q; the console's views: %q", got, want)
	}
	if keys := fmt.Sprintf("| `1`–`%d`, `tab`, `shift+tab` | switch view |", tabCount); !strings.Contains(text, keys) {
		t.Errorf("README's keys table lacks %q", keys)
	}
	if bar := " " + strings.Join(want, "  ") + "\n"; !strings.Contains(text, "\n"+bar) {
		t.Errorf("README's picture of the console lacks the tab line %q", bar)
	}
}
