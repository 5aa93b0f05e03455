//go:build unix

package attach

import "syscall"

func umask(m int) int { return syscall.Umask(m) }
