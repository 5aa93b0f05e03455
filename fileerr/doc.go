// Package fileerr is the error of a declarative file (a scenario, a topology): it names the file
// and, where it can, the line, as compilers do (file:line: message). It also turns a YAML
// decoder's error into one, taking the line out of the decoder's message, and reads such small
// files with a bound (ReadBounded), so a device or an endless FIFO given by mistake is refused.
package fileerr
