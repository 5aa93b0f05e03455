package ui

import (
	"github.com/xfertop/xfertop/timeline"
	"github.com/xfertop/xfertop/ui/views/compare"
)

// NewCompare returns a console showing two runs side by side: the comparison's figures and both
// timelines aligned on a step.
func NewCompare(d compare.Data, opts Options) *Model {
	m := newRoot(staticSource{info: SourceInfo{Name: d.Cmp.A + " vs " + d.Cmp.B}}, opts, true)
	m.panes = []pane{&slot[*compare.Model]{compare.New(m.fr, d)}}
	m.names = []string{"Compare"}
	return m
}

// staticSource is a source with nothing to follow: a comparison's runs have ended.
type staticSource struct{ info SourceInfo }

func (s staticSource) Info() SourceInfo            { return s.info }
func (s staticSource) Snapshot() timeline.Snapshot { return timeline.Snapshot{} }
func (s staticSource) Status() Status              { return Status{Done: true} }
func (s staticSource) SetSpeed(float64) bool       { return false }
func (s staticSource) SeekTo(int64) bool           { return false }
