"""The stores' interfaces, one Protocol each, and the values they take and give."""
