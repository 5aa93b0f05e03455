package ui

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/xfertop/xfertop/session"
	"github.com/xfertop/xfertop/timeline"
)

// fakeSource serves a fixed window and records what the console asked of it.
type fakeSource struct {
	info   SourceInfo
	win    snapshotter
	status Status
	seeks  []int64
	speeds []float64
	snaps  int
}

func (f *fakeSource) Info() SourceInfo { return f.info }
func (f *fakeSource) Snapshot() timeline.Snapshot {
	f.snaps++
	return f.win.Snapshot()
}
func (f *fakeSource) Status() Status { return f.status }
func (f *fakeSource) SetSpeed(x float64) bool {
	if !f.info.Replay {
		return false
	}
	f.speeds = append(f.speeds, x)
	f.status.Speed = x
	return true
}
func (f *fakeSource) SeekTo(t int64) bool {
	if !f.info.Replay {
		return false
	}
	f.seeks = append(f.seeks, t)
	return true
}

// scenarioSource runs a built-in scenario to completion into a window: deterministic content.
func scenarioSource(t testing.TB, name string, steps int, topo string) *fakeSource {
	t.Helper()
	p, err := session.Prepare(session.Config{Scenario: name, Steps: steps, Seed: 1, Window: 1 << 22, Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &fakeSource{win: p, info: SourceInfo{Name: name, Meta: p.Meta()}, status: Status{Speed: 1, Done: true}}
}

// sized returns a console over src at w×h with its first snapshot read.
func sized(src Source, w, h int) *Model {
	m := New(src, Options{IsDark: true})
	m.Init()
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

func press(m *Model, keys ...string) tea.Cmd {
	var last tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "space":
			msg = tea.KeyPressMsg{Code: ' ', Text: " "}
		case "tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab}
		case "shift+tab":
			msg = tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		case "left":
			msg = tea.KeyPressMsg{Code: tea.KeyLeft}
		case "right":
			msg = tea.KeyPressMsg{Code: tea.KeyRight}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "pgdown":
			msg = tea.KeyPressMsg{Code: tea.KeyPgDown}
		case "pgup":
			msg = tea.KeyPressMsg{Code: tea.KeyPgUp}
		case "ctrl+c":
			msg = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
		default:
			r := []rune(k)[0]
			msg = tea.KeyPressMsg{Code: r, Text: k}
		}
		_, last = m.Update(msg)
	}
	return last
}

// snapshotter is what serves a console its events: a timeline.Window, or a prepared run's.
type snapshotter interface{ Snapshot() timeline.Snapshot }
