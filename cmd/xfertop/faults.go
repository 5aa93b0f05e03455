package main

import (
	"strings"

	"github.com/xfertop/xfertop/engine/fault"
)

// faultFlag collects repeated --fault kind=...,key=value flags.
type faultFlag []fault.Fault

func (f *faultFlag) String() string {
	if f == nil {
		return ""
	}
	s := make([]string, len(*f))
	for i, x := range *f {
		s[i] = x.String()
	}
	return strings.Join(s, " ")
}

func (f *faultFlag) Set(v string) error {
	x, err := fault.Parse(v)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}
