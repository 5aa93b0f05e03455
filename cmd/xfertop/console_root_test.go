package main

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/ui"
)

// The line a live console leaves on the terminal when a watchdog alert ended the run names the
// root of the hang, as the headless run's line does (the same words: exit_test's "alert" case).
func TestConsoleEndLineNamesTheRoot(t *testing.T) {
	l, err := session.StartLive(context.Background(), session.Config{Scenario: "deadlock"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !l.Done(); {
		if time.Now().After(deadline) {
			t.Fatal("the deadlock scenario did not end within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m := l.Meta()
	model := console(liveSource{l: l, info: ui.SourceInfo{Name: m.Scenario, Meta: m}})
	for range 2 { // pause and resume: a fold of what the run left
		model.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
		model.Update(tea.KeyPressMsg{Code: ' ', Text: " "})
	}
	out, rerr := l.Stop()
	got := consoleRunEnded(out, rerr, model.EndedRoot())
	want := "the run ended early: watchdog: send op 1 from rank 0 waited 2.00 s for rank 1, which never posted its half (16 MiB); root of this hang (diagnosis): rank 1 (host 0 GPU 1)"
	if got == nil || got.Error() != want {
		t.Errorf("the console's end line: %v\nwant %s", got, want)
	}
	if ee, ok := got.(*exitError); !ok || ee.code != exitAlert {
		t.Errorf("exit error %#v, want status %d", got, exitAlert)
	}
}
