"""Observation → text. One module per environment family; each is a pure function of the
state it reads, so it can be tested on hand-made states and costs microseconds per step."""
