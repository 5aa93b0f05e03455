// Package units formats numbers for people: durations, byte counts, rates and percentages with
// the units a person reads ("2.00 s", "16 MiB", "54.8 GB/s"), and unknown values as "—", never 0.
// The report's text, the console and every command format through it; JSON keeps raw numbers.
package units
