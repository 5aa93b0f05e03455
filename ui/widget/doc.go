// Package widget holds what the console's views share: the Frame they draw from, the keys, the
// one list (selection and scrolling) and the filter box every list view uses, and the messages
// views send each other. A view is a widget: a concrete type with Update, View, SetSize,
// ShortHelp and FullHelp (see Widget); the root holds them in a slice and knows none of their
// insides.
package widget
