package main

import (
	"testing"

	"github.com/xfertop/xfertop/receiver"
)

// The console's status line says a listen's data is partial as the senders said it: a sender that
// did not say its detail is not said to have sent spans.
func TestPartialDetail(t *testing.T) {
	for _, c := range []struct {
		hosts []receiver.Host
		want  string
	}{
		{[]receiver.Host{{Name: "h0", Detail: "spans"}}, "detail spans"},
		{[]receiver.Host{{Name: "h0", Detail: "spans"}, {Name: "h1"}}, "detail unknown"},
		{[]receiver.Host{{Name: "h0"}}, "detail unknown"},
	} {
		if got := partialDetail(c.hosts); got != c.want {
			t.Errorf("partialDetail(%+v) = %q; want %q", c.hosts, got, c.want)
		}
	}
}
