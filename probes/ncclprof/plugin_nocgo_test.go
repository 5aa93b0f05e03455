//go:build !cgo

package main

import "testing"

func TestPlugin(t *testing.T) { t.Skip(needsCgo) }
