//go:build !unix

package attach

func umask(m int) int { return m }
