package ui

import (
	"regexp"
	"testing"
)

// The idle view's per-device table has room for a few devices; the filter reaches the others:
// /31 shows device 31's breakdown, which the unfiltered table leaves under "… more devices".
func TestIdleDeviceTableFollowsFilter(t *testing.T) {
	m := sized(scenarioSource(t, "llm-train", 1, "h100x8x4"), 120, 30)
	press(m, "5")
	row31 := regexp.MustCompile(`(?m)^31 +[0-9.]+ +[0-9.]+ +[0-9.]+`)
	before := text(m)
	if row31.MatchString(before) || !regexp.MustCompile(`more devices \(/ and a device number shows its row\)`).MatchString(before) {
		t.Fatalf("device 31 shown, or no hint of the rest, before filtering:\n%s", before)
	}
	press(m, "/", "3", "1", "enter")
	if got := text(m); !row31.MatchString(got) {
		t.Errorf("/31 does not show device 31's breakdown:\n%s", got)
	}
}
