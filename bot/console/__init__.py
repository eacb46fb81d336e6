"""The web console: what lorebot remembers, its cards, its audit and its health, in a
browser, for the people chat knows, by the rules chat applies (`docs/console.md`)."""
